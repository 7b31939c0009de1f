"""The archive's queries use their indexes: SQLite's query plans show no full scan and no sort."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from flask import Flask
from sqlalchemy import tuple_

from pbem.api import routes
from pbem.archive import archive
from pbem.core.extensions import db
from tests.server.archived import finished

BAD = ("SCAN ", "USE TEMP B-TREE")
# sqlite_stat1's rows for the games and seats of bench/scale.py's database of 1,000,000 finished games.
MILLION_GAMES_STATISTICS = [
    ("game", "ix_game_origin", "1000006 1000006 1000006"),
    ("game", "ix_game_front", "1000006 500003 333336 1"),
    ("game", "ix_game_finished_at", "1000006 1"),
    ("game", "ix_game_status", "1000006 500003"),
    ("game", "ix_game_archive_engine", "1000006 333336 250002 142858 1 1"),
    ("game", "ix_game_archive", "1000006 500003 333336 1 1"),
    ("game", "ix_game_import_key", "1000006 1000006"),
    ("game", "ix_game_engine", "1000006 333336"),
    ("seat", "ix_seat_user_game", "2000012 2001 1"),
    ("seat", "ix_seat_archive", "2000012 2001 1 1"),
    ("seat", "ix_seat_next_event_at", "2000012 666671"),
    ("seat", "sqlite_autoindex_seat_1", "2000012 2 1"),
]


def plan(query) -> list[str]:
    compiled = query.compile(db.engine)
    values = tuple(compiled.params[name] for name in compiled.positiontup or ())
    rows = db.session.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled.string}", values)
    return [row[3] for row in rows]


def four_finished(players) -> None:
    """Four finished games among the three players (alice in each), the statistics taken."""
    alice, bob, carol = players
    for n in range(4):
        finished("cambio", [alice, bob] if n % 2 else [carol, alice], end="resign",
                 at=datetime(2026, 1, 1 + n))
    db.session.execute(db.text("ANALYZE"))


def test_archive_queries_search_indexes_and_never_sort(ctx: Flask, players) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the plans checked are SQLite's (bench/archive.py shows PostgreSQL's)")
    alice, bob, _carol = players
    four_finished(players)
    cases = [
        archive.Filters(),
        archive.Filters(engine="cambio"),
        archive.Filters(players=(alice,)),
        archive.Filters(players=(alice, bob), result="win"),
        archive.Filters(engine="truchet", players=(alice,), since=date(2026, 1, 1)),
        archive.Filters(result="draw", ending="time", min_moves=3, max_moves=40),
        archive.Filters(result="loss", rated=True),
        archive.Filters(since=date(2026, 1, 1), until=date(2026, 2, 1)),
    ]
    for filters in cases:
        for deep in (False, True):
            query, key = archive.archive_query(filters)
            if deep:  # A page further on, as search() asks for it.
                query = query.where(tuple_(*key) < tuple_(datetime(2026, 1, 3), 2))
            steps = plan(query.order_by(key[0].desc(), key[1].desc()).limit(51))
            assert steps and not [s for s in steps if s.startswith(BAD)], (filters, steps)
            assert any("ix_game_archive" in s or "ix_seat_archive" in s for s in steps), steps


def test_api_lists_of_a_players_games_read_a_page_of_their_seats(ctx: Flask, players) -> None:
    """The API's lists of a player's games read as many of their seats as a page holds, not every seat of
    their archive (bench/scale.py, from 10,000 finished games to 1,000,000: the list of a player's active
    games grew 5x on SQLite when it read all their seats, the list of all their games 3x on PostgreSQL):
    their games waiting or in play from their unfinished seats, any others by walking their seats newest
    first; the caller's and the opponent's seats looked up game by game."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the plans checked are SQLite's (bench/scale.py shows PostgreSQL's)")
    alice, _bob, _carol = players
    four_finished(players)
    # The planner told what ANALYZE found in bench/scale.py's database of 1,000,000 finished games (its
    # choices for a few rows are not the ones that count).
    db.session.execute(db.text("DELETE FROM sqlite_stat1 WHERE tbl IN ('game', 'seat')"))
    db.session.execute(db.text("INSERT INTO sqlite_stat1 VALUES (:tbl, :idx, :stat)"), [
        {"tbl": tbl, "idx": idx, "stat": stat} for tbl, idx, stat in MILLION_GAMES_STATISTICS])
    db.session.execute(db.text("ANALYZE sqlite_schema"))  # (Read again.)

    def steps(caller: int | None, **query: object) -> list[str]:
        found, _limit, archived, _players = routes._listing(caller, {**query, "limit": 100})
        assert not archived
        return plan(found)

    by_game = "ix_seat_user_game (user_id=? AND game_id=?)"
    for status in ("active", "waiting"):
        live = steps(alice.id, status=status, player="bob")
        assert any("ix_seat_archive (user_id=? AND finished_at=?)" in s for s in live), live
        assert any(by_game in s for s in live) and not [s for s in live if s.startswith("SCAN ")], live
    for caller, query in ((alice.id, {"player": "bob"}), (None, {"player": "bob"}),
                          (alice.id, {"player": "bob", "opponent": "carol", "after": 3})):
        walk = steps(caller, **query)
        # One walk of the player's seats, stopped when the page is full (no sort, no DISTINCT of all).
        assert sum("ix_seat_user_game (user_id=?" in s and by_game not in s for s in walk) == 1, walk
        assert not [s for s in walk if s.startswith("SCAN game") or "FOR DISTINCT" in s], walk
        assert sum(by_game in s for s in walk) == (caller is not None) + ("opponent" in query), walk
