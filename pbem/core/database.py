"""Database set-up that SQLAlchemy does not do by itself: SQLite pragmas, write transactions, direct writes.

SQLite runs in WAL mode with foreign keys on, a busy timeout, and (by default) ``synchronous=FULL``, so
that a commit is on the disk before anyone is told it happened.  Its default deferred transactions
would let two writers both read a game and then fail when the second tries to write; the move path
therefore begins its transaction with ``BEGIN IMMEDIATE`` (every unit of work does: see
:mod:`pbem.core.unit_of_work`), so that writers queue for the lock and the second one reads the game as
the first left it.  On PostgreSQL the same
guarantee comes from ``SELECT … FOR UPDATE`` on the game row, and a transaction that only read is ended
by a COMMIT where SQLAlchemy asks for a rollback (see :func:`_install_postgresql_hooks`).

Every commit that wrote changes the host's write generation after the database has it (see
:mod:`pbem.core.generation` and :func:`_install_generation_hooks`), which kept answers are checked
against.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn, TypeVar
from weakref import WeakSet

from flask import Flask
from sqlalchemy import JSON, bindparam, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.exc import DBAPIError, MultipleResultsFound, NoResultFound
from sqlalchemy.pool import PoolProxiedConnection

from pbem.core import generation
from pbem.core.extensions import db
from pbem.core.models import give_index_conditions

# The execution option of a connection that begins a write transaction (see pbem.core.unit_of_work).
BEGIN_IMMEDIATE = "pbem_begin_immediate"
# The execution option of a connection that reads one statement and nothing else (a page's stamp): on
# SQLite no transaction is begun around it, since a statement alone reads one state of the database.
ONE_STATEMENT = "pbem_one_statement"
# Where the app keeps its write generation (None when it has none): see generation_of.
_GENERATION = "pbem_write_generation"


def init_app(app: Flask) -> None:
    """Install the SQLite or PostgreSQL hooks on the app's engine, and those that change the host's write
    generation after every commit that wrote (unless it is turned off or cannot be mapped); give the
    models' partial indexes their conditions in the app's database."""
    with app.app_context():
        engine = db.engine
        give_index_conditions(engine.dialect.name)
        if engine.dialect.name == "sqlite":
            settings = app.config["PBEM"]["database"]
            _install_sqlite_hooks(engine, settings["sqlite_busy_timeout_ms"], settings["sqlite_synchronous"])
        elif engine.dialect.name == "postgresql":
            _install_postgresql_hooks(engine)
        shared = generation.open_for(app.config["PBEM"])
        app.extensions[_GENERATION] = shared
        if shared is not None:
            _install_generation_hooks(engine, shared)


def generation_of(app: Flask) -> generation.Generation | None:
    """The write generation ``app``'s commits change, or None (turned off, or not to be mapped)."""
    return app.extensions.get(_GENERATION)


# The key, in a connection's info (its pool record's, kept with the driver's connection), of a mark that
# its transaction wrote.
_WRITTEN = "pbem_written"


