"""Database set-up that SQLAlchemy does not do by itself: SQLite pragmas and write transactions.

SQLite runs in WAL mode with foreign keys on, a busy timeout, and (by default) ``synchronous=FULL``, so
that a commit is on the disk before anyone is told it happened.  Its default deferred transactions
would let two writers both read a game and then fail when the second tries to write; the move path
therefore begins its transaction with ``BEGIN IMMEDIATE`` (see :func:`begin_write`), so that writers
queue for the lock and the second one reads the game as the first left it.  On PostgreSQL the same
guarantee comes from ``SELECT … FOR UPDATE`` on the game row.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session, SessionTransaction

from pbem.extensions import db

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
    objects loaded before are expired and re-read inside the new transaction.
    """
    session = db.session
    if session.new or session.dirty or session.deleted:
        raise RuntimeError("begin_write() with unsaved changes in the session")
    session.rollback()
    session.connection(execution_options={_IMMEDIATE: True})


_CACHE = "pbem_transaction_cache"


def transaction_cache(name: str) -> dict[Any, Any]:
    """A dict that lives as long as the session's current transaction.

    For what a transaction has already read under its locks (rating rows, record numbers), so that a
    batch of games reads each once; it is forgotten when the transaction ends, with the locks.
    """
    return db.session.info.setdefault(_CACHE, {}).setdefault(name, {})


@event.listens_for(Session, "after_transaction_end")
def _forget_transaction_cache(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_CACHE, None)
