"""The second stage of inbound mail: act on stored messages, and answer each one once.

A stored message (status "received") is claimed with a conditional UPDATE to "processing" before
anything is done, as the first statement of the transaction it is handled in (or, for a message the
listener processes as it receives it, the statement after the INSERT that stores it: see
:func:`receive_and_process`), so two processors, or a processor and a restart, never act on it twice.
Then:

- a message to a mail's own envelope sender, ``bounces+TOKEN@<mail domain>``, is "ignored", never
  answered: a delivery report that says the mail failed for good marks its address as bouncing (see
  :mod:`pbem.mailout.bouncing`); anything else there (a delay, a vacation responder's reply) only gets a note;
- mail no person wrote (bounces, auto-replies, list mail, our own mail) is "ignored", never answered;
- a message to ``play+TOKEN@<mail domain>`` is a reply: the token must verify and the From address
  must be the registered address of the player it names; its first line is the command;
- anything else is a pbmserv-style command in the subject (or, failing that, the body's first line).

Each command gets exactly one answer mail, through the outbox: the result ("processed"), or what was
wrong and what would be accepted ("rejected").  A fault of the server's own is "failed", kept for an
operator.  Messages still "received" when a processor starts (a crash between storing and processing,
or before the handling committed) are processed then.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque, namedtuple
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, cast

from flask import Flask, current_app
from sqlalchemy import Connection, Select, and_, bindparam, case, false, func, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm.attributes import instance_state
from sqlalchemy.sql.dml import Insert

import games
from pbem.accounts import mailkeys
from pbem.accounts.accounts import internationalised
from pbem.core import inputs
from pbem.core.database import DirectRead, DirectResult, DirectWrite, insert_with_conflicts, is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, OutboxMail, User, is_key_shaped, utcnow
from pbem.core.redaction import KeysFound
from pbem.core.unit_of_work import UnitOfWork, unit_of_work
from pbem.game import play, queries, rows
from pbem.mailin import answered, authentication, parse, quotes, reading, receive, reports
from pbem.mailin.commands import (
    Answer,
    CommandError,
    comment_for,
    keys_in_mail,
    looks_like_command,
    parse_reply,
    parse_subject,
    player_by_address,
    redact,
    run_reply,
    run_subject,
)
from pbem.mailout import bouncing, digest, notify, outbox, tokens
from pbem.mailout.compose import compose

log = logging.getLogger(__name__)


@dataclass
class Handling:
    """How a message was handled: its final status, a note for the operator, and the answer to send."""

    status: str
    note: str
    answer: Answer | CommandError | None = None
    user: User | None = None
    game: Game | None = None
    reply_to: str | None = None
    # The mail keys the message holds (see commands.keys_in_mail): blanked from all of the above, and
    # from the answer's subject.
    keys: KeysFound | None = None


def mail_domain() -> str:
    """The domain of the server's own addresses."""
    return current_app.config["PBEM"]["mail"]["domain"]


# The queue ---------------------------------------------------------------------------------------------


def process_pending(limit: int = 500, writing: AbstractContextManager[Any] | None = None) -> int:
    """Process stored messages while any wait (oldest first, up to ``limit``); returns how many this call
    handled.  Several processors may run this at once: each takes the next message no other holds.
    ``writing`` is held while each message is claimed and handled (see :class:`Runner`)."""
    handled = 0
    for _attempt in range(limit):
        taken = _take_next(writing or nullcontext())
        if taken is None:
            break
        handled += taken  # 0: another processor took it first.
    return handled


def after_store() -> None:
    """Run after a message is stored (``pbem ingest``): process what is waiting, now."""
    process_pending()


# The processor writes the inbound row through its table: it keeps no object of it, and the ORM's
# bookkeeping (load, change, flush, expire) cost more than the statements.
_TABLE = InboundMail.__table__
_C = _TABLE.c


@dataclass
class _Claimed:
    """A message this processor has claimed: what it needs to act on it, and the token its claim wrote
    into the row's note, by which it knows the message is still its own."""

    id: int
    raw: bytes
    mail_from: str
    rcpt_to: str
    token: str
    # Whether a later message of the same sender's was waiting when this one's outcome was recorded (on
    # PostgreSQL; else, or when the outcome was not recorded by _finish, taken to be so).
    sender_waits: bool = True
    # The message as it was stored, when it was stored in the transaction that claimed it (see
    # receive_and_process): to be stored again if that transaction is rolled back.
    stored: receive.Message | None = None
    # Whether an action committed while it was handled (see _mark_acted).
    committed: bool = False


class _Sent:
    """A statement the processor sends for every message, as its compiled SQL (see DirectWrite, and
    DirectRead for a SELECT): through Core's execution each cost more Python than SQLite spends running
    it (bench/mailstages.py).  The constants written in the statement ("received", a LIMIT) stay bound
    parameters, sent as Core sends them, their values read once from the statement compiled."""

    def __init__(self, statement: Any, returned: tuple[str, ...] = ()) -> None:
        is_select = isinstance(statement, Select)
        self.statement = statement
        self._sender = DirectRead(statement) if is_select else DirectWrite(statement)
        self._constants: dict[str, dict[str, Any]] = {}  # By dialect.
        # The rows a RETURNING clause gives, named as Core's rows are (row.raw): by its columns, or by
        # ``returned`` where it returns an expression (which a DML statement does not list among them).
        names = () if is_select else returned or tuple(column.key for column in statement.exported_columns)
        self._row = namedtuple("_Returned", names) if names else None

    def _values(self, connection: Connection, values: dict[str, Any]) -> dict[str, Any]:
        constants = self._constants.get(connection.dialect.name)
        if constants is None:
            compiled = self.statement.compile(dialect=connection.dialect)
            constants = self._constants[connection.dialect.name] = {
                name: bind.effective_value for bind, name in compiled.bind_names.items() if not bind.required}
        return {**constants, **values}

    def run(self, connection: Connection, values: dict[str, Any]) -> DirectResult:
        """Send the statement (a write) with ``values`` on ``connection``; what the driver answered, the
        rows it returned named by their columns."""
        answered = self._sender.run(connection, self._values(connection, values))
        return answered.named(self._row) if self._row is not None else answered

    def first(self, connection: Connection, values: dict[str, Any]) -> list[Any] | None:
        """The first row of the statement (a SELECT: see DirectRead.rows), or None when there is none."""
        rows = cast(DirectRead, self._sender).rows(connection, self._values(connection, values))
        return rows[0] if rows else None


# The claiming statements, built once: an UPDATE from "received" to "processing" that returns what the
# processor needs, so that taking a message and reading it are one statement.
_TAKE = (
    update(_TABLE).values(status="processing", processed_at=bindparam("now"), note=bindparam("claim_token"))
    .returning(_C.id, _C.raw, _C.mail_from, _C.rcpt_to)
)
_TAKE_ONE = _TAKE.where(_C.id == bindparam("row_id"), _C.status == "received")
_CLAIM_ONE = _Sent(_TAKE_ONE)
_QUEUE = _TABLE.alias("waiting")  # The table again, in the subquery: not correlated with the UPDATE.
_EARLIER = _TABLE.alias("earlier")
# A sender's messages are acted on in the order they came: a player who mails three moves in a row
# without waiting must not see the third refused because it was taken before the second.  On SQLite one
# processor takes them in order; on PostgreSQL processors run side by side, and a message waits while an
# earlier one from the same sender is still waiting or in hand (one in hand for longer than a processor
# ever takes, left by a crash until the next start, holds nothing up).  Whoever finishes a message then
# takes its sender's next one when one waits (see _take_in_order), so that none is left waiting for the
# next look.  The partial index ix_inbound_mail_unfinished (lower(mail_from), id) of the messages waiting or
# in hand answers the condition from those few rows, however many messages the table keeps.
STALE_CLAIM = timedelta(minutes=10)


