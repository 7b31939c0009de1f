"""The outbox: mail is written as rows in the sender's transaction, and delivered by :func:`deliver_due`.

Nothing in pbem sends mail inline.  Rows are claimed with a conditional UPDATE (so two deliverers never
send the same row at once), written out as bytes (:func:`render`), sent over SMTP, and marked sent
together after the batch they were claimed in (within a second).  A send that fails for now (the
server away, a 4xx answer) is retried with a doubling backoff, until ``mail.give_up_after_hours`` after
the mail was written; a 5xx refusal of the recipient or of the mail, or an address that cannot be
encoded (this server does not speak SMTPUTF8), is final at once.  Either way the
mail is then given up (``failed_at``, with the server's answer in ``last_error``) and never claimed
again.  If a deliverer dies between sending and marking, the claim lapses and the mails of that batch go
out once more with the same Message-IDs.
"""

from __future__ import annotations

import binascii
import email.policy
import email.quoprimime
import functools
import logging
import re
import secrets
import smtplib
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import formataddr, formatdate
from typing import Any

from flask import current_app
from sqlalchemy import Row, bindparam, insert, or_, select, update

from pbem.core import inputs
from pbem.core.database import DirectWrite
from pbem.core.extensions import db, mail
from pbem.core.models import SUBJECT_TAG, Game, OutboxMail, User, utcnow, wall_clock
from pbem.core.site import base_url
from pbem.core.unit_of_work import current, unit_of_work
from pbem.mailout import bouncing, tokens
from pbem.mailout.compose import Body, compose

log = logging.getLogger(__name__)


def settings() -> dict:
    """The [mail] settings in force."""
    return current_app.config["PBEM"]["mail"]


def make_message_id(kind: str, game: Game | None, domain: str) -> str:
    """A new globally unique Message-ID in the server's mail ``domain``: 128 random bits, in hex."""
    where = f"game-{game.id}." if game is not None and game.id else ""
    # (secrets.token_hex rather than uuid4().hex: the same 32 hex digits, all of them random, at a fifth of
    # the cost of building a UUID.)
    return f"<{where}{kind}.{secrets.token_hex(16)}@{domain}>"


def thread_id(game: Game, domain: str | None = None) -> str:
    """The Message-ID every mail of a game refers to, so mail clients thread them together (in the
    server's mail ``domain``, the settings' by default)."""
    return f"<game-{game.id}@{domain or settings()['domain']}>"


@functools.lru_cache(maxsize=16)
def _from_address(name: str, domain: str) -> str:
    """The From of every mail the server sends, ``pbem <pbem@domain>``: the same for every mail of a
    configuration, so written once (``formataddr`` quotes and checks the name anew at each call)."""
    return formataddr((name, f"pbem@{domain}"))


def subject(words: str) -> str:
    """The subject of a mail the server sends: its tag, then ``words`` (``[pbem] Confirm your address``)."""
    return f"{SUBJECT_TAG} {words}"


