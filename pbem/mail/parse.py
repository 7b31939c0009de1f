"""Reading a stored message: its sender, subject and recipients, its text, and the command in it.

Mail arrives in every shape: plain or HTML-only, quoted-printable or base64, any charset, with the
whole conversation quoted below (or above) the answer, and sometimes broken.  Nothing here raises on a
bad message; what cannot be decoded is read as best it can be, and an empty text is the worst case.
"""

from __future__ import annotations

import email
import logging
import re
from dataclasses import dataclass, field
from email.message import EmailMessage, Message
from email.policy import default as default_policy
from email.utils import getaddresses, parseaddr
from html.parser import HTMLParser

log = logging.getLogger(__name__)

# The longest comment passed on to the other players; mail is not the place for essays.
MAX_COMMENT = 2000

# Lines that open the quoted part of a reply in the common mail clients, in several languages: "alice
# wrote:", and "On <date>, alice <address> wrote:" / "Am <date> schrieb alice:", often wrapped.
_VERBS = r"(wrote|writes|schrieb|a écrit|escribió|scrisse|schreef|skrev|napisał|написал\(а\)|написал)"
_ATTRIBUTION = re.compile(rf"{_VERBS}\s*:\s*$", re.IGNORECASE)
_ATTRIBUTION_LONG = re.compile(
    rf"^(on|am|le|el|il|op|den|w dniu|\d{{1,4}}[./-])\b.*\b{_VERBS}\b.*:\s*$", re.IGNORECASE
)
_SEPARATORS = re.compile(
    r"^(-{2,}\s*(original message|forwarded message|ursprüngliche nachricht|message d'origine)\s*-{2,}"
    r"|_{10,}|-{10,})\s*$",
    re.IGNORECASE,
)
_HEADER_BLOCK = re.compile(r"^(from|von|de|sent|date|to|subject):\s", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SENT_FROM = re.compile(r"^(sent from my |get outlook for |envoyé de mon |von meinem )", re.IGNORECASE)


@dataclass
class Incoming:
    """A stored message as the processor needs it."""

    message: Message
    message_id: str
    from_addr: str
    subject: str
    recipients: list[str] = field(default_factory=list)
    text: str = ""

    def header(self, name: str) -> str:
        """A header's value as text ('' when absent or unreadable)."""
        return header_text(self.message, name)


def header_text(message: Message, name: str) -> str:
    """``name``'s value, decoded, on one line; '' when absent or so broken it cannot be read."""
    try:
        value = message.get(name)
    except Exception:  # A header the parser chokes on reads as missing.
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def read(raw: bytes, rcpt_to: str = "") -> Incoming:
    """Parse ``raw`` (never raises): sender, subject, the envelope or header recipients, and the text."""
    message = email.message_from_bytes(raw, policy=default_policy)
    from_addr = parseaddr(header_text(message, "From"))[1].strip().lower()
    recipients = [a.strip().lower() for a in rcpt_to.split(",") if a.strip()]
    if not recipients:
        # Piped in by `pbem ingest`: the MTA's headers say where the message was delivered.
        fields = [header_text(message, h) for h in ("Delivered-To", "X-Original-To", "To", "Cc")]
        recipients = [addr.lower() for _, addr in getaddresses([f for f in fields if f]) if addr]
    return Incoming(
        message=message,
        message_id=header_text(message, "Message-ID"),
        from_addr=from_addr,
        subject=header_text(message, "Subject"),
        recipients=recipients,
        text=body_text(message),
    )


def body_text(message: Message) -> str:
    """The message's text: the plain part if there is one, else the HTML part with its tags stripped."""
    part: Message | None = None
    if isinstance(message, EmailMessage):
        try:
            part = message.get_body(preferencelist=("plain", "html"))
        except Exception:
            part = None
    if part is None:
        part = _first_text_part(message)
    if part is None:
        return ""
    text = _decoded(part)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", text)


def _first_text_part(message: Message) -> Message | None:
    for part in message.walk():
        if part.get_content_maintype() == "text":
            return part
    # A multipart whose parts could not be found (a broken boundary) has no text we can trust.
    return None if message.get_content_maintype() == "multipart" else message


def _decoded(part: Message) -> str:
    """The part's text, decoded from its transfer encoding and charset, replacing what will not decode."""
    try:
        content = part.get_content()
        if isinstance(content, str):
            return content
    except Exception:  # Unknown charset, broken base64: fall back to the bytes.
        pass
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:
        return payload.decode("utf-8", errors="replace")


class _TextFromHTML(HTMLParser):
    """HTML to text: blocks become lines, quoted blocks become ``>`` lines, scripts and styles vanish."""

    _BLOCKS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "hr"}
    _HIDDEN = {"script", "style", "head", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.quote_depth = 0
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = dict(attrs).get("class") or ""
        if tag in self._HIDDEN:
            self.hidden += 1
        elif tag == "blockquote" or (tag == "div" and "quote" in classes):
            self._break()
            self.quote_depth += 1
        elif tag in self._BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag == "blockquote":
            self._break()
            self.quote_depth = max(0, self.quote_depth - 1)
        elif tag in self._BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.hidden:
            return
        if not self.lines[-1] and self.quote_depth:
            self.lines[-1] = "> " * self.quote_depth
        self.lines[-1] += " ".join(data.split()) if not data.isspace() else (" " if self.lines[-1] else "")

    def _break(self) -> None:
        self.lines.append("")


def html_to_text(html: str) -> str:
    """The text a person sees in ``html``, one block per line, quotes marked with ``>``."""
    parser = _TextFromHTML()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # HTMLParser is lenient; anything worse reads as no text.
        return ""
    lines = [line.strip() for line in parser.lines]
    return "\n".join(lines)


def _quote_starts(lines: list[str], i: int) -> bool:
    """Whether line ``i`` opens the quoted part: a ``>`` line, an attribution ("On … wrote:", possibly
    wrapped over three lines), a separator, an Outlook header block, or a signature ``-- ``."""
    line = lines[i].strip()
    if line.startswith(">") or _SEPARATORS.match(line) or lines[i].rstrip("\n") in ("-- ", "--"):
        return True
    if _ATTRIBUTION.search(line):
        return True
    for wrapped in range(1, 4):
        if _ATTRIBUTION_LONG.match(" ".join(s.strip() for s in lines[i : i + wrapped])):
            return True
    # Outlook quotes with a block of headers: "From: …" then "Sent: …".
    following_header = i + 1 < len(lines) and _HEADER_BLOCK.match(lines[i + 1].strip())
    return bool(_HEADER_BLOCK.match(line) and following_header)


def own_words(text: str) -> list[str]:
    """The lines the sender wrote above the quoted text (or, when they wrote under the quote, their
    unquoted lines after it), without a signature or trailing "Sent from my phone" lines."""
    lines = text.split("\n")
    above: list[str] = []
    start = len(lines)
    for i in range(len(lines)):
        if _quote_starts(lines, i):
            start = i
            break
        above.append(lines[i])
    if not any(s.strip() for s in above):
        # Written under the quote: the unquoted lines after it, up to a signature.
        above = []
        for i in range(start, len(lines)):
            if lines[i] in ("-- ", "--") and any(s.strip() for s in above):
                break
            if not _quote_starts(lines, i):
                above.append(lines[i])
    words = [s.rstrip() for s in above]
    while words and (not words[-1].strip() or _SENT_FROM.match(words[-1].strip())):
        words.pop()
    return words


def command_and_comment(text: str) -> tuple[str, str]:
    """The command (the first non-empty line of the sender's own words) and the comment (the rest)."""
    words = own_words(text)
    for i, line in enumerate(words):
        if line.strip():
            comment = "\n".join(words[i + 1 :]).strip()
            return " ".join(line.split()), comment[:MAX_COMMENT]
    return "", ""
