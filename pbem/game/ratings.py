"""Ratings: Glicko-2 per game, updated in the transaction that ends a rated two-player game.

As lichess does for correspondence games, one game is one rating period: both players' ratings move by
that game alone, the moment it ends.  A player's deviation (how unsure the rating is) grows with the time
since their last rated game, by ``ratings.periods_per_day`` rating periods a day, so the rating of a
player back after a long absence moves quickly again.  A rating is provisional — shown as "1520?" — while
its deviation is above ``ratings.provisional_deviation``.

The arithmetic follows Mark Glickman, "Example of the Glicko-2 system" (2013): :func:`glicko2` is pure and
checked against the paper's worked example.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from flask import current_app, has_app_context
from sqlalchemy import insert, select, tuple_

from games import Outcome
from pbem.core.database import DirectWrite, insert_with_conflicts, is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, RatingHistory, utcnow
from pbem.core.unit_of_work import current, reads

SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}

# Glicko-2's scale: ratings and deviations are divided by this to work in, and multiplied back.
GLICKO2_SCALE = 173.7178
INITIAL_RATING = 1500.0
INITIAL_DEVIATION = 350.0
INITIAL_VOLATILITY = 0.06
# The convergence tolerance of the volatility iteration (the paper's epsilon).
_EPSILON = 0.000001

# The settings' defaults, for code that runs without an app (the paper's example, scripts).
DEFAULTS = {"tau": 0.75, "provisional_deviation": 110.0, "periods_per_day": 0.21436,
            "max_deviation": INITIAL_DEVIATION}


@dataclass(frozen=True)
class Glicko:
    """A rating as Glicko-2 sees it: rating, deviation and volatility, on the usual (Elo-like) scale."""

    rating: float = INITIAL_RATING
    deviation: float = INITIAL_DEVIATION
    volatility: float = INITIAL_VOLATILITY


def _settings() -> dict[str, float]:
    if has_app_context():
        return current_app.config["PBEM"]["ratings"]
    return DEFAULTS


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _expected(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def glicko2(player: Glicko, games: Sequence[tuple[Glicko, float]], tau: float) -> Glicko:
    """The player's rating after one rating period with ``games`` (opponent, score 1/0.5/0).

    Steps 2 to 8 of Glickman's paper; a period without games only widens the deviation (step 6).
    ``tau`` constrains how fast the volatility may change (0.3 to 1.2 are reasonable)."""
    mu = (player.rating - INITIAL_RATING) / GLICKO2_SCALE
    phi = player.deviation / GLICKO2_SCALE
    sigma = player.volatility
    if not games:
        return Glicko(player.rating, math.sqrt(phi * phi + sigma * sigma) * GLICKO2_SCALE, sigma)
    opponents = [((o.rating - INITIAL_RATING) / GLICKO2_SCALE, o.deviation / GLICKO2_SCALE, score)
                 for o, score in games]
    # Step 3: the estimated variance of the rating from the game outcomes alone.
    v_inverse = 0.0
    improvement = 0.0
    for mu_j, phi_j, score in opponents:
        g, e = _g(phi_j), _expected(mu, mu_j, phi_j)
        v_inverse += g * g * e * (1.0 - e)
        improvement += g * (score - e)
    v = 1.0 / v_inverse
    # Step 4: the estimated improvement.
    delta = v * improvement
    # Step 5: the new volatility, by the Illinois algorithm.
    sigma = _new_volatility(phi, sigma, v, delta, tau)
    # Steps 6 and 7: the new deviation and rating.
    phi_star = math.sqrt(phi * phi + sigma * sigma)
    phi_new = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    mu_new = mu + phi_new * phi_new * improvement
    # Step 8: back to the usual scale.
    return Glicko(mu_new * GLICKO2_SCALE + INITIAL_RATING, phi_new * GLICKO2_SCALE, sigma)


def _new_volatility(phi: float, sigma: float, v: float, delta: float, tau: float) -> float:
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return (ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2)
                - (x - a) / (tau * tau))

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    # The paper's iteration converges in a handful of steps; the bound only guards against a float
    # pathology turning it into an endless loop.
    for _ in range(100):
        if abs(big_b - big_a) <= _EPSILON:
            break
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    return math.exp(big_a / 2.0)


# A player's rating as it stands now ------------------------------------------------------------------


def deviation_now(row: Rating, at: datetime | None = None) -> float:
    """The rating's deviation at ``at`` (now by default): the stored one, grown by the rating periods
    passed since the player's last rated game (Glicko-2's step 6 for periods without games), capped at
    ``ratings.max_deviation``."""
    settings = _settings()
    deviation = row.deviation
    if row.last_game_at is not None:
        days = max(0.0, ((at or utcnow()) - row.last_game_at).total_seconds() / 86400.0)
        periods = days * settings["periods_per_day"]
        phi = deviation / GLICKO2_SCALE
        deviation = math.sqrt(phi * phi + periods * row.volatility * row.volatility) * GLICKO2_SCALE
    return min(deviation, settings["max_deviation"])


def shown_now(rows: Iterable[tuple[float, float, datetime | None]],
              at: datetime | None = None) -> list[tuple[bool, int]]:
    """For ratings given as (deviation, volatility, last game), what a page writes of them that changes
    with the clock alone: whether each is provisional at ``at`` (now by default) and its deviation then,
    in whole points; as :func:`is_provisional` and :func:`deviation_now` give them, the settings read once."""
    settings = _settings()
    at = at or utcnow()
    line, cap = settings["provisional_deviation"], settings["max_deviation"]
    per_day = settings["periods_per_day"]
    shown = []
    for deviation, volatility, last_game_at in rows:
        if last_game_at is not None:
            periods = max(0.0, (at - last_game_at).total_seconds() / 86400.0) * per_day
            phi = deviation / GLICKO2_SCALE
            deviation = math.sqrt(phi * phi + periods * volatility * volatility) * GLICKO2_SCALE
        deviation = min(deviation, cap)
        shown.append((deviation > line, round(deviation)))
    return shown


def is_provisional(row: Rating, at: datetime | None = None) -> bool:
    """Whether the rating is still provisional: its deviation now is above the configured threshold."""
    return deviation_now(row, at) > _settings()["provisional_deviation"]


def display(row: Rating | None) -> str:
    """The rating as people read it: "1520", or "1520?" while provisional (and "1500?" for none)."""
    if row is None:
        return f"{INITIAL_RATING:.0f}?"
    return f"{round(row.rating)}{'?' if is_provisional(row) else ''}"


def ratings_in(engine: str, user_ids: set[int]) -> dict[int, Rating]:
    """The rating rows of ``user_ids`` in ``engine`` that exist, by user id, read without locking (for
    pages and checks that only look); a player missing has played no rated game of it."""
    if not user_ids:
        return {}
    rows = db.session.scalars(select(Rating).where(Rating.engine == engine, Rating.user_id.in_(user_ids)))
    return {row.user_id: row for row in rows}


def points(row: Rating | None) -> int:
    """The rating as a whole number, as a rating range compares it (1500 for a player with none)."""
    return round(row.rating if row is not None else INITIAL_RATING)


# Locking and updating the rows --------------------------------------------------------------------------


def _new_row_values(user_id: int, engine: str) -> dict[str, object]:
    return {"user_id": user_id, "engine": engine, "rating": INITIAL_RATING, "deviation": INITIAL_DEVIATION,
            "volatility": INITIAL_VOLATILITY, "games": 0, "updated_at": utcnow()}


def rating_of(user_id: int, engine: str) -> Rating:
    """The player's rating row for ``engine``, created at 1500 if they have none, and locked until the
    transaction ends (games between the same players may finish at the same moment: without the lock
    one would overwrite the other's change, and both would try to create a missing row)."""
    locked = reads("ratings")
    if (user_id, engine) in locked:
        return locked[(user_id, engine)]
    query = select(Rating).where(Rating.user_id == user_id, Rating.engine == engine)
    if is_postgresql():
        query = query.with_for_update()
    # No flush first: a row changed earlier in this transaction is returned as changed from the session's
    # identity map, and a flush per game would undo the batching of the sweep's timeouts.
    with db.session.no_autoflush:
        row = db.session.execute(query).scalar_one_or_none()
        if row is not None:
            locked[(user_id, engine)] = row
            return row
        insert = insert_with_conflicts()
        # A Core statement on the table: the ORM's bulk-insert machinery costs more than the insert itself.
        db.session.execute(
            insert(Rating.__table__).values(**_new_row_values(user_id, engine))
            .on_conflict_do_nothing(index_elements=["user_id", "engine"])
        )
        locked[(user_id, engine)] = row = db.session.execute(query).scalar_one()
        return row


def lock_ratings(keys: set[tuple[int, str]]) -> None:
    """Lock the rating rows of many (user id, game) pairs at once, creating the missing ones: for a batch
    of game ends (see :func:`pbem.game.play.time_out_batch`).  Rows are locked in one order, as
    :func:`rating_of` does, so that transactions never wait on each other in a circle."""
    if not keys:
        return
    insert = insert_with_conflicts()
    db.session.execute(
        insert(Rating.__table__).values([_new_row_values(u, e) for u, e in sorted(keys)])
        .on_conflict_do_nothing(index_elements=["user_id", "engine"])
    )
    query = (
        select(Rating).where(tuple_(Rating.user_id, Rating.engine).in_(sorted(keys)))
        .order_by(Rating.user_id, Rating.engine)
    )
    if is_postgresql():
        query = query.with_for_update()
    locked = reads("ratings")
    with db.session.no_autoflush:
        for row in db.session.scalars(query):
            locked[(row.user_id, row.engine)] = row


def rated_players(game: Game) -> list[int] | None:
    """The user ids of a game that counts for ratings, in seat order, or None when it does not: it must
    be marked rated and be between two different accounts."""
    if not game.rated or game.players != 2:
        return None
    first, second = (s.user_id for s in game.seats)
    if first is None or second is None or first == second:
        return None
    return [first, second]


def rate(game: Game, outcome: Outcome) -> list[Rating]:
    """Update both players' ratings by the result of ``game``, one game being one rating period;
    returns the rating rows changed (none when the game is not rated)."""
    users = rated_players(game)
    if users is None or len(outcome.results) != 2:
        return []
    # Lock in the order of user ids, so that two games of the same players never wait on each other.
    locked = {u: rating_of(u, game.engine) for u in sorted(users)}
    rows = [locked[users[0]], locked[users[1]]]
    now = utcnow()
    tau = _settings()["tau"]
    # Both players as they stand now, their deviations grown by the time since their last games.
    before = [Glicko(r.rating, deviation_now(r, now), r.volatility) for r in rows]
    # Each seat's rating before and after, for the result mail written in this transaction.
    told = reads("rating_changes")[game.id] = {}
    for me, row in enumerate(rows):
        after = glicko2(before[me], [(before[1 - me], SCORES[outcome.results[me]])], tau)
        told[me] = (row.rating, after.rating)
        row.rating, row.volatility = after.rating, after.volatility
        row.deviation = min(after.deviation, _settings()["max_deviation"])
        row.games += 1
        row.last_game_at = now
    return rows


def record_ratings(game: Game, changed: list[Rating]) -> None:
    """Add the ratings a game's end has just set to their players' rating histories."""
    uow = current()
    for rating in changed:
        values = {"user_id": rating.user_id, "engine": rating.engine, "game_id": game.id,
                  "rating": rating.rating, "deviation": rating.deviation, "created_at": game.finished_at}
        if uow is not None and uow.batching:
            uow.write(_INSERT_HISTORY, values)  # With the batch's other rows (the sweep's), one executemany.
        else:
            db.session.add(RatingHistory(**values))


_INSERT_HISTORY = DirectWrite(insert(RatingHistory.__table__))


# The change a game made -------------------------------------------------------------------------------


def changes(game: Game) -> dict[int, tuple[float, float]]:
    """Each rated seat's rating before and after ``game`` (by seat number); empty for a game that did
    not count.  Told by :func:`rate` in the transaction that ended the game (its history rows may not be
    written yet, in a batch), else read from the rating histories."""
    told = reads("rating_changes").get(game.id)
    if told is not None:
        return dict(told)
    users = rated_players(game)
    if users is None or game.status != "finished":
        return {}
    found: dict[int, tuple[float, float]] = {}
    for seat, user_id in enumerate(users):
        after = db.session.execute(
            select(RatingHistory.id, RatingHistory.rating)
            .where(RatingHistory.game_id == game.id, RatingHistory.user_id == user_id)
        ).first()
        if after is None:
            continue
        before = db.session.scalar(
            select(RatingHistory.rating)
            .where(RatingHistory.user_id == user_id, RatingHistory.engine == game.engine,
                   RatingHistory.id < after.id)
            .order_by(RatingHistory.id.desc()).limit(1)
        )
        found[seat] = (INITIAL_RATING if before is None else before, after.rating)
    return found


def change_words(change: tuple[float, float]) -> str:
    """A rating's change as people read it: "1500 → 1532 (+32)"."""
    before, after = round(change[0]), round(change[1])
    return f"{before} → {after} ({after - before:+d})".replace("-", "−")