def enqueue(
    to: User | str,
    subject: str,
    body: Body | str,
    *,
    kind: str,
    body_html: str | None = None,
    game: Game | None = None,
    reply_to: str | None = None,
    headers: dict[str, str] | None = None,
    at_once: bool = False,
) -> int | None:
    """Add a mail to the outbox in the current transaction (it is sent after the commit).  Inside a unit
    of work the row is kept and written just before the commit, with the transaction's other mails in one
    INSERT (:meth:`pbem.core.unit_of_work.UnitOfWork.keep`), or inside a batch with the batch's others
    (:meth:`pbem.core.unit_of_work.UnitOfWork.batched`), and the result is None; outside one, or
    ``at_once``, it is written now and the result is its row id.  A bot is written no mail (None): it
    learns everything through the API.

    ``body`` is what :func:`pbem.mailout.compose.compose` made of the mail's templates; every mail of the
    server is written so (``tests/test_mail_composition.py`` holds to it).  A bare text, with
    ``body_html``, is taken too, for the tests of delivery itself."""
    # A player is a User, or the move path's plain row of one (pbem.game.rows), which reads the same.
    player = None if isinstance(to, str) else to
    if player is not None and player.is_bot:
        return None
    if isinstance(body, Body):
        body_text, body_html = body
    else:
        body_text = body
    to_addr = player.email if player is not None else to
    # The last guard before a header: whatever a caller quotes of a mail or a player (a subject, a
    # Message-ID) goes out on one line, without what no header may carry (PostgreSQL refuses a NUL).
    subject = inputs.clean_line(subject)
    all_headers = {name: inputs.clean_line(value) for name, value in (headers or {}).items()}
    # The settings read once: each look-up goes through Flask's app proxy.
    mail_settings = settings()
    domain = mail_settings["domain"]
    if game is not None:
        if game.id is None:
            # A game created in this transaction gets its id (typed int, it is None until the flush).
            db.session.flush()  # type: ignore[unreachable]
        thread = thread_id(game, domain)
        all_headers.setdefault("In-Reply-To", thread)
        all_headers.setdefault("References", thread)
    now = utcnow()
    values = {
        "message_id": make_message_id(kind, game, domain),
        "kind": kind,
        "to_addr": to_addr,
        "from_addr": _from_address(mail_settings["from_name"], domain),
        "reply_to": reply_to,
        "subject": subject,
        "body_text": body_text,
        "body_html": body_html,
        "headers": all_headers,
        "game_id": game.id if game is not None else None,
        "user_id": player.id if player is not None else None,
        "created_at": now,
        "attempts": 0,
        # Due now by both clocks: a command run as if at a later time (``pbem sweep --at``) writes mail
        # that the next delivery, on the real clock, must send, not keep until that time comes.
        "next_attempt_at": min(now, wall_clock()),
    }
    # A plain INSERT, not an object for the session's flush: nothing changes a queued mail in the
    # transaction that writes it, and the session's bookkeeping cost more than the statement (this runs
    # inside every move).
    uow = current()
    if uow is None:
        return _INSERT.insert(db.session.connection(), values)
    if at_once:
        return uow.insert(_INSERT, values)
    if uow.batching:
        uow.write(_INSERT, values)  # Sent with the batch's other mails, before its transaction commits.
    else:
        uow.keep(_INSERT, values)  # A mailed move writes two mails: one statement for both.
    return None


_INSERT = DirectWrite(insert(OutboxMail.__table__))


# Writing a mail out -----------------------------------------------------------------------------------
#
# A mail is written straight to the bytes SMTP carries, without building an email.message tree and
# serialising it: with the email package's modern policy that cost about 5 ms a mail (every header parsed
# back and refolded), more than the rest of delivery.  The shape is the one Flask-Mail gave: text alone as
# one text/plain part, text with HTML as multipart/mixed holding a multipart/alternative (plain, then
# HTML); UTF-8, 7bit or 8bit, quoted-printable where a line would be longer than SMTP allows.

_SMTP_POLICY = email.policy.SMTP
# A header line (and, in SMTP, any line) may not be longer than 998 octets; a header is folded from 78.
_MAX_LINE = 998
_FOLD_AT = 78


# Headers of free text, whose words may be written as RFC 2047 encoded words.  The others (addresses,
# Message-IDs) are folded here only when they are ASCII; the email package knows their syntax otherwise.
_TEXT_HEADERS = frozenset({"subject"})
# An encoded word is at most 75 characters, "=?utf-8?q?" and "?=" included.
_ENCODED_WORD = 75


def _header(name: str, value: str) -> bytes:
    """One header, on one logical line (a CR or LF in the value would end the header or start a new
    one), folded and RFC 2047-encoded when it is long or not ASCII."""
    value = " ".join(value.split())
    line = f"{name}: {value}"
    if len(line) <= _FOLD_AT and line.isascii():
        return line.encode("ascii") + b"\r\n"
    words = _header_words(name, value)
    if words is None or max(map(len, words)) > _MAX_LINE - len(name) - 4:
        return _SMTP_POLICY.header_factory(name, value).fold(policy=_SMTP_POLICY).encode("ascii")
    # Folded at spaces, the first line holding as many words as fit (at least one).  The email package
    # would rather start the value on the second line when it fits there whole, which leaves the first
    # line empty: valid, but some mail programs then show the subject with a space in front.
    lines, current = [], f"{name}:"
    for word in words:
        if len(current) + 1 + len(word) > _FOLD_AT and current != f"{name}:":
            lines.append(current)
            current = ""
        current += f" {word}"
    lines.append(current)
    return ("\r\n".join(lines) + "\r\n").encode("ascii")


