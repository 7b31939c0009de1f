"""Moves arriving at the same moment: the move path's lock lets exactly the right ones through."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from flask import Flask

from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.game import play, queries
from pbem.game.play import PlayError

ROUNDS = 5


def race(app: Flask, calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call in its own thread and app context, released together; results or exceptions."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def runner(i: int) -> None:
        with app.app_context():
            barrier.wait()
            try:
                results[i] = calls[i]()
            except Exception as exc:
                results[i] = exc
            finally:
                db.session.remove()

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def submit_as(user_id: int, game_id: int, text: str, expect: int | None = None) -> Callable[[], Any]:
    def call() -> Any:
        return play.submit(game_id, db.session.get(User, user_id), text, "web", expect=expect)

    return call


def test_two_moves_for_one_seat_at_once_apply_exactly_one(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    for _ in range(ROUNDS):
        game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
        db.session.commit()
        results = race(app, [submit_as(alice.id, game.id, "b3"), submit_as(alice.id, game.id, "c2")])
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(refused) == 1, results
        assert isinstance(refused[0], PlayError) and refused[0].code == "not-your-turn"
        assert "not your move" in refused[0].message
        db.session.rollback()  # End the read snapshot to see what the threads committed.
        game = db.session.get(Game, game.id)
        assert game.ply == 1 and len(game.moves) == 1


def test_the_same_confirmed_move_twice_at_once_applies_once(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    for _ in range(ROUNDS):
        game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
        db.session.commit()
        results = race(app, [submit_as(alice.id, game.id, "b3", 1), submit_as(alice.id, game.id, "b3", 1)])
        assert sum(isinstance(r, PlayError) for r in results) == 1, results
        db.session.rollback()  # End the read snapshot to see what the threads committed.
        assert [m.text for m in db.session.get(Game, game.id).moves] == ["b3"]


def test_two_seats_of_a_simultaneous_game_both_move(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    for _ in range(ROUNDS):
        game = play.create_game("easyslider", [alice, bob], {})
        db.session.commit()
        engine = queries.engine_of(game)
        state = queries.state_of(game)
        first = engine.moves(state, 0)[0]
        assert first != "done"
        results = race(app, [submit_as(alice.id, game.id, first, 1), submit_as(bob.id, game.id, first, 1)])
        assert not any(isinstance(r, Exception) for r in results), results
        db.session.rollback()  # End the read snapshot to see what the threads committed.
        game = db.session.get(Game, game.id)
        assert sorted(m.seat for m in game.moves) == [0, 1]
        assert [s.moves_made for s in game.seats] == [1, 1]
