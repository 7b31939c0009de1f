"""The Alembic migrations build exactly the schema the models describe, on every backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import flask_migrate
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from pbem import create_app
from pbem.extensions import db
from tests.server.conftest import BACKENDS, create_pg_database, drop_pg_database


@pytest.fixture(params=BACKENDS)
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'migrated.db'}"
    else:
        url = create_pg_database("pbem_migrations")
        yield url
        drop_pg_database(url)


def test_migrations_match_the_models(empty_database: str, tmp_path: Path) -> None:
    app = create_app({"database": {"url": empty_database}, "server": {"instance_path": str(tmp_path)}})
    with app.app_context():
        flask_migrate.upgrade()
        with db.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), db.metadata)
        assert diff == [], f"models and migrations differ: {diff}"
        flask_migrate.downgrade(revision="base")
        flask_migrate.upgrade()
        db.engine.dispose()
