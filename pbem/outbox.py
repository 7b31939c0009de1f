"""The outbox: mail is written as rows in the sender's transaction, and delivered by :func:`deliver_due`.

Nothing in pbem sends mail inline.  A row is claimed with a conditional UPDATE (so two deliverers never
send the same row at once), sent over SMTP with Flask-Mail, and marked sent.  A refused or failed send
is retried with a doubling backoff and never dropped.  If a deliverer dies between sending and
marking, the claim lapses and the mail goes out once more with the same Message-ID.
"""

from __future__ import annotations

import logging
import smtplib
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from email.utils import formataddr
from typing import Any

from flask import current_app
from flask_mail import Message
from sqlalchemy import insert, or_, select, update

from pbem.database import begin_write
from pbem.extensions import db, mail
from pbem.models import Game, OutboxMail, User, utcnow, wall_clock

log = logging.getLogger(__name__)


def settings() -> dict:
    """The [mail] settings in force."""
    return current_app.config["PBEM"]["mail"]


def server_address(local: str = "pbem") -> str:
    """An address of the server's own, ``pbem@<mail domain>``."""
    return f"{local}@{settings()['domain']}"


def make_message_id(kind: str, game: Game | None = None) -> str:
    """A new globally unique Message-ID in the server's domain."""
    where = f"game-{game.id}." if game is not None and game.id else ""
    return f"<{where}{kind}.{uuid.uuid4().hex}@{settings()['domain']}>"


def thread_id(game: Game) -> str:
    """The Message-ID every mail of a game refers to, so mail clients thread them together."""
    return f"<game-{game.id}@{settings()['domain']}>"


def enqueue(
    to: User | str,
    subject: str,
    body_text: str,
    *,
    kind: str,
    body_html: str | None = None,
    game: Game | None = None,
    reply_to: str | None = None,
    headers: dict[str, str] | None = None,
) -> int:
    """Add a mail to the outbox in the current transaction (it is sent after the commit); its row id."""
    to_addr = to.email if isinstance(to, User) else to
    all_headers = dict(headers or {})
    if game is not None:
        if game.id is None:
            db.session.flush()  # A game created in this transaction gets its id.
        all_headers.setdefault("In-Reply-To", thread_id(game))
        all_headers.setdefault("References", thread_id(game))
    now = utcnow()
    values = {
        "message_id": make_message_id(kind, game),
        "kind": kind,
        "to_addr": to_addr,
        "from_addr": formataddr((settings()["from_name"], server_address())),
        "reply_to": reply_to,
        "subject": subject,
        "body_text": body_text,
        "body_html": body_html,
        "headers": all_headers,
        "game_id": game.id if game is not None else None,
        "user_id": to.id if isinstance(to, User) else None,
        "created_at": now,
        "attempts": 0,
        # Due now by both clocks: a command run as if at a later time (``pbem sweep --at``) writes mail
        # that the next delivery, on the real clock, must send, not keep until that time comes.
        "next_attempt_at": min(now, wall_clock()),
    }
    # A plain INSERT, not an object for the session's flush: nothing changes a queued mail in the
    # transaction that writes it, and the unit of work's bookkeeping cost more than the statement (this
    # runs inside every move).
    return db.session.connection().execute(_INSERT, values).inserted_primary_key[0]


_INSERT = insert(OutboxMail.__table__)


def _message(row: OutboxMail) -> Message:
    msg = Message(
        # One line, whatever a subject was made of: a line break would fold or break the header.
        subject=" ".join(row.subject.split()),
        recipients=[row.to_addr],
        body=row.body_text,
        html=row.body_html,
        sender=row.from_addr,
        reply_to=row.reply_to,
        extra_headers={"Auto-Submitted": "auto-generated", **(row.headers or {})},
    )
    msg.msgId = row.message_id
    return msg