def _header_words(name: str, value: str) -> list[str] | None:
    """The words of a header value as they are written, ready to fold between: each run of words that is
    not plain ASCII (or that a reader would take for an encoded word) is written as encoded words (whose
    spaces are inside them, and the spaces between them ignored by readers).  None when the header is
    not one this can write (a structured header that is not ASCII)."""
    plain = value.isascii() and "=?" not in value
    if plain:
        return value.split(" ")
    if name.lower() not in _TEXT_HEADERS:
        return None
    words: list[str] = []
    run: list[str] = []
    for word in [*value.split(" "), None]:
        if word is not None and (not word.isascii() or "=?" in word):
            run.append(word)
            continue
        if run:
            words += _encoded_words(" ".join(run), min(_ENCODED_WORD, _FOLD_AT - len(name) - 2))
            run = []
        if word is not None:
            words.append(word)
    return words


def _encoded_words(text: str, longest: int) -> list[str]:
    """``text`` as RFC 2047 encoded words (UTF-8, "Q" encoding) of at most ``longest`` characters each
    (so that each fits on a header line, the first one too); a character is never split between two."""
    room = longest - len("=?utf-8?q??=")
    encoded, chunk, size = [], "", 0
    for char in text:
        length = email.quoprimime.header_length(char.encode("utf-8"))
        if chunk and size + length > room:
            encoded.append(email.quoprimime.header_encode(chunk.encode("utf-8"), charset="utf-8"))
            chunk, size = "", 0
        chunk, size = chunk + char, size + length
    if chunk:
        encoded.append(email.quoprimime.header_encode(chunk.encode("utf-8"), charset="utf-8"))
    return encoded


def _text_part(subtype: str, text: str) -> tuple[bytes, bytes]:
    """A text part's headers and its body, UTF-8 with CRLF line ends."""
    data = text.replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")
    if max(map(len, data.split(b"\n"))) > _MAX_LINE:
        # Too long for SMTP as it is: quoted-printable folds it into soft line breaks, losing nothing.
        cte, data = "quoted-printable", binascii.b2a_qp(data, istext=True)
    else:
        cte = "7bit" if data.isascii() else "8bit"
    head = (f'Content-Type: text/{subtype}; charset="utf-8"\r\nMIME-Version: 1.0\r\n'
            f"Content-Transfer-Encoding: {cte}\r\n").encode("ascii")
    return head, data.replace(b"\n", b"\r\n")


def _boundary(*parts: bytes) -> bytes:
    """A multipart boundary that occurs in none of ``parts`` (random, so nobody can write it in advance)."""
    while True:
        boundary = f"===============pbem{uuid.uuid4().hex}==".encode("ascii")
        if not any(boundary in part for part in parts):
            return boundary


def render(row: OutboxMail | Row, date: float | None = None) -> bytes:
    """The mail of ``row`` as sent over SMTP (CRLF line ends), dated ``date`` (a Unix time; now by
    default).  Sent again after a failure, it keeps its Message-ID, so mail clients fold the copies."""
    headers = [
        # One line, whatever a subject was made of: a line break would fold or break the header.
        _header("Subject", row.subject) if row.subject.strip() else b"",
        _header("From", row.from_addr),
        _header("To", row.to_addr),
        _header("Date", formatdate(date, localtime=True)),
        _header("Message-ID", row.message_id),
        _header("Reply-To", row.reply_to) if row.reply_to else b"",
    ]
    extra = {"Auto-Submitted": "auto-generated", **(row.headers or {})}
    headers += [_header(name, value) for name, value in extra.items()]
    head = b"".join(headers)
    plain_head, plain = _text_part("plain", row.body_text)
    if row.body_html is None:
        return b"".join((plain_head, head, b"\r\n", plain))
    html_head, html = _text_part("html", row.body_html)
    inner = _boundary(plain, html)
    alternative = b"".join((
        b'Content-Type: multipart/alternative;\r\n boundary="', inner, b'"\r\nMIME-Version: 1.0\r\n\r\n',
        b"--", inner, b"\r\n", plain_head, b"\r\n", plain,
        b"\r\n--", inner, b"\r\n", html_head, b"\r\n", html,
        b"\r\n--", inner, b"--\r\n",
    ))
    outer = _boundary(alternative)
    return b"".join((
        b'Content-Type: multipart/mixed; boundary="', outer, b'"\r\nMIME-Version: 1.0\r\n', head, b"\r\n",
        b"--", outer, b"\r\n", alternative, b"\r\n--", outer, b"--\r\n",
    ))


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


