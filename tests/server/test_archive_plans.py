"""The archive's queries use their indexes: SQLite's query plans show no full scan and no sort."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from flask import Flask
from sqlalchemy import tuple_

from pbem.archive import archive
from pbem.core.extensions import db
from tests.server.archived import finished

BAD = ("SCAN ", "USE TEMP B-TREE")


def plan(query) -> list[str]:
    sql = query.compile(db.engine, compile_kwargs={"literal_binds": True})
    return [row[3] for row in db.session.execute(db.text(f"EXPLAIN QUERY PLAN {sql}"))]


def test_archive_queries_search_indexes_and_never_sort(ctx: Flask, players) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the plans checked are SQLite's (bench/archive.py shows PostgreSQL's)")
    alice, bob, carol = players
    for n in range(4):
        finished("cambio", [alice, bob] if n % 2 else [carol, alice], end="resign",
                 at=datetime(2026, 1, 1 + n))
    db.session.execute(db.text("ANALYZE"))
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


def test_api_lists_of_games_in_play_read_only_the_players_unfinished_seats(ctx: Flask, players) -> None:
    """A player's games waiting or in play are found from their unfinished seats, not from every seat
    of their archive (bench/scale.py: the list of a player's active games grew 5x from 10,000 finished
    games to 1,000,000 when it read all their seats)."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the plans checked are SQLite's (bench/scale.py shows PostgreSQL's)")
    from pbem.api import routes

    alice, bob, carol = players
    for n in range(4):
        finished("cambio", [alice, bob] if n % 2 else [carol, alice], end="resign",
                 at=datetime(2026, 1, 1 + n))
    db.session.execute(db.text("ANALYZE"))
    for status in ("active", "waiting"):
        query, _limit, archived, _players = routes._listing(alice.id, {"status": status, "player": "bob",
                                                                       "limit": 100})
        steps = plan(query)
        assert not archived
        # The caller's seats (what they may see) and the named player's: each by the index's unfinished end.
        assert sum("ix_seat_archive (user_id=? AND finished_at=?)" in s for s in steps) == 2, steps
        assert not [s for s in steps if s.startswith("SCAN ")], steps
    # Finished games are the archive's (its own plans, above); any other status reads every seat.
    query, *_ = routes._listing(alice.id, {"status": "abandoned", "player": "bob", "limit": 100})
    assert not [s for s in plan(query) if "finished_at=?" in s]
