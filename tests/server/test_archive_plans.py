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