def _nothing_earlier_unfinished(message: Any) -> Any:
    """No message from the same sender as ``message`` (a table or alias) came before it unfinished."""
    unfinished = (_EARLIER.c.status == "received") | (
        (_EARLIER.c.status == "processing") & (_EARLIER.c.processed_at > bindparam("stale_before"))
    )
    # Delivery reports come from the null sender, and their order is nobody's: they are taken side by side.
    return ~select(_EARLIER.c.id).where(
        _EARLIER.c.id < message.c.id, func.lower(_EARLIER.c.mail_from) == func.lower(message.c.mail_from),
        _EARLIER.c.mail_from != "", unfinished,
    ).exists()


def _senders_turn(message: Any, *first: Any) -> Any:
    """On PostgreSQL: the conditions ``first`` hold for ``message``, and then no other transaction is
    processing a message of the same sender (taking the sender's lock until this transaction ends).  A
    message received and processed in one transaction (see receive_and_process) is not in the table for
    anyone else until it commits, so the conditions cannot see it: this lock can.  (Tried, never waited
    for; delivery reports, from the null sender, take none.  In a key space of its own: _refusals_lately's
    locks take one key.)

    The lock is asked for only once the other conditions hold (a CASE is evaluated in order; the
    planner puts a cheap function before a subquery): a claim that fails because an earlier message of
    the sender's is unfinished must not hold the sender's lock until its transaction ends, or the
    claim of that earlier message, made meanwhile, fails on it, each turns the other away, and the
    sender's mail waits for the next look (30 s) with nobody in hand to take it up."""
    lock = (message.c.mail_from == "") | func.pg_try_advisory_xact_lock(
        _SENDER_LOCKS, func.hashtext(func.lower(message.c.mail_from)))
    return case((and_(*first), lock), else_=false()) if first else lock


_SENDER_LOCKS = 0x6D61696C  # ("mail")
_WAITING = (
    select(_QUEUE.c.id).where(_QUEUE.c.status == "received", _nothing_earlier_unfinished(_QUEUE))
    .order_by(_QUEUE.c.id).limit(1)
)
# On PostgreSQL processors running side by side each take a different message, rather than queueing for
# the lock of the same one.  (On SQLite a message is chosen, and read, before the write lock is taken.)
_TAKE_NEXT_PG = _TAKE.where(
    _C.id == _WAITING.with_for_update(skip_locked=True).scalar_subquery(),
    _senders_turn(_TABLE, _C.status == "received"),
)
_TAKE_ONE_PG = _TAKE.where(_C.id == bindparam("row_id"), _senders_turn(
    _TABLE, _C.status == "received", _nothing_earlier_unfinished(_TABLE)))
# The sender's next waiting message, once one of theirs is finished.
_TAKE_SENDERS_NEXT_PG = _TAKE.where(
    _C.id == _WAITING.where(func.lower(_QUEUE.c.mail_from) == func.lower(bindparam("sender")))
    .with_for_update(skip_locked=True).scalar_subquery(),
    _senders_turn(_TABLE, _C.status == "received"),
)
_CLAIM_NEXT_PG, _CLAIM_ONE_PG, _CLAIM_SENDERS_NEXT_PG = (
    _Sent(statement) for statement in (_TAKE_NEXT_PG, _TAKE_ONE_PG, _TAKE_SENDERS_NEXT_PG))
# Whether the message is still this processor's to finish: claimed by it in a transaction that committed
# (the row is "processing" under its token), or "received" again because the claim's transaction was
# rolled back (a refused move, a fault) and nobody else has taken it since, so that it is taken again by
# the statement that asks.  A message another processor took meanwhile is neither: it is left to that one.
_HELD = (_C.id == bindparam("row_id")) & (
    (_C.status == "received") | ((_C.status == "processing") & (_C.note == bindparam("claim_token")))
)
_HOLD = update(_TABLE).where(_HELD).values(
    status="processing", note=bindparam("claim_token"),
    processed_at=func.coalesce(_C.processed_at, bindparam("now")),
)


class MessageTaken(RuntimeError):
    """The message being handled was taken by another processor after this one lost its claim."""


def _take_next(writing: AbstractContextManager[Any]) -> int | None:
    """Take the oldest waiting message and handle it (holding ``writing`` meanwhile); how many messages
    that handled (on PostgreSQL its sender's next ones too), 0 when another processor took the message
    this one chose, None when nothing waits (or, on PostgreSQL, nothing that can be taken now)."""
    if is_postgresql():
        # The claim holds only that row (another processor skips it), so the message is read after it.
        with writing:
            return _take_in_order(_CLAIM_NEXT_PG) or None
    # On SQLite whether anything waits is read first, without the write lock: a processor woken with
    # nothing left to do must not queue for the database's one lock behind the listener's stores.  The
    # message is read (parsed) there too, before the claim: the claim holds the database's one write lock,
    # and every web write and every store waits for it.
    waiting = _PEEK_NEXT.first(db.session.connection(), {})
    if waiting is None:
        db.session.rollback()
        return None
    # (The peek's transaction is left open for the claim's unit of work to end on its own connection,
    # which then takes the write lock: UnitOfWork.begin.)
    row_id, raw, rcpt_to = waiting
    read = _read(raw, rcpt_to)
    with writing:
        return int(_take(_CLAIM_ONE, read, row_id=row_id) is not None)


def process_one(row_id: int, writing: AbstractContextManager[Any] | None = None) -> bool:
    """Claim and handle one stored message; False when another processor had it already.  On SQLite the
    message is read (parsed) before it is claimed, outside the database's one write lock (and outside
    ``writing``, held while it is claimed and handled: see :class:`Runner`); on PostgreSQL the claim
    holds only its row, and the message is read after it, in the same transaction (a statement and a
    transaction fewer)."""
    if is_postgresql():
        with writing or nullcontext():
            return _take_by_id_in_order(row_id) > 0
    waiting = _PEEK_ONE.first(db.session.connection(), {"row_id": row_id})
    if waiting is None:
        db.session.rollback()
        return False
    # (Left open for the claim's unit of work to end, as in _take_next.)
    _id, raw, rcpt_to = waiting
    read = _read(raw, rcpt_to)
    with writing or nullcontext():
        return _take(_CLAIM_ONE, read, row_id=row_id) is not None


# A waiting message's bytes, read before it is claimed.
_PEEKED = select(_C.id, _C.raw, _C.rcpt_to).where(_C.status == "received")
_PEEK_NEXT = _Sent(_PEEKED.order_by(_C.id).limit(1))
_PEEK_ONE = _Sent(_PEEKED.where(_C.id == bindparam("row_id")))


def _read(raw: bytes, rcpt_to: str) -> parse.Incoming | str:
    """The message parsed, or why it could not be (``parse.read`` never raises: a fault of its own)."""
    try:
        return parse.read(raw, rcpt_to)
    except Exception as exc:
        log.exception("a stored message could not be parsed")
        return f"could not be parsed: {type(exc).__name__}: {exc}"