# The deliverer writes through the table, not the ORM: it keeps no objects, and the ORM's bookkeeping
# for a bulk UPDATE cost as much as the statement.
_TABLE = OutboxMail.__table__
_C = _TABLE.c
# What a deliverer reads of a row it has claimed; ``to_bouncing``, whether its address is a player's that
# bounces (asked in the claim, a statement and a transaction fewer a batch than asking after it).
_CLAIMED = (_C.id, _C.message_id, _C.kind, _C.to_addr, _C.from_addr, _C.reply_to, _C.subject,
            _C.body_text, _C.body_html, _C.headers, _C.attempts, _C.created_at,
            bouncing.bouncing_in_sql(_C.to_addr).label("to_bouncing"))
# The mails still to send: neither sent nor given up.
WAITING = _C.sent_at.is_(None) & _C.failed_at.is_(None)
# Rows claimed by one statement: enough that a run of mail costs a few claims, few enough that rows wait
# little for their turn under a claim another deliverer cannot take.
_CLAIM_BATCH = 25
# The look for the due mails, the claim and the mark of the mails sent, each built once with its values
# (a list of ids among them) as parameters: built anew for each pass and batch (the list's every id made
# a parameter of its own, the statement's cache key computed) they cost more Python than their execution.
_DUE = select(_C.id).where(WAITING, _C.next_attempt_at <= bindparam("now")).order_by(_C.id).limit(
    bindparam("limit"))
_CLAIM = (update(_TABLE)
          .where(_C.id.in_(bindparam("ids", expanding=True)), WAITING,
                 or_(_C.claimed_until.is_(None), _C.claimed_until < bindparam("now")))
          .values(claimed_until=bindparam("until"))
          .returning(*_CLAIMED))
_MARK_SENT = (update(_TABLE).where(_C.id.in_(bindparam("ids", expanding=True)))
              .values(attempts=_C.attempts + 1, sent_at=bindparam("at"), last_error=None))


def _claim(row_ids: list[int], now: datetime, until: datetime) -> list[Row]:
    """Take the rows for this deliverer until ``until``, except those another one holds or that were sent
    meanwhile; returns what is needed to send the ones taken, in id order."""
    with unit_of_work() as uow:
        taken = db.session.execute(_CLAIM, {"ids": row_ids, "now": now, "until": until}).all()
        uow.commit()
    return sorted(taken, key=lambda row: row.id)


def _release(row_ids: list[int], until: datetime) -> None:
    """Give up this deliverer's claim on rows it will not send in this run, so the next run takes them
    at once rather than when the claim lapses."""
    with unit_of_work() as uow:
        db.session.execute(
            update(_TABLE)
            .where(_C.id.in_(row_ids), WAITING, _C.claimed_until == until)
            .values(claimed_until=None)
        )
        uow.commit()


def deliver_due(limit: int = 100) -> tuple[int, int]:
    """Send every due outbox mail (up to ``limit``); returns (sent, failed)."""
    cfg = settings()
    now = utcnow()
    due = db.session.scalars(_DUE, {"now": now, "limit": limit}).all()
    if not due:
        db.session.rollback()
        return 0, 0
    # The look's transaction, which only read, is left open for the first claim's unit of work to carry
    # on (on SQLite, to begin the claim on its connection): no end, check-out and ping of its own.
    sent = failed = 0
    connection = _Connection(cfg["smtp_timeout_seconds"])
    until = now + timedelta(seconds=cfg["claim_seconds"])
    try:
        for start in range(0, len(due), _CLAIM_BATCH):
            try:
                rows = _claim(list(due[start : start + _CLAIM_BATCH]), now, until)
            except Exception:  # The database is away: the next run tries again; nothing was sent.
                db.session.rollback()
                log.exception("outbox %s… could not be claimed; left for the next run", due[start])
                continue
            rows, held_back = _hold_back(rows)
            failed += held_back
            went = _Sent()
            try:
                batch_failed, finished = _send(rows, connection, went, until)
            finally:
                went.mark()
            sent, failed = sent + len(went.marked), failed + batch_failed
            if not finished:
                break
    finally:
        connection.close()
    return sent, failed


