"""Server fixtures: an app on a real database (SQLite file, and PostgreSQL when
PBEM_TEST_DATABASE_URL is set), a real SMTP sink for outbound mail, and players.

Each PostgreSQL test gets tables in a database of its own run (created at the start, dropped at the
end) and empties them afterwards (numbering restarting at 1), so tests never see each other's rows.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller
from flask import Flask
from flask.testing import FlaskCliRunner

from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import InboundMail, User
from pbem.mailout import devmail
from tests.conftest import free_port

PG_ADMIN_URL = os.environ.get("PBEM_TEST_DATABASE_URL", "")
BACKENDS = ["sqlite"] + (["postgresql"] if PG_ADMIN_URL else [])


def create_pg_database(prefix: str) -> str:
    """A new empty PostgreSQL database; returns its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return sa.make_url(PG_ADMIN_URL).set(database=name).render_as_string(hide_password=False)


def drop_pg_database(url: str) -> None:
    """Drop a database made by :func:`create_pg_database`, even with connections left open."""
    name = sa.make_url(url).database
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.dispose()


def fresh_database(backend: str, tmp_path: Path, name: str) -> Iterator[str]:
    """A new empty database of ``backend`` ("sqlite" or "postgresql"), for a fixture to yield from: a
    SQLite file in ``tmp_path``, or a PostgreSQL database of its own, dropped after."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / (name + '.db')}"
        return
    url = create_pg_database(name)
    try:
        yield url
    finally:  # (Also when the generator is closed rather than run to its end.)
        drop_pg_database(url)


# For a test whose behaviour has nothing to do with the database (what a server process writes to its
# log, say) and which is costly to run (processes of its own): it runs on SQLite alone, not on each backend.
ONE_BACKEND = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL database for this test run."""
    url = create_pg_database("pbem_test")
    yield url
    drop_pg_database(url)


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The database URL of one backend: a fresh SQLite file, or the run's PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'pbem.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def sink_port() -> int:
    """The port of the outbound SMTP sink (started by the ``sink`` fixture)."""
    return free_port()


@pytest.fixture
def settings(db_url: str, tmp_path: Path, sink_port: int) -> dict:
    """Settings overrides for a test app."""
    return {
        "server": {"instance_path": str(tmp_path / "instance")},
        "database": {"url": db_url},
        "mail": {"smtp_port": sink_port},
    }


# SQLite files with the tables made, by the set of tables the models declare: a test's database is a
# copy of one (a file copy, instead of creating every table and waiting for the disk each time).
_SQLITE_SCHEMAS: dict[frozenset[str], Path] = {}


def create_tables(app: Flask, schemas: pytest.TempPathFactory) -> None:
    """``db.create_all()`` for ``app``; on SQLite by copying a database made so once in this run."""
    with app.app_context():
        path = db.engine.url.database if db.engine.dialect.name == "sqlite" else None
        if not path or path == ":memory:":
            db.create_all()
            return
        tables = frozenset(db.metadata.tables)
        made = _SQLITE_SCHEMAS.get(tables)
        if made is None:
            db.create_all()
            db.engine.dispose()  # The last connection closed writes the WAL into the file.
            made = schemas.mktemp("schema") / "tables.db"
            shutil.copyfile(path, made)
            _SQLITE_SCHEMAS[tables] = made
            return
        db.engine.dispose()
        for leftover in (Path(path + "-wal"), Path(path + "-shm")):
            leftover.unlink(missing_ok=True)
        shutil.copyfile(made, path)


@pytest.fixture
def app(settings: dict, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flask]:
    """An app with its tables created, emptied again after the test."""
    app = create_app(settings)
    create_tables(app, tmp_path_factory)
    yield app
    with app.app_context():
        db.session.remove()
        if db.engine.dialect.name == "postgresql":
            # DELETE and setval rather than TRUNCATE ... RESTART IDENTITY, which gives every table and
            # sequence new files on disk: ten times slower on tables this small, after every test.
            with db.engine.begin() as conn:
                for table in reversed(db.metadata.sorted_tables):
                    conn.execute(table.delete())
                conn.exec_driver_sql("SELECT setval(c.oid::regclass, 1, false) FROM pg_class c "
                                     "WHERE c.relkind = 'S' AND c.relnamespace = 'public'::regnamespace")
        db.engine.dispose()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    """Flask's runner of commands, for the `pbem` command on the test's app in the test's own process:
    ``runner.invoke(main, ["verify"])`` runs `pbem verify` (its commands take the runner's app, see
    ``pbem.cli._app``).  A test that needs a real process (a listener, signals, what an MTA's pipe
    sees) starts one instead."""
    return app.test_cli_runner()


