"""The Alembic migrations build exactly the schema the models describe, on every backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import flask_migrate
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from pbem import create_app
from pbem.core.extensions import db
from tests.conftest import ROOT
from tests.server.conftest import BACKENDS, fresh_database

MIGRATIONS = ROOT / "migrations"


@pytest.fixture(params=BACKENDS)
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from fresh_database(request.param, tmp_path, "pbem_migrations")


# The one index of an expression, PostgreSQL's alone (ddl_if): SQLite neither has it nor can reflect it,
# and Alembic says it cannot compare it there.
@pytest.mark.filterwarnings(
    "ignore:autogenerate skipping metadata-specified expression-based index 'ix_inbound_mail_unfinished'")
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


# Each index as the database itself writes it out: SQLite keeps the CREATE INDEX it was given,
# PostgreSQL rebuilds its definition; both with a partial index's WHERE, which Alembic does not compare.
INDEX_DEFINITIONS = {
    "sqlite": "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL",
    "postgresql": "SELECT indexname, indexdef FROM pg_indexes "
                  "WHERE schemaname = 'public' AND tablename <> 'alembic_version'",
}


def index_definitions(url: str, tmp_path: Path, make: Callable[[], object]) -> dict[str, str]:
    """Every index of the database at ``url`` once ``make`` has made its schema in the app's context."""
    app = create_app({"database": {"url": url}, "server": {"instance_path": str(tmp_path)}})
    with app.app_context():
        make()
        with db.engine.connect() as conn:
            found = {name: sql for name, sql in conn.execute(sa.text(INDEX_DEFINITIONS[conn.dialect.name]))}
        db.engine.dispose()
    return found


def test_the_models_make_the_migrations_partial_indexes(empty_database: str, tmp_path: Path) -> None:
    """The schema the models make (the tests' own, by ``create_all``) has the migrations' indexes, each
    partial index with its condition, on each database."""
    backend = "sqlite" if empty_database.startswith("sqlite") else "postgresql"
    migrated = index_definitions(empty_database, tmp_path, flask_migrate.upgrade)
    second = fresh_database(backend, tmp_path, "pbem_models")
    try:
        made = index_definitions(next(second), tmp_path, db.create_all)
    finally:
        second.close()
    assert "WHERE" in migrated["ix_inbound_mail_waiting"]
    assert made == migrated


def test_elo_ratings_become_glicko2_ratings(empty_database: str, tmp_path: Path) -> None:
    """Upgrading keeps each Elo rating as the Glicko-2 rating, with a new player's deviation; the
    two-player games of before (all of them counted) are marked rated."""

    app = create_app({"database": {"url": empty_database}, "server": {"instance_path": str(tmp_path)}})
    at = datetime(2026, 1, 1)
    with app.app_context():
        scripts = ScriptDirectory.from_config(app.extensions["migrate"].migrate.get_config())
        before = scripts.get_revision("0006").down_revision
        flask_migrate.upgrade(revision=before)
        with db.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO \"user\" (id, handle, handle_key, email, mail_key, token_secret, notify, "
                "vacation_days_used, is_admin, created_at) VALUES "
                "(1, 'alice', 'alice', 'a@example.org', 'k', 's', 'move', 0, false, '2026-01-01 00:00:00')")
            conn.exec_driver_sql(
                "INSERT INTO rating (user_id, engine, rating, games, updated_at) VALUES "
                "(1, 'cambio', 1612.5, 7, '2026-03-04 05:06:07'), "
                "(1, 'truchet', 1500, 0, '2026-01-01 00:00:00')")
            for game_id, players in ((1, 2), (2, 3)):
                conn.execute(sa.text(
                    "INSERT INTO game (id, engine, options, seed, players, status, public, time_control, "
                    "ply, created_at, updated_at, version) VALUES (:id, 'cambio', '{}', 1, :players, "
                    "'finished', true, '{}', 0, :at, :at, 1)"), {"id": game_id, "players": players, "at": at})
        flask_migrate.upgrade()
        from pbem.core.models import Game, Rating
        from pbem.game import ratings

        cambio, truchet = db.session.scalars(db.select(Rating).order_by(Rating.engine)).all()
        assert (cambio.rating, cambio.deviation, cambio.volatility, cambio.games) == (1612.5, 350.0, 0.06, 7)
        assert str(cambio.last_game_at) == "2026-03-04 05:06:07"
        assert truchet.last_game_at is None and ratings.display(cambio) == "1612?"
        assert db.session.scalars(db.select(Game.rated).order_by(Game.id)).all() == [True, False]
        db.session.remove()
        db.engine.dispose()


