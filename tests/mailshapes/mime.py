"""A small MIME writer: parts in a chosen charset and transfer encoding, written as a mail program
writes them (the ``email`` package re-encodes as it sees fit, which would hide what we mean to test)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from email import quoprimime
from email.header import Header


@dataclass
class Part:
    """One leaf part: text (``plain`` or ``html``) or an attachment's bytes."""

    subtype: str
    text: str = ""
    charset: str = "utf-8"
    encoding: str = "quoted-printable"  # 7bit, 8bit, quoted-printable or base64
    params: str = ""  # More Content-Type parameters, e.g. "; format=flowed".
    maintype: str = "text"
    data: bytes | None = None  # An attachment's bytes (then text and charset are unused).
    headers: list[tuple[str, str]] = field(default_factory=list)

    def encoded(self) -> tuple[str, bytes]:
        """The part's transfer encoding and its bytes in it, CRLF line ends.  A part asked for as 7bit
        that is not all ASCII, or as 7bit or 8bit with a line longer than SMTP carries, goes
        quoted-printable, as mail programs do."""
        # HTML writes what its charset cannot hold as character references, as mail programs do.
        errors = "xmlcharrefreplace" if self.subtype == "html" else "strict"
        text = self.text.replace("\n", "\r\n")
        raw = self.data if self.data is not None else text.encode(self.charset, errors)
        encoding = self.encoding
        if encoding in ("7bit", "8bit") and (
            (encoding == "7bit" and not raw.isascii()) or any(len(line) > 998 for line in raw.split(b"\r\n"))
        ):
            encoding = "quoted-printable"  # As programs do when a part is not 7bit, or a line too long.
        if encoding == "base64":
            return encoding, base64.encodebytes(raw).replace(b"\n", b"\r\n")
        if encoding == "quoted-printable":
            lines = raw.decode("latin-1").split("\r\n")
            return encoding, "\r\n".join(quoprimime.body_encode(line, eol="\r\n") for line in lines).encode()
        return encoding, raw

    def write(self) -> bytes:
        """Headers and body."""
        if self.data is not None:
            ctype = f"{self.maintype}/{self.subtype}{self.params}"
        else:
            ctype = f'{self.maintype}/{self.subtype}; charset="{self.charset}"{self.params}'
        encoding, body = self.encoded()
        head = [("Content-Type", ctype), ("Content-Transfer-Encoding", encoding), *self.headers]
        return _headers(head) + b"\r\n" + body


@dataclass
class Multipart:
    """A multipart container (alternative, mixed, related, signed)."""

    subtype: str
    parts: list[Part | Multipart]
    boundary: str
    params: str = ""
    preamble: str = ""

    def write(self) -> bytes:
        """Headers and body, every part between its boundaries."""
        head = [("Content-Type", f'multipart/{self.subtype};\r\n\tboundary="{self.boundary}"{self.params}')]
        out = _headers(head) + b"\r\n"
        if self.preamble:
            out += self.preamble.encode("ascii") + b"\r\n\r\n"
        for part in self.parts:
            out += b"--" + self.boundary.encode("ascii") + b"\r\n" + part.write() + b"\r\n"
        return out + b"--" + self.boundary.encode("ascii") + b"--\r\n"


def encoded_word(text: str, charset: str = "utf-8") -> str:
    """``text`` as a header value: as it is when ASCII, else RFC 2047 words in ``charset``."""
    if text.isascii():
        return text
    return Header(text, charset, maxlinelen=76).encode(linesep="\r\n")


def _headers(pairs: list[tuple[str, str]]) -> bytes:
    return b"".join(f"{name}: {value}\r\n".encode("ascii") for name, value in pairs)


def message(headers: list[tuple[str, str]], body: Part | Multipart) -> bytes:
    """A whole mail: ``headers`` (already encoded: ASCII), MIME-Version, then the body's own headers."""
    names = {name.lower() for name, _ in headers}
    extra = [] if "mime-version" in names else [("MIME-Version", "1.0")]
    return _headers(headers + extra) + body.write()
