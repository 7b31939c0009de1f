"""Ratings: Elo per game, updated when a two-player game between two accounts ends."""

from __future__ import annotations

from sqlalchemy import select

from games import Outcome
from pbem.extensions import db
from pbem.models import Game, Rating

K_FACTOR = 32.0
SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def rating_of(user_id: int, engine: str) -> Rating:
    """The player's rating row for ``engine``, created at 1500 if they have none."""
    row = db.session.scalar(select(Rating).where(Rating.user_id == user_id, Rating.engine == engine))
    if row is None:
        row = Rating(user_id=user_id, engine=engine, rating=1500.0, games=0)
        db.session.add(row)
    return row


def rate(game: Game, outcome: Outcome) -> None:
    """Move both players' ratings by the result of ``game`` (only two different accounts are rated)."""
    if game.players != 2 or len(outcome.results) != 2:
        return
    users = [s.user_id for s in game.seats]
    if None in users or users[0] == users[1]:
        return
    a, b = (rating_of(u, game.engine) for u in users)  # type: ignore[arg-type]
    expected_a = 1.0 / (1.0 + 10 ** ((b.rating - a.rating) / 400.0))
    delta = K_FACTOR * (SCORES[outcome.results[0]] - expected_a)
    a.rating += delta
    b.rating -= delta
    a.games += 1
    b.games += 1
