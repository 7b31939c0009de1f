"""Migration 0005 gives the games finished before it their ending and their seats' results; migration
0022 counts them into the players' tallies."""

from __future__ import annotations

import json
from pathlib import Path

import flask_migrate
import sqlalchemy as sa

from pbem import create_app
from pbem.core.extensions import db
from tests.server.test_migrations import empty_database  # noqa: F401  (the fixture)


def test_games_finished_before_the_archive_are_in_it(empty_database: str, tmp_path: Path) -> None:  # noqa: F811
    app = create_app({"database": {"url": empty_database}, "server": {"instance_path": str(tmp_path)}})
    with app.app_context():
        flask_migrate.upgrade(revision="0006a")
        result = {"results": ["loss", "win"], "reason": "alice resigned", "ranks": [2, 1], "scores": None}
        with db.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO \"user\" (id, handle, handle_key, email, mail_key, token_secret, notify, "
                "vacation_days_used, is_admin, created_at) VALUES "
                "(1, 'alice', 'alice', 'a@example.org', 'k', 's', 'move', 0, false, '2026-01-01 00:00:00'),"
                "(2, 'bob', 'bob', 'b@example.org', 'k', 's', 'move', 0, false, '2026-01-01 00:00:00')")
            conn.execute(sa.text(
                "INSERT INTO game (id, engine, options, seed, players, status, public, time_control, "
                "ply, created_at, updated_at, finished_at, result, version, rated) VALUES (1, 'cambio', "
                "'{}', 1, 2, 'finished', true, '{}', 0, :at, :at, :at, :result, 1, true)"),
                {"at": "2026-02-01 10:00:00", "result": json.dumps(result)})
            conn.exec_driver_sql("INSERT INTO seat (game_id, number, user_id, moves_made, reminders_sent) "
                                 "VALUES (1, 0, 1, 0, 0), (1, 1, 2, 0, 0)")
            conn.exec_driver_sql("INSERT INTO move (game_id, number, seat, kind, text, via, created_at) "
                                 "VALUES (1, 1, 0, 'resign', 'resign', 'web', '2026-02-01 10:00:00')")
        flask_migrate.upgrade()
        from pbem.archive import archive

        [game] = archive.search(archive.parse_filters({"player": "bob", "result": "win"})).games
        assert game.id == 1 and game.ending == "resignation"
        assert [(s.result, str(s.finished_at)) for s in game.seats] == [
            ("loss", "2026-02-01 10:00:00"), ("win", "2026-02-01 10:00:00")]
        from pbem.game import tallies

        assert tallies.stored() == {(1, "cambio", True, True): tallies.Record(losses=1),
                                    (2, "cambio", True, True): tallies.Record(wins=1)}
        db.session.remove()
        db.engine.dispose()