def _take_in_order(statement: _Sent, **params: object) -> int:
    """On PostgreSQL: claim a message by ``statement`` (one that waits for nothing earlier of its
    sender's) and handle it, then its sender's next waiting messages, one by one; how many it handled.
    A message that had to wait for an earlier one is taken here, by the processor that finished that one.

    The next is looked for only when one is known to wait: the statement recording the outcome says
    whether a later message of the sender's was stored by then, and a processor of this listener turned
    away since says so here (_turned_away).  Looking every time cost a statement and a rollback a
    message, and the rollback made the driver forget every statement it had prepared on the connection.
    """
    handled = 0
    claimed = _take(statement, None, stale_before=utcnow() - STALE_CLAIM, **params)
    while claimed is not None:
        handled += 1
        if not claimed.mail_from:
            break
        # (Both asked: the turned-away mark is spent either way, the next found answers both.)
        turned_away = _turned_away.spend(claimed.mail_from)
        if not (claimed.sender_waits or turned_away):
            break
        claimed = _take(_CLAIM_SENDERS_NEXT_PG, None, stale_before=utcnow() - STALE_CLAIM,
                        sender=claimed.mail_from)
    return handled


class _TurnedAway:
    """The senders one of whose messages a processor of this process could not claim because an earlier
    one of theirs was waiting or in hand.

    The statement that records an outcome sees what was stored before it ran; a message stored after it,
    and turned away before that outcome commits, is not seen.  So a processor turned away marks its
    sender here, then tries once more: whoever finishes an earlier message of the sender after the mark
    finds it and takes the sender's next; one who finished before it has committed, and the second try
    takes the message."""

    def __init__(self) -> None:
        self._senders: set[str] = set()
        self._lock = threading.Lock()

    def mark(self, sender: str) -> None:
        """A message of ``sender``'s was turned away."""
        with self._lock:
            self._senders.add(sender.lower())

    def spend(self, sender: str) -> bool:
        """Whether a message of ``sender``'s was turned away since last asked (the mark is taken off)."""
        with self._lock:
            if sender.lower() not in self._senders:
                return False
            self._senders.discard(sender.lower())
            return True


_turned_away = _TurnedAway()
# A stored message still waiting, and its sender: read when a claim by its id took nothing.
_STILL_WAITING = select(_C.mail_from).where(_C.id == bindparam("row_id"), _C.status == "received")


def _take_by_id_in_order(row_id: int) -> int:
    """On PostgreSQL: claim the message ``row_id`` and handle it, with its sender's next ones (see
    _take_in_order); how many were handled.  When it was turned away by an earlier message of its
    sender's, mark the sender (see _TurnedAway) and try once more."""
    handled = _take_in_order(_CLAIM_ONE_PG, row_id=row_id)
    if handled:
        return handled
    sender = db.session.connection().execute(_STILL_WAITING, {"row_id": row_id}).scalar()
    db.session.rollback()  # (Only read: ended by a COMMIT, see pbem.core.database.)
    if not sender:  # Taken by another processor, or from the null sender (never turned away).
        return 0
    _turned_away.mark(sender)
    return _take_in_order(_CLAIM_ONE_PG, row_id=row_id)


def _take(statement: _Sent, read: parse.Incoming | str | None = None,
          **params: object) -> _Claimed | None:
    """Claim a message by ``statement`` and handle it: act on it, record the outcome and answer it.
    Returns what was claimed, or None when there was no message to take.  ``read`` is the message already
    parsed (or why it could not be), where it was parsed before the claim; else it is parsed after it.

    The claim is the first statement of the transaction the message is handled in, not a transaction of
    its own: a mailed move commits with its claim, its outcome and its answer, one commit a message.
    Until then the claim holds the row (on PostgreSQL by its row lock: another processor skips it, or
    waits for it and finds it taken; on SQLite by the write lock), and a crash leaves the message
    "received", to be processed again from the start, as nothing of it was committed.  When the claim's
    transaction is rolled back (a refused move, a fault), the outcome is written in a new one only if the
    message is still this processor's (see ``_HELD``), so it is recorded and answered once.  A message
    that cannot be handled is recorded "failed" with its reason, and never goes back to the queue.
    """
    token = f"claimed by a processor ({uuid.uuid4().hex})"
    # The message's unit of work: the move path (and every action under a game's lock) runs in it and
    # leaves the commit to _finish, so the claim, the move, the message's outcome and its answer commit
    # together, or not at all.  What an action that commits by itself (a vacation, a challenge sent) wrote
    # is what the answer shows: the objects keep it through the commit (keep_loaded) instead of being read
    # back, in the next transaction, row by row.  Only for this message: the next one starts from a
    # session that reads everything anew.
    with unit_of_work(keep_loaded=True) as uow:
        row = statement.run(uow.connection(), {"now": utcnow(), "claim_token": token, **params}).one_or_none()
        if row is None:
            # Nothing changed: ended by a COMMIT, not the rollback the unit of work's end would send, after
            # which the PostgreSQL driver forgets every statement it has prepared on the connection (and
            # the next message's would be planned afresh: up to 2 ms of the server's CPU a message).
            uow.commit()
            return None
        claimed = _Claimed(row.id, row.raw, row.mail_from, row.rcpt_to, token=token)
        _act(uow, claimed, read)
    return claimed


def _act(uow: UnitOfWork, claimed: _Claimed, read: parse.Incoming | str | None, *,
         may_leave: bool = False) -> None:
    """Handle the message ``claimed`` in the transaction that claimed it: act on it, record the outcome
    and answer it (see :func:`_take`).  With ``may_leave``, a wait for a lock that ran out of time, before
    anything was committed, raises :class:`_LeftForLater` (see :func:`receive_and_process`)."""
    mail = read if isinstance(read, parse.Incoming) else None
    try:
        if isinstance(read, str):
            raise UnreadableMessage(read)
        stop_marking = uow.before_each_commit(lambda: _mark_acted(uow, claimed))
        try:
            if mail is None:
                mail = parse.read(claimed.raw, claimed.rcpt_to)
            outcome = _handle(mail, claimed.mail_from, bool(claimed.rcpt_to))
        finally:
            stop_marking()
        # Still in that transaction, the outcome marks the message acted on itself; after an action that
        # committed by itself (stamped then) or was refused, it is recorded in a transaction of its own.
        _finish(uow, claimed, mail, outcome, acting=uow.in_transaction)
    except Exception as exc:
        if may_leave and not claimed.committed and _lock_timed_out(exc):
            uow.rollback()
            raise _LeftForLater("a lock it waited for was held too long") from exc
        log.exception("inbound message #%s could not be processed", claimed.id)
        uow.rollback()
        if not _fail(uow, claimed, mail, f"{type(exc).__name__}: {exc}"):
            # Not even the failure could be written: the database is away, not the message at fault.
            # The caller stops here (the listener looks again after its interval; the listener that had
            # just received it answers the sending MTA that it failed for now) rather than take it again.
            raise


# Received and processed in one transaction ------------------------------------------------------------


@dataclass
class Received:
    """What came of a message the listener received: its row, and what is left for its processors."""

    row_id: int
    # Stored only, for the processors to take by its id: it had to wait for an earlier one of its
    # sender's, or it was stored before.
    waiting: bool
    # Processed, and a later message of its sender's waits (see _take_in_order): for the processors to
    # look for.
    sender_waits: bool = False