@pytest.fixture
def stamps_read(app: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kept page and API answer of ``app`` read against its stamp, never served unread on the
    host's write generation (its max age 0): for the tests of what the stamps read and how."""
    monkeypatch.setitem(app.config["PBEM"]["pages"], "generation_max_age_seconds", 0)


@pytest.fixture
def ctx(app: Flask) -> Iterator[Flask]:
    """The app with an app context pushed for the test body."""
    with app.app_context():
        yield app
        db.session.remove()


class RefusingMaildir(devmail.MaildirHandler):
    """The dev mailbox's handler, refusing what ``sink`` says to refuse, as a real server would: a
    recipient in ``sink.refuse`` (with the answer given there, e.g. "550 5.1.1 No such user here"),
    every sender when ``sink.refuse_sender`` is set, every mail's data when ``sink.refuse_data`` is."""

    def __init__(self, path: Path, sink: Sink) -> None:
        super().__init__(path)
        self.sink = sink

    async def handle_MAIL(self, server, session, envelope, address: str, mail_options) -> str:
        """Refuse the sender if told to, else take it."""
        if self.sink.refuse_sender:
            return self.sink.refuse_sender
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address: str, rcpt_options) -> str:
        """Refuse the address if told to, else take it."""
        answer = self.sink.refuse.get(address.lower())
        if answer:
            return answer
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        """Refuse the mail if told to, else keep it."""
        return self.sink.refuse_data or await super().handle_DATA(server, session, envelope)


class Sink:
    """The dev mailbox's SMTP sink, running on a loopback port, with helpers to read what arrived.
    ``refuse`` maps recipients to the answer the sink gives them instead of taking their mail;
    ``refuse_sender`` and ``refuse_data``, when set, are its answer to every MAIL FROM or DATA."""

    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self.controller = None
        self.refuse: dict[str, str] = {}
        self.refuse_sender: str | None = None
        self.refuse_data: str | None = None

    def start(self) -> None:
        """Start listening (an aiosmtpd controller cannot be restarted, so each start makes one)."""
        self.controller = Controller(RefusingMaildir(self.path, self), hostname="127.0.0.1",
                                     port=self.port, decode_data=False)
        self.controller.start()

    def stop(self) -> None:
        """Stop listening (the mail kept stays)."""
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def messages(self, to: str | None = None) -> list:
        """The mails received, oldest first, optionally only those to ``to``."""
        found = devmail.messages(self.path)
        if to is not None:
            found = [m for m in found if to in m["X-Pbem-Envelope-To"]]
        return found


@pytest.fixture
def sink(tmp_path: Path, sink_port: int) -> Iterator[Sink]:
    """A real SMTP server on loopback that keeps outbound mail."""
    s = Sink(tmp_path / "sink", sink_port)
    s.start()
    yield s
    s.stop()


@pytest.fixture
def players(ctx: Flask) -> tuple[User, User, User]:
    """Three verified players: alice, bob and carol."""
    from pbem.accounts.accounts import create_user

    users = tuple(create_user(h, f"{h}@example.org", verified=True) for h in ("alice", "bob", "carol"))
    db.session.commit()
    return users  # type: ignore[return-value]


def message_id_of(stored: InboundMail) -> str:
    """The Message-ID a stored inbound mail came with (its key adds the sender: see
    pbem.mailin.receive.message_key)."""
    return stored.message_id.split(" ", 1)[0]


def give_mail_key(user: User, key: str | None = None) -> str:
    """Give ``user`` a known mail key (``key``, or a fresh one; stored hashed, as always) and return it."""
    from pbem.core.models import hash_mail_key, new_mail_key
    from pbem.core.unit_of_work import unit_of_work

    key = key or new_mail_key()
    with unit_of_work() as uow:
        db.session.get(User, user.id).mail_key_hash = hash_mail_key(key)
        uow.commit()
    return key
