"""Standings: the players of a game ranked by rating, and a player's rating history."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Rating, RatingHistory, User
from pbem.game import ratings, tallies

SHOWN = 100


@dataclass
class Standing:
    """One line of a game's standings."""

    rank: int
    user: User
    rating: float
    provisional: bool
    played: int
    wins: int
    draws: int
    losses: int


def table(engine: str, limit: int = SHOWN, bots: bool = True) -> list[Standing]:
    """The ``limit`` best-rated players of ``engine``, best first, with the counts of their finished rated
    games (what the rating is made of; an unrated game counts for nothing here, as on their page), read
    from their tallies: a few rows a player, however many games they have played.  Without ``bots``,
    the computer players are left out (and the others ranked among themselves)."""
    wanted = select(Rating, User).join(User, User.id == Rating.user_id).where(Rating.engine == engine)
    if not bots:
        wanted = wanted.where(User.is_bot.is_(False))
    best = db.session.execute(wanted.order_by(Rating.rating.desc(), Rating.user_id).limit(limit)).all()
    if not best:
        return []
    records = tallies.rated_records(engine, (r.user_id for r, _u in best))
    rows = []
    for rank, (rating, user) in enumerate(best, 1):
        record = records.get(user.id, tallies.Record())
        rows.append(Standing(rank, user, rating.rating, ratings.is_provisional(rating),
                             record.played, record.wins, record.draws, record.losses))
    return rows


@dataclass
class History:
    """A player's rating in one game after each rated game, oldest first."""

    engine: str
    points: list[RatingHistory]

    @property
    def low(self) -> float:
        """The lowest rating of the history."""
        return min(p.rating for p in self.points)

    @property
    def high(self) -> float:
        """The highest rating of the history."""
        return max(p.rating for p in self.points)

    def _spots(self, width: int, height: int) -> list[tuple[float, float]]:
        """Where each point goes in a drawing of this size (later games to the right; a lone point in
        the middle)."""
        if len(self.points) == 1:
            return [(width / 2, height / 2)]
        span = (self.high - self.low) or 1.0
        step = width / (len(self.points) - 1)
        return [(i * step, height - (p.rating - self.low) / span * height) for i, p in enumerate(self.points)]

    def polyline(self, width: int = 320, height: int = 60) -> str:
        """The history as the points of an SVG polyline of this size."""
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in self._spots(width, height))

    def latest(self, width: int = 320, height: int = 60) -> tuple[float, float]:
        """Where the latest rating goes in the drawing of :meth:`polyline`, for a dot marking it."""
        return self._spots(width, height)[-1]


def histories(user: User, per_game: int = 200) -> list[History]:
    """``user``'s rating history in each game they are rated in (the latest ``per_game`` points)."""
    engines = db.session.scalars(
        select(Rating.engine).where(Rating.user_id == user.id).order_by(Rating.engine)).all()
    out = []
    for engine in engines:
        points = list(db.session.scalars(
            select(RatingHistory).where(RatingHistory.user_id == user.id, RatingHistory.engine == engine)
            .order_by(RatingHistory.id.desc()).limit(per_game)))
        if points:
            out.append(History(engine, points[::-1]))
    return out
