"""Ratings: Elo per game, updated when a two-player game between two accounts ends."""

from __future__ import annotations

from sqlalchemy import select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from games import Outcome
from pbem.database import is_postgresql, transaction_cache
from pbem.extensions import db
from pbem.models import Game, Rating, utcnow

K_FACTOR = 32.0
SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def rating_of(user_id: int, engine: str) -> Rating:
    """The player's rating row for ``engine``, created at 1500 if they have none, and locked until the
    transaction ends (games between the same players may finish at the same moment: without the lock
    one would overwrite the other's change, and both would try to create a missing row)."""
    locked = transaction_cache("ratings")
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
        insert = postgresql_insert if is_postgresql() else sqlite_insert
        # A Core statement on the table: the ORM's bulk-insert machinery costs more than the insert itself.
        db.session.execute(
            insert(Rating.__table__).values(user_id=user_id, engine=engine, rating=1500.0, games=0,
                                            updated_at=utcnow())
            .on_conflict_do_nothing(index_elements=["user_id", "engine"])
        )
        locked[(user_id, engine)] = row = db.session.execute(query).scalar_one()
        return row


def lock_ratings(keys: set[tuple[int, str]]) -> None:
    """Lock the rating rows of many (user id, game) pairs at once, creating the missing ones: for a batch
    of game ends (see :func:`pbem.play.time_out_many`).  Rows are locked in one order, as
    :func:`rating_of` does, so that transactions never wait on each other in a circle."""
    if not keys:
        return
    insert = postgresql_insert if is_postgresql() else sqlite_insert
    now = utcnow()
    db.session.execute(
        insert(Rating.__table__)
        .values([{"user_id": u, "engine": e, "rating": 1500.0, "games": 0, "updated_at": now}
                 for u, e in sorted(keys)])
        .on_conflict_do_nothing(index_elements=["user_id", "engine"])
    )
    query = (
        select(Rating).where(tuple_(Rating.user_id, Rating.engine).in_(sorted(keys)))
        .order_by(Rating.user_id, Rating.engine)
    )
    if is_postgresql():
        query = query.with_for_update()
    locked = transaction_cache("ratings")
    with db.session.no_autoflush:
        for row in db.session.scalars(query):
            locked[(row.user_id, row.engine)] = row


def rate(game: Game, outcome: Outcome) -> None:
    """Move both players' ratings by the result of ``game`` (only two different accounts are rated)."""
    if game.players != 2 or len(outcome.results) != 2:
        return
    users = [s.user_id for s in game.seats]
    if None in users or users[0] == users[1]:
        return
    # Lock in the order of user ids, so that two games of the same players never wait on each other.
    locked = {u: rating_of(u, game.engine) for u in sorted(users)}  # type: ignore[type-var]
    a, b = locked[users[0]], locked[users[1]]
    expected_a = 1.0 / (1.0 + 10 ** ((b.rating - a.rating) / 400.0))
    delta = K_FACTOR * (SCORES[outcome.results[0]] - expected_a)
    a.rating += delta
    b.rating -= delta
    a.games += 1
    b.games += 1
