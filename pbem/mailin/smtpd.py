"""The mail listener: an aiosmtpd SMTP (or LMTP) server that stores each message, processes it where it
can in the same transaction, and answers once that has committed.

A database failure answers 451 so the sending MTA keeps the message and retries, and nothing is lost;
so does a crash before the commit (the MTA got no answer).  A message that must wait (for an earlier one
of its sender's, a busy game, or because as many are in hand as the listener has processor threads) is
only stored, and handed to the listener's :class:`pbem.mailin.process.Runner` threads, which also take
up whatever an earlier run left waiting.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from aiosmtpd.controller import Controller
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import SMTP, Envelope, Session
from flask import Flask

from pbem.core import heartbeat, inputs
from pbem.core.config import listener_store_threads
from pbem.core.extensions import db
from pbem.mailin import process, receive

log = logging.getLogger(__name__)


class _DirOfHooks:
    """``dir()`` of an aiosmtpd handler or server as aiosmtpd reads it: only the names starting with one
    of ``_looked_up`` (its hooks, commands and AUTH mechanisms), found once for each class.  aiosmtpd
    looks through ``dir()`` for them on every connection, and a full ``dir()`` was a fifth of a
    connection's CPU."""

    _looked_up: ClassVar[tuple[str, ...]] = ()
    _dir_names: ClassVar[dict[type, list[str]]] = {}

    def __dir__(self) -> list[str]:
        names = self._dir_names.get(type(self))
        if names is None:
            names = [n for n in super().__dir__() if n.startswith(self._looked_up)]
            self._dir_names[type(self)] = names
        return names


class StoreHandler(_DirOfHooks):
    """aiosmtpd handler: store the message in the database inside the app's context."""

    def __init__(self, app: Flask, runner: process.Runner | None = None,
                 storing: ThreadPoolExecutor | None = None) -> None:
        self.app = app
        self.runner = runner
        # The threads that store (None: the event loop's default ones).
        self.storing = storing

    # aiosmtpd looks through dir() of the handler twice for every connection, for these.
    _looked_up = ("handle_", "auth_")

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
            received = await loop.run_in_executor(self.storing, self._store, raw, mail_from, rcpt_tos)
        except receive.MalformedMessage as exc:
            status = f"554 5.6.0 {exc}"
        except Exception:
            log.exception("could not store a message from %s", envelope.mail_from)
            status = "451 4.3.0 Temporary failure storing the message; please retry"
        else:
            status = "250 2.0.0 Message accepted"
            if self.runner is not None and received.waiting:
                self.runner.wake(received.row_id)
            elif self.runner is not None and received.sender_waits:
                self.runner.wake()
        if isinstance(server, LMTP):
            # LMTP answers DATA once per recipient (RFC 2033): an MTA such as Postfix that hands one
            # message to several of our addresses waits for every answer.  The message is stored once.
            return "\r\n".join([status] * max(1, len(envelope.rcpt_tos)))
        return status

    def _store(self, raw: bytes, mail_from: str, rcpt_tos: list[str]) -> process.Received:
        """Store the message (or find it stored before) and, with a processor beside it, process it in
        the same transaction where it can be (see :func:`pbem.mailin.process.receive_and_process`)."""
        with self.app.app_context():
            try:
                if self.runner is None or not self.runner.receiving.acquire(blocking=False):
                    # No processor, or as many messages in hand as it has threads: only stored, for them.
                    writing = self.runner.writing if self.runner is not None else None
                    return process.Received(receive.store_message(raw, mail_from, rcpt_tos, writing)[0],
                                            waiting=True)
                try:
                    return process.receive_and_process(raw, mail_from, rcpt_tos, self.runner.writing)
                finally:
                    self.runner.receiving.release()
            finally:
                db.session.remove()


# An address in MAIL FROM or RCPT TO as nearly every MTA writes it: <dot-atom@domain>.
_PLAIN_PATH = re.compile(rf"<({inputs.PLAIN_ADDRESS})>")


