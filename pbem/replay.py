"""Replaying a game's record: the board after any entry of the record, for the game page's replay.

Positions are numbered by the record: position N is the board after entry N (0 is the start), so a
link ``?move=N`` shows the position after the entry numbered N in the move list.  The states of a
game are rebuilt through its engine once and kept in a small cache keyed by the game's version, so
stepping through a finished game costs one rendering per step.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

import games
from pbem.boards import drawn
from pbem.models import Game, Move
from pbem.results import handle_or_seat

CACHED_GAMES = 64
_cache: OrderedDict[tuple[Any, ...], list[Any]] = OrderedDict()
_lock = threading.Lock()


@dataclass
class Position:
    """One position of a replay: the boards, and the entry that led to it (None at the start)."""

    at: int
    last: int
    boards: list[tuple[str, Markup]]
    entry: Move | None
    who: str = ""

    @property
    def first(self) -> bool:
        """Whether this is the starting position."""
        return self.at == 0

    @property
    def final(self) -> bool:
        """Whether this is the position after the last entry."""
        return self.at == self.last


def replayable(game: Game) -> bool:
    """Whether the game's record may be replayed by anyone who can see the game: a started game, except
    a running game where everyone plays the same deal at once (its moves stay hidden until the end)."""
    if game.state is None:
        return False
    return game.status != "active" or not games.get(game.engine).simultaneous


def _record_key(game: Game) -> tuple[Any, ...]:
    """What names a game's record exactly: its id and version name it within one database; the seed,
    creation time and length keep games of different databases (a test run's, say) apart."""
    return (game.id, game.version, game.seed, game.created_at, len(game.moves))


def states(game: Game) -> list[Any]:
    """The state before the first entry and after each entry of the record."""
    key = _record_key(game)
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    engine = games.get(game.engine)
    state = engine.new(game.players, engine.options.load(game.options), game.seed)
    found = [state]
    for move in game.moves:
        if move.kind == "move":
            state = engine.play(state, move.seat, move.text)
        elif move.kind == "timeout" and game.players > 1 and engine.scores_absent_players:
            state = engine.time_out(state, move.seat)
        found.append(state)
    with _lock:
        _cache[key] = found
        while len(_cache) > CACHED_GAMES:
            _cache.popitem(last=False)
    return found


def clamp(game: Game, at: int | None) -> int:
    """``at`` held within the record (the last position when None)."""
    last = len(game.moves)
    return last if at is None else max(0, min(at, last))


def position(game: Game, at: int | None) -> Position:
    """The position after entry ``at`` (clamped to the record); a simultaneous game shows every seat's
    board, each captioned with its player."""
    engine = games.get(game.engine)
    all_states = states(game)
    at = clamp(game, at)
    state = all_states[at]
    # The last position of a game no longer active is drawn as over: when the server ended the game (a
    # resignation, time, a draw agreed) its state still has a mover, whom the final board must not name.
    over = at == len(all_states) - 1 and game.status != "active"

    def board(seat: int | None) -> Markup:
        return drawn(("replay", _record_key(game), at, seat, over),
                     lambda: engine.render_svg(state, seat, targets=False, over=over))

    if engine.simultaneous:
        boards = [(handle_or_seat(game, s.number), board(s.number)) for s in game.seats]
    else:
        boards = [("", board(None))]
    entry = game.moves[at - 1] if at else None
    who = handle_or_seat(game, entry.seat) if entry else ""
    return Position(at, len(all_states) - 1, boards, entry, who)