def _install_generation_hooks(engine: Engine, shared: generation.Generation) -> None:
    """Change ``shared`` after every commit of a transaction that sent a statement that may write
    (:func:`pbem.core.generation.writes`), and right after such a statement the driver committed by
    itself (outside a transaction: an AUTOCOMMIT connection, SQLite's statements outside BEGIN).

    Marked on the connection after the statement (and after one that failed: an executemany stopped
    halfway may have written part, which its caller may commit), and the generation changed after the
    driver's commit returns, or fails (a commit whose answer was lost may have happened).  A rollback
    clears the mark.  One listener on every statement, which looks its kind up by its text (the same few
    texts are sent again and again): about half a microsecond a statement (docs/PERFORMANCE.md)."""
    dialect = engine.dialect
    commit, rollback = dialect.do_commit, dialect.do_rollback
    kinds: dict[str, bool] = {}
    if dialect.name == "postgresql":
        def in_transaction(driver: Any) -> bool:
            return not driver.autocommit and _in_transaction(driver)
    else:
        def in_transaction(driver: Any) -> bool:
            return bool(driver.in_transaction)

    def writing(statement: str) -> bool:
        kind = kinds.get(statement)
        if kind is None:
            if len(kinds) > _KINDS_KEPT:
                kinds.clear()
            kind = kinds[statement] = generation.writes(statement)
        return kind

    @event.listens_for(engine, "after_cursor_execute")
    def _note_writes(conn: Connection, cursor: Any, statement: str, _parameters: Any, _context: Any,
                     _executemany: bool) -> None:
        if writing(statement):
            if in_transaction(cursor.connection):
                conn.info[_WRITTEN] = True
            else:
                shared.change()

    @event.listens_for(engine, "handle_error")
    def _note_failed_writes(context: Any) -> None:
        # A write that failed may have written part (an executemany stopped halfway) for the transaction
        # to commit all the same, if its caller goes on.
        if context.statement is not None and context.connection is not None and writing(context.statement):
            context.connection.info[_WRITTEN] = True

    def do_commit(dbapi_connection: Any) -> None:
        try:
            commit(dbapi_connection)
        finally:
            if _marks(dbapi_connection).pop(_WRITTEN, False):
                shared.change()

    def do_rollback(dbapi_connection: Any) -> None:
        _marks(dbapi_connection).pop(_WRITTEN, None)
        rollback(dbapi_connection)

    # (Over the PostgreSQL hooks' own, which they call: see _install_postgresql_hooks.)
    dialect.do_commit = do_commit  # type: ignore[method-assign]
    dialect.do_rollback = do_rollback  # type: ignore[method-assign]


def _marks(dbapi_connection: Any) -> dict[Any, Any]:
    """The info of the pool's proxy of a driver's connection, where its transaction is marked as writing;
    an empty dict for a connection the engine has no record of (its first, read for the server's version,
    and anything handed over bare), on which the engine sent no statement of ours."""
    if isinstance(dbapi_connection, PoolProxiedConnection):
        try:
            return dbapi_connection.info
        except NotImplementedError:
            pass
    return {}


# How many statements' kinds are kept before they are forgotten all at once (texts made anew each time,
# an IN list written out, would otherwise grow it without end).
_KINDS_KEPT = 4096


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
        options = conn.get_execution_options()
        if options.get(ONE_STATEMENT, False):
            # BEGIN then ROLLBACK around a lone read cost a tenth of a kept page, and change nothing.
            return
        send(conn, "BEGIN IMMEDIATE" if options.get(BEGIN_IMMEDIATE, False) else "BEGIN", ())
        # What the connection had changed when its transaction began: see only_read.
        conn.info[_CHANGES_AT_BEGIN] = conn.connection.dbapi_connection.total_changes  # type: ignore[union-attr]


def _install_postgresql_hooks(engine: Engine) -> None:
    """End a transaction that sent nothing but SELECTs with a COMMIT where SQLAlchemy asks for a rollback.

    For a transaction that wrote nothing the two are the same, but a ROLLBACK makes psycopg forget, and
    deallocate, every statement it had prepared on the connection (psycopg prepares a statement sent five
    times).  Every request ends its reads, and a unit of work began by ending the reads before it, so
    with rollbacks no statement of the move path ever stayed prepared: each was parsed and planned afresh
    on every move, about half of the database server's CPU a move (bench/movepath.py).  A transaction
    that sent anything else (a write, a savepoint, a ``WITH``; every statement goes through the engine,
    none to the driver by hand), or that failed, is rolled back as asked."""
    dialect = engine.dialect
    wrote = _WROTE
    rollback, commit = dialect.do_rollback, dialect.do_commit

    @event.listens_for(engine, "before_cursor_execute")
    def _note_writes(_conn: Connection, cursor: Any, statement: str, _parameters: Any, _context: Any,
                     _executemany: bool) -> None:
        if not statement.startswith(("SELECT ", ";")):  # (";" is the pool's ping.)
            wrote.add(cursor.connection)

    def do_rollback(dbapi_connection: Any) -> None:
        # (SQLAlchemy hands over its pool's proxy of the driver's connection.)
        driver = getattr(dbapi_connection, "dbapi_connection", dbapi_connection)
        if driver in wrote or not _in_transaction(driver):
            wrote.discard(driver)
            rollback(dbapi_connection)
        else:
            driver.commit()

    def do_commit(dbapi_connection: Any) -> None:
        wrote.discard(getattr(dbapi_connection, "dbapi_connection", dbapi_connection))
        commit(dbapi_connection)

    # (On this engine's dialect alone, which the engine and its pool both end transactions through.)
    dialect.do_rollback = do_rollback  # type: ignore[method-assign]
    dialect.do_commit = do_commit  # type: ignore[method-assign]


