"""What a process loads when it starts: a web worker carries none of the parts it never runs (the mail
listener, the scheduler, the bots, migrations, Swiss pairing, feeds, metrics), and `make run` upgrades
a database that is behind and leaves one at its head alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import flask_migrate

from pbem import create_app
from pbem.cli import schema_at_head
from pbem.core.extensions import db
from tests.conftest import ROOT

# What a web worker never runs, each a megabyte or more of its memory, or a part of another process.
# (SQLAlchemy's PostgreSQL dialect is loaded on SQLite too, by the models' PostgreSQL-only partial
# indexes: SQLAlchemy reads a ``postgresql_where`` through the dialect.)
NOT_IN_A_WEB_WORKER = (
    "aiosmtpd", "apscheduler", "pbem.mailin.smtpd", "pbem.schedule.scheduler", "pbem.bots",
    "games.players", "alembic", "flask_migrate", "networkx", "feedgen", "prometheus_client", "apispec",
)


def test_a_web_worker_loads_only_what_it_serves(tmp_path: Path) -> None:
    """The module gunicorn loads, in a process of its own: the app is built, and the parts of the other
    processes, and the libraries only a rare request needs, are not loaded."""
    env = dict(os.environ, PBEM_CONFIG=str(ROOT / "config" / "testing.toml"),
               PBEM_SERVER_INSTANCE_PATH=str(tmp_path), PBEM_DATABASE_URL=f"sqlite:///{tmp_path / 'pbem.db'}",
               PYTHONPATH=str(ROOT))
    loaded = subprocess.run(
        [sys.executable, "-c", "import json, sys; import pbem.wsgi; print(json.dumps(sorted(sys.modules)))"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    modules = set(json.loads(loaded.stdout))
    assert "pbem.web.gameplay" in modules and "pbem.api.routes" in modules  # (the app was built)
    assert [name for name in NOT_IN_A_WEB_WORKER
            if name in modules or any(m.startswith(f"{name}.") for m in modules)] == []


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