def receive_and_process(raw: bytes, mail_from: str = "", rcpt_to: list[str] | None = None,
                        writing: AbstractContextManager[Any] | None = None) -> Received:
    """Store a message and process it in the same transaction, where it can be (the listener, while the
    sending MTA waits for its answer): a commit, a claim and a connection fewer a message than storing it
    and handing it to a processor.  The stages stay those of the queue (store, claim, act, record and
    answer), in one transaction: the claim is the statement after the INSERT, and a message that must
    wait for an earlier one of its sender's (see ``_nothing_earlier_unfinished``) is only stored.  The
    sending MTA is answered after the commit; a crash before it leaves nothing, and the MTA, which got no
    answer, sends the message again.  A message whose handling is rolled back (a refused move, a fault)
    is stored again, as its processor's, in the transaction that records its outcome (see ``_restore``).
    ``writing`` (the listener's turn among its writers on SQLite) is held while it is stored and
    processed; the message is read (parsed) before.

    Raises :class:`pbem.mailin.receive.MalformedMessage` for bytes that have no header block at all.
    """
    message = receive.prepare(raw, mail_from, rcpt_to)
    if isinstance(writing, _LOCK_TYPE) and writing.locked():
        # SQLite: another of the listener's writers has the database (a message in hand): this one is
        # only stored, in its turn, for the processor, rather than wait for that one and then be
        # processed here while the next ones wait; and a backlog is taken in the order it came.
        return Received(receive.store_message(raw, mail_from, rcpt_to, writing)[0], waiting=True)
    read = _read(raw, message.rcpt_to)  # (Before the turn is taken, as the processor reads.)
    token = f"claimed by a processor ({uuid.uuid4().hex})"
    try:
        with writing or nullcontext(), unit_of_work(keep_loaded=True) as uow:
            connection = uow.connection()
            row_id = receive.insert(connection, message)
            if row_id is None:  # Stored before: its processor has it, or will.
                row_id = receive.find(connection, message.key)
                uow.rollback()
                log.info("duplicate message %s ignored", message.key)
                return Received(row_id, waiting=True)
            try:
                row = _TAKE_STORED[connection.dialect.name].run(connection, {
                    "row_id": row_id, "now": utcnow(), "claim_token": token,
                    "stale_before": utcnow() - STALE_CLAIM,
                }).one_or_none()
            except DBAPIError as exc:
                raise _LeftForLater(f"the claim failed: {exc.orig}") from exc
            if row is None:  # An earlier message of its sender's is waiting or in hand.
                uow.commit()
                log.info("stored message %s from %s as #%s, after an earlier one", message.key,
                         message.mail_from, row_id)
                return Received(row_id, waiting=True)
            claimed = _Claimed(row_id, raw, message.mail_from, message.rcpt_to, token=token, stored=message)
            _act(uow, claimed, read, may_leave=True)
    except _LeftForLater as exc:
        # Only stored, as before: the listener's processors take it (and wait for whatever it waits for).
        log.info("message %s from %s not processed as it came (%s); stored for the processors", message.key,
                 message.mail_from, exc)
        return Received(receive.store_message(raw, mail_from, rcpt_to, writing)[0], waiting=True)
    # (On SQLite what was only stored is handed to the processor by its id, and taken in that order.)
    return Received(claimed.id, waiting=False, sender_waits=is_postgresql() and bool(claimed.mail_from) and (
        _turned_away.spend(claimed.mail_from) or claimed.sender_waits))


_LOCK_TYPE = type(threading.Lock())


class _LeftForLater(Exception):
    """A message received and processed in one transaction is left to the processors instead: its claim
    failed, or it waited for a lock for too long (a game another request holds) while its sender waits."""


# How long a message processed as it is received waits for a lock (a game's) before it is left to the
# processors: the sending MTA waits for the answer meanwhile, and so does every mail after it.
RECEIVING_LOCK_TIMEOUT = "100ms"


def _lock_timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL's refusal of a lock waited for longer than lock_timeout."""
    return isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) == "55P03"


# The message stored in this transaction, claimed as the next statement: only when nothing earlier of its
# sender's is unfinished.  (On SQLite the processor the listener hands stored messages to takes them in
# the order they came, so this is asked of what it has not taken yet; on PostgreSQL as of every claim.)
_TAKE_STORED = {
    "sqlite": _Sent(_TAKE_ONE.where(_nothing_earlier_unfinished(_TABLE))),
    # (The lock timeout for the rest of the transaction set by the claim itself: not a round trip more.)
    "postgresql": _Sent(
        _TAKE_ONE_PG.where(func.set_config("lock_timeout", RECEIVING_LOCK_TIMEOUT, True) != "")),
}


@cache
def _restore_statement(dialect: str) -> Insert:
    """The INSERT of :func:`_restore` for ``dialect``, built when first asked (see ``receive._insert``)."""
    return insert_with_conflicts(dialect)(_TABLE).values(
        status="processing", note=bindparam("claim_token"), processed_at=bindparam("now"),
    ).on_conflict_do_nothing().returning(_C.id)


def _restore(claimed: _Claimed) -> None:
    """At the start of a transaction recording the outcome of a message received and processed in one
    (see :func:`receive_and_process`): store it again, as this processor's, when the transaction that
    stored it was rolled back.  Under a new id (its old one may be another's by now on SQLite), so it is
    recorded after any later message of its sender's: what was rolled back did nothing.  When its key is
    stored (its own row, committed by an action that commits by itself, or the same message sent again
    and stored meanwhile) nothing is stored, and the row is left to whoever holds it (see ``_HELD``)."""
    if claimed.stored is None:
        return
    connection = db.session.connection()
    row_id = connection.execute(_restore_statement(connection.dialect.name), {
        **claimed.stored.values(), "claim_token": claimed.token, "now": utcnow(),
    }).scalar()
    if row_id is not None:
        claimed.id = row_id


class UnreadableMessage(RuntimeError):
    """A stored message the parser itself failed on (``parse.read`` reads anything else)."""


def _identity(obj: User | Game | None) -> int | None:
    """The id of a loaded object without reading it again (a commit since has expired its attributes)."""
    if obj is None:
        return None
    if isinstance(obj, rows.PlainRow):  # (Read as plain rows: see _reply.)
        return obj.id
    identity = instance_state(obj).identity
    return identity[0] if identity else obj.id


def _hold(claimed: _Claimed) -> bool:
    """At the start of a write transaction: whether the message is still this processor's, taking it
    again when its claim was rolled back.  First, before any other lock is taken: on PostgreSQL a
    processor that took it meanwhile holds its row, and this one waits for it with nothing else held."""
    _restore(claimed)
    held = db.session.connection().execute(_HOLD, {
        "row_id": claimed.id, "claim_token": claimed.token, "now": utcnow(),
    })
    if held.rowcount == 1:
        return True
    db.session.rollback()
    log.warning("inbound #%s was taken by another processor after its claim was rolled back; left to it",
                claimed.id)
    return False