@contextmanager
def _smtp_timeout(seconds: float) -> Iterator[None]:
    """Flask-Mail opens its SMTP connection without a timeout; a server that accepts the connection and
    then says nothing would hang the deliverer for ever, so a default timeout is set around the send."""
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def _claim(row_id: int, now, claim_seconds: int) -> bool:
    """Take the row for this deliverer, unless another one holds it or it was sent meanwhile."""
    begin_write()
    result = db.session.execute(
        update(OutboxMail)
        .where(
            OutboxMail.id == row_id,
            OutboxMail.sent_at.is_(None),
            or_(OutboxMail.claimed_until.is_(None), OutboxMail.claimed_until < now),
        )
        .values(claimed_until=now + timedelta(seconds=claim_seconds))
    )
    db.session.commit()
    return result.rowcount == 1


def deliver_due(limit: int = 100) -> tuple[int, int]:
    """Send every due outbox mail (up to ``limit``); returns (sent, failed)."""
    cfg = settings()
    now = utcnow()
    due = db.session.scalars(
        select(OutboxMail.id)
        .where(OutboxMail.sent_at.is_(None), OutboxMail.next_attempt_at <= now)
        .order_by(OutboxMail.id)
        .limit(limit)
    ).all()
    db.session.rollback()
    sent = failed = 0
    connection = _Connection(cfg["smtp_timeout_seconds"])
    try:
        for row_id in due:
            try:
                if not _claim(row_id, now, cfg["claim_seconds"]):
                    continue
            except Exception:  # The database is away: the next run tries again; nothing was sent.
                db.session.rollback()
                log.exception("outbox %s could not be claimed; left for the next run", row_id)
                continue
            row = db.session.get(OutboxMail, row_id)
            assert row is not None
            message = _message(row)
            try:
                connection.send(message)
            except (smtplib.SMTPException, OSError) as exc:
                connection.close()
                attempts = row.attempts + 1
                delay = min(cfg["retry_max_seconds"], cfg["retry_base_seconds"] * 2 ** (attempts - 1))
                _record(row_id, attempts=attempts, next_attempt_at=utcnow() + timedelta(seconds=delay),
                        claimed_until=None, last_error=f"{type(exc).__name__}: {exc}"[:2000])
                log.warning("outbox %s to %s failed (attempt %s): %s", row_id, row.to_addr, attempts, exc)
                failed += 1
                continue
            _record(row_id, attempts=row.attempts + 1, sent_at=utcnow(), last_error=None)
            sent += 1
    finally:
        connection.close()
    return sent, failed


class _Connection:
    """The run's one SMTP connection: opened for the first mail and used for the rest, since opening one
    per mail (greeting, EHLO, perhaps STARTTLS and AUTH) costs more than sending it.  After a failure it is
    closed, and the next mail opens a fresh one: a refusal may have left the session in any state."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._open: Any = None

    def send(self, message: Message) -> None:
        """Send ``message``, connecting first when there is no connection."""
        with _smtp_timeout(self.timeout_seconds):
            if self._open is None:
                self._open = mail.connect()
                self._open.__enter__()
            self._open.send(message)

    def close(self) -> None:
        """Say goodbye to the server, if connected; a connection that broke is just dropped."""
        if self._open is None:
            return
        with suppress(smtplib.SMTPException, OSError):
            self._open.__exit__(None, None, None)
        self._open = None


def _record(row_id: int, tries: int = 5, **values: object) -> None:
    """Write how a send went.  A mail that went out must be marked sent, or it would go out again when
    its claim lapses: a failure here is retried (the run goes on with the other mails either way)."""
    for attempt in range(1, tries + 1):
        try:
            begin_write()
            db.session.execute(update(OutboxMail).where(OutboxMail.id == row_id).values(**values))
            db.session.commit()
            return
        except Exception:
            db.session.rollback()
            if attempt == tries:
                log.exception("outbox %s: could not record %s after %s tries", row_id, sorted(values), tries)
                return
            time.sleep(0.1 * 2 ** attempt)


def pending_count() -> int:
    """How many mails are waiting to be sent."""
    return db.session.scalar(select(db.func.count(OutboxMail.id)).where(OutboxMail.sent_at.is_(None))) or 0
