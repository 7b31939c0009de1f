"""Answers kept ready in each web process under a stamp: what the web pages (:mod:`pbem.web.pagecache`)
and the API (:mod:`pbem.api.kept`) share.  The web pages and the API may not import each other, so the
machinery they both use is here, below both; each keeps what is its own (who is asking, and how: a
session and its form tokens for pages, a Bearer token and ETags for the API).

An answer is kept for a URL and a reader (a user's id, or None for everyone without one) with the
*stamp* it was rendered under: one cheap read of every row it depends on, as tuples, no model objects.
It is served while a fresh read of the stamp is equal, and nothing has to be told to forget it.

The processes of the installation on this host share one thing: the *write generation*
(:mod:`pbem.core.generation`), eight bytes in a mapped file that every commit that wrote changes, after
the commit, to a value never seen before.  A kept answer remembers the generation read *before* its
stamp was read (for an answer just rendered, before the snapshot's read of it) and when that was (the
monotonic clock): :meth:`KeptStore.fresh`.  While the generation is still that value, and for at most
``pages.generation_max_age_seconds`` since, the answer is served with no read of the database at all;
else its stamp is read as ever, and if it is equal the answer's generation and time are taken anew.

Why that is right: a reader records generation G, then reads the stamp; a writer changes the generation
only after its commit.  So an answer checked at G saw every commit whose change came before G was read,
and any commit after that changes the generation away from G, never back to it (the values are
random, never one more than the last, which two writers could both write).  A commit that wrote and
whose change has not come yet was either seen by the stamp or will change the generation later.  So
reads follow writes across the processes of one host: a player's POST commits and changes the
generation before its answer is sent, and the GET it is redirected to, on whichever worker, misses the
fast path and reads the stamp.  What writes without changing it (a process that died between its commit
and the change, an operator's psql, web workers on another host, which must then turn the generation
off or accept the max age) and the words that change with time alone (a running clock's, ratings'
deviations now, which the stamps hold) are shown at most the max age late.  Without a generation (turned
off, or its file not to be opened or mapped) every request reads its stamp.

The stamp is read first by statements on a connection of their own, outside the session (on
PostgreSQL outside any transaction, which would cost two more round trips to the server, BEGIN then
ROLLBACK, as much as the read; on SQLite the session's transaction, begun and ended around it, cost a
tenth of a kept page): see :func:`read` and :func:`reading`.  On PostgreSQL that connection is one held
by the process for stamps (:class:`_Held`), not taken from the pool each time: the pool pings every
connection it gives out, a round trip to the server as dear as the stamp's own, so a kept answer made
two.  A held connection that the server ended (a restart, a failover, ``pg_terminate_backend``) fails
its statement; it is dropped and the statement sent once more on a fresh one.

An answer not kept is rendered in one snapshot of the database in which the stamp is read again
(:func:`snapshot`), and kept under what that read: so a kept answer shows the database as it was when
its stamp was read, never older nor newer, even when a stamp comes back once changed.  Each process
keeps at most a number of bytes of answers, the least recently used going first (:class:`KeptStore`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from flask import current_app, g, request
from sqlalchemy import CompoundSelect, Select, event
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError

from pbem.core.database import ONE_STATEMENT, generation_of, is_postgresql
from pbem.core.extensions import db
from pbem.core.models import clock_is_set

# Headers of a kept answer that are the response's own rather than the answer's.
_OWN_HEADERS = frozenset({"content-length"})

# Set in ``g`` while the stamp is read again in the snapshot its answer is then rendered in.
_IN_SNAPSHOT = "pbem_stamp_in_snapshot"
# Set in ``g`` while a stamp's statements share one connection of their own (see :func:`reading`).
_SHARED = "pbem_stamp_connection"
# The app's connections held for stamps on PostgreSQL (see :class:`_Held`), or None on SQLite.
_HELD = "pbem_stamp_connections"

_Store = TypeVar("_Store", bound="KeptStore")


# When a kept answer was last found to hold: the write generation read before its stamp was read, the
# monotonic time then, and whom it was checked for (what the page or the API compares the request's
# credentials with: a session token as the reader's row held it, a token's digest; None for a visitor).
Checked = tuple[bytes, float, object]


@dataclass(eq=False)
class Kept:
    """An answer as rendered: the stamp it was rendered under, its bytes, the headers its view gave and
    its weak ETag, if any; and when it was last found to hold (see :data:`Checked`), taken anew (one
    assignment of a tuple, so threads see all of it or none) whenever its stamp reads the same."""

    stamp: object
    body: bytes
    headers: tuple[tuple[str, str], ...]
    etag: str | None = None
    checked: Checked | None = None


class KeptStore:
    """Answers by URL and reader (a user's id, or None for everyone without one), each with the stamp it
    was rendered under; bounded by bytes, least recently used first out."""

    def __init__(self, max_bytes: int, max_answer_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.max_answer_bytes = max_answer_bytes
        self._kept: OrderedDict[tuple[str, int | None], Kept] = OrderedDict()
        self._bytes = 0
        # Threaded servers (``pbem web``) share the process's answers between threads.
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def size(self) -> int:
        """The bytes held: answers and their URLs."""
        return self._bytes

    def get(self, url: str, stamp: object, reader: int | None = None,
            checked: Checked | None = None) -> Kept | None:
        """The answer kept for ``url`` and ``reader`` if it was rendered under ``stamp``; found to hold
        as ``checked`` says, if given."""
        key = (url, reader)
        with self._lock:
            kept = self._kept.get(key)
            if kept is None or kept.stamp != stamp:
                return None
            self._kept.move_to_end(key)
        if checked is not None:
            kept.checked = checked
        return kept

    def fresh(self, url: str, reader: int | None, generation: bytes,
              max_age: float) -> tuple[Kept, Checked] | None:
        """The answer kept for ``url`` and ``reader`` if it was last found to hold under ``generation``
        less than ``max_age`` seconds ago, and how (whom it was checked for is the caller's to compare):
        one to serve without reading its stamp."""
        key = (url, reader)
        kept = self._kept.get(key)
        checked = kept.checked if kept is not None else None
        if kept is None or checked is None or checked[0] != generation or (
                time.monotonic() - checked[1] >= max_age):
            return None
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
        return kept, checked

    def put(self, url: str, kept: Kept, reader: int | None = None) -> None:
        """Keep ``kept`` for ``url`` and ``reader`` (in place of any older one), forgetting the least
        recently used answers beyond the bound."""
        cost = len(kept.body) + len(url)
        if cost > self.max_answer_bytes:
            return
        key = (url, reader)
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= len(old.body) + len(url)
            self._kept[key] = kept
            self._bytes += cost
            while self._bytes > self.max_bytes and self._kept:
                (gone_url, _reader), gone = self._kept.popitem(last=False)
                self._bytes -= len(gone.body) + len(gone_url)

    def clear(self) -> None:
        """Forget every answer."""
        with self._lock:
            self._kept.clear()
            self._bytes = 0


def store_of(app: Any, extension: str, make: Callable[[], _Store]) -> _Store:
    """The store ``app`` (the current app if None) keeps under ``extension``, made by ``make`` when
    first asked for; each app keeps its own."""
    app = app or current_app
    store = app.extensions.get(extension)
    if store is None:
        store = app.extensions.setdefault(extension, make())
    return cast(_Store, store)


def request_url() -> str:
    """The URL an answer is kept under: as the request names it, scheme, host, path and query as they
    came (``request.url`` decodes them into an IRI each time, a sixtieth of a kept page)."""
    environ = request.environ
    host = environ.get("HTTP_HOST") or f"{environ.get('SERVER_NAME')}:{environ.get('SERVER_PORT')}"
    path = f"{environ.get('SCRIPT_NAME', '')}{environ.get('PATH_INFO', '')}"
    return f"{environ['wsgi.url_scheme']}://{host}{path}?{environ.get('QUERY_STRING', '')}"


def plain_ok(response: Any) -> bool:
    """Whether a rendered answer is of the kind that may be kept: a 200 with its body in hand (not
    streamed nor passed through) that sets no cookie."""
    return (response.status_code == 200 and not response.direct_passthrough and not response.is_streamed
            and "Set-Cookie" not in response.headers)


def kept_headers(response: Any) -> tuple[tuple[str, str], ...]:
    """The headers of ``response`` to keep with its body: all but those each answer sets for itself."""
    return tuple((name, value) for name, value in response.headers.items()
                 if name.lower() not in _OWN_HEADERS)


# The write generation -------------------------------------------------------------------------------------

def generation_now() -> tuple[bytes, float, float] | None:
    """The host's write generation now, the monotonic time it was read and the longest a kept answer may
    be served on it unread (``pages.generation_max_age_seconds``); None without a generation (turned
    off, not to be mapped, a max age of 0) or while the time is set (:func:`pbem.core.models.set_clock`:
    a test's or ``pbem sweep --at``'s, which moves without the monotonic clock), when every kept answer
    reads its stamp.  Read it before the stamp."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    shared = generation_of(app)
    max_age = app.config["PBEM"]["pages"]["generation_max_age_seconds"]
    if shared is None or max_age <= 0 or clock_is_set():
        return None
    return shared.now(), time.monotonic(), max_age


def checked_at(now: tuple[bytes, float, float] | None, who: object = None) -> Checked | None:
    """What a kept answer found to hold after :func:`generation_now` gave ``now`` remembers (see
    :data:`Checked`), for ``who``; None without a generation."""
    return None if now is None else (now[0], now[1], who)


# Reading the stamp ---------------------------------------------------------------------------------------


class _Held:
    """The PostgreSQL connections a process holds for reading stamps, out of the pool, each in AUTOCOMMIT
    (no transaction around a read): taken by a request for its stamp's statements and given back after,
    at most :data:`HELD_IDLE` kept between requests (one a thread serving at once, in practice).

    Taken from the pool once, so pinged once, not once a request; the pool's ``pool_pre_ping`` keeps
    guarding every other connection.  A held connection the server ended is found by its next statement
    failing, and :func:`_rows` sends that statement once more on a fresh one.  A forked process holds
    none of its parent's (they share the parent's sockets)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.idle: list[Connection] = []
        # A parent's, never used nor closed here (closing would end the parent's sessions).
        self.inherited: list[Connection] = []

    def take(self) -> Connection:
        """An idle held connection, or a new one from the pool."""
        if self.pid != os.getpid():
            self.pid, self.idle, self.inherited = os.getpid(), [], self.inherited + self.idle
        try:
            return self.idle.pop()
        except IndexError:
            return db.engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    def close(self, *_engine: Any) -> None:
        """Close every idle held connection (when the engine is disposed: they are the pool's no more)."""
        while self.idle:
            connection = self.idle.pop()
            connection.invalidate()
            connection.close()

    def give_back(self, connection: Connection) -> None:
        """Hold ``connection`` for the next request, or return it to the pool if enough are held."""
        if len(self.idle) < HELD_IDLE and self.pid == os.getpid():
            self.idle.append(connection)
        else:
            connection.close()


# How many connections a process holds for stamps between requests (see :class:`_Held`).
HELD_IDLE = 4


def _held() -> _Held | None:
    """The app's connections held for stamps on PostgreSQL; None on SQLite, whose pool pings nothing."""
    extensions = current_app.extensions
    if _HELD not in extensions:
        held = _Held() if is_postgresql() else None
        if held is not None and extensions.setdefault(_HELD, held) is held:
            event.listen(db.engine, "engine_disposed", held.close)
        extensions.setdefault(_HELD, None)
    return cast(_Held | None, extensions[_HELD])


@contextmanager
def _own_connection(one_statement: bool = False) -> Iterator[Connection]:
    """A pooled connection outside the session (SQLite's; PostgreSQL's stamps read on :class:`_Held`
    ones), for ``one_statement`` alone outside any transaction (see
    :data:`pbem.core.database.ONE_STATEMENT`)."""
    connection = db.engine.connect()
    if one_statement:
        connection = connection.execution_options(**{ONE_STATEMENT: True})
    with connection:
        yield connection


def _rows(connection: Connection, statement: Select | CompoundSelect,
          parameters: dict[str, Any] | None) -> tuple[list[tuple[Any, ...]], Connection]:
    """The rows of ``statement`` read on ``connection``, held for stamps (PostgreSQL), and the held
    connection to go on with: a fresh one if the server had ended this one, the statement sent once
    more on it (a connection that failed is closed, returned to the pool, which drops a dead one)."""
    try:
        return [tuple(row) for row in connection.execute(statement, parameters or {}).all()], connection
    except BaseException as error:
        connection.close()
        held = _held()
        if held is None or not isinstance(error, DBAPIError) or not error.connection_invalidated:
            raise
    # (Outside the except block, so that a second failure is not told as raised while handling the first.)
    fresh = held.take()
    try:
        return [tuple(row) for row in fresh.execute(statement, parameters or {}).all()], fresh
    except BaseException:
        fresh.close()
        raise


@contextmanager
def reading() -> Iterator[None]:
    """A stamp of several statements reads them on one connection of its own (as :func:`read` reads
    one): on PostgreSQL one held for stamps; on SQLite a connection taken from the pool and a
    transaction begun and ended once, not once a statement.  Within the snapshot an answer is rendered
    in, the session's transaction is read."""
    if g.get(_IN_SNAPSHOT) or g.get(_SHARED) is not None:
        yield
        return
    held = _held()
    if held is None:
        with _own_connection() as connection:
            setattr(g, _SHARED, connection)
            try:
                yield
            finally:
                g.pop(_SHARED, None)
        return
    setattr(g, _SHARED, held.take())
    try:
        yield
    except BaseException:
        g.pop(_SHARED).close()
        raise
    held.give_back(g.pop(_SHARED))


def read(statement: Select | CompoundSelect,
         parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of a stamp's statement as tuples (compared whole), read without the ORM's layers, since
    no model object is made: in the snapshot an answer is rendered in, on the connection of
    :func:`reading`, or else on a connection of its own."""
    if g.get(_IN_SNAPSHOT):
        return [tuple(row) for row in db.session.connection().execute(statement, parameters or {}).all()]
    shared = g.get(_SHARED)
    if shared is not None:
        rows, connection = _rows(shared, statement, parameters)
        if connection is not shared:
            setattr(g, _SHARED, connection)
        return rows
    held = _held()
    if held is None:
        with _own_connection(one_statement=True) as own:
            return [tuple(row) for row in own.execute(statement, parameters or {}).all()]
    rows, connection = _rows(held.take(), statement, parameters)
    held.give_back(connection)
    return rows


@contextmanager
def snapshot() -> Iterator[None]:
    """Begin the session's transaction afresh for an answer to be rendered in, the stamp to be read
    again in it inside this block (on PostgreSQL REPEATABLE READ, which a read-only transaction never
    fails for; on SQLite a transaction's reads all see the database as its first did).

    An answer rendered after its stamp was read, but kept under it, could show what came after: kept
    under a stamp that comes back, it would then be served again when it no longer holds."""
    db.session.rollback()
    if is_postgresql():
        db.session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
    setattr(g, _IN_SNAPSHOT, True)
    try:
        yield
    finally:
        g.pop(_IN_SNAPSHOT, None)


# A parameter of a PlainRead that must be given.
_REQUIRED = object()


class PlainRead:
    """A stamp's statement compiled once per database and read straight from the driver's cursor, its
    rows as the driver gives them (on SQLite a time is its stored text, a flag 0 or 1).

    SQLAlchemy's execution of a Core statement (its execution context, then a Row for every row) spent
    more Python than SQLite spent answering a stamp of tens of rows: 0.4 ms against 0.16 for the
    standings' (37 rows).  A stamp compares its rows whole, read the same way each time, so the types
    SQLAlchemy would make of them add nothing but where a stamp computes words from them (see
    :func:`pbem.game.ratings.shown_now`, fed by :func:`moment`).  Read where :func:`read` reads: in
    the snapshot an answer is rendered in, on the connection of :func:`reading`, or on one of its own;
    on PostgreSQL, outside a snapshot, through :func:`read` itself (see :meth:`rows`)."""

    def __init__(self, statement: Select | CompoundSelect) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, tuple[tuple[str, str, Any, Any], ...], bool]] = {}

    def _prepared(self, dialect: Dialect) -> tuple[str, tuple[tuple[str, str, Any, Any], ...], bool]:
        prepared = self._compiled.get(dialect.name)
        if prepared is None:
            compiled = self.statement.compile(dialect=dialect)
            if compiled.literal_execute_params or compiled.post_compile_params:
                raise ValueError(f"a statement rendered anew at each execution: {self.statement}")
            names = {name: bind for bind, name in compiled.bind_names.items()}
            order = compiled.positiontup if compiled.positional else list(names)
            escaped = compiled.escaped_bind_names
            # Each parameter: its name, as the SQL text names it, its value unless given (or that it must
            # be given), and how the driver is given it.
            binds = tuple(
                (name, escaped.get(name, name), _REQUIRED if names[name].required else names[name].value,
                 names[name].type.dialect_impl(dialect).bind_processor(dialect))
                for name in order or ()
            )
            prepared = self._compiled.setdefault(dialect.name, (compiled.string, binds, compiled.positional))
        return prepared

    def _rows(self, connection: Connection, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
        sql, binds, positional = self._prepared(connection.dialect)
        converted = []
        for name, escaped, default, process in binds:
            value = parameters.get(name, default)
            if value is _REQUIRED:
                raise self._missing(name)
            converted.append((escaped, value if process is None else process(value)))
        cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(sql, tuple(value for _, value in converted) if positional else dict(converted))
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def _missing(self, name: str) -> KeyError:
        return KeyError(f"no value given for {name} of {self.statement}")

    def rows(self, parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """The statement's rows with ``parameters`` bound, as tuples of the driver's values."""
        if g.get(_IN_SNAPSHOT):
            return self._rows(db.session.connection(), parameters or {})
        if _held() is not None:
            # On PostgreSQL through read(): a connection held for stamps may have been ended by the server
            # (a restart), which SQLAlchemy tells from the driver's error and read() answers by sending the
            # statement once more on a fresh one; the driver's cursor alone would fail the request.
            for name, _escaped, default, _process in self._prepared(db.engine.dialect)[1]:
                if default is _REQUIRED and name not in (parameters or {}):
                    raise self._missing(name)
            return read(self.statement, parameters)
        shared = g.get(_SHARED)
        if shared is not None:
            if not shared.in_transaction():
                # Begun as a statement through SQLAlchemy would begin it: on SQLite the statements of
                # reading() read one state of the database (the driver's cursor alone begins nothing).
                shared.begin()
            return self._rows(shared, parameters or {})
        with _own_connection(one_statement=True) as connection:
            return self._rows(connection, parameters or {})


def moment(value: datetime | str | None) -> datetime | None:
    """A time as :class:`PlainRead` reads it (SQLite's stored text), as the model's column gives it."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value
