"""The development mailbox: a local SMTP sink that keeps every outbound mail as a Maildir.

``pbem run`` starts it and points the outbox at it, so a newcomer sees the server's mail without a
mail server; ``instance/mailbox/`` can be read with any Maildir client, or on the /mailbox page.
"""

from __future__ import annotations

import mailbox
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session


class MaildirHandler:
    """aiosmtpd handler that adds each message to a Maildir."""

    def __init__(self, path: Path) -> None:
        self.maildir = mailbox.Maildir(str(path), create=True)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Keep the message with its envelope sender and recipients."""
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        header = (f"X-Pbem-Envelope-From: {envelope.mail_from}\r\n"
                  f"X-Pbem-Envelope-To: {', '.join(envelope.rcpt_tos)}\r\n").encode()
        self.maildir.add(mailbox.MaildirMessage(header + raw))
        return "250 2.0.0 Kept in the dev mailbox"


def controller(path: Path, host: str, port: int) -> Controller:
    """A sink (not yet started) storing mail under ``path``."""
    return Controller(MaildirHandler(path), hostname=host, port=port, decode_data=False)


def messages(path: Path) -> list[mailbox.MaildirMessage]:
    """Every kept message, oldest first."""
    box = mailbox.Maildir(str(path), create=True)
    return sorted(box, key=lambda m: m.get_date())
