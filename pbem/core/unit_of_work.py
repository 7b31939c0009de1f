"""The unit of work: one owner for each write transaction (in the style of Cosmic Python).

Every piece of work that writes opens one, and whoever opens it ends it::

    with unit_of_work() as uow:
        played = play.submit(game_id, user, "c4", "web")
        uow.commit()

Opening it begins a write transaction: ``BEGIN IMMEDIATE`` on SQLite, so that writers queue for the
database's one write lock instead of failing halfway (see :mod:`pbem.core.database`); on PostgreSQL the
move path adds ``SELECT … FOR UPDATE`` on the game row.  Any transaction the session had open is ended
first (one that only read is carried on at READ COMMITTED on PostgreSQL, and on SQLite ended on its own
connection, which then takes the write lock: :meth:`UnitOfWork.begin`), so the session must hold no
unsaved changes.  Leaving the block without :meth:`UnitOfWork.commit`,
or by an exception, rolls back what was not committed.

Inside an open unit of work, :func:`unit_of_work` joins it rather than begin another: the mail processor
opens one for a message, and the move, the message's outcome and its answer commit together, once.  The
move path itself never commits: it runs in its caller's unit of work (:func:`joined`), and a caller that
opened none (a script, a test, a benchmark) gets one of its own, committed when the move is done.

A unit of work may span several transactions one after another (the mail processor records a refusal in
a transaction of its own after the move's was rolled back): :meth:`UnitOfWork.begin` starts the next.
What it keeps lives as long as its current transaction:

- :meth:`UnitOfWork.reads`: what the transaction has read under its locks (a game locked and read,
  record numbers, rating rows, watchers, last moves), so that a batch of games reads each once, and a
  game the processor locked is not read again by the move path.  Forgotten with the locks.
- Direct writes (:meth:`UnitOfWork.write`, :meth:`UnitOfWork.insert`): an INSERT or UPDATE sent as
  compiled SQL (:class:`pbem.core.database.DirectWrite`), in the transaction, bypassing the session's
  flush; the move path writes a game, its seats and its record this way.
- Batched writes (:meth:`UnitOfWork.batched`): inside the block, direct writes are kept and sent together
  at its end, one executemany per statement (the sweep's batches).  A read through the session, or a
  commit, sends them first; a rollback drops them.
- Kept rows (:meth:`UnitOfWork.keep`): INSERTs whose rows nothing in the transaction reads back (the
  outbox's mails), kept and sent just before the commit, each statement's rows as one INSERT of many
  VALUES (a mailed move's two mails, one statement).  A read through the session sends them first; a
  rollback drops them.
- Hooks run before each commit (:meth:`UnitOfWork.before_each_commit`): the mail processor stamps the
  message it handles as acted on in every commit made for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.orm import InstanceState, ORMExecuteState, Session, SessionTransaction
from sqlalchemy.orm.exc import StaleDataError

from pbem.core.database import BEGIN_IMMEDIATE, DirectWrite, is_postgresql, only_read, send
from pbem.core.extensions import db

# The unit of work open in this thread (or task), if any: the one a nested unit_of_work() joins.
_current: ContextVar[UnitOfWork | None] = ContextVar("pbem_unit_of_work", default=None)


class UnitOfWork:
    """The owner of the session's write transactions for one piece of work (see the module)."""

    def __init__(self, session: Session, *, keep_loaded: bool = False) -> None:
        self.session = session
        self.keep_loaded = keep_loaded
        self.in_transaction = False  # A write transaction begun by begin() and not yet ended.
        self._reads: dict[str, dict[Any, Any]] = {}
        self._batch: dict[tuple[Any, ...], _Pending] | None = None  # Kept writes, inside batched().
        self._kept: dict[tuple[Any, ...], list[dict[str, Any]]] = {}  # Rows kept for the commit: keep().
        self._hooks: list[Callable[[], None]] = []
        self._connection: Connection | None = None  # The session's connection in the current transaction.
        self._flushed = False  # Whether the session has flushed in the current transaction.

    # The transaction ---------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start a fresh write transaction: ``BEGIN IMMEDIATE`` on SQLite.  Whatever transaction the
        session had open is ended first (objects loaded in it are read again in the new one), so the
        session must hold no unsaved changes.

        On PostgreSQL a transaction that has only read, at READ COMMITTED, is carried on instead
        (:func:`pbem.core.database.only_read`), its objects expired all the same: there each statement
        sees what was committed before it, so ending it would change nothing that the write transaction
        reads, and cost three round trips (its COMMIT, the pool's ping, the next BEGIN), a tenth of a
        move's CPU (bench/movepath.py).  On SQLite one that only read is ended on its connection, which
        then begins the write transaction (the session's objects expired as by a rollback).  One that
        wrote, failed, or reads a snapshot is ended as ever."""
        session = self.session
        if session.new or session.dirty or session.deleted:
            raise RuntimeError("a write transaction begun with unsaved changes in the session")
        # Rows kept for a commit that did not come go with the transaction they were written in, which
        # ends here (a transaction carried on below would otherwise send them).
        self._kept = {}
        if session.in_transaction() and not session.in_nested_transaction() and only_read(
                connection := self.connection()):
            if not is_postgresql():
                # SQLite: the reads' snapshot ended by the driver and the write lock taken on the same
                # connection, rather than the session's rollback handing the connection back to the pool
                # (its reset, a second rollback) and checking it out again: a sixth of what the move path
                # spends around its statements (bench/movepath.py).
                connection.connection.dbapi_connection.rollback()  # type: ignore[union-attr]
                send(connection, "BEGIN IMMEDIATE", ())
            _expire_loaded(session)
        else:
            session.rollback()
            self._connection = session.connection(execution_options={BEGIN_IMMEDIATE: True})
        self.in_transaction = True

    def commit(self) -> None:
        """Commit the transaction: the kept writes are sent and the hooks run first.

        Where every object the session holds is still as :meth:`begin` left it (expired, nothing read
        back into it since), the session has written nothing in the transaction and has nothing to
        write, and nothing is to run before the commit, the session is told not to expire them all
        again: the move path over plain rows reads nothing through the session, so its caller's objects
        would be expired twice (about 3% of such a move's CPU on SQLite, bench/movepath.py).  Rows kept
        by :meth:`keep` do not count: they are new rows of no object the session holds."""
        session = self.session
        if not (self._hooks or self._batch or self._flushed or session.new or session.dirty
                or session.deleted) and all(
                _left_expired(state) for state in session.identity_map.all_states()):
            expiring, session.expire_on_commit = session.expire_on_commit, False
            try:
                session.commit()
            finally:
                session.expire_on_commit = expiring
            return
        session.commit()

    def rollback(self) -> None:
        """Roll back the transaction, with the writes kept for a batch and the rows kept for the commit."""
        self._kept = {}
        self.session.rollback()

    def flush(self) -> None:
        """Send the session's changes now (so that a conflict shows here), without committing."""
        self.session.flush()

    def before_each_commit(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run ``hook`` before every commit of this unit of work (inside the transaction, so that what it
        writes commits too, and an error it raises fails the commit); returns a function removing it."""
        self._hooks.append(hook)
        return lambda: self._hooks.remove(hook)

    def connection(self) -> Connection:
        """The session's connection in the current transaction, kept until the transaction ends.

        The session finds it anew at every call (through Flask-SQLAlchemy's choice of engine, under the
        app context), which cost a move about as much as sending one of its statements."""
        if self._connection is None:
            self._connection = self.session.connection()
        return self._connection

    def reads(self, name: str) -> dict[Any, Any]:
        """A dict named ``name`` for what the current transaction has read under its locks (see the
        module); it is forgotten when the transaction ends, with the locks."""
        return self._reads.setdefault(name, {})

    # Direct writes -------------------------------------------------------------------------------------

    @property
    def batching(self) -> bool:
        """Whether direct writes are kept for a batch (inside :meth:`batched`) rather than sent at once."""
        return self._batch is not None

    def write(self, writer: DirectWrite, values: dict[str, Any], *, rows: int | None = None) -> None:
        """Send ``writer``'s statement with ``values`` in the transaction, or keep it for the batch.

        ``rows`` is how many rows it must change (an UPDATE's optimistic lock): checked when it is sent,
        a StaleDataError if they were not."""
        if self._batch is None:
            _check_rows(writer.run(self.connection(), values).rowcount, rows, writer.statement)
            return
        key = (writer, *values)
        group = self._batch.get(key)
        if group is None:
            group = self._batch[key] = _Pending(writer, tuple(values))
        group.values.append(values)
        if rows is not None:
            group.rows = (group.rows or 0) + rows

    def insert(self, writer: DirectWrite, values: dict[str, Any]) -> int:
        """Send ``writer``'s INSERT with ``values`` now (never kept for a batch); the new row's key."""
        return writer.insert(self.connection(), values)

    def keep(self, writer: DirectWrite, values: dict[str, Any]) -> None:
        """Keep ``writer``'s INSERT of ``values`` to send just before the transaction commits, with the
        other rows kept for the same statement (and columns) as one INSERT of many VALUES.

        For rows nothing in the transaction reads back, whose key nobody needs (the outbox's mails): each
        INSERT sent alone is a statement the server parses and runs, and a round trip.  A read through the
        session sends the rows kept first (as :meth:`batched` does); a read on a connection does not see
        them.  A rollback drops them, and so does :meth:`begin`."""
        key = (writer, *values)
        kept = self._kept.get(key)
        if kept is None:
            self._kept[key] = [values]
        else:
            kept.append(values)

    def send_kept(self) -> None:
        """Send the rows kept for the commit (see :meth:`keep`) now, in the order their statements were
        first kept."""
        if not self._kept:
            return
        kept, self._kept = self._kept, {}
        connection = self.connection()
        for (writer, *keys), rows in kept.items():
            writer.insert_rows(connection, tuple(keys), rows)

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Within this block the direct writes are kept and sent together at its end, one executemany
        per statement, in the order each statement was first used.

        For a batch of many small writes, such as the sweep's: each would otherwise be a round trip to the
        server, and psycopg sends an executemany in one pipeline.  A row kept is not in the database
        until it is sent, so the block is only for work that does not read what it writes this way; as
        a guard, a read through the session sends the kept writes first, and so does a commit."""
        if self._batch is not None:
            raise RuntimeError("a batch inside a batch")
        self._batch = {}
        try:
            yield
            self.send_batch()
        finally:
            self._batch = None

    def send_batch(self) -> None:
        """Send the writes kept for the batch so far (see :meth:`batched`)."""
        if not self._batch:
            return
        pending, self._batch = self._batch, {}
        connection = self.connection()
        for group in pending.values():
            changed = group.writer.run_many(connection, group.keys, group.values).rowcount
            _check_rows(changed, group.rows, group.writer.statement)

    def _send_before_reading(self) -> None:
        # Whatever a read through the session looks at sees the writes kept so far.
        if self._batch:
            self.send_batch()
        if self._kept:
            self.send_kept()

    def _before_commit(self) -> None:
        self.send_batch()
        for hook in list(self._hooks):
            hook()
        self.send_kept()  # (After the hooks: a row one of them keeps goes with the rest.)

    def _transaction_ended(self) -> None:
        self.in_transaction = False
        self._flushed = False
        self._connection = None
        self._reads = {}
        if self._batch:
            self._batch = {}  # Rolled back: what the batch kept goes with the rest of its transaction.
        self._kept = {}  # (Sent by a commit, or rolled back with the rest.)


def _left_expired(state: InstanceState[Any]) -> bool:
    """Whether an object the session holds is expired with nothing read into it or changed since (the
    object holds only its state), so that expiring it again would change nothing."""
    return state.expired and len(state.dict) <= 1 and not state.modified


def _expire_loaded(session: Session) -> None:
    """``session.expire_all()``, leaving alone the objects already expired and untouched since: a caller
    that keeps objects through many transactions (a batch, the benchmarks) had every one of them expired
    anew at each, 5 µs an object (40 held: 199 µs a begin, against 20 µs so).  Each is expired as
    ``expire_all`` does it, by SQLAlchemy's own (not public) ``InstanceState._expire``: should a release
    drop it, ``expire_all`` is called instead."""
    held = session.identity_map
    modified = getattr(held, "_modified", None)
    if modified is None or not hasattr(InstanceState, "_expire"):
        session.expire_all()
        return
    for state in held.all_states():
        if not _left_expired(state):
            state._expire(state.dict, modified)


class _Pending:
    """The rows one statement (one :class:`DirectWrite` and set of columns) has kept for a batch."""

    def __init__(self, writer: DirectWrite, keys: tuple[str, ...]) -> None:
        self.writer, self.keys = writer, keys
        self.values: list[dict[str, Any]] = []
        self.rows: int | None = None  # The rows they must change together, when that is checked.


def _check_rows(changed: int, expected: int | None, statement: Any) -> None:
    """A StaleDataError unless a write changed the rows it was expected to (when that was given)."""
    if expected is not None and changed != expected:
        raise StaleDataError(f"{changed} rows changed of the {expected} expected: {statement}")


def current() -> UnitOfWork | None:
    """The unit of work open on the session, if any."""
    uow = _current.get()
    return uow if uow is not None and uow.session is db.session() else None


def active() -> UnitOfWork:
    """The unit of work open on the session, for work that runs only inside one (a RuntimeError else)."""
    uow = current()
    if uow is None:
        raise RuntimeError("outside a unit of work")
    return uow


def reads(name: str) -> dict[Any, Any]:
    """:meth:`UnitOfWork.reads` of the open unit of work; outside one, an empty dict kept by nobody (there
    are no locks to read under)."""
    uow = current()
    return uow.reads(name) if uow is not None else {}


@contextmanager
def unit_of_work(*, keep_loaded: bool = False) -> Iterator[UnitOfWork]:
    """Open a unit of work and begin its write transaction; see the module.

    Inside an open one, join it (beginning its next transaction if its last has ended): the block's
    commit then commits the transaction of the unit of work it joined, and an exception leaves that to
    its owner.  ``keep_loaded`` keeps the objects loaded through a commit instead of expiring them (the
    mail processor's answer shows what an action that committed by itself wrote); all are expired when
    the unit of work ends."""
    outer = current()
    if outer is not None:
        if not outer.in_transaction:
            outer.begin()
        yield outer
        return
    session = db.session()
    uow = UnitOfWork(session, keep_loaded=keep_loaded)
    token = _current.set(uow)
    if keep_loaded:
        session.expire_on_commit = False
    try:
        uow.begin()
        yield uow
    except BaseException:
        session.rollback()
        raise
    else:
        if uow.in_transaction or session.new or session.dirty or session.deleted:
            session.rollback()  # Not committed: nothing of it is kept.
    finally:
        _current.reset(token)
        if keep_loaded:
            session.expire_on_commit = True
            session.expire_all()


@contextmanager
def joined() -> Iterator[UnitOfWork]:
    """The caller's unit of work, for work that never commits on its own (the move path); a caller that
    opened none gets one of its own, committed when the block ends without an exception."""
    outer = current()
    if outer is not None:
        if not outer.in_transaction:
            outer.begin()
        yield outer
        return
    with unit_of_work() as uow:
        yield uow
        uow.commit()


@event.listens_for(Session, "before_commit")
def _before_commit(session: Session) -> None:
    # Every commit of the session while a unit of work is open, also one made by session.commit().
    uow = _current.get()
    if uow is not None and uow.session is session:
        uow._before_commit()


@event.listens_for(Session, "do_orm_execute")
def _before_orm_execute(state: ORMExecuteState) -> None:
    # Every statement through the session while writes are kept (see UnitOfWork.keep and .batched).
    uow = _current.get()
    if uow is not None and uow.session is state.session and (uow._kept or uow._batch):
        uow._send_before_reading()


@event.listens_for(Session, "after_flush")
def _after_flush(session: Session, _context: Any) -> None:
    uow = _current.get()
    if uow is not None and uow.session is session:
        uow._flushed = True


@event.listens_for(Session, "after_transaction_end")
def _after_transaction_end(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        uow = _current.get()
        if uow is not None and uow.session is session:
            uow._transaction_ended()
