"""The mails a game sends: move requests, move notices, draw offers, results.

Each function is called inside the move path's transaction and only writes outbox rows; the words are
in ``templates/mail/``.  A player who chose the daily digest gets no per-move request.
"""

from __future__ import annotations

from typing import Any

from flask import current_app, render_template

import games
from games import Outcome
from pbem import clock, outbox
from pbem.models import Game, Move, Seat, User

# Legal moves are listed in a move request only when there are this few; longer lists help nobody.
MAX_LISTED_MOVES = 30


def game_url(game: Game) -> str:
    """The absolute address of the game's page."""
    return f"{current_app.config['PBEM']['server']['base_url'].rstrip('/')}/games/{game.id}"


def _subject(game: Game, engine: games.Engine, what: str) -> str:
    return f"[pbem] {engine.title} #{game.id}: {what}"


def _context(game: Game, engine: games.Engine, state: Any, seat: Seat | None) -> dict[str, Any]:
    from pbem.play import next_move_number  # The move path imports this module; import late.

    number = seat.number if seat is not None else None
    legal = engine.moves(state, number) if number is not None and game.status == "active" else []
    return {
        "game": game,
        "engine": engine,
        "seat": seat,
        "board": engine.render_text(state, number),
        "legal": legal if len(legal) <= MAX_LISTED_MOVES else None,
        "legal_count": len(legal),
        "move_number": next_move_number(game, seat) if seat is not None else game.ply + 1,
        "time_left": clock.describe(clock.time_left(seat)) if seat is not None else None,
        "url": game_url(game),
        "players": [(s.label, s.user.handle if s.user else "(open)") for s in game.seats],
        "last": game.moves[-1] if game.moves else None,
    }


def _request_move(game: Game, engine: games.Engine, state: Any, seat: Seat) -> None:
    user = seat.user
    if user is None or user.notify == "digest":
        return
    ctx = _context(game, engine, state, seat)
    outbox.enqueue(
        user,
        _subject(game, engine, f"your move (move {ctx['move_number']})"),
        render_template("mail/your_move.txt", **ctx),
        kind="your-move",
        game=game,
    )


def game_started(game: Game, engine: games.Engine, state: Any) -> None:
    """Ask the first movers for their moves."""
    movers = engine.to_move(state)
    for seat in game.seats:
        if seat.number in movers:
            _request_move(game, engine, state, seat)


def move_played(game: Game, engine: games.Engine, state: Any, move: Move, before: frozenset[int]) -> None:
    """After a move: seats that are newly to move get a request, the other players a notice.

    ``before`` is who was to move before it.  In a simultaneous game a player who is still solving
    gets no mail for their own moves, and nobody gets a notice of another player's moves.
    """
    if game.status != "active":
        return  # game_over() has told everyone.
    after = engine.to_move(state)
    for seat in game.seats:
        if seat.user is None:
            continue
        mover_again = seat.number == move.seat and not engine.simultaneous
        if seat.number in after and (seat.number not in before or mover_again):
            _request_move(game, engine, state, seat)
        elif seat.number != move.seat and not engine.simultaneous:
            ctx = _context(game, engine, state, seat)
            outbox.enqueue(
                seat.user,
                _subject(game, engine, f"{_player(game, move.seat)} played {move.text}"),
                render_template("mail/move_notice.txt", move=move, **ctx),
                kind="move-notice",
                game=game,
            )


def game_over(game: Game, outcome: Outcome) -> None:
    """Everyone seated gets the result."""
    engine = games.get(game.engine)
    state = engine.load(game.state) if game.state else None
    for seat in game.seats:
        if seat.user is None:
            continue
        result = outcome.results[seat.number] if seat.number < len(outcome.results) else "loss"
        outbox.enqueue(
            seat.user,
            _subject(game, engine, f"game over: {outcome.reason}"),
            render_template(
                "mail/game_over.txt",
                game=game,
                engine=engine,
                outcome=outcome,
                result=result,
                board=engine.render_text(state, None) if state is not None else "",
                url=game_url(game),
            ),
            kind="game-over",
            game=game,
        )


def send(to: User, game: Game, what: str, template: str, **context: Any) -> None:
    """A mail about ``game`` to one player: the subject says ``what``, the words come from ``template``
    (whose name, e.g. ``mail/draw_offered.txt``, also names the kind of mail)."""
    engine = games.get(game.engine)
    outbox.enqueue(
        to,
        _subject(game, engine, what),
        render_template(template, game=game, engine=engine, url=game_url(game), **context),
        kind=template.rsplit("/", 1)[-1].split(".")[0].replace("_", "-"),
        game=game,
    )


def _tell_opponents(game: Game, actor: Seat, what: str, template: str) -> None:
    for seat in game.seats:
        if seat.user is not None and seat.number != actor.number:
            send(seat.user, game, what, template, actor=_player(game, actor.number))


def draw_offered(game: Game, seat: Seat) -> None:
    """The opponents are asked to accept or decline."""
    _tell_opponents(game, seat, f"{_player(game, seat.number)} offers a draw", "mail/draw_offered.txt")


def draw_declined(game: Game, seat: Seat) -> None:
    """The offerer learns the answer."""
    _tell_opponents(game, seat, f"{_player(game, seat.number)} declined the draw", "mail/draw_declined.txt")


def timed_out(game: Game, seat: Seat) -> None:
    """The others learn that a seat ran out of time while the game goes on."""
    _tell_opponents(game, seat, f"{_player(game, seat.number)} ran out of time", "mail/timed_out.txt")


def _player(game: Game, number: int) -> str:
    seat = next((s for s in game.seats if s.number == number), None)
    user: User | None = seat.user if seat is not None else None
    return user.handle if user is not None else f"seat {number + 1}"