def _send(rows: list[Row], connection: _Connection, went: _Sent, until: datetime) -> tuple[int, bool]:
    """Send the claimed ``rows``, adding those that went to ``went`` and recording those that failed;
    returns how many failed and whether all were tried (or else the rest went back for the next run)."""
    cfg = settings()
    # A claim must not lapse while its rows are still being sent, or another deliverer could send them
    # too: past half its length, what is left goes back for the next run.
    stop_at = time.monotonic() + cfg["claim_seconds"] / 2
    failed = 0
    for n, row in enumerate(rows):
        if n and time.monotonic() > stop_at:
            went.mark()
            _release([r.id for r in rows[n:]], until)
            return failed, False
        try:
            data = render(row)
            # Each mail's own envelope sender (VERP), so that a bounce coming back later names it.
            answer = connection.send(tokens.bounce_address(row.id), row.to_addr, data)
        except (smtplib.SMTPException, OSError, UnicodeError, ValueError) as exc:
            connection.close()
            _failed(row, failure(exc))
            failed += 1
            continue
        went.add(row.id)
        # What the MTA said names its queue id: the way to follow the mail on into the MTA's log.
        log.info("sent outbox #%s (%s) to %s, Message-ID %s: %s", row.id, row.kind, row.to_addr,
                 row.message_id, answer)
    return failed, True


def _hold_back(rows: list[Row]) -> tuple[list[Row], int]:
    """The claimed ``rows`` to send, and how many were given up instead: game mail to an address that
    bounces (see :mod:`pbem.mailout.bouncing`) is not sent, so that the sending host is not seen mailing
    a dead address; account mail still goes.  The claim asked for an ASCII address (``to_bouncing``);
    one beyond ASCII is asked here, where its letters are lowercased as the players' addresses were."""
    game_mail = [row for row in rows if row.kind not in bouncing.ACCOUNT_KINDS]
    stopped = bouncing.bouncing(row.to_addr for row in game_mail if not row.to_addr.isascii())
    held = [row.id for row in game_mail
            if (row.to_bouncing if row.to_addr.isascii() else row.to_addr.lower() in stopped)]
    if not held:
        return rows, 0
    _record(held, failed_at=utcnow(), claimed_until=None, last_error=bouncing.HELD_BACK)
    log.info("outbox %s not sent: game mail to an address that bounces", held)
    return [row for row in rows if row.id not in held], len(held)


@dataclass(frozen=True)
class Failure:
    """Why a mail could not be sent: for good (a 5xx refusal) or for now, in the server's words and its
    enhanced status code ("5.1.1", or ''), and whether the refusal was of the recipient's address (not
    of our sender, nor of this one mail's content), so that it counts as a bounce of the address."""

    permanent: bool
    words: str
    status: str = ""
    of_recipient: bool = False


def failure(exc: BaseException) -> Failure:
    """What a failed send means.  Only a 5xx answer to RCPT, DATA or MAIL FROM, or a mail that cannot be
    encoded (an address with letters beyond ASCII), is final: every other failure (a 4xx answer, a
    connection refused or broken, a timeout, a refused login) may pass."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        code, answer = next(iter(exc.recipients.values()), (0, b""))
        return _answered(code, answer, "RCPT")
    if isinstance(exc, smtplib.SMTPDataError):
        return _answered(exc.smtp_code, exc.smtp_error, "DATA")
    if isinstance(exc, smtplib.SMTPSenderRefused):
        return _answered(exc.smtp_code, exc.smtp_error, "MAIL")
    if isinstance(exc, UnicodeError):
        # An address (or text) that cannot be written in plain SMTP fails the same way every time: this
        # server does not speak SMTPUTF8, so retrying would only fail until the time limit.
        return Failure(True, f"cannot be written in SMTP without SMTPUTF8: {type(exc).__name__}: {exc}")
    return Failure(False, f"{type(exc).__name__}: {exc}")


def _answered(code: int, answer: bytes | str, command: str) -> Failure:
    """A failure the server answered to ``command`` with ``code`` and the text ``answer``.  A refused
    RCPT is about the address; a refused DATA only when its status says so (5.1.x the address, 5.2.x the
    mailbox), since a server also refuses one mail's content there; a refused MAIL FROM is about us."""
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)
    text = " ".join(text.split())
    status = bouncing.enhanced_status(text)
    permanent = 500 <= code <= 599
    of_recipient = command == "RCPT" or (command == "DATA" and status.startswith(("5.1.", "5.2.")))
    return Failure(permanent, f"{code} {text}", status, permanent and of_recipient)


