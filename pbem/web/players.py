"""A player's public page: their ratings and their public games."""

from __future__ import annotations

from flask import Blueprint, abort, render_template, request
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from pbem.accounts import accounts
from pbem.archive import directory, standings
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, Seat, User

bp = Blueprint("players", __name__)

GAMES_SHOWN = 50


@bp.get("/players")
def players() -> str | tuple[str, int]:
    """The player directory: players by the beginning of their handle (``q``), 50 to a page (``after``
    the last handle shown), each with their ratings and games played."""
    prefix, after = request.args.get("q", ""), request.args.get("after") or None
    try:
        page = directory.search(prefix, after)
    except directory.DirectoryError as exc:
        return render_template("players/directory.html", page=None, q=prefix[:32], error=str(exc)), 400
    return render_template("players/directory.html", page=page, q=prefix.strip(), after=after)


@bp.get("/players/<handle>")
def player(handle: str) -> str:
    """A player's ratings and public games (private games are not listed)."""
    user = accounts.find_user(handle)
    # A placeholder (an imported player) has a page of their games until someone claims the handle.
    if user is None or not (user.verified or user.placeholder):
        abort(404)
    ratings = db.session.scalars(
        select(Rating).where(Rating.user_id == user.id).order_by(Rating.engine)).all()
    played = recent_games(user)
    return render_template("players/player.html", player=user, ratings=ratings, games=played,
                           histories=standings.histories(user))


def recent_games(user: User, limit: int | None = None) -> list[Game]:
    """``user``'s ``limit`` latest public games, those in play (by their last move) and those finished
    (by their end) together, newest first, with their seats and players: a bounded read however many
    games they have finished (their seats are read from ``ix_seat_archive``, latest first)."""
    limit = limit or GAMES_SHOWN
    theirs = select(Game).join(Seat, Seat.game_id == Game.id).where(Seat.user_id == user.id,
                                                                     Game.public.is_(True))
    with_players = selectinload(Game.seats).joinedload(Seat.user)
    finished = db.session.scalars(
        theirs.where(Seat.finished_at.is_not(None), Game.status == "finished")
        .order_by(Seat.finished_at.desc(), Seat.game_id.desc()).limit(limit).options(with_players)
    ).unique().all()
    in_play = db.session.scalars(
        theirs.where(Seat.finished_at.is_(None), Game.status == "active")
        .order_by(Game.updated_at.desc()).limit(limit).options(with_players)
    ).unique().all()
    games = {game.id: game for game in [*in_play, *finished]}  # (A player in two seats: listed once.)
    return sorted(games.values(), key=lambda g: g.finished_at or g.updated_at, reverse=True)[:limit]