def _finish(uow: UnitOfWork, claimed: _Claimed, mail: parse.Incoming, outcome: Handling,
            acting: bool = False) -> None:
    """Record the outcome and write the answer: in the transaction of the handling when it is still open
    (``acting``; a move: one commit for the claim, the move, the outcome and the answer), or else in one
    of theirs, if the message is still this processor's."""
    if not acting:
        # The reads since the action end with a commit, not with the rollback begin() would do: that
        # would expire every object the answer shows (see _take).  They wrote nothing.
        uow.commit()
        uow.begin()
        if not _hold(claimed):
            return
    note = outcome.note
    if outcome.answer is not None and not _answer(mail, outcome):
        note += " (not answered: too many refusals to this address lately)"
    connection = uow.connection()
    statements = _RECORDS_PG if connection.dialect.name == "postgresql" else _RECORDS
    recorded = statements[acting].run(connection, {
        "row_id": claimed.id, "claim_token": claimed.token, "outcome": outcome.status,
        "outcome_note": _stored_note(note), "of_user": _identity(outcome.user),
        "of_game": _identity(outcome.game), "now": utcnow(),
    })
    if statements is _RECORDS_PG:
        row = recorded.first()
        if row is not None:
            claimed.sender_waits = row.sender_waits
        done = row is not None
    else:
        done = recorded.rowcount == 1
    if not done:  # Its claim was lost in a transaction of the handling's own.
        uow.rollback()
        raise MessageTaken(f"inbound #{claimed.id} was taken by another processor while it was handled")
    uow.commit()
    log.info("inbound #%s from %s: %s (%s)", claimed.id, mail.from_addr, outcome.status, outcome.note[:200])


# Both only while the message is this processor's (see _HELD), which they end.
_RECORD_OUTCOME = update(_TABLE).where(_HELD).values(
    status=bindparam("outcome"), note=bindparam("outcome_note"), user_id=bindparam("of_user"),
    game_id=bindparam("of_game"), processed_at=bindparam("now"),
)
# The same in the transaction that acted, which it marks acted on as _mark_acted would, in one statement.
_RECORD_ACTED_OUTCOME = _RECORD_OUTCOME.values(acted_at=func.coalesce(_C.acted_at, bindparam("now")))
_LATER = _TABLE.alias("later")
# On PostgreSQL each also says whether a later message of the sender's waits (see _take_in_order).
_SENDER_WAITS = select(_LATER.c.id).where(
    func.lower(_LATER.c.mail_from) == func.lower(_C.mail_from), _LATER.c.id > _C.id,
    _LATER.c.status == "received",
).exists()
# By whether the transaction acted.
_RECORDS = {False: _Sent(_RECORD_OUTCOME), True: _Sent(_RECORD_ACTED_OUTCOME)}
_RECORDS_PG = {
    acting: _Sent(writer.statement.returning(_SENDER_WAITS.label("sender_waits")), ("sender_waits",))
    for acting, writer in _RECORDS.items()
}


def _fail(uow: UnitOfWork, claimed: _Claimed, mail: parse.Incoming | None, note: str) -> bool:
    """Keep the message as "failed" for an operator, and tell a person who wrote it (if it is still this
    processor's: see ``_HELD``).  Whatever made the handling fail may make its answer fail too (a mail the
    database refuses to quote): then the failure is recorded without one, so that the message never goes
    back to the queue to fail again.  False when nothing could be recorded (the database is away)."""
    answering = mail is not None and bool(mail.from_addr) \
        and reports.automatic(mail, None, mail_domain()) is None
    unanswered = f"{note} (not answered: the answer could not be written either)"
    for answer in (True, False) if answering else (False,):
        try:
            uow.begin()
            _restore(claimed)
            failed = db.session.connection().execute(_RECORD_OUTCOME, {
                "row_id": claimed.id, "claim_token": claimed.token, "outcome": "failed",
                "outcome_note": _stored_note(note if answer or not answering else unanswered),
                "of_user": None, "of_game": None, "now": utcnow(),
            })
            if failed.rowcount != 1:
                uow.rollback()
                log.warning("inbound #%s failed here and was taken by another processor; left to it",
                            claimed.id)
                return True
            if answer:
                assert mail is not None
                sorry = CommandError(
                    "Your mail could not be processed because of a fault on the server. It has been kept "
                    "for the operator. Look at the game on the web before sending it again: it may have "
                    "been played."
                )
                _answer(mail, Handling("failed", note, sorry))
            uow.commit()
            return True
        except Exception:
            uow.rollback()
            log.exception("could not record the failure of inbound message #%s%s", claimed.id,
                          " with its answer" if answer else "")
    return False


def _stored_note(note: str) -> str:
    """A note as the row keeps it: bounded, and without what no stored text may carry (an exception's
    words may quote the message)."""
    return inputs.clean(note)[:2000]


# Knowing whether a message did anything, for a restart after a crash ---------------------------------


def _mark_acted(uow: UnitOfWork, claimed: _Claimed) -> None:
    """Before every commit while a message is handled (a hook of its unit of work), stamp the message's
    ``acted_at``, in the same transaction: after a crash, a message without it changed nothing.  Every
    commit, not only those the session saw changes in: the move path writes some rows by plain
    statements, which the session does not see, and a stamp too many only means a person is asked to
    look rather than the message run again.

    The stamp also holds the message (see ``_HELD``): a commit of the handling's that would find it taken
    by another processor, its own claim rolled back, fails instead, so that it is acted on only once.
    """
    held = uow.session.connection().execute(_HOLD_ACTED, {
        "row_id": claimed.id, "claim_token": claimed.token, "now": utcnow(),
    })
    if held.rowcount != 1:
        raise MessageTaken(f"inbound #{claimed.id} was taken by another processor while it was handled")
    claimed.committed = True


_HOLD_ACTED = _HOLD.values(acted_at=func.coalesce(_C.acted_at, bindparam("now")))


def recover_interrupted(claimed_before: datetime) -> tuple[int, int]:
    """Resolve messages a crash left "processing" (claimed before ``claimed_before``): one that changed
    nothing is processed again from the start; one that did is marked "interrupted" and its sender told
    to look (its answer was lost).  Returns (requeued, interrupted)."""
    stuck = db.session.scalars(
        select(InboundMail.id).where(InboundMail.status == "processing",
                                     InboundMail.processed_at < claimed_before)
        .order_by(InboundMail.id)
    ).all()
    db.session.rollback()
    requeued = interrupted = 0
    for row_id in stuck:
        with unit_of_work() as uow:
            row = db.session.get(InboundMail, row_id)
            if row is None or row.status != "processing":
                uow.rollback()
                continue
            if row.acted_at is None:
                row.status, row.processed_at = "received", None
                requeued += 1
            else:
                row.status, row.processed_at = "interrupted", utcnow()
                row.note = "interrupted by a crash after it was acted on; its sender was told to look"
                mail = parse.read(row.raw, row.rcpt_to)
                if mail.from_addr and reports.automatic(mail, None, mail_domain()) is None:
                    _answer(mail, Handling("interrupted", row.note, CommandError(
                        "Your mail was acted on, but the server stopped before it could answer. Look at "
                        "your game on the web (or send 'show') to see where it stands before sending "
                        "anything again."
                    ), game=db.session.get(Game, row.game_id) if row.game_id else None))
                interrupted += 1
            uow.commit()
        log.warning("inbound #%s was left processing by a crash: %s", row_id, row.status)
    return requeued, interrupted


def stuck(older_than: timedelta = timedelta(minutes=10)) -> list[InboundMail]:
    """Messages that need an operator: failed, interrupted, or processing for longer than it takes."""
    return list(db.session.scalars(
        select(InboundMail).where(
            (InboundMail.status.in_(("failed", "interrupted")))
            | ((InboundMail.status == "processing") & (InboundMail.processed_at < utcnow() - older_than))
        ).order_by(InboundMail.id)
    ))


# Deciding what a message is ---------------------------------------------------------------------------


