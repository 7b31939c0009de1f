"""The mail listener: an aiosmtpd SMTP (or LMTP) server that stores each message and answers at once.

Storing is the only work done while the sender waits; a database failure answers 451 so the sending
MTA keeps the message and retries, and nothing is lost.  Processing happens beside it, in the
listener's :class:`pbem.mail.process.Runner` thread, which is woken after each store.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP, Envelope, Session
from flask import Flask

from pbem.extensions import db
from pbem.mail import process, receive

log = logging.getLogger(__name__)


class StoreHandler:
    """aiosmtpd handler: store the message in the database inside the app's context."""

    def __init__(self, app: Flask, runner: process.Runner | None = None) -> None:
        self.app = app
        self.runner = runner

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Store the message; 250 when stored (or already stored), 451 on a temporary failure (over LMTP,
        one answer per recipient).

        The store runs in a worker thread: waiting for the database's write lock must not stop the
        listener's event loop, which serves every other connection meanwhile.
        """
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        mail_from, rcpt_tos = str(envelope.mail_from or ""), [str(r) for r in envelope.rcpt_tos]
        loop = asyncio.get_running_loop()
        try:
            row_id = await loop.run_in_executor(None, self._store, raw, mail_from, rcpt_tos)
        except receive.MalformedMessage as exc:
            status = f"554 5.6.0 {exc}"
        except Exception:
            log.exception("could not store a message from %s", envelope.mail_from)
            status = "451 4.3.0 Temporary failure storing the message; please retry"
        else:
            status = "250 2.0.0 Message accepted"
            if self.runner is not None:
                self.runner.wake(row_id)
        if isinstance(server, LMTP):
            # LMTP answers DATA once per recipient (RFC 2033): an MTA such as Postfix that hands one
            # message to several of our addresses waits for every answer.  The message is stored once.
            return "\r\n".join([status] * max(1, len(envelope.rcpt_tos)))
        return status

    def _store(self, raw: bytes, mail_from: str, rcpt_tos: list[str]) -> int:
        """Store the message (or find it stored before); its row's id."""
        with self.app.app_context():
            try:
                return receive.store_message(raw, mail_from, rcpt_tos)[0]
            finally:
                db.session.remove()


class _ListenerController(Controller):
    """An aiosmtpd controller that starts and stops the processor thread with the listener."""

    def __init__(self, handler: StoreHandler, runner: process.Runner, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.runner = runner

    def start(self) -> None:
        """Start processing (what an earlier run left waiting first), then listening."""
        self.runner.start()
        super().start()

    def stop(self, no_assert: bool = False) -> None:
        """Stop listening, then processing."""
        super().stop(no_assert)
        self.runner.stop()


class _LMTPController(_ListenerController):
    def factory(self) -> Any:
        return LMTP(self.handler, **self.SMTP_kwargs)


def controller(app: Flask, host: str, port: int, lmtp: bool = False) -> Controller:
    """A listener (not yet started) that stores mail for ``app`` and processes it in its own thread."""
    limit = app.config["PBEM"]["smtpd"]["max_message_bytes"]
    runner = process.Runner(app)
    cls = _LMTPController if lmtp else _ListenerController
    return cls(
        StoreHandler(app, runner), runner, hostname=host, port=port, data_size_limit=limit,
        decode_data=False, server_hostname=app.config["PBEM"]["mail"]["domain"],
    )
