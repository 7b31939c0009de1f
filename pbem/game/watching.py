"""Watching games: a player who is not seated may follow a game and get its move notices and result."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, User, Watch
from pbem.core.unit_of_work import reads, unit_of_work


def watchers(game: Game) -> list[User]:
    """The players watching ``game``, in the order they began.

    Read without flushing: the move path asks while a batch of games is being changed (see
    :func:`pbem.game.play.time_out_batch`), and nothing it changes is a watch."""
    prefetched = reads("watchers")
    if game.id in prefetched:
        return prefetched[game.id]
    with db.session.no_autoflush:
        return list(db.session.scalars(
            select(User).join(Watch, Watch.user_id == User.id).where(Watch.game_id == game.id)
            .order_by(Watch.id)
        ))


def know_unwatched(game_id: int) -> None:
    """Note for the rest of the transaction that nobody watches the game (the move path learns it with
    the game's lock), so that :func:`watchers` answers without a query."""
    reads("watchers")[game_id] = []


def prefetch_watchers(game_ids: list[int]) -> None:
    """Read the watchers of many games at once, for a batch that mails about each of them."""
    prefetched = reads("watchers")
    prefetched.update({game_id: [] for game_id in game_ids})
    with db.session.no_autoflush:
        rows = db.session.execute(
            select(Watch.game_id, User).join(User, Watch.user_id == User.id)
            .where(Watch.game_id.in_(game_ids)).order_by(Watch.id)
        )
        for game_id, user in rows:
            prefetched[game_id].append(user)


def is_watching(game: Game, user: User) -> bool:
    """Whether ``user`` watches ``game``."""
    return db.session.scalar(
        select(Watch.id).where(Watch.game_id == game.id, Watch.user_id == user.id)
    ) is not None


def watch(game: Game, user: User) -> None:
    """``user`` follows ``game`` from now on (a second request changes nothing).  Commits.

    Only a public game may be watched by anyone; a private one only by its players, who get its mails
    anyway.  A finished game has nothing left to send."""
    if any(s.user_id == user.id for s in game.seats):
        raise PlayError("You play in this game: you get its mails already.", "seated")
    if not game.public:
        raise PlayError(f"Game #{game.id} is private.", "private")
    if game.status in ("finished", "abandoned"):
        raise PlayError(f"Game #{game.id} is over; its record stays on its page.", "over")
    try:
        with unit_of_work() as uow:
            db.session.add(Watch(game_id=game.id, user_id=user.id))
            uow.commit()
    except IntegrityError:
        db.session.rollback()  # Already watching.


def unwatch(game: Game, user: User) -> None:
    """``user`` stops following ``game``.  Commits."""
    with unit_of_work() as uow:
        db.session.execute(delete(Watch).where(Watch.game_id == game.id, Watch.user_id == user.id))
        uow.commit()