def _failed(row: Row, what: Failure) -> None:
    """Record a failed send: retried later with a doubling backoff, or given up when it was refused for
    good or has failed for longer than ``mail.give_up_after_hours`` since it was written."""
    cfg = settings()
    now = utcnow()
    attempts = row.attempts + 1
    expired = now - row.created_at >= timedelta(hours=cfg["give_up_after_hours"])
    if what.permanent or expired:
        why = "refused" if what.permanent else f"given up after {cfg['give_up_after_hours']} hours"
        _record([row.id], attempts=attempts, failed_at=now, claimed_until=None,
                last_error=f"{why}: {what.words}"[:2000])
        log.warning("outbox #%s (%s) to %s, Message-ID %s, %s: %s", row.id, row.kind, row.to_addr,
                    row.message_id, why, what.words)
        if what.of_recipient:
            bouncing.count_refusal(row.to_addr, what.status or "5.0.0", what.words)
        return
    delay = min(cfg["retry_max_seconds"], cfg["retry_base_seconds"] * 2 ** (attempts - 1))
    _record([row.id], attempts=attempts, next_attempt_at=now + timedelta(seconds=delay),
            claimed_until=None, last_error=what.words[:2000])
    log.warning("outbox #%s (%s) to %s, Message-ID %s, failed (attempt %s): %s", row.id, row.kind,
                row.to_addr, row.message_id, attempts, what.words)


# Mails that went are marked sent together, by one UPDATE, after the batch they were claimed in (at most
# _CLAIM_BATCH) or after this many seconds, whichever comes first.  One transaction a mail cost more than
# rendering and sending it (on SQLite a commit waits for the disk); the price is that a deliverer that
# dies before marking them sends the mails of that batch again, with the same Message-IDs, when their
# claim lapses, as it did for the one mail that was being marked.
_MARK_WITHIN_SECONDS = 1.0


class _Sent:
    """The mails of a batch that went: those not yet marked sent, and how many were."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.marked: list[int] = []
        self.mark_by = 0.0

    def add(self, row_id: int) -> None:
        """``row_id`` went: mark it with the others of its batch, or now if the first went long ago."""
        if not self.ids:
            self.mark_by = time.monotonic() + _MARK_WITHIN_SECONDS
        self.ids.append(row_id)
        if time.monotonic() > self.mark_by:
            self.mark()

    def mark(self) -> None:
        """Mark the mails that went as sent (one attempt more each)."""
        if self.ids:
            _retried(_MARK_SENT, {"ids": self.ids, "at": utcnow()}, self.ids, "sent")
            self.marked += self.ids
            self.ids = []


class _Connection:
    """The run's one SMTP connection: opened for the first mail and used for the rest, since opening one
    per mail (greeting, EHLO, perhaps STARTTLS and AUTH) costs more than sending it.  After a failure it is
    closed, and the next mail opens a fresh one: a refusal may have left the session in any state."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._open: Any = None

    def send(self, sender: str, recipient: str, data: bytes) -> str:
        """Send the mail ``data`` from ``sender`` to ``recipient``, connecting first when there is no
        connection (Flask-Mail's settings: host, port, STARTTLS, login); the server's answer to it."""
        with _smtp_timeout(self.timeout_seconds):
            if self._open is None:
                self._open = mail.connect()
                self._open.__enter__()
            if self._open.host is None:  # None when sending is suppressed (MAIL_SUPPRESS_SEND).
                return "not sent: sending is suppressed"
            return _transmit(self._open.host, sender, recipient, data)

    def close(self) -> None:
        """Say goodbye to the server, if connected; a connection that broke is just dropped."""
        if self._open is None:
            return
        with suppress(smtplib.SMTPException, OSError):
            self._open.__exit__(None, None, None)
        self._open = None


# The common form of an address (every address the deliverer writes to in practice), which smtplib's
# ``quoteaddr`` gives back unchanged within angle brackets after parsing it as RFC 5322 (0.035 ms a
# mail, a tenth of the deliverer's CPU).
_PLAIN_ADDRESS = re.compile(inputs.PLAIN_ADDRESS)


def smtp_path(address: str) -> str:
    """``address`` as MAIL FROM and RCPT TO write it, ``<address>``: what smtplib's ``quoteaddr`` makes
    of it, without its parse for a plain address."""
    if _PLAIN_ADDRESS.fullmatch(address):
        return f"<{address}>"
    return smtplib.quoteaddr(address)