class _Cheaper(_DirOfHooks):
    """What aiosmtpd does for every connection and command, done once or read plainly; the conversation,
    its limits (sizes, line lengths, timeouts) and its answers are aiosmtpd's own.

    aiosmtpd finds its commands and AUTH mechanisms by ``dir()`` of the server for every connection (a
    fifth of a connection's CPU here), and parses each address of MAIL FROM and RCPT TO with the email
    package's header parser, defining a class on each call (a tenth).  It writes each line of a reply of
    several lines (EHLO's six) on its own, a system call and a wake-up of the client for each: here the
    lines of one reply go out together, the same bytes in one write.
    """

    # The names aiosmtpd looks up in dir() of the server: the commands and the AUTH mechanisms.
    _looked_up = ("smtp_", "auth_")
    local_part_limit: int  # aiosmtpd's setting, of the server class this is mixed into (0: no limit).
    enable_SMTPUTF8: bool  # Likewise: whether a reply may be written in UTF-8 (else ASCII).
    # The lines of a reply written so far ("250-…"), waiting for its last line ("250 …").
    _reply_lines: list[bytes] | None = None

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        plain = _PLAIN_PATH.match(arg)
        rest = arg[plain.end():] if plain is not None else ""
        if plain is None or not rest.isprintable() or "(" in rest or self.local_part_limit:
            # The server class this is mixed into has _getaddr; the mixin's own base (object) has not.
            return super()._getaddr(arg)  # type: ignore[misc]
        # The parameters after the address, without the white space before them (a comment is the
        # parser's to read).
        return plain.group(1), rest.lstrip(" \t")

    async def push(self, status: str | bytes) -> None:
        """Write a line of a reply: a line that says more lines follow ("250-…") waits for the last one."""
        charset = "utf-8" if self.enable_SMTPUTF8 else "ascii"
        line = status if isinstance(status, bytes) else status.encode(charset)
        if line[3:4] == b"-" and line[:3].isdigit():
            if self._reply_lines is None:
                self._reply_lines = []
            self._reply_lines.append(line)
            return
        if self._reply_lines:
            line = b"\r\n".join([*self._reply_lines, line])
            self._reply_lines = None
        await super().push(line)  # type: ignore[misc]


class _SMTPServer(_Cheaper, SMTP):
    pass


class _LMTPServer(_Cheaper, LMTP):
    pass


class _ListenerController(Controller):
    """An aiosmtpd controller that starts and stops the processor thread with the listener."""

    def __init__(self, handler: StoreHandler, runner: process.Runner, **kwargs: Any) -> None:
        super().__init__(handler, **kwargs)
        self.runner = runner
        protocol = "LMTP" if isinstance(self, _LMTPController) else "SMTP"
        self.beating = heartbeat.Beating(
            handler.app, "listener", heartbeat.process_name(f"{protocol} {self.hostname}:{self.port}"),
            alive=self._answers,
        )

    def start(self) -> None:
        """Start processing (what an earlier run left waiting first), then listening, then beating."""
        self.runner.start()
        super().start()
        self.beating.start()

    def stop(self, no_assert: bool = False) -> None:
        """Stop listening, then processing; then write that the listener stopped."""
        super().stop(no_assert)
        if self.handler.storing is not None:
            self.handler.storing.shutdown()
        self.runner.stop()
        self.beating.stop()

    def _answers(self) -> None:
        """Raise unless the listener's event loop, which answers every connection, is turning."""
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), self.loop).result(timeout=10)

    def factory(self) -> Any:
        """The server for one connection."""
        return _SMTPServer(self.handler, **self.SMTP_kwargs)


class _LMTPController(_ListenerController):
    def factory(self) -> Any:
        return _LMTPServer(self.handler, **self.SMTP_kwargs)


def controller(app: Flask, host: str, port: int, lmtp: bool = False) -> Controller:
    """A listener (not yet started) that stores mail for ``app`` and processes it in its own thread."""
    limit = app.config["PBEM"]["smtpd"]["max_message_bytes"]
    runner = process.Runner(app)
    cls = _LMTPController if lmtp else _ListenerController
    # As many threads store as the database pool keeps connections for (see pbem.core.config's
    # flask_config), not the event loop's default number, which grows with the host's cores.
    storing = ThreadPoolExecutor(listener_store_threads(app.config["PBEM"]),
                                 thread_name_prefix="pbem-mail-store")
    return cls(
        StoreHandler(app, runner, storing), runner, hostname=host, port=port, data_size_limit=limit,
        decode_data=False, server_hostname=app.config["PBEM"]["mail"]["domain"],
    )