def _handle(mail: parse.Incoming, mail_from: str, by_smtp: bool) -> Handling:
    envelope = mail_from if by_smtp else _return_path(mail)
    bounce_address = next((a for a in mail.recipients if tokens.is_bounce_address(a)), None)
    if bounce_address is not None:
        return _bounce_report(mail, envelope, bounce_address)
    if mail.from_ambiguous:
        # Whoever is named first may not be who sent it: act for nobody, and answer nobody.
        return Handling("rejected", "the From header does not name one sender beyond doubt; not answered")
    if internationalised(mail.from_addr) and (not mail.from_addr.isascii()
                                              or not _anyones_address(mail.from_addr)):
        # As sign-up and a change of address refuse it: no account can have such an address (one written
        # in its xn-- form may be older than the refusal), and an answer could not go to it.
        return Handling("rejected", "from an address with letters beyond plain ASCII, which no account may "
                                    "have; not answered")
    reason = reports.automatic(mail, envelope, mail_domain())
    if reason is not None:
        return Handling("ignored", reason)
    if mail.unreadable is not None:
        return Handling("rejected", f"unreadable: {mail.unreadable}", CommandError(
            f"Your mail could not be read: {mail.unreadable}. Nothing was done. Send your command again "
            "as a plain-text mail, without attachments."
        ))
    checked = _authenticated(mail)
    if checked is not None and checked.fails_dmarc and current_app.config["PBEM"]["mail"]["require_dmarc"]:
        domain = checked.domain or mail.from_addr.rpartition("@")[2]
        return Handling("rejected", f"From domain fails DMARC ({checked.said}); nothing done", CommandError(
            f"Your mail was not acted on: the mail server that received it found that it fails the DMARC "
            f"policy of {domain}, the domain of its From address, so it may not be from you. If you sent "
            "it, something on its way (a forwarding address, a mailing list) changed it: send it again "
            "straight from your own mail account, or play on the web."
        ))
    outcome = _command_or_reply(mail)
    if checked is not None:  # What the MTA found goes into the note, for the operator.
        outcome.note = f"{outcome.note} [{checked.said}]"
    return outcome


def _anyones_address(address: str) -> bool:
    """Whether ``address`` is an account's (one made before such addresses were refused may be)."""
    return db.session.scalar(select(User.id).where(func.lower(User.email) == address.lower())) is not None


def _authenticated(mail: parse.Incoming) -> authentication.Verdict | None:
    """What the local MTA found of the sender (None unless ``mail.authserv_id`` is set and it wrote a
    result under it)."""
    authserv_id = current_app.config["PBEM"]["mail"]["authserv_id"]
    if not authserv_id.strip():
        return None
    checked = authentication.verdict(mail, authserv_id)
    if checked is None and current_app.config["PBEM"]["mail"]["require_dmarc"]:
        log.warning("no Authentication-Results from %s on a mail from %s: is the milter running?",
                    authserv_id, mail.from_addr)
    return checked


def _command_or_reply(mail: parse.Incoming) -> Handling:
    """A reply (to a ``play+TOKEN`` address) or a command, acted on.  A mail key it holds is never
    repeated: not in the answer nor its subject, the note kept and logged, or a comment passed on."""
    keys = keys_in_mail(mail.from_addr, mail.subject, mail.text)
    for address in mail.recipients:
        token = tokens.reply_token_in(address)
        if token is not None:
            return _without_keys(_reply(mail, token, address, keys), keys)
    return _without_keys(_subject_command(mail, keys), keys)


def _note(keys: KeysFound, said: str, refusal: str = "") -> str:
    """The note kept of a command: what it said and why it was refused, cut short, the mail's keys blanked
    before the cut (so that no part of one is left)."""
    note = repr(keys.blank(said)[:100])
    return f"{note}: {keys.blank(refusal)[:300]}" if refusal else note


def _without_keys(outcome: Handling, keys: KeysFound) -> Handling:
    """``outcome`` with the mail keys ``keys`` blanked from its note and its answer, and kept for its
    answer's subject."""
    outcome.note = keys.blank(outcome.note)
    if outcome.answer is not None:
        outcome.answer.message = keys.blank(outcome.answer.message)
        outcome.answer.extra = keys.blank(outcome.answer.extra)
    outcome.keys = keys
    return outcome


def _bounce_report(mail: parse.Incoming, envelope: str | None, address: str) -> Handling:
    """A message to the envelope sender of one of our mails: what came of that mail, never answered.
    Only a delivery report that says it failed for good counts; a vacation responder's reply, a delay or
    a forged token is noted and nothing else."""
    outbox_id = tokens.bounced_mail(address)
    if outbox_id is None:
        return Handling("ignored", "to a bounce address whose token is not ours; nothing done")
    sent = db.session.get(OutboxMail, outbox_id)
    if sent is None:
        return Handling("ignored", f"to the bounce address of outbox #{outbox_id}, which no longer exists")
    report = reports.delivery_report(mail)
    if report is None:
        why = reports.automatic(mail, envelope, mail_domain()) or mail.unreadable or "written by a person?"
        return Handling("ignored", f"to the bounce address of outbox #{outbox_id}, not a delivery report "
                                   f"({why}); not counted as a bounce")
    said = f"{report.action} {report.status or '(no status)'} {report.diagnostic}".strip()
    if not report.hard:
        return Handling("ignored", f"delivery report on outbox #{outbox_id}: {said}; not a bounce")
    late = bouncing.out_of_time(sent)
    if late is not None:
        return Handling("ignored", f"delivery report on outbox #{outbox_id}: {late}; not counted")
    if not bouncing.first_report(sent):
        return Handling("ignored", f"delivery report on outbox #{outbox_id}: {said}; a report on that mail "
                                   "was counted already, and one mail's failure counts once")
    user = bouncing.count_bounce(sent.to_addr, report.status, report.diagnostic)
    note = f"bounce of outbox #{outbox_id} to {sent.to_addr}: {said}; {bouncing.counted(user)}"
    return Handling("ignored", note, user=user)


def _return_path(mail: parse.Incoming) -> str | None:
    """The envelope sender an MTA wrote into Return-Path, or None when the message has none."""
    value = mail.header("Return-Path")
    return value if value else None


