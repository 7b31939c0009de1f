"""A player's public page: their ratings and their public games."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, abort, render_template, request
from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import selectinload

from pbem.accounts import accounts
from pbem.archive import directory, standings
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, Seat, Tally, User
from pbem.game import ratings
from pbem.web import pagecache

bp = Blueprint("players", __name__)

GAMES_SHOWN = 50


# Stamps ---------------------------------------------------------------------------------------------------
# What a player's page and the directory show, read as rows (see pbem.web.pagecache); the statements are
# built once.

# The player by their handle as asked for (folded as accounts.find_user folds it): what their page
# shows of their row, and each of their ratings with what its deviation now follows from.  A rating's
# history only grows when the rating changes (pbem.game.ratings.rate, then record_ratings, in the
# transaction that ends the game), and its rated games' count with it: the rating row covers the history.
# Read from the driver (see pbem.web.pagecache.plain_read), ordered by the rating's game alone.
_PLAYER = pagecache.plain_read(pagecache.with_reader(
    select(Rating.engine, User.id, User.verified_at.is_not(None), User.placeholder,
           User.vacation_since.is_not(None), User.is_bot, Rating.rating, Rating.games, Rating.volatility,
           Rating.deviation, Rating.last_game_at)
    .outerjoin(Rating, Rating.user_id == User.id)
    .where(User.handle_key == bindparam("player_key")), ordered_by=1))
_PLAYER_ID = select(User.id).where(User.handle_key == bindparam("player_key")).scalar_subquery()


def _games_of(user_id: Any, limit: int, *columns: Any) -> tuple[Select[Any], Select[Any]]:
    """The two lists of :func:`recent_games` for the player ``user_id``: their latest finished public
    games, and their public games in play, of ``columns``."""
    theirs = select(*columns).join(Seat, Seat.game_id == Game.id).where(Seat.user_id == user_id,
                                                                         Game.public.is_(True))
    finished = (theirs.where(Seat.finished_at.is_not(None), Game.status == "finished")
                .order_by(Seat.finished_at.desc(), Seat.game_id.desc()).limit(limit))
    in_play = (theirs.where(Seat.finished_at.is_(None), Game.status == "active")
               .order_by(Game.updated_at.desc()).limit(limit))
    return finished, in_play


_PLAYER_GAMES = pagecache.plain_read(
    pagecache.list_statement(*_games_of(_PLAYER_ID, GAMES_SHOWN, Game.id, Game.version)))


def _player_stamp(reader_id: int | None, handle: str) -> pagecache.Stamp | None:
    """What a player's page shows: their row and ratings (see :data:`_PLAYER`), their rating words as the
    clock makes them, and the games it lists (their ids and versions, see :mod:`pbem.web.pagecache`);
    None (not kept) for no such player."""
    key = {"player_key": accounts.handle_key(handle.strip())}
    with pagecache.reads_together():
        rows, reader = pagecache.rows_stamp(_PLAYER, key, reader_id)
        listed, _reader = pagecache.list_stamp(_PLAYER_GAMES, None, key)
    if not rows:
        return None
    # (A player without ratings has one row, its rating's columns empty.)
    now = ratings.shown_now((row[9], row[8], pagecache.moment(row[10])) if row[0] is not None
                            else (0.0, 0.0, None) for row in rows)
    shown = tuple(zip(rows, now, strict=True))
    return (shown, listed), reader


# The directory's page of players (the search's prefix and the handle to continue after bound as
# ``pattern`` and ``after``, as pbem.archive.directory.search reads them), each with their ratings and
# the count of their finished games (from their tallies).
_PAGE = directory.page_query().subquery()
# Read from the driver (see pbem.web.pagecache.plain_read), ordered by the columns that tell its rows
# apart: the handle as the page orders it, the player, the rating's game.
_DIRECTORY = pagecache.plain_read(pagecache.with_reader(
    select(func.lower(_PAGE.c.handle), _PAGE.c.id, Rating.engine, _PAGE.c.handle,
           select(func.sum(Tally.wins + Tally.draws + Tally.losses)).where(Tally.user_id == _PAGE.c.id)
           .scalar_subquery(),
           Rating.rating, Rating.volatility, Rating.deviation, Rating.last_game_at)
    .outerjoin(Rating, Rating.user_id == _PAGE.c.id), ordered_by=3))


def _directory_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What a page of the directory shows: its players, their ratings (with the words the clock changes)
    and their finished games' count; None (not kept) for a search that cannot be made."""
    prefix, after = request.args.get("q", "").strip(), request.args.get("after") or ""
    if not (directory.SEARCH.match(prefix) and directory.SEARCH.match(after)):
        return None
    rows, reader = pagecache.rows_stamp(_DIRECTORY, directory.page_parameters(prefix, after), reader_id)
    now = ratings.shown_now((row[7], row[6], pagecache.moment(row[8])) if row[2] is not None
                            else (0.0, 0.0, None) for row in rows)
    return tuple(zip(rows, now, strict=True)), reader


@bp.get("/players")
@pagecache.kept(_directory_stamp)
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
@pagecache.kept(_player_stamp)
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
    with_players = selectinload(Game.seats).joinedload(Seat.user)
    finished, in_play = (db.session.scalars(query.options(with_players)).unique().all()
                         for query in _games_of(user.id, limit, Game))
    games = {game.id: game for game in [*in_play, *finished]}  # (A player in two seats: listed once.)
    return sorted(games.values(), key=lambda g: g.finished_at or g.updated_at, reverse=True)[:limit]
