"""Read-only questions about a game: its engine and state, whose move it is, the next move's number,
whether draws may be offered, its last move, the games awaiting a player's move.

They change nothing and write no mail, so everything above the move path may ask them: the move path
itself, the mails (:mod:`pbem.mailout`), the pages and the API.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

import games
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, Move, Seat, User
from pbem.core.unit_of_work import reads


def engine_of(game: Game) -> games.Engine:
    """The rule engine that plays ``game``."""
    return games.get(game.engine)


def state_of(game: Game) -> Any:
    """The engine state of an active or finished game."""
    if game.state is None:
        raise PlayError(f"Game #{game.id} has not started yet.", "not-started")
    return engine_of(game).load(game.state)


def seats_to_move(game: Game) -> frozenset[int]:
    """The seat numbers whose move it is (none unless the game is active)."""
    if game.status != "active":
        return frozenset()
    return engine_of(game).to_move(state_of(game))


def next_move_number(game: Game, seat: Seat) -> int:
    """The number a player sees for their next move, and may confirm with ``#N``.

    In a game where seats move one after another it is the game's move count plus one; where several
    seats move at once (Easy Slider), each seat counts its own moves, so that one player's moves never
    make another player's confirmation stale.
    """
    if engine_of(game).simultaneous:
        return seat.moves_made + 1
    return game.ply + 1


def number_of(move: Move) -> int:
    """The number players see for an engine move (the ``N`` of "move N" and ``#N``): the game's moves
    up to it, or where seats move at once, its player's own."""
    query = select(db.func.count(Move.id)).where(
        Move.game_id == move.game_id, Move.kind == "move", Move.number <= move.number)
    if engine_of(move.game).simultaneous:
        query = query.where(Move.seat == move.seat)
    return db.session.scalar(query) or 0


def draws_allowed(game: Game) -> bool:
    """Whether a draw may be offered in ``game``: only between two players taking turns on one board.

    In Box Off and Easy Slider each player clears their own copy of the deal, so there is no shared
    position to agree a draw on; with three or more players one player's offer cannot bind the others.
    """
    return game.players == 2 and not engine_of(game).simultaneous


def hidden_from(game: Game, move: Move, seat_number: int | None) -> bool:
    """Whether the record entry ``move`` (and its comment) is kept from the player of ``seat_number``
    (None: a watcher or visitor).

    Where everyone plays the same deal at once (Easy Slider, Box Off), a player's moves would give the
    solution away: while the game runs they are shown to their own player alone, and to everyone at the
    end.  What the server did (a resignation, a timeout) is no secret.  Every page, mail and answer asks
    this before showing an entry.
    """
    return (move.kind == "move" and move.seat != seat_number and game.status == "active"
            and engine_of(game).simultaneous)


def comments_held_back(game: Game) -> bool:
    """Whether what a player writes with a move now reaches the others only when the game ends."""
    return game.status == "active" and game.players > 1 and engine_of(game).simultaneous


def last_move_seen_by(game: Game, seat_number: int | None) -> Move | None:
    """The last engine move the player of ``seat_number`` (None: a watcher) may see: the game's last,
    or in a running game of hidden moves (see :func:`hidden_from`) the player's own last one."""
    last = last_move(game)
    if last is None or not hidden_from(game, last, seat_number):
        return last
    if seat_number is None:
        return None
    with db.session.no_autoflush:
        return db.session.scalar(
            select(Move).where(Move.game_id == game.id, Move.kind == "move", Move.seat == seat_number)
            .order_by(Move.number.desc()).limit(1)
        )


def last_move(game: Game) -> Move | None:
    """The game's last engine move: one recorded in this transaction (the move path notes it), else the
    last one stored, read without loading the whole record."""
    prefetched = reads("last_moves")
    if game.id in prefetched:
        return prefetched[game.id]
    with db.session.no_autoflush:
        return db.session.scalar(
            select(Move).where(Move.game_id == game.id, Move.kind == "move").order_by(Move.number.desc())
            .limit(1)
        )


def prefetch_last_moves(game_ids: list[int]) -> None:
    """Read the last engine move of many games at once, for a batch that mails about each of them."""
    last = (
        select(Move.game_id, db.func.max(Move.number).label("number"))
        .where(Move.game_id.in_(game_ids), Move.kind == "move").group_by(Move.game_id).subquery()
    )
    prefetched = reads("last_moves")
    prefetched.update({game_id: None for game_id in game_ids})
    with db.session.no_autoflush:
        for move in db.session.scalars(
            select(Move).join(last, (Move.game_id == last.c.game_id) & (Move.number == last.c.number))
        ):
            prefetched[move.game_id] = move


def awaiting(user: User) -> list[tuple[Game, Seat]]:
    """The player's games (and seats) that are waiting for their move, oldest deadline first."""
    seats = db.session.scalars(
        select(Seat).join(Game).where(
            Seat.user_id == user.id, Game.status == "active", Seat.deadline.is_not(None)
        ).order_by(Seat.deadline, Seat.id)
    ).all()
    return [(seat.game, seat) for seat in seats if seat.number in seats_to_move(seat.game)]