def _reply(mail: parse.Incoming, token_text: str, address: str, keys: KeysFound) -> Handling:
    """A reply to a game mail: check the token and the sender, then run the first line's command."""
    token = tokens.parse_reply(token_text)
    # The game is locked and read as plain rows, as the move path's common case reads it, which then
    # plays on them (in this transaction); its players come with it, so the token's player is read with
    # them.  What is wrong with the token is still said first: a forged address learns nothing of the
    # game it names.
    game = cast(Game | None, play.lock_game_rows(token.game_id)) if token is not None else None
    user = _token_user(token.user_id, game) if token is not None else None
    if token is None or user is None or not tokens.verify_reply(token, user):
        return Handling("rejected", f"bad reply token {token_text[:40]}", CommandError(
            f"The address you replied to ({address}) is not a valid reply address: it was changed, or it "
            "has expired because the player's reply addresses were renewed. Reply to the latest mail about "
            "your game, or play on the web."
        ))
    if mail.from_addr != user.email.lower():
        if _former_address(user, mail.from_addr):
            # Said to the sender, as every refusal (and counted as one, see _answer), without the new
            # address or anything of the game: the old address may be someone else's by now.
            changed = CommandError(
                "This account's mail address has changed, so replies for it are taken only from the "
                "address the account now has; nothing was done. Reply from that address (to this game's "
                "mail or a later one), or play on the web."
            )
            return Handling("rejected", f"token of {user.handle} from a former address, {mail.from_addr}",
                            changed)
        return Handling("rejected", f"token of {user.handle} from {mail.from_addr}", CommandError(
            "This reply address belongs to another player's mail, so your reply was not used. Answer "
            "from the address your game mails are sent to, or play on the web."
        ))
    if game is None:
        return Handling("rejected", f"no game #{token.game_id}", CommandError(
            f"Game #{token.game_id} no longer exists."), user)
    reply_to = tokens.reply_address(game.id, token.seat, user)
    # The player's own words; the 'if' lines (conditional moves) come out first, so that none can reach a
    # comment; then the move as a person reads it.
    ifs, words = reading.take_conditionals(quotes.own_words(
        mail.text, lambda: answered.texts(mail, user, game)))
    said = reading.read_reply(words, reading.Position.in_game(game, token.seat))
    line, comment = said.command, keys.blank(said.comment)
    try:
        if said.moves:
            raise CommandError(said.question())
        command = parse_reply(line, ifs)
        if command.verb != "move" or command.conditionals:
            # Every other command reads and changes the game as model objects, as the web's do (the
            # move path's other cases among them).
            game, user = _as_models(game, user)
        answer = run_reply(command, user, game, token.seat, comment)
    except CommandError as exc:
        if exc.game is None:
            # Show the player where their game stands, from their seat, under what went wrong.
            exc.game, exc.seat = game, game.seat_of(user)
        return Handling("rejected", _note(keys, line, exc.message), exc, user, game, reply_to)
    return Handling("processed", _note(keys, line), answer, user, game, reply_to)


def _token_user(user_id: int, game: Game | None) -> User | None:
    """The player a reply token names: as read with the game, when they hold one of its seats."""
    seated = next((s.user for s in game.seats if s.user is not None and s.user.id == user_id), None) \
        if game is not None else None
    return seated if seated is not None else db.session.get(User, user_id)


def _as_models(game: Game, user: User) -> tuple[Game, User]:
    """The game and the player of a reply as model objects, when they were read as plain rows (see
    :func:`_reply`): the game locked and read again by the move path's read, the player with it."""
    if not isinstance(game, rows.PlainRow):
        return game, user
    locked = play.lock_game(game.id)
    player = db.session.get(User, user.id)
    assert locked is not None and player is not None  # (Both read under the game's lock just now.)
    return locked, player


def _former_address(user: User, address: str) -> bool:
    """Whether ``address`` is one ``user`` had before: mail to the account went there."""
    return db.session.scalar(
        select(OutboxMail.id).where(OutboxMail.to_addr == address, OutboxMail.user_id == user.id).limit(1)
    ) is not None


def _subject_command(mail: parse.Incoming, keys: KeysFound) -> Handling:
    """A pbmserv-style command in the subject, or else on the body's first line."""
    line = mail.subject
    ifs, words = reading.take_conditionals(quotes.own_words(mail.text, lambda: answered.texts(mail)))
    body_line, comment = reading.first_line_and_rest(words)
    if looks_like_command(line):
        # The body under a command in the subject is the comment, read as a reply's is (without quotes
        # and signatures); a first line that repeats the command is no part of it.
        if not looks_like_command(body_line):
            comment = reading.comment_without(words, None)
    elif looks_like_command(body_line):
        line = body_line
    elif _answers_a_digest(mail):
        return Handling("rejected", "a reply to a digest of several games", _digest_reply_refusal(mail))
    else:
        comment = ""
    try:
        command = parse_subject(line)
        comment = comment_for(command, keys.blank(comment))
        if ifs and command.verb not in ("move", "conditionals"):
            raise CommandError("'if' lines queue conditional moves: send them with a move or a "
                               "conditionals command, not with this one.")
        command.conditionals += ifs
        if ifs and command.verb == "conditionals":
            command.args = ["add"]
        answer = run_subject(command, mail.from_addr, comment)
    except CommandError as exc:
        return Handling("rejected", _note(keys, redact(line), exc.message), exc, game=exc.game)
    user = db.session.scalar(select(User).where(db.func.lower(User.email) == mail.from_addr))
    return Handling("processed", _note(keys, command.said), answer, user, answer.game)


def _answers_a_digest(mail: parse.Incoming) -> bool:
    """Whether ``mail`` replies to a daily digest of several games (one of one game carries that game's
    reply address, so its replies come as replies to the game): by the Message-ID it answers, or, when
    the mail program kept none, by the digest's subject."""
    referred = f"{mail.header('In-Reply-To')} {mail.header('References')}".lower().split()
    ours = f"@{mail_domain().lower()}>"
    if any(ref.startswith("<digest.") and ref.endswith(ours) for ref in referred):
        return True
    return parse.strip_prefixes(mail.subject).lower().startswith("daily digest:")


def _digest_reply_refusal(mail: parse.Incoming) -> CommandError:
    """What a reply to a digest of several games is told: a move goes to one game's own reply address.
    The sender's games awaiting their move are listed with those addresses when the sender is a
    player's registered address (where the digest went, with the same addresses)."""
    error = CommandError(
        "This is a reply to your daily digest, which lists several games, so it cannot say which game "
        "your move is for; nothing was done. To move, write your move on the first line of a mail to "
        "that game's own reply address (the 'Reply to: play+…' line under each game in the digest), or "
        "reply to a mail about that game, or play on the web."
    )
    user = player_by_address(mail.from_addr)
    waiting = [digest.turn_summary(game, seat) for game, seat in queries.awaiting(user)] if user else []
    if waiting:
        error.extra = "Your games awaiting your move:\n" + "\n".join(
            f"  {g['title']}, move {g['move_number']}: write to {g['reply_address']}" for g in waiting)
    return error


# Answering ---------------------------------------------------------------------------------------------


def _refusals_lately(address: str) -> tuple[int, int]:
    """How many refusals went to ``address`` in the period of ``refused_answers_per_address``, and how
    many are allowed."""
    amount, period = mailkeys.limit("refused_answers_per_address")
    if is_postgresql():
        # Workers answering the same address at once count one after the other (until commit); on
        # SQLite the write lock already does this.
        db.session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:address))"), {"address": address})
    sent = db.session.scalar(
        select(func.count(OutboxMail.id)).where(
            OutboxMail.to_addr == address, OutboxMail.kind == "answer-error",
            OutboxMail.created_at >= utcnow() - period,
        )
    ) or 0
    return sent, amount