# The key, in a SQLite connection's info, of its count of changed rows when its transaction began.
_CHANGES_AT_BEGIN = "pbem_changes_at_begin"
# The PostgreSQL driver connections whose transaction sent more than SELECTs (see _install_postgresql_hooks).
_WROTE: WeakSet[Any] = WeakSet()


def _in_transaction(driver: Any) -> bool:
    """Whether a psycopg connection is inside a transaction that has not failed."""
    from psycopg.pq import TransactionStatus  # (Only where the database is PostgreSQL.)

    return bool(driver.info.transaction_status == TransactionStatus.INTRANS)


def only_read(connection: Connection) -> bool:
    """Whether ``connection`` is inside a transaction that has changed nothing and has not failed.

    On PostgreSQL, a READ COMMITTED one that has sent nothing but SELECTs: one that a write transaction
    may carry on instead of ending it and beginning another, since each of its statements sees what was
    committed before the statement.  On SQLite, one begun by the engine that has changed no row: it may
    be ended by the driver alone and the write transaction begun on the same connection, with nothing
    to undo but its read snapshot (see :meth:`pbem.core.unit_of_work.UnitOfWork.begin`)."""
    driver = connection.connection.dbapi_connection
    if connection.dialect.name == "sqlite":
        changes = connection.info.get(_CHANGES_AT_BEGIN)
        return bool(driver.in_transaction) and changes == driver.total_changes  # type: ignore[union-attr]
    from psycopg import IsolationLevel

    level = getattr(driver, "isolation_level", None)
    read_committed = (connection.dialect.default_isolation_level == "READ COMMITTED" if level is None
                      else level == IsolationLevel.READ_COMMITTED)
    return read_committed and driver not in _WROTE and _in_transaction(driver)


def is_postgresql() -> bool:
    """Whether the app's database is PostgreSQL."""
    return db.engine.dialect.name == "postgresql"


def insert_with_conflicts(dialect: str | None = None) -> Any:
    """The ``insert`` of the app's database (or of ``dialect``, "sqlite" or "postgresql") that offers
    ON CONFLICT, each dialect's imported only when asked for (one place that picks it for the models'
    upserts)."""
    if (dialect or db.engine.dialect.name) == "postgresql":
        from sqlalchemy.dialects import postgresql
        return postgresql.insert
    from sqlalchemy.dialects import sqlite
    return sqlite.insert


# Moments a bind processor is tried on, to see whether it writes a naive datetime as ISO 8601 does.
_PROBES = (datetime(2001, 2, 3, 4, 5, 6, 7), datetime(2026, 11, 28, 23, 59, 59))


