"""What the API answers, as plain data for the schemas to dump: games, record entries, players.

Read-only; what a caller may see of a game is what its page shows them (:func:`pbem.present.gameview.build`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flask import url_for
from sqlalchemy import select

import games
from pbem.accounts import bots
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, Move, Rating, User
from pbem.core.site import absolute_url
from pbem.game import clock, queries, ratings, results, tallies
from pbem.present import gameview


def outcome(game: Game) -> dict[str, Any] | None:
    """How the game ended, or None while it goes on."""
    if not game.result:
        return None
    ended = games.Outcome.from_dict(game.result)
    return {"words": results.summary(game), "reason": ended.reason, "results": list(ended.results),
            "scores": None if ended.scores is None else list(ended.scores)}


def summary(game: Game, viewer: User | None = None) -> dict[str, Any]:
    """A game in a list: its players, whose move it is, its result."""
    movers = queries.seats_to_move(game) if game.status == "active" else frozenset()
    ended = games.Outcome.from_dict(game.result) if game.result else None
    seats = []
    for seat in game.seats:
        to_move = seat.number in movers
        seats.append({
            "seat": seat.number,
            "player": seat.user.handle if seat.user else None,
            "bot": bool(seat.user and seat.user.is_bot),
            "to_move": to_move,
            "deadline": seat.deadline if to_move else None,
            # In the caller's time zone, as their pages and mails give it ("deadline" is the instant).
            # Every seat's clock while the game goes on, running (the mover's) or at rest.
            "clock": clock.status(seat, clock.zone_of(viewer)) if game.status == "active" else "",
            "bank_seconds": clock.bank_seconds(seat),
            "result": ended.results[seat.number] if ended and seat.number < len(ended.results) else None,
        })
    mine = next((s for s in game.seats if viewer is not None and s.user_id == viewer.id
                 and s.number in movers), None)
    return {
        "id": game.id, "game": game.engine, "title": queries.engine_of(game).title, "status": game.status,
        "public": game.public, "rated": game.rated, "players": seats,
        "move_number": queries.next_move_number(game, mine) if mine else game.ply + 1,
        "result": outcome(game), "created_at": game.created_at, "finished_at": game.finished_at,
        "url": absolute_url(url_for("games.game", game_id=game.id)),
        "min_rating": game.min_rating, "max_rating": game.max_rating,
    }


def record_entry(move: Move, name: str, move_number: int) -> dict[str, Any]:
    """One entry of the record; ``move_number`` is its move's number as players count moves (an action
    has none: it follows the move of that number)."""
    return {"number": move.number, "move": move_number if move.kind == "move" else None,
            "seat": move.seat, "player": name, "kind": move.kind,
            "text": move.text, "via": move.via, "conditional": move.via == "conditional",
            "comment": move.comment, "at": move.created_at}


def game(game: Game, viewer: User | None, seat_number: int | None = None) -> dict[str, Any]:
    """A game as ``viewer`` (None for a visitor) sees it: the board from their seat, their legal moves on
    their turn, the record (less what the rules keep hidden from them)."""
    view = gameview.build(game, viewer, seat_number)
    data = summary(game, viewer)
    for seat_data, seat_view in zip(data["players"], view.seats, strict=True):
        seat_data["challenged"] = seat_view.challenged.handle if seat_view.challenged else None
    board = position = None
    if game.state is not None:
        state = queries.state_of(game)
        board = view.engine.render_text(state, view.viewer_seat.number if view.viewer_seat else None,
                                        over=game.status != "active")
        if view.viewer_seat is not None and game.status == "active":
            position = view.engine.seat_view(state, view.viewer_seat.number)
    if view.my_turn and view.expect is not None:
        data["move_number"] = view.expect
    data.update({
        "options": game.options, "time_control": view.time_control, "board": board,
        "your_seat": view.viewer_seat.number if view.viewer_seat else None,
        "your_turn": view.my_turn,
        "legal_moves": view.legal if view.my_turn else None,
        "draw_offered_by": game.draw_offered_by,
        "record": [record_entry(move, name, number) for move, name, number in view.moves],
        "hidden_moves": view.hidden_moves,
        "position": position,
    })
    return data


def bot(user: User) -> dict[str, Any] | None:
    """What a computer player plays; None for a person."""
    if not user.is_bot:
        return None
    return {"games": bots.games_of(user), "strength": user.bot_strength}


def challenge(row: Challenge) -> dict[str, Any]:
    """A challenge waiting for an answer."""
    return {"game": summary(row.game), "seat": row.seat, "challenger": row.challenger.handle,
            "created_at": row.created_at}


def rated(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """A player's ratings as answered, from their rating rows by game (each with what a
    :class:`~pbem.core.models.Rating` has: engine, rating, deviation, volatility, games, last_game_at);
    the deviation is as of now."""
    return [{"game": r.engine, "rating": round(r.rating, 1), "deviation": round(ratings.deviation_now(r), 1),
             "volatility": r.volatility, "provisional": ratings.is_provisional(r),
             "display": ratings.display(r), "games": r.games} for r in rows]


def player(user: User) -> dict[str, Any]:
    """A player's ratings per game (with the deviation as of now) and their record of finished games."""
    rows = db.session.scalars(select(Rating).where(Rating.user_id == user.id).order_by(Rating.engine)).all()
    record = [{"game": engine, "wins": r.wins, "draws": r.draws, "losses": r.losses}
              for engine, r in sorted(tallies.public_records(user.id).items())]
    return {"handle": user.handle, "bot": bot(user), "since": user.created_at,
            "on_vacation": user.on_vacation, "ratings": rated(rows), "record": record}
