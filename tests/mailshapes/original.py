"""The mail being answered, as a mail program sees it: its headers, its text and its HTML, and the
ways programs quote it."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import parseaddr, parsedate_to_datetime

_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Original:
    """A move request (or any game mail) the server sent, read from the sink."""

    subject: str
    message_id: str
    references: str  # What a reply's References header holds: the mail's References, then its id.
    reply_to: str
    sender_name: str
    sender_addr: str
    to_addr: str
    date: datetime
    text: str
    html_body: str  # The inside of the HTML part's <body>.

    @classmethod
    def read(cls, mail: EmailMessage) -> Original:
        """The parts of ``mail`` a reply is built from."""
        name, addr = parseaddr(str(mail["From"]))
        html = mail.get_body(preferencelist=("html",)).get_content()
        found = _BODY.search(html)
        refs = f"{mail['References']} {mail['Message-ID']}" if mail["References"] else str(mail["Message-ID"])
        return cls(
            subject=str(mail["Subject"]), message_id=str(mail["Message-ID"]), references=refs,
            reply_to=str(mail["Reply-To"]), sender_name=name, sender_addr=addr, to_addr=str(mail["To"]),
            date=parsedate_to_datetime(str(mail["Date"])),
            text=mail.get_body(preferencelist=("plain",)).get_content().strip("\n"),
            html_body=(found.group(1) if found else html).strip(),
        )

    def lines(self) -> list[str]:
        """The text's lines, trailing spaces off."""
        return [line.rstrip() for line in self.text.split("\n")]

    def quoted(self, mark: str = "> ", blank: str = ">", lines: list[str] | None = None) -> str:
        """The text quoted line by line: ``mark`` before a line, ``blank`` for an empty one (Gmail, Mutt
        and Thunderbird write ">", Apple and Outlook "> ")."""
        lines = self.lines() if lines is None else lines
        return "\n".join(mark + line if line else blank for line in lines)

    def flowed(self, width: int = 72) -> str:
        """The text quoted as a format=flowed program writes it (RFC 3676): each line marked "> ", a
        long one broken into lines of at most ``width`` with a space left at the end of each soft break,
        an empty one a bare ">"."""
        out: list[str] = []
        for line in self.lines():
            if not line:
                out.append(">")
                continue
            pieces = textwrap.wrap(line, width - 2, break_long_words=False, break_on_hyphens=False) \
                if len(line) > width - 2 else [line]
            for n, piece in enumerate(pieces):
                soft = " " if n < len(pieces) - 1 else ""
                out.append("> " + piece + soft)
        return "\n".join(out)

    def split_at(self, marker: str, lines: list[str] | None = None) -> tuple[list[str], list[str]]:
        """The text's lines up to and including the first holding ``marker``, and those after it."""
        lines = self.lines() if lines is None else lines
        for n, line in enumerate(lines):
            if marker in line:
                return lines[: n + 1], lines[n + 1 :]
        raise AssertionError(f"{marker!r} is not in the mail answered")

    def legal_moves(self) -> list[str]:
        """The moves the mail lists as legal (an empty list when it gives only their number)."""
        found = re.search(r"^Legal moves: (.*)$", self.text, re.MULTILINE)
        return found.group(1).split(", ") if found else []

    def link(self) -> str:
        """The one-click link of the mail (its signed token is what must never leak)."""
        found = re.search(r"Or play with one click: (\S+)", self.text)
        assert found, "the mail answered has no one-click link"
        return found.group(1)
