"""Database set-up that SQLAlchemy does not do by itself: SQLite pragmas and write transactions.

SQLite runs in WAL mode with foreign keys on, a busy timeout, and (by default) ``synchronous=FULL``, so
that a commit is on the disk before anyone is told it happened.  Its default deferred transactions
would let two writers both read a game and then fail when the second tries to write; the move path
therefore begins its transaction with ``BEGIN IMMEDIATE`` (see :func:`begin_write`), so that writers
queue for the lock and the second one reads the game as the first left it.  On PostgreSQL the same
guarantee comes from ``SELECT … FOR UPDATE`` on the game row.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction
from sqlalchemy.orm.exc import StaleDataError

from pbem.core.extensions import db

_IMMEDIATE = "pbem_begin_immediate"


def init_app(app: Flask) -> None:
    """Install the SQLite hooks on the app's engine, when the database is SQLite."""
    with app.app_context():
        engine = db.engine
        if engine.dialect.name == "sqlite":
            settings = app.config["PBEM"]["database"]
            _install_sqlite_hooks(engine, settings["sqlite_busy_timeout_ms"], settings["sqlite_synchronous"])


def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int, synchronous: str) -> None:
    # "FULL" or "NORMAL", checked by the configuration; a pragma takes no bound parameter.
    synchronous = "FULL" if synchronous.lower() == "full" else "NORMAL"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide when transactions begin (see do_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def is_postgresql() -> bool:
    """Whether the app's database is PostgreSQL."""
    return db.engine.dialect.name == "postgresql"


def begin_write() -> None:
    """Start a fresh write transaction on the session: ``BEGIN IMMEDIATE`` on SQLite.

    Any transaction the session had open is ended first, so the caller must not have pending changes;
    objects loaded before are expired and re-read inside the new transaction.  Inside
    :func:`caller_commits`, a write transaction the caller has begun is kept instead: the writer joins it.
    """
    session = db.session
    if session.info.get(_WRITING) and session.info.get(_CALLER_COMMITS):
        return
    if session.new or session.dirty or session.deleted:
        raise RuntimeError("begin_write() with unsaved changes in the session")
    if session.info.get(_LEFT_OPEN):
        raise RuntimeError("begin_write() would roll back a write transaction left open for its caller")
    session.rollback()
    session.connection(execution_options={_IMMEDIATE: True})
    session.info[_WRITING] = True


_WRITING = "pbem_write_transaction"
_CALLER_COMMITS = "pbem_caller_commits"
_LEFT_OPEN = "pbem_write_left_open"


@contextmanager
def caller_commits() -> Iterator[None]:
    """Within this block the caller owns the write transaction: :func:`begin_write` joins one the caller
    has begun rather than start another, and :func:`finish_write` flushes it and leaves it open, with its
    locks, for the caller to add to and commit (or roll back) itself.

    The mail processor's way of committing a move, the message's outcome and its answer together, and of
    reading what a message names in the same transaction: what the move path does stays one piece of
    code, and whoever began the work decides where it ends.  Outside the block, a :func:`begin_write`
    raises rather than roll back a transaction left open.
    """
    session = db.session()
    # A block inside another (a tournament's leaver resigning, inside the mail processor's block) leaves
    # the outer one as it found it.
    outer = session.info.get(_CALLER_COMMITS)
    session.info[_CALLER_COMMITS] = True
    try:
        yield
    finally:
        if not outer:
            session.info.pop(_CALLER_COMMITS, None)


def finish_write() -> None:
    """End the write transaction of a caller that began it with :func:`begin_write` and so holds the write
    lock: commit it, or, inside :func:`caller_commits`, flush it (so that a conflict shows now, where the
    writer handles it) and leave it open."""
    session = db.session()
    if session.info.get(_CALLER_COMMITS):
        session.flush()
        session.info[_LEFT_OPEN] = True
    else:
        session.commit()


def write_left_open() -> bool:
    """Whether :func:`finish_write` left the session's write transaction open for its caller to commit."""
    return bool(db.session().info.get(_LEFT_OPEN))


def in_write_transaction() -> bool:
    """Whether the session is inside a write transaction begun by :func:`begin_write` and not yet ended."""
    return bool(db.session().info.get(_WRITING))


class DirectWrite:
    """An INSERT or UPDATE built once, compiled once per database and set of columns, and sent to the
    driver as its SQL text with its parameters already converted (``exec_driver_sql``).

    SQLAlchemy's execution of a Core statement spends more Python than the database spends on a small
    write (finding the compiled form in its cache, converting the parameters through an execution
    context): a game's UPDATE cost 50 µs of CPU on SQLite and 160 µs on PostgreSQL, against 12 µs and
    99 µs sent this way (an outbox INSERT: 119 and 191 µs against 85 and 175).  The move path sends five
    writes a move.  The statement still goes through the engine's connection and its events (statement
    logging, the benchmarks' recording), in the session's transaction.  Every column the statement
    writes must be given: a default or ``onupdate`` of the model that was left out would be written by
    nobody, so a missing value raises instead.
    """

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._compiled: dict[tuple[Any, ...], tuple[str, tuple[tuple[str, str, Any], ...], bool]] = {}

    def _compile(self, connection: Connection, keys: tuple[str, ...], returning: Any = None) -> tuple[
            str, tuple[tuple[str, str, Any], ...], bool]:
        dialect = connection.dialect
        statement = self.statement if returning is None else self.statement.returning(returning)
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        if compiled.literal_execute_params or compiled.post_compile_params:
            # (An IN list, say, is written into the SQL text at each execution: not a statement for this.)
            raise ValueError(f"a statement rendered anew at each execution: {self.statement}")
        names = {name: bind for bind, name in compiled.bind_names.items()}
        missing = names.keys() - set(keys)
        if missing:
            raise ValueError(f"no value given for {', '.join(sorted(missing))} of {self.statement}")
        order = compiled.positiontup if compiled.positional else list(names)
        escaped = compiled.escaped_bind_names
        binds = tuple(
            (name, escaped.get(name, name), names[name].type.dialect_impl(dialect).bind_processor(dialect))
            for name in order
        )
        return compiled.string, binds, compiled.positional

    def insert(self, connection: Connection, values: dict[str, Any]) -> int:
        """Run the INSERT on ``connection`` with ``values``; the new row's primary key.

        Read as SQLAlchemy reads it: from the driver's last row id where the database offers one
        (SQLite, where a RETURNING clause cost 40 µs more), else by RETURNING (PostgreSQL)."""
        dialect = connection.dialect  # Every dialect is a DefaultDialect; the interface lacks the flag.
        if (isinstance(dialect, DefaultDialect) and dialect.postfetch_lastrowid
                and not dialect.favor_returning_over_lastrowid):
            return self._run(connection, values, False).lastrowid
        return self._run(connection, values, True).scalar_one()

    def write(self, connection: Connection, values: dict[str, Any], *, rows: int | None = None) -> None:
        """Send the statement with ``values`` now, or, inside :func:`batched_writes`, keep it for the batch.
        ``rows`` is how many rows it must change (an UPDATE's optimistic lock): checked when it is sent,
        a StaleDataError if they were not."""
        if writes_batched():
            self.later(values, rows=rows)
            return
        _check_rows(self._run(connection, values, False).rowcount, rows, self.statement)

    def later(self, values: dict[str, Any], *, rows: int | None = None) -> None:
        """Keep the statement with ``values`` to be sent, with the others of its kind, by
        :func:`send_batched_writes`; only inside :func:`batched_writes`.  ``rows`` is how many rows it must
        change (an UPDATE's optimistic lock), checked then: a StaleDataError if they were not."""
        pending: dict[tuple[Any, ...], _Pending] = db.session.info[_PENDING]
        key = (self, *values)
        group = pending.get(key)
        if group is None:
            group = pending[key] = _Pending(self, tuple(values))
        group.values.append(values)
        if rows is not None:
            group.rows = (group.rows or 0) + rows

    def _prepared(self, connection: Connection, keys: tuple[str, ...], returning: bool) -> tuple[
            str, tuple[tuple[str, str, Any], ...], bool]:
        key = (connection.dialect.name, connection.dialect.driver, returning, *keys)
        prepared = self._compiled.get(key)
        if prepared is None:
            primary_key = self.statement.table.primary_key.columns[0] if returning else None
            prepared = self._compiled[key] = self._compile(connection, keys, primary_key)
        return prepared

    @staticmethod
    def _parameters(binds: tuple[tuple[str, str, Any], ...], positional: bool, values: dict[str, Any]) -> Any:
        if positional:
            return tuple(
                values[name] if process is None else process(values[name]) for name, _, process in binds
            )
        return {
            escaped: values[name] if process is None else process(values[name])
            for name, escaped, process in binds
        }

    def _run(self, connection: Connection, values: dict[str, Any], returning: bool) -> Any:
        sql, binds, positional = self._prepared(connection, tuple(values), returning)
        return connection.exec_driver_sql(sql, self._parameters(binds, positional, values))

    def _run_many(self, connection: Connection, keys: tuple[str, ...], rows: list[dict[str, Any]]) -> Any:
        """The statement once for each of ``rows`` (all with the same ``keys``), as one executemany."""
        sql, binds, positional = self._prepared(connection, keys, False)
        return connection.exec_driver_sql(sql, [self._parameters(binds, positional, row) for row in rows])


class _Pending:
    """The rows one statement (one :class:`DirectWrite` and set of columns) has kept for a batch."""

    def __init__(self, writer: DirectWrite, keys: tuple[str, ...]) -> None:
        self.writer, self.keys = writer, keys
        self.values: list[dict[str, Any]] = []
        self.rows: int | None = None  # The rows they must change together, when that is checked.


_PENDING = "pbem_batched_writes"


@contextmanager
def batched_writes() -> Iterator[None]:
    """Within this block, in the session's transaction, the writes that ask for it
    (:func:`writes_batched`: the outbox's mails, the record's entries, the move path's UPDATEs of a game
    and its seats) are kept and sent together at the block's end, one executemany per statement.

    For a batch of many small writes, such as the sweep's: each would otherwise be a round trip to the
    server, and psycopg sends an executemany in one pipeline.  The writes are still part of the
    transaction, which the caller commits after the block (a commit inside it sends them first, and a
    rollback drops them with the rest).  A row kept is not in the database until it is sent, so the
    block is only for work that does not read what it writes this way; as a guard, a read through the
    session while writes are kept sends them first.
    """
    session = db.session()
    if _PENDING in session.info:
        raise RuntimeError("batched_writes() inside batched_writes()")
    session.info[_PENDING] = {}
    event.listen(session, "do_orm_execute", _send_before_reading)
    try:
        yield
        send_batched_writes()
    finally:
        event.remove(session, "do_orm_execute", _send_before_reading)
        session.info.pop(_PENDING, None)


def writes_batched() -> bool:
    """Whether the session is inside :func:`batched_writes`, where a plain write is kept (see
    :meth:`DirectWrite.later`) rather than sent at once."""
    return _PENDING in db.session().info


def send_batched_writes() -> None:
    """Send the writes kept by :func:`batched_writes` so far, one executemany per statement, in the
    order each statement was first used (rows of one statement in the order they were kept)."""
    session = db.session()
    pending: dict[tuple[Any, ...], _Pending] | None = session.info.get(_PENDING)
    if not pending:
        return
    session.info[_PENDING] = {}
    connection = session.connection()
    for group in pending.values():
        _check_rows(group.writer._run_many(connection, group.keys, group.values).rowcount, group.rows,
                    group.writer.statement)


def _check_rows(changed: int, expected: int | None, statement: Any) -> None:
    """A StaleDataError unless a write changed the rows it was expected to (when that was given)."""
    if expected is not None and changed != expected:
        raise StaleDataError(f"{changed} rows changed of the {expected} expected: {statement}")


def _send_before_reading(orm_execute_state: ORMExecuteState) -> None:
    # Whatever a read in the batch looks at sees the batch's own writes.
    if orm_execute_state.session.info.get(_PENDING):
        send_batched_writes()


@event.listens_for(Session, "before_commit")
def _send_before_commit(session: Session) -> None:
    # A commit inside batched_writes() commits what it kept too, rather than leave it for the next
    # transaction.
    if session.info.get(_PENDING):
        send_batched_writes()


_CACHE = "pbem_transaction_cache"


def transaction_cache(name: str) -> dict[Any, Any]:
    """A dict that lives as long as the session's current transaction.

    For what a transaction has already read under its locks (rating rows, record numbers), so that a
    batch of games reads each once; it is forgotten when the transaction ends, with the locks.
    """
    return db.session.info.setdefault(_CACHE, {}).setdefault(name, {})


@event.listens_for(Session, "after_transaction_end")
def _forget_transaction_state(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_CACHE, None)
        session.info.pop(_LEFT_OPEN, None)
        session.info.pop(_WRITING, None)
        if session.info.get(_PENDING):
            # Rolled back: what the batch kept goes with the rest of its transaction.
            session.info[_PENDING] = {}
