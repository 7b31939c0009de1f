"""Queueing conditional lines: what a player calls to queue, delete or preview their own lines.

These are entry points, like a move: they take the game's lock through the move path
(:func:`pbem.game.play.locked_game`) and keep the lines by :mod:`pbem.game.conditional`, which the move
path itself uses to play the answers.  So this module sits above the move path, and the move path
never imports it.
"""

from __future__ import annotations

from typing import Any

from pbem.core.errors import PlayError
from pbem.core.models import Game, User
from pbem.game import play, queries
from pbem.game.conditional import (
    Line,
    add_lines,
    check,
    check_can_queue,
    describe,
    opponent_of,
    owner_seat,
    parse_line,
)


def queue(game_id: int, user: User, texts: list[str], seat: int | None = None) -> list[Line]:
    """Queue conditional lines for ``user`` in game ``game_id``; returns every line they have queued."""
    with play.locked_game(game_id) as game:
        engine = queries.engine_of(game)
        owner = owner_seat(game, user, seat)
        add_lines(game, engine, queries.state_of(game), owner, texts)
        return list(owner.conditionals or [])


def delete(game_id: int, user: User, text: str | None = None, seat: int | None = None) -> int:
    """Delete the user's line written ``text`` and every line it begins (``if c4`` deletes every line
    that starts with c4), or every line when ``text`` is None.

    Returns how many lines were deleted."""
    with play.locked_game(game_id) as game:
        owner = owner_seat(game, user, seat)
        lines = owner.conditionals or []
        if text is None:
            kept: list[Line] = []
        else:
            try:
                gone = parse_line(text, partial=True)
            except PlayError:
                gone = []
            kept = [line for line in lines if not gone or line[: len(gone)] != gone]
            if len(kept) == len(lines):
                raise PlayError(f"You have no conditional line '{text.strip()[:100]}' in game #{game.id}.",
                                "no-line")
        owner.conditionals = kept or None
        return len(lines) - len(kept)


def preview(game: Game, user: User, text: str, seat: int | None = None) -> dict[str, Any]:
    """Where a line being built leads, for the player's panel: the board there (clickable for the side
    to move), that side's legal moves, and whose move it is.  Reads only; refuses as :func:`queue` would."""
    engine = queries.engine_of(game)
    owner = owner_seat(game, user, seat)
    state = queries.state_of(game)
    check_can_queue(game, engine, owner, state)
    opponent = opponent_of(game, owner)
    line = parse_line(text, partial=True)
    state = check(engine, state, owner, opponent, line)
    mover = opponent if len(line) % 2 == 0 else owner
    movable = mover.number in engine.to_move(state)
    moves = engine.moves(state, mover.number) if movable else []
    return {
        "line": describe(line) if line else "",
        "svg": engine.render_svg(state, mover.number, targets=movable),
        "moves": moves,
        "spellings": engine.click_spellings(state, mover.number, moves) if moves else {},
        "theirs": mover is opponent,
    }
