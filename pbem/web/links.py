"""One-click move links from the mails: ``/m/<token>``.

The token (see :mod:`pbem.mailout.tokens`) is signed and names the game, the seat, the player and the move
number, and perhaps the move.  GET only shows the position and a confirm button, since mail scanners
and link previews open every link in a mail; POST plays through :func:`pbem.game.play.submit`, for that seat
and move number only, so a link from an old mail can never play into a position the player did not see.

A link acts only for the move it was mailed for.  Once its seat has moved (or the game is over) it is
spent: it still shows the game, says so, and points to the latest mail and the game's page, but it
hands out no link that acts (whoever holds an old mail, or found its link quoted somewhere, is not
anybody the player chose to let play) and plays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, abort, render_template, request

import games
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User
from pbem.core.unit_of_work import unit_of_work
from pbem.game import conditional, play, queries
from pbem.game.play import PlayError
from pbem.mailout import notify, tokens
from pbem.present import gameview

bp = Blueprint("links", __name__)

# Longer than any move of any game; what a link carries beyond it is not a move.
MAX_MOVE_LENGTH = 200


@dataclass
class MoveLink:
    """What a good link names, loaded: the game, the seat and its player, the move number and move."""

    game: Game
    seat: Seat
    user: User
    number: int
    move: str | None


def _load(token: str) -> MoveLink:
    """The link's claims, checked; a 404 page for a link that is not ours or was revoked."""
    data = tokens.load_move_link(token)
    if data is None:
        abort(404)
    user = db.session.get(User, data.get("u"))
    game = db.session.get(Game, data.get("g"))
    if user is None or game is None:
        abort(404)
    if not tokens.move_link_current(data, user):
        # Ours, but revoked: its player asked for new links (or an operator gave them new ones).  They
        # are told where a working one is, rather than shown a page that says nothing is here.
        abort(Response(render_template(
            "error.html", title="This link no longer works",
            message="The reply addresses and move links of this player's earlier mails were replaced, so "
                    "this one is refused. The latest mail about the game carries a working link, or "
                    "play on the game's page.",
        ), status=410))
    seat = next((s for s in game.seats if s.number == data.get("s") and s.user_id == user.id), None)
    if seat is None:
        abort(404)
    # Links mailed before moves rode in the query carry the move in the token itself.
    chosen = data.get("m") or " ".join(request.args.get("move", "")[:MAX_MOVE_LENGTH].split()) or None
    return MoveLink(game, seat, user, int(data.get("n", 0)), chosen)


def _spent(game: Game, seat: Seat, number: int) -> tuple[bool, int | None]:
    """Whether a link for move ``number`` of ``seat`` acts no more (its seat has moved since, or the
    game is over), and the seat's move number now (None once the game is over)."""
    now = queries.next_move_number(game, seat) if game.status == "active" else None
    return game.status != "active" or now != number or seat.number not in queries.seats_to_move(game), now


def _page(link: MoveLink, token: str, **extra: Any) -> str:
    game = db.session.get(Game, link.game.id)
    assert game is not None
    engine = games.get(game.engine)
    state = queries.state_of(game)
    seat = next(s for s in game.seats if s.id == link.seat.id)
    moved_on, now = _spent(game, seat, link.number)
    return render_template(
        "links/move.html",
        game=game, engine=engine, seat=seat, user=link.user, number=link.number, move=link.move,
        board=gameview.board_svg(engine, state, seat.number, over=game.status != "active"),
        legal=[] if moved_on else engine.moves(state, seat.number),
        moved_on=moved_on, now=now, token=token, url=notify.game_url(game), **extra,
    )


@bp.get("/m/<token>")
def confirm(token: str) -> str:
    """The position and a confirm button; never acts.  A spent link shows the game and says so."""
    return _page(_load(token), token)


@bp.post("/m/<token>")
def play_link(token: str) -> tuple[str, int] | str:
    """Play the link's move (or the one chosen on the page) as the link's move number, unless the link
    is spent: then nothing is tried at all."""
    link = _load(token)
    if _spent(link.game, link.seat, link.number)[0]:
        return _page(link, token), 409
    move = link.move or request.form.get("move", "").strip()
    comment = request.form.get("comment", "").strip() or None
    if not move:
        return _page(link, token, error="Choose a move first."), 422
    try:
        with unit_of_work() as uow:
            played = play.submit(link.game.id, link.user, move, "link", expect=link.number, comment=comment,
                                 seat=link.seat.number)
            said = played.move.text
            answered = (conditional.answers_words(played.game, list(played.answers), played.seat_number)
                        if played.answers else "")
            uow.commit()
    except PlayError as exc:
        return _page(link, token, error=exc.message), 409 if exc.code in ("stale", "not-your-turn") else 422
    return _page(link, token, played=said, answered=answered)
