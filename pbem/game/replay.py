"""Replaying a game's record: :class:`Replay`, the one replay of a record, which ``pbem verify``
(:func:`final_state`), ``pbem import`` (:func:`pbem.archive.records.check`) and the game page's replay
use; and the board after any entry of the record, for the game page.

Positions are numbered by the moves of the game, as players count them on the form and in the mails
(:func:`move_numbers`: a draw offer, a resignation or a timeout is no move): position N is the board
after move N and whatever the record says after it before the next move (0 is the start), so a link
``?move=N`` shows the position after the move numbered N in the move list.  The states of a
game are rebuilt through its engine once and kept in a small cache keyed by the game's version, so
stepping through a finished game costs one rendering per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

import games
from games import Outcome
from pbem.core.models import Game, Move
from pbem.game import results
from pbem.game.boards import Kept, drawn

# The states of the games replayed lately, by record (:func:`_record_key`).
CACHED_GAMES = 64
_states = Kept(CACHED_GAMES)


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


class Replay:
    """A game's record replayed entry by entry as the move path (:mod:`pbem.game.play`) played it: a move
    through the engine, the server's actions (a resignation, a draw offered, declined or accepted, a
    timeout) by the rulings the move path ends a game by (:mod:`pbem.game.results`).

    ``state`` is the position after the entries applied so far, and ``draw_offer`` the seat whose draw
    offer is pending; :attr:`outcome` and :attr:`ending` say whether and how they ended the game."""

    def __init__(self, engine: games.Engine, players: int, options: dict[str, Any], seed: int) -> None:
        self.engine, self.players = engine, players
        self.state = engine.new(players, options, seed)
        self.draw_offer: int | None = None
        self._ended_by_server: tuple[Outcome, str] | None = None
        self._timed_out_last = False  # The last entry was a timeout the game itself scored.
        self._moved: set[int] = set()  # The seats that have made a move (a timeout before aborts).
        # The engine's outcome of ``_judged`` (asked for only when wanted: replaying the states for the
        # game page or for verify needs none, and it can cost as much as the move).
        self._judged: Any = None
        self._verdict: Outcome | None = None

    @property
    def outcome(self) -> Outcome | None:
        """The result once an entry ended the game: the server's action, or the engine's rules."""
        if self._ended_by_server is not None:
            return self._ended_by_server[0]
        if self._judged is not self.state:
            self._judged, self._verdict = self.state, self.engine.outcome(self.state)
        return self._verdict

    @property
    def ending(self) -> str:
        """How the server ended the game (a key of ``pbem.game.endings.ENDINGS``: a timeout the game
        scored and which left nobody to play ended it on time, as the move path files it); empty while it
        goes on or when the engine's rules ended it."""
        if self._ended_by_server is not None:
            return self._ended_by_server[1]
        return "time" if self._timed_out_last and self.outcome is not None else ""

    @classmethod
    def of(cls, game: Game) -> Replay:
        """The replay of ``game`` before its first entry."""
        engine = games.get(game.engine)
        return cls(engine, game.players, engine.options.load(game.options), game.seed)

    def apply(self, seat: int, kind: str, text: str) -> Any:
        """Apply the entry of ``seat`` (0-based) of ``kind`` (``"move"``, ``"resign"``, ``"draw-offer"``,
        ``"draw-decline"``, ``"draw-accept"`` or ``"timeout"``) and ``text``; returns the state after it.
        A move the engine refuses raises :class:`games.IllegalMove`."""
        engine = self.engine
        self._timed_out_last = False
        if kind == "move":
            self.state = engine.play(self.state, seat, text)
            self._moved.add(seat)
            if self.draw_offer is not None and self.draw_offer != seat:
                self.draw_offer = None  # Moving instead of answering a draw offer declines it.
        elif kind == "draw-offer":
            self.draw_offer = seat
        elif kind == "draw-decline":
            self.draw_offer = None
        elif kind == "draw-accept" and "timeout" in text:  # As the sweep writes it (results.DRAW_ON_TIME).
            self._ended_by_server = results.draw_on_time(engine, self.players, seat), "time"
        elif kind == "draw-accept":
            self._ended_by_server = results.draw_agreed(self.players), "agreement"
        elif kind == "resign":
            self._ended_by_server = results.resignation(engine, self.players, seat), "resignation"
        elif kind == "timeout" and results.scores_timeout(engine, self.players):
            self.state = engine.time_out(self.state, seat)
            self._timed_out_last = True
        elif kind == "timeout" and results.aborts_on_time(engine, self.players, seat in self._moved):
            self._ended_by_server = results.aborted_on_time(engine, self.players, seat), results.ABORTED
        elif kind == "timeout":
            self._ended_by_server = results.loss_on_time(engine, self.players, seat), "time"
        return self.state


def final_state(game: Game) -> Any:
    """The state ``game``'s record replays to, for checking the stored one (``pbem verify``)."""
    replay = Replay.of(game)
    for move in game.moves:
        replay.apply(move.seat, move.kind, move.text)
    return replay.state


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

    def replayed() -> list[Any]:
        replay = Replay.of(game)
        return [replay.state] + [replay.apply(move.seat, move.kind, move.text) for move in game.moves]

    return _states(_record_key(game), replayed)


def move_numbers(moves: Sequence[Move]) -> list[int]:
    """Each record entry's move number as players count moves: the game's moves so far, counting every
    seat's (an action — a draw offer, a resignation, a timeout — carries the number of the move it
    follows; 0 before the first move)."""
    numbers, count = [], 0
    for move in moves:
        count += move.kind == "move"
        numbers.append(count)
    return numbers


def clamp(game: Game, at: int | None) -> int:
    """``at`` held within the game's moves (the last position when None)."""
    last = sum(1 for move in game.moves if move.kind == "move")
    return last if at is None else max(0, min(at, last))


def _entries_through(game: Game, at: int) -> int:
    """How many record entries position ``at`` (a move number) stands after: every entry before the
    move numbered ``at + 1``."""
    seen = 0
    for index, move in enumerate(game.moves):
        if move.kind == "move":
            if seen == at:
                return index
            seen += 1
    return len(game.moves)


def position(game: Game, at: int | None) -> Position:
    """The position after move ``at`` (clamped to the game's moves; see :func:`_entries_through`); a
    simultaneous game shows every seat's board, each captioned with its player."""
    engine = games.get(game.engine)
    all_states = states(game)
    at = clamp(game, at)
    through = _entries_through(game, at)
    state = all_states[through]
    # The last position of a game no longer active is drawn as over: when the server ended the game (a
    # resignation, time, a draw agreed) its state still has a mover, whom the final board must not name.
    over = through == len(all_states) - 1 and game.status != "active"

    def board(seat: int | None) -> Markup:
        return drawn(("replay", _record_key(game), through, seat, over),
                     lambda: engine.render_svg(state, seat, targets=False, over=over))

    if engine.simultaneous:
        boards = [(results.handle_or_seat(game, s.number), board(s.number)) for s in game.seats]
    else:
        boards = [("", board(None))]
    # The move that led here (an action after it, such as a resignation, shows in the move list).
    entry = next((m for m in reversed(game.moves[:through]) if m.kind == "move"), None) if at else None
    who = results.handle_or_seat(game, entry.seat) if entry else ""
    return Position(at, clamp(game, None), boards, entry, who)

