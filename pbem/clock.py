"""Clocks: when a seat's turn starts and stops, its deadline and the scheduler's next look at it.

Two time controls exist: ``per_move`` (a fixed number of days for every move) and ``bank`` (a
correspondence bank: initial days, days added after each move, capped).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import current_app

from pbem.models import Game, Seat, utcnow

DAY = 86400.0


def default_time_control() -> dict[str, Any]:
    """The time control of a game started without one: the configured days per move."""
    return {"kind": "per_move", "days": current_app.config["PBEM"]["games"]["default_days_per_move"]}


def _allowance_seconds(game: Game, seat: Seat) -> float:
    control = game.time_control or default_time_control()
    if control.get("kind") == "bank":
        if seat.bank_seconds is None:
            seat.bank_seconds = float(control["initial_days"]) * DAY
        return seat.bank_seconds
    return float(control.get("days", 3)) * DAY


def start_turn(game: Game, seat: Seat) -> None:
    """The seat is now to move: its deadline is set from the time control."""
    now = utcnow()
    seat.deadline = now + timedelta(seconds=_allowance_seconds(game, seat))
    seat.next_event_at = seat.deadline
    seat.reminders_sent = 0


def stop_turn(game: Game, seat: Seat) -> None:
    """The seat has moved (or the game ended): a bank keeps what was left plus the increment."""
    if seat.deadline is None:
        return
    control = game.time_control or {}
    if control.get("kind") == "bank" and game.status == "active":
        left = max(0.0, (seat.deadline - utcnow()).total_seconds())
        added = left + float(control.get("increment_days", 0)) * DAY
        cap = control.get("max_days")
        seat.bank_seconds = min(added, float(cap) * DAY) if cap else added
    seat.deadline = None
    seat.next_event_at = None


def time_left(seat: Seat) -> timedelta | None:
    """How long the seat has until its deadline, or None when it is not on the clock."""
    if seat.deadline is None:
        return None
    return max(timedelta(0), seat.deadline - utcnow())


def describe(delta: timedelta | None) -> str:
    """A duration for people: "2 days 5 hours", "40 minutes"."""
    if delta is None:
        return "no clock running"
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days} day{'s' if days != 1 else ''}")
    if hours:
        parts.append(f"{hours} hour{'s' if hours != 1 else ''}")
    if not days and (mins or not parts):
        parts.append(f"{mins} minute{'s' if mins != 1 else ''}")
    return " ".join(parts)
