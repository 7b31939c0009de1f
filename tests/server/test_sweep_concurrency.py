"""Two sweepers at once over hundreds of due games: every reminder and every timeout happens exactly once."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, set_clock
from pbem.game import play
from pbem.schedule import sweep
from tests.server.test_concurrency import race

T0 = datetime(2025, 3, 3, 12, 0)
GAMES = 120  # of each kind: reminders due, timeouts due


def test_two_sweepers_remind_and_time_out_exactly_once(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    try:
        set_clock(T0)
        timing_out = [play.create_game("cambio", [alice, bob], {"size": 3}, time_control={
            "kind": "per_move", "days": 3}) for _ in range(GAMES)]
        db.session.commit()
        # In a quarter of the games both have moved, so alice's timeout loses them (and moves the
        # ratings, whose rows both sweepers lock); the others, where nobody moved, are aborted.
        for game in timing_out[::4]:
            play.submit(game.id, alice, "b3", "web")
            play.submit(game.id, bob, "a2", "web")
        set_clock(T0 + timedelta(days=1, hours=12))
        reminded = [play.create_game("cambio", [bob, alice], {"size": 3}, time_control={
            "kind": "per_move", "days": 3}) for _ in range(GAMES)]
        db.session.commit()
        late, early = {g.id for g in timing_out}, {g.id for g in reminded}

        # Past the first games' deadline; the others are between their 48- and 12-hour points.
        set_clock(T0 + timedelta(days=3, minutes=1))
        reports = race(app, [sweep.sweep, sweep.sweep])
        assert all(isinstance(r, sweep.SweepReport) and r.failed == 0 for r in reports), reports
        assert sum(r.reminded for r in reports) == GAMES and sum(r.timed_out for r in reports) == GAMES
        assert sweep.sweep().reminded == 0  # A third sweep, later, finds nothing left to do.
    finally:
        set_clock(None)

    db.session.rollback()
    timeouts = Counter(db.session.scalars(select(Move.game_id).where(Move.kind == "timeout")))
    assert set(timeouts) == late and set(timeouts.values()) == {1}
    statuses = Counter(db.session.scalars(select(Game.status).where(Game.id.in_(late))))
    assert statuses == {"finished": GAMES // 4, "abandoned": GAMES - GAMES // 4}
    results = Counter(db.session.scalars(
        select(OutboxMail.game_id).where(OutboxMail.kind == "game-over", OutboxMail.game_id.in_(late))))
    assert set(results.values()) == {2}  # Both players told, once.
    reminders = Counter(db.session.execute(
        select(OutboxMail.game_id, OutboxMail.to_addr).where(OutboxMail.kind == "reminder")).all())
    assert {g for g, _ in reminders} == early and set(reminders.values()) == {1}
    assert {to for _, to in reminders} == {bob.email}