def _quicker(process: Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    """``process``, or where it writes naive datetimes as ``isoformat(" ", "microseconds")`` writes them
    (SQLite's DATETIME: checked on two moments, not assumed), a function writing them so and handing
    anything else to ``process``: SQLAlchemy's formats each of a datetime's fields by name, three times
    the cost, and a move writes six of them."""
    if process is None:
        return None
    try:
        writes_iso = all(process(moment) == moment.isoformat(" ", "microseconds") for moment in _PROBES)
    except (TypeError, ValueError, AttributeError):  # A processor for something else entirely.
        writes_iso = False
    if not writes_iso:
        return process

    def quicker(value: Any) -> Any:
        if value.__class__ is datetime and value.tzinfo is None and value.year >= 1000:
            return value.isoformat(" ", "microseconds")
        return process(value)

    return quicker


# What a reader of an executed cursor makes of it (see _on_cursor).
_Read = TypeVar("_Read")


class DirectResult:
    """What the driver answered a statement sent by :func:`send`: the rows it changed, the new row's id
    where the driver gives one (SQLite), and the rows it returned (a RETURNING clause, a SELECT)."""

    __slots__ = ("lastrowid", "returned", "rowcount")

    def __init__(self, rowcount: int, lastrowid: Any, returned: list[Any]) -> None:
        self.rowcount, self.lastrowid, self.returned = rowcount, lastrowid, returned

    def first(self) -> Any:
        """The first row returned, or None."""
        return self.returned[0] if self.returned else None

    def scalar(self) -> Any:
        """The first column of the first row returned, or None."""
        return self.returned[0][0] if self.returned else None

    def one_or_none(self) -> Any:
        """The one row returned, or None when none was (an error when more than one was)."""
        if len(self.returned) > 1:
            raise MultipleResultsFound("more than one row returned")
        return self.first()

    def named(self, row: Callable[..., Any]) -> DirectResult:
        """The same answer with each row returned made by ``row`` from its values (a named tuple)."""
        return DirectResult(self.rowcount, self.lastrowid, [row(*values) for values in self.returned])

    def scalar_one(self) -> Any:
        """The first column of the one row returned (an error unless exactly one was)."""
        if len(self.returned) != 1:
            raise (NoResultFound("no row returned") if not self.returned
                   else MultipleResultsFound("more than one row returned"))
        return self.returned[0][0]


def send(connection: Connection, sql: str, parameters: Any, *, many: bool = False) -> DirectResult:
    """Send ``sql`` with its driver's ``parameters`` (a list of them for an executemany) on the driver's
    cursor of ``connection``, in its transaction; what the driver answered.

    ``exec_driver_sql`` spent twice the driver's own time on a small write (its execution context and
    result), a fifth of the move path's statements' Python on SQLite (bench/movepath.py).  The engine's
    cursor events are dispatched all the same (the write generation's, the PostgreSQL hooks' and the
    benchmarks' listeners see the statement; SQLAlchemy's own statement logging does not), and a driver's
    error goes through the engine's handling (``handle_error``, a lost connection invalidated) to be
    raised as SQLAlchemy's class of it."""
    # (The last row id where the dialect reads it, as SQLAlchemy does: psycopg's cursor has none.)
    lastrowid = connection.dialect.postfetch_lastrowid  # type: ignore[attr-defined]

    def answer(cursor: Any) -> DirectResult:
        # (The rows first: SQLite counts the rows a RETURNING statement changed as they are fetched.)
        returned = cursor.fetchall() if cursor.description is not None else []
        return DirectResult(cursor.rowcount, cursor.lastrowid if lastrowid else None, returned)

    return _on_cursor(connection, sql, parameters, many, answer)


def _on_cursor(connection: Connection, sql: str, parameters: Any, many: bool,
               read: Callable[[Any], _Read]) -> _Read:
    """What ``read`` makes of the driver's cursor of ``connection`` once ``sql`` has run on it, in its
    transaction, between the engine's cursor events, a driver's error raised as the engine raises it
    (see :func:`send`)."""
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    dispatch = _dispatch(connection)
    try:
        dispatch.before_cursor_execute(connection, cursor, sql, parameters, None, many)
        try:
            if many:
                cursor.executemany(sql, parameters)
            else:
                cursor.execute(sql, parameters)
            made = read(cursor)
        except Exception as error:
            _raise_as_engine(connection, error, sql, parameters, cursor)
        dispatch.after_cursor_execute(connection, cursor, sql, parameters, None, many)
        return made
    finally:
        cursor.close()


def _dispatch(connection: Connection) -> Any:
    """Where ``connection``'s cursor events are dispatched from: its engine's, unless listeners were set
    on the connection itself (as SQLAlchemy tells them apart).

    A connection joins its own events to its engine's afresh for each event it dispatches, and one is
    checked out for every transaction: the two joins of a transaction's statements cost more than one
    statement's events (bench/movepath.py).  (``_has_events`` is SQLAlchemy's own, not public: should a
    release drop it, the connection's dispatch, always right, is taken.)"""
    return connection.engine.dispatch if not getattr(connection, "_has_events", True) else connection.dispatch


def _raise_as_engine(connection: Connection, error: Exception, sql: str, parameters: Any,
                     cursor: Any) -> NoReturn:
    """Raise a driver's ``error`` as the engine would have raised it from ``exec_driver_sql``: its
    ``handle_error`` listeners told (the write generation marks a failed write), a lost connection
    invalidated with its pool, a driver's error as SQLAlchemy's class of it.  (That handling is
    SQLAlchemy's own, not public: should a release drop it, the error is raised as SQLAlchemy's class of
    it, as before.)"""
    handle = getattr(connection, "_handle_dbapi_exception", None)
    if handle is not None:
        handle(error, sql, parameters, cursor, None)  # (It raises.)
    dbapi_error = connection.dialect.loaded_dbapi.Error
    if isinstance(error, dbapi_error):
        raise DBAPIError.instance(sql, parameters, error, dbapi_error) from error
    raise error


# The most parameters one statement of DirectWrite.insert_rows takes: SQLite's oldest limit.
_MOST_PARAMETERS = 999


class DirectWrite:
    """An INSERT or UPDATE built once, compiled once per database and set of columns, and sent to the
    driver as its SQL text with its parameters already converted (on the driver's cursor: :func:`send`);
    also a SELECT of plain columns sent as often (the move path's lock on PostgreSQL).

    SQLAlchemy's execution of a Core statement spends more Python than the database spends on a small
    write (finding the compiled form in its cache, converting the parameters through an execution
    context): a game's UPDATE cost 50 µs of CPU on SQLite and 160 µs on PostgreSQL, against 12 µs and
    99 µs sent this way (an outbox INSERT: 119 and 191 µs against 85 and 175).  The move path sends five
    writes a move.  The statement still goes through the engine's cursor events (the benchmarks'
    recording; not SQLAlchemy's statement logging), in the session's transaction.  Every column the statement
    writes must be given: a default or ``onupdate`` of the model that was left out would be written by
    nobody, so a missing value raises instead.
    """

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self._compiled: dict[tuple[Any, ...], tuple[str, tuple[tuple[str, str, Any], ...], bool]] = {}

    def _compile(self, connection: Connection, keys: tuple[str, ...], returning: Any = None,
                 statement: Any = None) -> tuple[str, tuple[tuple[str, str, Any], ...], bool]:
        dialect = connection.dialect
        if statement is None:
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
            (name, escaped.get(name, name),
             _quicker(names[name].type.dialect_impl(dialect).bind_processor(dialect)))
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
            return self.run(connection, values).lastrowid
        return self.run(connection, values, True).scalar_one()

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

    def run(self, connection: Connection, values: dict[str, Any], returning: bool = False) -> DirectResult:
        """Send the statement with ``values`` on ``connection``; what the driver answered."""
        sql, binds, positional = self._prepared(connection, tuple(values), returning)
        return send(connection, sql, self._parameters(binds, positional, values))

    def run_many(self, connection: Connection, keys: tuple[str, ...],
                 rows: list[dict[str, Any]]) -> DirectResult:
        """The statement once for each of ``rows`` (all with the same ``keys``), as one executemany."""
        sql, binds, positional = self._prepared(connection, keys, False)
        return send(connection, sql, [self._parameters(binds, positional, row) for row in rows], many=True)

    def insert_rows(self, connection: Connection, keys: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
        """The INSERT of all ``rows`` (each with the same ``keys``) as one statement of many VALUES (or
        a few, each within SQLite's limit of parameters a statement).

        Not an executemany: psycopg sends that as one statement a row (in one pipeline), and
        SQLAlchemy's "insertmanyvalues", which would join them, is used with psycopg only for an INSERT
        with RETURNING; each statement costs the server its own parse, plan and execution."""
        most = max(1, _MOST_PARAMETERS // len(keys))
        for start in range(0, len(rows), most):
            chunk = rows[start:start + most]
            sql, binds, positional = self._prepared_rows(connection, keys, len(chunk))
            numbered = {f"{key}_{n}": value for n, row in enumerate(chunk) for key, value in row.items()}
            send(connection, sql, self._parameters(binds, positional, numbered))

    def _prepared_rows(self, connection: Connection, keys: tuple[str, ...], count: int) -> tuple[
            str, tuple[tuple[str, str, Any], ...], bool]:
        key = (connection.dialect.name, connection.dialect.driver, "rows", count, *keys)
        prepared = self._compiled.get(key)
        if prepared is None:
            # The values of row n are the parameters named "key_n", typed as their columns.
            columns = self.statement.table.columns
            statement = self.statement.values([
                {key: bindparam(f"{key}_{n}", type_=columns[key].type) for key in keys} for n in range(count)
            ])
            numbered = tuple(f"{key}_{n}" for n in range(count) for key in keys)
            prepared = self._compiled[key] = self._compile(connection, numbered, statement=statement)
        return prepared


def _json_null_first(type_: Any, process: Callable[[Any], Any] | None) -> Callable[[Any], Any] | None:
    """``process``, or for a JSON column that the driver hands over as text, one that makes its JSON
    ``null`` None without decoding it (a stored None is that text: a game's result, a seat's lines)."""
    if process is None or not isinstance(type_, JSON):
        return process

    def null_first(value: Any) -> Any:
        return None if value == "null" else process(value)

    return null_first


class DirectRead(DirectWrite):
    """A SELECT compiled once per database and read from the driver's cursor, each column's value made as
    SQLAlchemy's result would make it (its type's result processor: a JSON column decoded, a SQLite time
    parsed), the rows as lists in the statement's column order.

    SQLAlchemy's execution of the move path's read (its cache look-up, execution context and Row objects)
    cost as much Python as SQLite spent answering it (bench/movepath.py); sent as SQL text through
    ``exec_driver_sql`` it cost more, its result's description built anew each time.  The statement
    still passes the engine's cursor events (the write generation's and the benchmarks' listeners see
    it; SQLAlchemy's own statement logging does not), and a driver's error is raised as SQLAlchemy's
    class of it.  Every parameter must be given."""

    def __init__(self, statement: Any) -> None:
        super().__init__(statement)
        # Per database: each column that has a result processor, by its place in the row, with it.
        self._made: dict[tuple[str, str], tuple[tuple[int, Callable[[Any], Any]], ...]] = {}

    def _processors(self, connection: Connection, cursor: Any) -> tuple[
            tuple[int, Callable[[Any], Any]], ...]:
        dialect = connection.dialect
        key = (dialect.name, dialect.driver)
        processors = self._made.get(key)
        if processors is None:
            # Given the driver's type of each column, as SQLAlchemy gives it (psycopg's numbers need it).
            # (The cursor's description read only here: psycopg makes an object a column each time.)
            columns = zip(self.statement.selected_columns, cursor.description, strict=True)
            made = (_json_null_first(column.type, column.type.dialect_impl(dialect).result_processor(
                dialect, described[1])) for column, described in columns)
            processors = self._made[key] = tuple(
                (index, process) for index, process in enumerate(made) if process is not None)
        return processors

    def rows(self, connection: Connection, values: dict[str, Any]) -> list[list[Any]]:
        """The statement's rows with ``values`` bound, on ``connection`` (in its transaction)."""
        sql, binds, positional = self._prepared(connection, tuple(values), False)
        parameters = self._parameters(binds, positional, values)
        fetched, processors = _on_cursor(connection, sql, parameters, False, lambda cursor: (
            cursor.fetchall(), self._processors(connection, cursor)))
        made = []
        for row in fetched:
            values_made = list(row)
            for index, process in processors:
                values_made[index] = process(values_made[index])
            made.append(values_made)
        return made
