"""Challenges and open seats: who gets which seat, when a game starts, and what each side is told."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail
from pbem.game import queries
from pbem.game.play import PlayError
from pbem.lobby import challenges
from tests.server.test_concurrency import race


def kinds_to(email: str) -> list[str]:
    rows = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == email).order_by(OutboxMail.id))
    return [r.kind for r in rows]


def test_a_challenge_accepted_starts_the_game(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3})
    assert game.status == "waiting"
    assert kinds_to(bob.email) == ["challenge"]
    assert [c.game_id for c in challenges.pending_challenges(bob)] == [game.id]
    challenges.accept(game.id, bob)
    game = db.session.get(Game, game.id)
    assert game.status == "active" and [s.user.handle for s in game.seats] == ["alice", "bob"]
    assert kinds_to(alice.email) == ["your-move"]  # Seat 1 (the challenger) moves first.
    with pytest.raises(PlayError, match="has started"):
        challenges.decline(game.id, bob)


def test_seats_follow_the_order_named(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [bob, alice], {"size": 3})
    challenges.accept(game.id, bob)
    game = db.session.get(Game, game.id)
    assert [s.user.handle for s in game.seats] == ["bob", "alice"]
    assert queries.seats_to_move(game) == {0}


def test_decline_and_withdraw_call_the_game_off(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, bob])
    with pytest.raises(PlayError, match="no challenge for you"):
        challenges.decline(game.id, carol)
    challenges.decline(game.id, bob)
    assert db.session.get(Game, game.id).status == "abandoned"
    assert "challenge-answered" in kinds_to(alice.email)
    other = challenges.new_game(alice, "cambio", [alice, carol])
    with pytest.raises(PlayError, match="Only the player who started"):
        challenges.withdraw(other.id, carol)
    challenges.withdraw(other.id, alice)
    assert db.session.get(Game, other.id).status == "abandoned"
    assert kinds_to(carol.email) == ["challenge", "challenge-answered"]


def test_an_open_seat_is_taken_from_the_lobby(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, None], public=True)
    assert [g.id for g in challenges.open_games()] == [game.id]
    with pytest.raises(PlayError, match="already have a seat"):
        challenges.take_seat(game.id, alice)
    challenges.take_seat(game.id, bob)
    assert db.session.get(Game, game.id).status == "active"
    assert challenges.open_games() == []
    with pytest.raises(PlayError, match="has started"):
        challenges.take_seat(game.id, carol)


def test_solitaire_starts_at_once(ctx: Flask, players) -> None:
    alice, _, _ = players
    game = challenges.new_game(alice, "easyslider", [alice], {"rounds": 1})
    assert game.status == "active" and kinds_to(alice.email) == ["your-move"]


def test_two_players_taking_the_last_seat_at_once(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, None])
    ids = [bob.id, carol.id]

    def taker(user_id: int):
        from pbem.core.models import User

        return lambda: challenges.take_seat(game.id, db.session.get(User, user_id))

    results = race(app, [taker(i) for i in ids])
    assert sum(isinstance(r, PlayError) for r in results) == 1, results
    db.session.rollback()
    seats = db.session.get(Game, game.id).seats
    assert seats[1].user_id in ids
