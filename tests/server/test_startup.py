"""What a process loads when it starts: a web worker carries none of the parts it never runs (the mail
listener, the scheduler, the bots, migrations, Swiss pairing, feeds, metrics, the other database), and
`make run` upgrades a database that is behind and leaves one at its head alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import flask_migrate
import pytest
import sqlalchemy as sa

from pbem import create_app
from pbem.cli import schema_at_head
from pbem.core.extensions import db
from tests.conftest import ROOT
from tests.server.conftest import BACKENDS, fresh_database

# What a web worker never runs, each a megabyte or more of its memory, or a part of another process
# (the dev mailbox's Maildir, only on a development server, is 0.4 MB).
NOT_IN_A_WEB_WORKER = (
    "aiosmtpd", "apscheduler", "pbem.mailin.smtpd", "pbem.schedule.scheduler", "pbem.bots",
    "games.players", "alembic", "flask_migrate", "networkx", "feedgen", "prometheus_client", "apispec",
    "mailbox",
)
# Nor the other database's driver and SQLAlchemy dialect (2.4 MB for PostgreSQL's on SQLite).
OTHER_DATABASE = {"sqlite": ("sqlalchemy.dialects.postgresql", "psycopg"),
                  "postgresql": ("sqlalchemy.dialects.sqlite", "sqlite3")}


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from fresh_database(request.param, tmp_path, "pbem_startup")


def modules_loaded(code: str, database_url: str, tmp_path: Path) -> set[str]:
    """The modules loaded by the Python ``code``, run in a process of its own on ``database_url``."""
    env = dict(os.environ, PBEM_CONFIG=str(ROOT / "config" / "testing.toml"),
               PBEM_SERVER_INSTANCE_PATH=str(tmp_path), PBEM_DATABASE_URL=database_url,
               PYTHONPATH=str(ROOT))
    loaded = subprocess.run(
        [sys.executable, "-c", f"import json, sys; {code}; print(json.dumps(sorted(sys.modules)))"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    return set(json.loads(loaded.stdout))


def loaded_of(names: tuple[str, ...], modules: set[str]) -> list[str]:
    """Those of the packages or modules ``names`` that are among ``modules``."""
    return [name for name in names if name in modules or any(m.startswith(f"{name}.") for m in modules)]


def test_a_web_worker_loads_only_what_it_serves(database_url: str, tmp_path: Path) -> None:
    """The module gunicorn loads, in a process of its own: the app is built, and the parts of the other
    processes, the libraries only a rare request needs, and the other database's, are not loaded."""
    modules = modules_loaded("import pbem.wsgi", database_url, tmp_path)
    assert "pbem.web.gameplay" in modules and "pbem.api.routes" in modules  # (the app was built)
    other = OTHER_DATABASE[sa.make_url(database_url).get_backend_name()]
    assert loaded_of(NOT_IN_A_WEB_WORKER + other, modules) == []


def test_the_listener_and_the_scheduler_load_one_database(database_url: str, tmp_path: Path) -> None:
    """The mail listener's and the scheduler's modules, their app built, leave the other database's
    dialect and driver out (its statements are built when first sent)."""
    started = ("from pbem import create_app; import pbem.mailin.smtpd, pbem.schedule.scheduler; "
               "create_app(role='pbem smtpd')")
    modules = modules_loaded(started, database_url, tmp_path)
    assert "pbem.mailin.process" in modules
    assert loaded_of(OTHER_DATABASE[sa.make_url(database_url).get_backend_name()], modules) == []


def test_the_schema_is_at_its_head_only_once_upgraded(tmp_path: Path) -> None:
    """`pbem run --upgrade` (`make run`) skips Alembic only for a database at the latest migration: not
    for a new database, nor for one a migration behind."""
    app = create_app({"database": {"url": f"sqlite:///{tmp_path / 'pbem.db'}"},
                      "server": {"instance_path": str(tmp_path)}})
    assert not schema_at_head(app)
    with app.app_context():
        flask_migrate.upgrade(revision="0018")
    assert not schema_at_head(app)
    with app.app_context():
        flask_migrate.upgrade()
    assert schema_at_head(app)
    with app.app_context():
        db.engine.dispose()
