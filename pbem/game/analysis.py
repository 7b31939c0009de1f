"""The analysis board: moves tried from a position of a game's record, or from where it stands, without
playing them.  Read-only: it starts from the record's replayed states (:mod:`pbem.game.replay`), asks
the engine, and never touches the game.

It shows only what the viewer may see.  A game of open information (``Engine.open_information``:
Cambio, Carreaux, Truchet: every board is on the page and no chance is drawn after the start) may be
analysed from any position of its record while it runs.  Any other game (Easy Slider and Box Off, whose
boards and moves stay each player's own until the end, and a third party's engine that does not
declare open information) only once it is over, when its whole record is public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import games
from games import IllegalMove
from games.words import quoted
from pbem.core.errors import PlayError
from pbem.core.models import Game
from pbem.game import queries, results
from pbem.game import replay as replay_service
from pbem.game.play import MAX_MOVE_TEXT

# The most moves one tried line holds: each request replays them all on the engine.
MAX_LINE = 40


@dataclass
class Tried:
    """Where a tried line leads: the position it starts from (``at``, an entry of the record), its moves
    as the record would write them, the state it reaches and whose move it is there (None: nobody's)."""

    at: int
    last: int
    line: list[str]
    state: Any
    mover: int | None


def refusal(game: Game, engine: games.Engine) -> str | None:
    """Why ``game`` cannot be analysed now (None when it can)."""
    if game.state is None:
        return f"{engine.title} #{game.id} has not started: there is no position to analyse yet."
    if game.status == "active" and not engine.open_information:
        return (f"In {engine.title} every player's board and moves stay their own until the game ends, so "
                "the analysis board opens when it is over.")
    if not replay_service.replayable(game):
        return f"The record of {engine.title} #{game.id} cannot be replayed yet."
    return None


def available(game: Game) -> bool:
    """Whether the game page offers the analysis board for ``game`` now."""
    return refusal(game, queries.engine_of(game)) is None


def _mover(engine: games.Engine, state: Any, wanted: int | None) -> int | None:
    """Who moves next on the analysis board: the only seat to move; where several may (a game where all
    play at once), the seat whose board is analysed (``wanted``), or None once that seat is done."""
    movers = engine.to_move(state)
    if engine.simultaneous and wanted is not None:
        return wanted if wanted in movers else None
    return min(movers) if movers else None


def explore(game: Game, at: int | None, moves: list[str], seat: int | None = None) -> Tried:
    """Play ``moves`` on the engine from the position after entry ``at`` of the record (the position as it
    stands when None), for ``seat``'s board in a game where all play at once.  Refuses (PlayError) a game
    that cannot be analysed, a line too long, and a move that is not legal where the line reaches."""
    engine = queries.engine_of(game)
    why = refusal(game, engine)
    if why is not None:
        raise PlayError(why, "hidden")
    if len(moves) > MAX_LINE:
        raise PlayError(f"A tried line holds at most {MAX_LINE} moves; this one has {len(moves)}.", "illegal")
    states = replay_service.states(game)
    start = replay_service.clamp(game, at)
    state = states[start]
    line: list[str] = []
    for text in moves:
        where = f"after {' '.join(line)}" if line else "here"
        if len(text) > MAX_MOVE_TEXT:
            raise PlayError(f"{quoted(text, 40)} is not a move: a move is at most {MAX_MOVE_TEXT} "
                            "characters.", "illegal")
        mover = _mover(engine, state, seat)
        if mover is None:
            over = engine.outcome(state)
            why = (f"the game is over there ({results.reason_sentence(game, over)})" if over
                   else "nobody can move")
            raise PlayError(f"{quoted(text, 40)} cannot be tried {where}: {why}", "illegal")
        try:
            written = engine.notation(state, mover, text)
            state = engine.play(state, mover, text)
        except IllegalMove as exc:
            raise PlayError(f"{quoted(text, 40)} is not legal {where}: {exc.message}", "illegal") from None
        line.append(written)
    return Tried(start, len(states) - 1, line, state, _mover(engine, state, seat))


def words(game: Game, tried: Tried) -> str:
    """Where the line stands, in a sentence: who is to move, or how the game ended there."""
    engine = queries.engine_of(game)
    over = engine.outcome(tried.state)
    if over is not None:
        return results.reason_sentence(game, over)
    if tried.mover is None:
        return "Nobody can move here."
    return f"{results.player_name(game, tried.mover)} to move."


def shown(game: Game, tried: Tried, seat: int | None) -> dict[str, Any]:
    """What the analysis board shows of ``tried``: the board (clickable for the side to move), that side's
    legal moves, and where the line stands in words; ``seat`` is whose board, where each player has one."""
    engine = queries.engine_of(game)
    legal: list[str] = []
    spellings: dict[str, str] = {}
    if tried.mover is not None and engine.outcome(tried.state) is None:
        legal = engine.moves(tried.state, tried.mover)
        spellings = engine.click_spellings(tried.state, tried.mover, legal)
    board_seat = seat if engine.simultaneous else tried.mover
    return {
        "at": tried.at,
        "last": tried.last,
        "line": tried.line,
        "mover": tried.mover,
        "words": words(game, tried),
        "svg": engine.render_svg(tried.state, board_seat, targets=bool(legal)),
        "moves": legal,
        "spellings": spellings,
    }