def _answer(mail: parse.Incoming, outcome: Handling) -> bool:
    """Write the one answer to ``mail`` into the outbox, threaded under it (and under the game).

    A refusal is not sent when the address has had its share of refusals lately (a forged sender must
    not turn the server into a mail bomb); returns whether an answer was written.
    """
    answer = outcome.answer
    assert answer is not None
    ok = isinstance(answer, Answer)
    to_user = outcome.user if outcome.user is not None and outcome.user.email.lower() == mail.from_addr \
        else None
    to_addr = to_user.email if to_user is not None else mail.from_addr
    if not ok:
        sent, allowed = _refusals_lately(to_addr)
        if sent >= allowed:
            return False
    game = answer.game if answer.game is not None else outcome.game
    seat = answer.seat
    context: dict = {"message": answer.message, "ok": ok, "extra": getattr(answer, "extra", ""),
                     "position": None, "reply_to": outcome.reply_to}
    # As the session holds it now; a move's answer shows the plain rows the move left as they are (see
    # play.Played.as_left), and a refusal's game is read again (a move refused after changing them has
    # changed nothing).
    if game is not None and not (ok and isinstance(game, rows.PlainRow)):
        game = db.session.get(Game, game.id)
    if game is not None and game.state is not None and (answer.game is not None or not ok):
        engine = games.get(game.engine)
        if seat is not None:
            seat = next((s for s in game.seats if s.id == seat.id), None)
        # A move's answer carries the state the move path left (else it is loaded from the game).
        kept = answer.state if isinstance(answer, Answer) else None
        state = kept if kept is not None else engine.load(game.state)
        context["position"] = notify.position_basics(game, engine, state, seat)
    subject = _answer_subject(mail, outcome.keys)
    headers = {}
    if mail.message_id:
        references = f"{outbox.thread_id(game)} {mail.message_id}" if game is not None else mail.message_id
        headers = {"In-Reply-To": mail.message_id, "References": references}
    outbox.enqueue(
        to_user if to_user is not None else mail.from_addr,
        subject,
        compose("mail/answer.txt", html=True, **context),
        kind="answer" if ok else "answer-error",
        game=game,
        reply_to=outcome.reply_to,
        headers=headers,
    )
    return True


def _answer_subject(mail: parse.Incoming, keys: KeysFound | None = None) -> str:
    """"Re: " and the subject of the mail answered, so that the answer threads with it (and with the
    game's mails).  Only a subject that may hold a mail key is changed: a command's, shown with its key
    hidden, or, when it could not be read (the key may sit anywhere), cut short; and any word that is one
    of the mail's ``keys`` (see :func:`_command_or_reply`) is blanked."""
    if not mail.subject:
        return "Re: your mail"
    said = _without_key_shapes(mail.subject) if _subject_is_ours(mail) else redact(mail.subject)
    said = (keys.blank(said) if keys is not None else said)[:200]
    return said if said.lower().startswith("re:") else f"Re: {said}"


def _without_key_shapes(subject: str) -> str:
    """``subject`` with every word that could be a mail key blanked: a subject kept as the player wrote
    it (a reply's, or a tagged one that reads as no command) may still hold their key, typed in a
    command that could not be read, and an answer never carries it.  (A handle of that very shape is
    blanked too, which costs nothing but a word of the subject.)"""
    words = subject.split(" ")
    return " ".join("********" if is_key_shaped(word) else word for word in words)


def _subject_is_ours(mail: parse.Incoming) -> bool:
    """Whether the subject of ``mail`` is not a command: a mail to a reply address (even one whose token
    is refused) is never read for one, and a subject with the "[pbem]" tag of our mails that does not
    read as a command is a reply to one of them ("Re: [pbem] Cambio #67: alice challenges you")."""
    if any(tokens.reply_token_in(address) for address in mail.recipients):
        return True
    if not parse.tagged(mail.subject):
        return False
    if not looks_like_command(mail.subject):
        return True
    try:
        parse_subject(mail.subject)
    except CommandError:
        return True
    return False


# The processor thread of a listener --------------------------------------------------------------------


class Runner:
    """Processes stored messages in threads of their own: those the listener only stored (see
    :func:`receive_and_process`: they had to wait), each taken by its id as soon as it is stored; the
    threads also look for whatever waits every ``interval`` seconds, after a failure, when a message the
    listener processed has a later one of its sender's waiting, and on start (what an earlier run left
    "received").

    On PostgreSQL there are ``[smtpd] workers`` of them: each takes the next message no other holds, so
    while one waits for the database (a commit waits for the disk), the others go on; a sender's messages
    are still taken one at a time, in the order they came (see ``_nothing_earlier_unfinished``)."""

    def __init__(self, app: Flask, interval: float = 30.0, workers: int | None = None) -> None:
        self.app, self.interval = app, interval
        settings = app.config["PBEM"]
        # SQLite lets one writer in at a time, and a writer kept waiting sleeps in SQLite's busy handler:
        # more threads there only make the latency worse (measured by bench/mail.py), so one.
        on_sqlite = settings["database"]["url"].startswith("sqlite")
        self.workers = workers or (1 if on_sqlite else settings["smtpd"]["workers"])
        # On SQLite the listener's writers (the threads storing what arrives, and the one processing it)
        # take turns by this lock rather than by the database's: a writer that finds the database locked
        # sleeps in SQLite's busy handler, in steps of up to 100 ms, long after the lock is free (35% of
        # the listener's time under 8 senders, and a p99 of seconds); this one wakes the next at once.
        # It is held for the writes only: a message is read (parsed) before, while stores go on.
        self.writing: AbstractContextManager[Any] = threading.Lock() if on_sqlite else nullcontext()
        # The listener's receiving threads process a message as it comes (receive_and_process) while they
        # hold one of these: at most as many at once as there are processor threads (and connections).
        self.receiving = threading.BoundedSemaphore(self.workers)
        # The messages stored since, by row id, for the threads to take one at a time: a thread told which
        # message to take claims it by its id, without looking first for what waits (on SQLite a read
        # transaction of its own) and without a last look that finds nothing (a transaction each).
        self._stored: deque[int] = deque()
        # Looks for whatever waits owed to the threads, at most one per thread (on start), and whether
        # one is owed after a failure: the next thread to run takes it, after the message it was given.
        self._looks = 0
        self._look_again = False
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Resolve what a crash left half done, then start the threads (they process what is waiting at
        once)."""
        try:
            with self.app.app_context():
                recover_interrupted(utcnow())
                db.session.remove()
        except Exception:  # The database may be away: the threads' first pass tries again.
            log.exception("could not look for messages left processing by a crash")
        self._stop.clear()
        with self._wake:
            self._looks = self.workers
        self._threads = [
            threading.Thread(target=self._run, name=f"pbem-mail-process-{n}", daemon=True)
            for n in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()

    def wake(self, row_id: int | None = None) -> None:
        """The message ``row_id`` was stored (or, without one, something): a thread takes it now."""
        with self._wake:
            if row_id is None:
                self._looks = min(self.workers, self._looks + 1)
            else:
                self._stored.append(row_id)
            self._wake.notify()

    def stop(self) -> None:
        """Finish the messages in hand and stop.  Those stored and not yet taken stay "received", for the
        next start."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(30)
        self._threads = []

    def _next(self) -> tuple[int | None, bool]:
        """Wait for work: the id of a stored message to take (or None), and whether to look for whatever
        waits (after it)."""
        with self._wake:
            self._wake.wait_for(lambda: self._stored or self._looks or self._stop.is_set(), self.interval)
            row_id = self._stored.popleft() if self._stored else None
            look = row_id is None or self._look_again  # Woken with no message, or the wait ran out.
            if row_id is None:
                self._looks = max(0, self._looks - 1)
            self._look_again = False
            return row_id, look

    def _run(self) -> None:
        while not self._stop.is_set():
            row_id, look = self._next()
            if self._stop.is_set():
                break
            try:
                with self.app.app_context():
                    if row_id is not None:
                        process_one(row_id, self.writing)
                    if look:
                        process_pending(writing=self.writing)
                    db.session.remove()
            except Exception:  # The database may be away for a while; look again on the next wake.
                with self._wake:
                    self._look_again = True
                log.exception("processing stored mail failed; will retry")