def test_migration_files_are_named_in_the_order_they_run() -> None:
    """Each file's name starts with its step in the one chain of revisions (0001 for the first), so the
    files sort in the order they run, whatever their revision ids (kept, so databases upgrade as ever)."""
    scripts = ScriptDirectory(str(MIGRATIONS))
    assert len(scripts.get_heads()) == 1, "the migrations must form one chain"
    chain = [Path(script.path).name for script in reversed(list(scripts.walk_revisions()))]
    assert sorted(path.name for path in (MIGRATIONS / "versions").glob("*.py")) == chain
    for step, name in enumerate(chain, 1):
        assert name.startswith(f"{step:04d}_"), f"{name} is step {step} of the chain"


def _run_upgrade(revision: str) -> None:
    """Run one migration's upgrade (by its revision id) on the app's database, whatever revision the rest
    is at."""
    from alembic.operations import Operations

    module = ScriptDirectory(str(MIGRATIONS)).get_revision(revision).module
    with db.engine.begin() as conn, Operations.context(MigrationContext.configure(conn)):
        module.upgrade()


def test_carreaux_games_from_before_the_options_keep_the_sheets_rules(ctx, players) -> None:
    """A Carreaux game stored before when_stuck existed (its options and state without it) replays, after
    the upgrade, under the rule it was played by, so `pbem verify` finds nothing wrong."""
    from pbem.core.models import Game
    from pbem.game import play, replaycheck

    alice, bob, _ = players
    game = play.create_game("carreaux", [alice, bob], {"size": 4, "when_stuck": "draw"})
    db.session.commit()
    for i, text in enumerate(["a3", "a2", "b2", "c2", "c3"]):  # to the 4x4 draw of the sheet's rule
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
    other = play.create_game("carreaux", [alice, bob], {})  # created today: least-rise, stays so
    db.session.commit()
    old = db.session.get(Game, game.id)
    assert old.status == "finished" and set(old.state) == {"size", "board", "history", "winner", "stuck"}
    old.options = {"size": 4, "position": ""}  # as the server stored options before the options existed
    db.session.commit()
    assert [m.game_id for m in replaycheck.check_all()] == [game.id]  # replayed under least-rise: it differs

    db.session.close()  # the upgrade runs on a connection of its own, as `pbem db upgrade` would
    _run_upgrade("0008")
    assert db.session.get(Game, game.id).options == {"size": 4, "position": "", "when_stuck": "draw",
                                                      "group_value": "smallest"}
    assert db.session.get(Game, other.id).options["when_stuck"] == "least-rise"
    assert list(replaycheck.check_all()) == []


def test_comments_recorded_before_the_guard_lose_what_acts_for_a_player(app, ctx, players) -> None:
    """Issue #27: comments stored before they were guarded may hold a one-click link, a reply address, a
    player's mail key; the upgrade blanks them and keeps the rest of each comment as it was."""
    from pbem.core.models import Move
    from pbem.game import play
    from pbem.mailout import tokens
    from tests.server.conftest import give_mail_key

    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3})
    db.session.commit()
    play.submit(game.id, alice, "b3", "web", comment="placeholder")
    play.submit(game.id, bob, "a2", "web", comment="thanks")
    key = give_mail_key(bob)
    link = f"http://127.0.0.1:5000/m/{tokens.move_link_token(game.id, 0, alice, 1)}"
    leaked = (f"good luck\n> Or play with one click: {link}\n"
              f"> Reply to: {tokens.reply_address(game.id, 0, alice)}\nbob's key was {key}")
    with db.engine.begin() as conn:  # As the server kept it then, before comments were guarded.
        conn.execute(sa.text("UPDATE move SET comment = :c WHERE game_id = :g AND number = 1"),
                     {"c": leaked, "g": game.id})
    db.session.close()
    _run_upgrade("0013")
    comments = db.session.scalars(db.select(Move.comment).where(Move.game_id == game.id)
                                  .order_by(Move.number)).all()
    assert comments == ["good luck\n> Or play with one click: [link removed]\n> Reply to: [address removed]\n"
                        "bob's key was ********", "thanks"]
