"""Vacation: turning it on stops a player's clocks, turning it off moves their deadlines later by the time
away, the yearly allowance is used up while on, and vacation ends by itself when it runs out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from flask import Flask

from pbem.accounts import vacation
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, set_clock
from pbem.game import clock, play

T0 = datetime(2025, 3, 3, 12, 0)  # a Monday


@pytest.fixture
def at() -> Iterator:
    """Set the server's clock for the test: ``at(datetime)``."""
    yield set_clock
    set_clock(None)


def alices_seat(game_id: int) -> Seat:
    db.session.rollback()  # See what the service committed.
    return db.session.get(Game, game_id).seats[0]


def test_vacation_stops_the_clock_and_moves_the_deadline_by_the_time_away(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2},
                            time_control={"kind": "per_move", "days": 3})
    db.session.commit()
    assert alices_seat(game.id).deadline == T0 + timedelta(days=3)

    at(T0 + timedelta(days=1))
    message = vacation.turn_on(alice)
    assert "Vacation is on" in message and "30 days" in message
    seat = alices_seat(game.id)
    assert seat.next_event_at is None  # The sweep passes the seat by.
    assert clock.time_left(seat) == timedelta(days=2)

    at(T0 + timedelta(days=6))
    assert clock.time_left(alices_seat(game.id)) == timedelta(days=2)  # Stopped, not running.
    assert "already on vacation" in vacation.turn_on(alice)
    message = vacation.turn_off(alice)
    assert "Welcome back" in message and "after 5 days" in message and "25 days of vacation left" in message
    seat = alices_seat(game.id)
    assert seat.deadline == T0 + timedelta(days=8)
    assert seat.next_event_at == seat.deadline - timedelta(hours=48)  # The first reminder point.
    assert db.session.get(User, alice.id).vacation_days_used == pytest.approx(5)
    assert "not on vacation" in vacation.turn_off(alice)


def test_a_turn_that_starts_during_vacation_waits_for_the_player(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    vacation.turn_on(bob)
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2},
                            time_control={"kind": "per_move", "days": 2})
    db.session.commit()
    at(T0 + timedelta(days=1))
    play.submit(game.id, alice, "b3", "web")
    at(T0 + timedelta(days=4))
    vacation.turn_off(bob)
    db.session.rollback()
    bobs = db.session.get(Game, game.id).seats[1]
    assert bobs.deadline == T0 + timedelta(days=6)  # The whole two days, from his return.


def test_the_allowance_runs_out_and_is_counted_per_year(ctx: Flask, players, at) -> None:
    alice, _, _ = players
    at(datetime(2025, 1, 1))
    vacation.turn_on(alice)
    at(datetime(2025, 1, 29))
    vacation.turn_off(alice)
    at(datetime(2025, 2, 1))
    assert "2 days of vacation left" in vacation.turn_on(alice)
    at(datetime(2025, 2, 5))
    assert vacation.end_expired() == 1
    db.session.rollback()
    alice = db.session.get(User, alice.id)
    assert not alice.on_vacation and alice.vacation_days_used == pytest.approx(30)
    refused = vacation.turn_on(alice)
    assert "used all 30 vacation days of 2025" in refused
    assert not db.session.get(User, alice.id).on_vacation
    at(datetime(2026, 1, 2))
    assert "30 days of vacation left" in vacation.turn_on(alice)


def test_a_vacation_of_seconds_leaves_the_allowance_whole_in_words(ctx: Flask, players, at) -> None:
    alice = players[0]
    at(T0)
    vacation.turn_on(alice)
    at(T0 + timedelta(seconds=20))
    message = vacation.turn_off(alice)
    assert "after less than a minute" in message and "You have 30 days of vacation left" in message