def _transmit(smtp: smtplib.SMTP, sender: str, recipient: str, data: bytes) -> str:
    """smtplib's ``sendmail`` for one recipient, the same commands and raising the same exceptions, but
    keeping the server's answer to the mail ("250 2.0.0 Ok: queued as 4XyZ"), which names it in the
    server's log."""
    smtp.ehlo_or_helo_if_needed()
    size = f" SIZE={len(data)}" if smtp.does_esmtp and smtp.has_extn("size") else ""
    smtp.putcmd("mail", f"FROM:{smtp_path(sender)}{size}")
    code, said = smtp.getreply()
    if code != 250:
        _reset(smtp, code)
        raise smtplib.SMTPSenderRefused(code, said, sender)
    smtp.putcmd("rcpt", f"TO:{smtp_path(recipient)}")
    code, said = smtp.getreply()
    if code not in (250, 251):
        _reset(smtp, code)
        raise smtplib.SMTPRecipientsRefused({recipient: (code, said)})
    code, said = smtp.data(data)
    if code != 250:
        _reset(smtp, code)
        raise smtplib.SMTPDataError(code, said)
    return f"{code} {said.decode('utf-8', 'replace')}"


def _reset(smtp: smtplib.SMTP, code: int) -> None:
    """After a refusal, as smtplib does: close on 421 (the server is leaving), else RSET."""
    if code == 421:
        smtp.close()
    else:
        with suppress(smtplib.SMTPException, OSError):
            smtp.rset()


def send_test(to_addr: str) -> tuple[bool, str, str]:
    """Write a test mail to ``to_addr`` into the outbox and send it now, as the deliverer sends every
    mail (settings, envelope sender, headers); whether the MTA took it, what it said, and the mail's
    Message-ID.  The row stays in the outbox, sent or given up, like any other."""
    cfg = settings()
    with unit_of_work() as uow:
        body = compose("mail/test.txt", base_url=base_url())
        row_id = enqueue(to_addr, "pbem test mail", body, kind="test", at_once=True)
        # Claimed by this command at once: no deliverer takes it while it is sent here.
        db.session.execute(update(_TABLE).where(_C.id == row_id)
                           .values(claimed_until=utcnow() + timedelta(seconds=cfg["claim_seconds"])))
        uow.commit()
    row = db.session.execute(select(*_CLAIMED).where(_C.id == row_id)).one()
    db.session.rollback()
    connection = _Connection(cfg["smtp_timeout_seconds"])
    try:
        answer = connection.send(tokens.bounce_address(row.id), row.to_addr, render(row))
    except (smtplib.SMTPException, OSError, UnicodeError, ValueError) as exc:
        what = failure(exc)
        _record([row.id], attempts=1, failed_at=utcnow(), claimed_until=None,
                last_error=f"test mail not taken: {what.words}"[:2000])
        return False, what.words, row.message_id
    finally:
        connection.close()
    _record([row.id], attempts=1, sent_at=utcnow(), claimed_until=None, last_error=None)
    log.info("sent outbox #%s (test) to %s, Message-ID %s: %s", row.id, row.to_addr, row.message_id,
             answer)
    return True, answer, row.message_id


def _record(row_ids: list[int], tries: int = 5, **values: object) -> None:
    """Write how sending went (``values`` on the rows ``row_ids``), retried as :func:`_retried` says."""
    _retried(update(_TABLE).where(_C.id.in_(row_ids)).values(**values), {}, row_ids, sorted(values), tries)


def _retried(statement: Any, parameters: dict[str, Any], row_ids: list[int], what: object,
             tries: int = 5) -> None:
    """Run ``statement`` (an UPDATE of the rows ``row_ids`` recording ``what``) in a transaction of its
    own.  A mail that went out must be marked sent, or it would go out again when its claim lapses: a
    failure here is retried (the run goes on with the other mails either way)."""
    for attempt in range(1, tries + 1):
        try:
            with unit_of_work() as uow:
                db.session.execute(statement, parameters)
                uow.commit()
            return
        except Exception:
            db.session.rollback()
            if attempt == tries:
                log.exception("outbox %s: could not record %s after %s tries", row_ids, what, tries)
                return
            time.sleep(0.1 * 2 ** attempt)


def pending_count() -> int:
    """How many mails are waiting to be sent (not sent, not given up)."""
    return db.session.scalar(select(db.func.count(_C.id)).where(WAITING)) or 0
