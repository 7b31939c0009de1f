"""Cambio: place the opponent's cubes, then push rows and columns to make a full line of your own symbol.

Rules and rulings: ``docs/RULES.md`` ("Cambio"; repetition under "Common to every game").
Seat 0 is O (player A, first in both phases), seat 1 is X.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from itertools import pairwise
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate, validates_schema

from games import Engine, IllegalMove, Outcome
from games.coords import Cell, cell_name, file_letters, parse_cell, parse_position
from games.words import join_words, quoted

__all__ = ["Cambio", "CambioOptions", "State", "engine"]

SIZES = (3, 4, 5)
NEUTRAL = "."
SYMBOLS = "ox"  # indexed by seat: seat 0 plays O, seat 1 plays X
SIDES = ("O", "X")  # what results call the seats
SEAT_NAMES = ("O (seat 1)", "X (seat 2)")

# The push directions, in the canonical order moves() lists them: (file step, rank step).
ARROWS: dict[str, tuple[int, int]] = {"v": (0, -1), "^": (0, 1), ">": (1, 0), "<": (-1, 0)}
ARROW_WORDS = {"v": "down", "^": "up", ">": "right", "<": "left"}

# List the legal moves in a refusal only when there are few enough to read in a mail.
LIST_LIMIT = 12

_PUSH = re.compile(r"^([a-z]\d{1,2})([v^<>]?)$")


# ---------------------------------------------------------------------------------------------------
# Options


def _position_side(text: str) -> int:
    """The side of a written position, or a ValidationError saying what is wrong with it."""
    try:
        rows = parse_position(text, "ox.")
    except ValueError as exc:
        raise ValidationError(str(exc), "position") from None
    side = len(rows)
    if any(len(row) != side for row in rows) or side not in SIZES:
        width = len(rows[0])
        raise ValidationError(
            f"The position must be a square of 3, 4 or 5 ranks of as many cells; this one has {side} "
            f"rank{'' if side == 1 else 's'}, the first of {width} cell{'' if width == 1 else 's'}.",
            "position",
        )
    return side


class CambioOptions(Schema):
    """Board size, placements per player, and an optional written start position."""

    size = fields.Integer(
        load_default=5,
        validate=validate.OneOf(SIZES, error="The board size must be 3, 4 or 5."),
        metadata={"description": "Board side: 3, 4 or 5; a line of that many wins."},
    )
    placements = fields.Integer(
        load_default=None,
        allow_none=True,
        validate=validate.Range(min=1, error="Each player places at least 1 cube."),
        metadata={"description": "Cubes each player places for the opponent (default size - 1)."},
    )
    position = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "Start in the push phase from this position: o, x, . ranks top to bottom."},
    )

    @validates_schema(pass_original=True)
    def _check_together(self, data: dict[str, Any], original: Any, **kwargs: Any) -> None:
        """Placements must fit the free cells; a written position fixes the board size."""
        size = data["size"]
        position = (data.get("position") or "").strip()
        if position:
            side = _position_side(position)
            if isinstance(original, dict) and "size" in original and side != size:
                raise ValidationError(
                    f"The position is {side}x{side} but size is {size}; leave size out or make them agree.",
                    "size",
                )
            size = side
        placements = data.get("placements")
        free = size * size - 4
        if placements is not None and 2 * placements > free:
            raise ValidationError(
                f"On a {size}x{size} board there are {free} non-corner cells, so each player can place "
                f"at most {free // 2} cubes.",
                "placements",
            )

    @post_load
    def _fill_defaults(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """The board size follows a written position; placements default to size - 1."""
        position = (data.get("position") or "").strip()
        if position:
            rows = parse_position(position, "ox.")
            data["size"] = len(rows)
            data["position"] = "/".join("".join(row) for row in reversed(rows))
        else:
            data["position"] = None
        if data.get("placements") is None:
            data["placements"] = data["size"] - 1
        return data


# ---------------------------------------------------------------------------------------------------
# State and board geometry


@dataclass(frozen=True)
class State:
    """A Cambio position.

    ``cells`` holds one character per cell (``o``, ``x`` or ``.``), indexed ``rank * size + file``.
    ``to_place`` counts the placements still to be made by both players together; the push phase starts
    when it reaches 0.  ``history`` lists every push-phase position (cells plus the seat to move) since
    the push phase began, for the threefold-repetition draw.
    """

    size: int
    placements: int
    cells: str
    turn: int
    to_place: int
    history: tuple[str, ...]
    last: str
    outcome: Outcome | None

    @property
    def pushing(self) -> bool:
        """True in the push phase."""
        return self.to_place == 0

    def at(self, cell: Cell) -> str:
        """The symbol on ``cell``."""
        return self.cells[cell[1] * self.size + cell[0]]


def _index(size: int, cell: Cell) -> int:
    return cell[1] * size + cell[0]


def _corners(size: int) -> frozenset[Cell]:
    top = size - 1
    return frozenset({(0, 0), (0, top), (top, 0), (top, top)})


def _entry_edge(size: int, arrow: str) -> str:
    """The edge a push in direction ``arrow`` enters from, in words."""
    return {
        "v": f"the top edge (rank {size})",
        "^": "the bottom edge (rank 1)",
        ">": "the left edge (file a)",
        "<": f"the right edge (file {file_letters(size)[-1]})",
    }[arrow]


def _enters(size: int, cell: Cell, arrow: str) -> bool:
    """True if a push in direction ``arrow`` may enter at ``cell`` (the cell is on the opposite edge)."""
    file, rank = cell
    top = size - 1
    return {"v": rank == top, "^": rank == 0, ">": file == 0, "<": file == top}[arrow]


@cache
def _push_line(size: int, cell: Cell, arrow: str) -> tuple[Cell, ...]:
    """The cells a push moves, from the entry cell to the far end whose cube leaves the board."""
    df, dr = ARROWS[arrow]
    return tuple((cell[0] + df * k, cell[1] + dr * k) for k in range(size))


@cache
def _all_pushes(size: int) -> tuple[tuple[Cell, str], ...]:
    """Every (entry cell, arrow) pair of the board, in canonical order: by arrow, then by cell."""
    return tuple(
        ((f, r), arrow)
        for arrow in ARROWS
        for f in range(size)
        for r in range(size)
        if _enters(size, (f, r), arrow)
    )


@cache
def _lines(size: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Every line judged after a push: ranks, files and the two long diagonals, each with its name."""
    letters = file_letters(size)
    top = size - 1
    found: list[tuple[str, tuple[int, ...]]] = []
    for r in range(size):
        found.append((f"rank {r + 1}", tuple(_index(size, (f, r)) for f in range(size))))
    for f in range(size):
        found.append((f"file {letters[f]}", tuple(_index(size, (f, r)) for r in range(size))))
    found.append((f"diagonal a1-{cell_name((top, top))}", tuple(_index(size, (k, k)) for k in range(size))))
    found.append(
        (f"diagonal a{size}-{cell_name((top, 0))}", tuple(_index(size, (k, top - k)) for k in range(size)))
    )
    return tuple(found)


def _full_lines(state: State) -> dict[str, list[str]]:
    """The names of the full lines of each symbol (``o``/``x``) on the board."""
    found: dict[str, list[str]] = {"o": [], "x": []}
    for name, line in _lines(state.size):
        first = state.cells[line[0]]
        if first != NEUTRAL and all(state.cells[i] == first for i in line):
            found[first].append(name)
    return found


def _push_name(cell: Cell, arrow: str) -> str:
    return f"{cell_name(cell)}{arrow}"


def _legal_pushes(state: State) -> list[str]:
    """The pushes the seat to move may make: every one whose far-end cube is not the opponent's."""
    opponent = SYMBOLS[1 - state.turn]
    return [
        _push_name(cell, arrow)
        for cell, arrow in _all_pushes(state.size)
        if state.at(_push_line(state.size, cell, arrow)[-1]) != opponent
    ]


def _legal_placements(state: State) -> list[str]:
    """The cells where the seat to move may place an opponent's cube: neutral, not a corner."""
    corners = _corners(state.size)
    return [
        cell_name((f, r))
        for f in range(state.size)
        for r in range(state.size)
        if (f, r) not in corners and state.at((f, r)) == NEUTRAL
    ]


def _key(cells: str, turn: int) -> str:
    return f"{cells}{turn}"


def _no_push_outcome(state: State) -> Outcome | None:
    """A player with no legal push loses (see the help for why this is what players expect)."""
    if state.outcome is None and state.pushing and not _legal_pushes(state):
        return Outcome.win(
            1 - state.turn,
            2,
            f"{SIDES[1 - state.turn]} wins: {SIDES[state.turn]} has no legal push (every line would push "
            f"off an opponent's cube)",
        )
    return state.outcome


# ---------------------------------------------------------------------------------------------------
# The engine

HELP = """\
Cambio (two players; after Kwei-you Tao's rule sheet for GamesCrafters)

Aim: make a full line of your own symbol across the board (3, 4 or 5 long, the board's side):
a rank, a file, or one of the two long diagonals.

Seats: seat 1 plays O and moves first in both phases; seat 2 plays X.

Placement phase. The board starts full of neutral cubes. Starting with O, the players take turns
placing one of the OPPONENT's cubes on a neutral cell that is not a corner (the four corners stay
neutral). Each player places `placements` cubes.

Push phase. Starting with O, each player in turn enters a cube of their own symbol at an edge cell
and pushes that whole rank or file one place along; the cube at the far end leaves the board. You
may push off a neutral cube or one of your own, never one showing the opponent's symbol.

Winning. After every push all ranks, files and both long diagonals are checked: if only the mover
has a full line, the mover wins; if both players have one, the game is drawn; if only the opponent
has one, the opponent wins.

Options:
- size: 3, 4 or 5 (default 5).
- placements: cubes each player places (default size - 1; at most (size*size - 4) / 2).
- position: start straight in the push phase with O to move, from a written position: ranks from
  top to bottom separated by /, o and x for cubes, . for neutral, e.g. .x./o.x/.o. (the board size
  follows the position).

Notation:
- Placement: the cell, e.g. b3 (places the opponent's cube there).
- Push: the entry cell and the direction the line moves: v down, ^ up, > right, < left.
  a3v enters at a3 and pushes file a down (a1's cube leaves); c1< pushes rank 1 to the left;
  a1^ and a1> are the two pushes from corner a1. Corners need the arrow; other edge cells may leave
  it out (b3 on a 3x3 board means b3v). Moves are listed with the arrow. Case and spaces are ignored.

Rulings:
- Lines are judged only after pushes: a line formed during placement counts at the first push.
- The third time the same position occurs with the same player to push, the game is drawn.
- A player with no legal push loses. This cannot happen in a game started from the placement
  phase: it needs the whole border to show the opponent's symbol, which means the opponent already
  has a full line; it can only come from a written position, where that line is already there.
- The rule sheet's advice not to place the opponent's cubes in a row is strategy, not a rule: any
  neutral non-corner cell may take the cube.
- Each player places at least 1 cube; a game with no placements at all is a written position.
- A written position (the position option) skips the placement phase; a line already in it counts
  at the first push, like any other line.
"""


class Cambio(Engine):
    """The Cambio rule engine."""

    slug = "cambio"
    summary = ("Place your opponent's cubes on the board, then push rows of cubes in from the edge: the "
               "first full line of your own symbol wins.")
    title = "Cambio"
    sides = SIDES
    players = range(2, 3)
    options = CambioOptions()
    simultaneous = False
    open_information = True  # Nothing hidden, no chance after the start: moves may be tried in play.
    help = HELP

    # -- starting -----------------------------------------------------------------------------------

    def new(self, players: int, options: dict[str, Any], seed: int) -> State:
        """A new game.  Cambio has no chance, so ``seed`` changes nothing."""
        if players not in self.players:
            raise ValueError("Cambio is a game for exactly 2 players.")
        size = options["size"]
        if options.get("position"):
            rows = parse_position(options["position"], "ox.")
            cells = "".join("".join(row) for row in rows)
            state = State(size, options["placements"], cells, 0, 0, (_key(cells, 0),), "", None)
            return _with_outcome(state)
        cells = NEUTRAL * (size * size)
        return State(size, options["placements"], cells, 0, 2 * options["placements"], (), "", None)

    # -- querying -----------------------------------------------------------------------------------

    def to_move(self, state: State) -> frozenset[int]:
        """The seat to move, or nobody once the game is over."""
        return frozenset() if state.outcome else frozenset({state.turn})

    def moves(self, state: State, seat: int) -> list[str]:
        """Placement cells in the placement phase, pushes (always with the arrow) in the push phase."""
        if state.outcome or seat != state.turn:
            return []
        return _legal_pushes(state) if state.pushing else _legal_placements(state)

    def outcome(self, state: State) -> Outcome | None:
        """The result once a line is made, the position repeats three times, or a player is stuck."""
        return state.outcome

    # -- playing ------------------------------------------------------------------------------------

    def play(self, state: State, seat: int, text: str) -> State:
        """Parse, check and apply a placement or a push."""
        if state.outcome:
            raise IllegalMove(f"The game is over: {state.outcome.reason}.")
        if seat != state.turn:
            raise IllegalMove(f"It is {SEAT_NAMES[state.turn]}'s turn, not yours.")
        word = "".join(text.split()).lower()
        if state.pushing:
            cell, arrow = self._parse_push(state, word, text)
            return self._push(state, cell, arrow)
        return self._place(state, self._parse_placement(state, word, text))

    def _parse_placement(self, state: State, word: str, text: str) -> Cell:
        """The cell of a placement, or a refusal saying which cells are free."""
        symbol = SYMBOLS[1 - state.turn].upper()
        if word and word[-1] in ARROWS and len(word) > 1:
            raise IllegalMove(
                f"It is still the placement phase: name the cell for an {symbol} cube, like "
                f"{_legal_placements(state)[0]}; pushes start once all cubes are placed."
            )
        cell = parse_cell(word or text, state.size, state.size)
        name = cell_name(cell)
        if cell in _corners(state.size):
            free = self._free(state)
            raise IllegalMove(f"{name} is a corner: the corners keep their neutral cubes. {free}")
        if state.at(cell) != NEUTRAL:
            held = state.at(cell).upper()
            raise IllegalMove(f"{name} already holds an {held} cube. {self._free(state)}")
        return cell

    def _free(self, state: State) -> str:
        free = _legal_placements(state)
        if len(free) <= LIST_LIMIT:
            return f"You can place on {join_words(free)}."
        return "Place on a neutral cell that is not a corner."

    def _parse_push(self, state: State, word: str, text: str) -> tuple[Cell, str]:
        """The entry cell and arrow of a push, or a refusal that says what would be legal."""
        match = _PUSH.match(word)
        if not match:
            raise IllegalMove(
                f"{quoted(text.strip())} is not a push: write the entry cell and the direction, like "
                f"{_push_name((0, state.size - 1), 'v')} (v down, ^ up, > right, < left)."
            )
        cell = parse_cell(match.group(1), state.size, state.size)
        name = cell_name(cell)
        arrow = match.group(2)
        possible = [a for a in ARROWS if _enters(state.size, cell, a)]
        if not possible:
            raise IllegalMove(
                f"{name} is not on the edge of the board; a push enters at an edge cell, like "
                f"{_push_name((0, state.size - 1), 'v')}."
            )
        if not arrow:
            if len(possible) > 1:
                both = join_words([name + a for a in possible])
                raise IllegalMove(f"{name} is a corner, so say which line to push: {both}.")
            arrow = possible[0]
        elif arrow not in possible:
            raise IllegalMove(
                f"{name}{arrow} cannot be pushed: a push {ARROW_WORDS[arrow]} enters at "
                f"{_entry_edge(state.size, arrow)}. From {name} you can push "
                f"{join_words([name + a for a in possible])}."
            )
        far = _push_line(state.size, cell, arrow)[-1]
        opponent = SYMBOLS[1 - state.turn]
        if state.at(far) == opponent:
            legal = _legal_pushes(state)
            hint = f"You can push {join_words(legal)}." if len(legal) <= LIST_LIMIT else (
                "Push a line whose far end holds a neutral cube or one of yours."
            )
            raise IllegalMove(
                f"{name}{arrow} would push the {opponent.upper()} cube on {cell_name(far)} off the board; "
                f"only neutral cubes and your own may be pushed off. {hint}"
            )
        return cell, arrow

    def _place(self, state: State, cell: Cell) -> State:
        """Place an opponent's cube; the last placement opens the push phase with O to move."""
        i = _index(state.size, cell)
        cells = state.cells[:i] + SYMBOLS[1 - state.turn] + state.cells[i + 1 :]
        to_place = state.to_place - 1
        turn = 1 - state.turn
        history = (_key(cells, turn),) if to_place == 0 else ()
        return _with_outcome(
            State(state.size, state.placements, cells, turn, to_place, history, cell_name(cell), None)
        )

    def _push(self, state: State, cell: Cell, arrow: str) -> State:
        """Enter the mover's cube, shift the line, then judge lines and repetition."""
        mover = state.turn
        line = _push_line(state.size, cell, arrow)
        cells = list(state.cells)
        for near, far in pairwise(line):
            cells[_index(state.size, far)] = state.cells[_index(state.size, near)]
        cells[_index(state.size, cell)] = SYMBOLS[mover]
        board = "".join(cells)
        turn = 1 - mover
        history = (*state.history, _key(board, turn))
        after = State(state.size, state.placements, board, turn, 0, history, _push_name(cell, arrow), None)
        return _with_outcome(after, judge_lines=True, mover=mover)

    # -- rendering ----------------------------------------------------------------------------------

    def render_text(self, state: State, seat: int | None = None, *, over: bool = False) -> str:
        """The board with coordinates, the phase, whose turn, placements left and the last move.

        ``over``: the game has ended though the rules would go on (the server ended it), so the phase,
        the mover and the placements left are not shown."""
        n = state.size
        letters = " ".join(file_letters(n))
        rule = "+" + "-" * (2 * n + 1) + "+"
        out = [f"Cambio {n}x{n}", "", f"    {letters}", f"  {rule}"]
        for r in range(n - 1, -1, -1):
            row = " ".join(state.at((f, r)).upper() for f in range(n))
            out.append(f"{r + 1} | {row} | {r + 1}")
        out += [f"  {rule}", f"    {letters}", ""]
        out.append("O = seat 1's cubes, X = seat 2's cubes, . = neutral cube")
        out.extend(self._status_lines(state, over))
        return "\n".join(out) + "\n"

    def _status_lines(self, state: State, over: bool = False) -> list[str]:
        lines: list[str] = []
        if state.last:
            lines.append(f"Last move: {self._describe_last(state)}")
        if state.outcome:
            lines.append(f"Game over: {state.outcome.reason}.")
            return lines
        if over:
            # Ended by the server: the reason is the server's to give, and nobody is to move.
            return lines
        return lines + self._phase_lines(state)

    @staticmethod
    def _phase_lines(state: State) -> list[str]:
        """The phase and what the mover is to do in it, for a game still going."""
        mover = SEAT_NAMES[state.turn]
        if state.pushing:
            lines = [f"Push phase: {mover} to push."]
            seen = state.history.count(state.history[-1])
            if seen == 2:
                lines.append("This position has now occurred twice; a third time draws the game.")
            return lines
        o_left = state.to_place // 2
        x_left = state.to_place - o_left
        return [f"Placement phase: {mover} to place an {SYMBOLS[1 - state.turn].upper()} cube.",
                f"Placements still to make: O {o_left}, X {x_left}."]

    def turn_note(self, state: State, seat: int) -> str | None:
        """The phase as the text board words it, for the player asked to move: in the placement phase
        they place the opponent's cube, which a newcomer does not expect."""
        if state.outcome or seat != state.turn:
            return None
        return " ".join(self._phase_lines(state))

    def _describe_last(self, state: State) -> str:
        mover = SYMBOLS[1 - state.turn].upper()
        if state.last[-1] in ARROWS:
            return f"{mover} pushed {state.last}."
        return f"{mover} placed an {SYMBOLS[state.turn].upper()} cube on {state.last}."

    def _title(self, state: State, over: bool = False) -> str:
        n = state.size
        if state.outcome:
            return f"Cambio {n}x{n}, game over: {state.outcome.reason}"
        after = f" after {SYMBOLS[1 - state.turn].upper()} {state.last}" if state.last else ""
        if over:
            return f"Cambio {n}x{n}{after}, game over"
        if state.pushing:
            return f"Cambio {n}x{n}{after}, push phase: {SEAT_NAMES[state.turn]} to push"
        return f"Cambio {n}x{n}{after}, placement phase: {SEAT_NAMES[state.turn]} to place"

    def render_svg(self, state: State, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """The tray of cubes with coordinates; for the seat to move, clickable cells or push arrows
        (unless ``targets`` is False, or the game is ``over``: ended by the server, with no mover named)."""
        n = state.size
        cell, band, label = 60, 34, 22
        pad = band + label
        side = n * cell + 2 * pad
        title = _escape(self._title(state, over))
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {side} {side}" width="{side}" '
            f'height="{side}" role="img" aria-labelledby="cambio-title">',
            f'<title id="cambio-title">{title}</title>',
            f'<rect x="{pad - 6}" y="{pad - 6}" width="{n * cell + 12}" height="{n * cell + 12}" rx="8" '
            'fill="#5b4636"/>',
        ]

        def corner(c: Cell) -> tuple[int, int]:
            return pad + c[0] * cell, pad + (n - 1 - c[1]) * cell

        # The coordinates sit right against the tray; the push arrows, when there are any, stand outside
        # them, in the outer band.
        letters = file_letters(n)
        for k in range(n):
            mid = pad + k * cell + cell // 2
            for y in (pad - 12, pad + n * cell + 23):
                parts.append(_label(mid, y, letters[k]))
            rank = n - k
            for x in (pad - 17, pad + n * cell + 17):
                parts.append(_label(x, mid + 5, str(rank)))
        last_cell = _last_cell(state)
        for f in range(n):
            for r in range(n):
                x, y = corner((f, r))
                parts.append(_cube(x, y, cell, state.at((f, r)), (f, r) == last_cell))
        if targets and not over and seat is not None and seat == state.turn and not state.outcome:
            if state.pushing:
                for move in _legal_pushes(state):
                    c, arrow = parse_cell(move[:-1], n, n), move[-1]
                    x, y = corner(c)
                    parts.append(_arrow(x, y, cell, band, arrow, move))
            else:
                for move in _legal_placements(state):
                    x, y = corner(parse_cell(move, n, n))
                    parts.append(
                        f'<rect class="target" data-move="{move}" x="{x + 3}" y="{y + 3}" width="{cell - 6}" '
                        f'height="{cell - 6}" rx="6" fill="#ffffff" fill-opacity="0" stroke="#2a7de1" '
                        'stroke-width="2" stroke-dasharray="5 4" cursor="pointer"/>'
                    )
        parts.append("</svg>")
        return "\n".join(parts)

    # -- storing ------------------------------------------------------------------------------------

    def seat_view(self, state: State, seat: int) -> dict[str, Any]:
        """The whole state: nothing of the game is hidden from either player."""
        return self.dump(state)

    def dump(self, state: State) -> dict[str, Any]:
        """A JSON-safe form of the state."""
        return {
            "size": state.size,
            "placements": state.placements,
            "cells": state.cells,
            "turn": state.turn,
            "to_place": state.to_place,
            "history": list(state.history),
            "last": state.last,
            "outcome": None if state.outcome is None else state.outcome.to_dict(),
        }

    def load(self, data: dict[str, Any]) -> State:
        """The inverse of :meth:`dump`."""
        outcome = data.get("outcome")
        return State(
            size=int(data["size"]),
            placements=int(data["placements"]),
            cells=str(data["cells"]),
            turn=int(data["turn"]),
            to_place=int(data["to_place"]),
            history=tuple(data["history"]),
            last=str(data.get("last", "")),
            outcome=None if outcome is None else Outcome.from_dict(outcome),
        )


def _with_outcome(state: State, judge_lines: bool = False, mover: int = 0) -> State:
    """``state`` with its outcome settled: lines (after a push), repetition, or a stuck player."""
    outcome: Outcome | None = None
    if judge_lines:
        full = _full_lines(state)
        mine, theirs = full[SYMBOLS[mover]], full[SYMBOLS[1 - mover]]
        if mine and theirs:
            outcome = Outcome.draw(
                2, f"Drawn: the push made full lines for both players ({join_words(mine + theirs)})"
            )
        elif mine or theirs:
            winner = mover if mine else 1 - mover
            name = join_words(mine or theirs)
            outcome = Outcome.win(winner, 2, f"{SIDES[winner]} wins with a full line on {name}")
        elif state.history.count(state.history[-1]) >= 3:
            outcome = Outcome.draw(2, "Drawn by repetition: the same position occurred for the third time "
                                      "with the same player to push")
    if outcome is None:
        outcome = _no_push_outcome(state)
    return replace(state, outcome=outcome)


def _last_cell(state: State) -> Cell | None:
    if not state.last:
        return None
    name = state.last.rstrip("".join(ARROWS))
    return parse_cell(name, state.size, state.size)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _label(x: int, y: int, text: str) -> str:
    return (
        f'<text x="{x}" y="{y}" text-anchor="middle" font-family="sans-serif" font-size="15" '
        f'fill="#333333">{text}</text>'
    )


def _cube(x: int, y: int, cell: int, symbol: str, last: bool) -> str:
    """One cube seen from above: blank when neutral, a circle for O, a cross for X."""
    edge = ' stroke="#e8a317" stroke-width="4"' if last else ' stroke="#3b2e24" stroke-width="1"'
    shapes = [
        f'<rect x="{x + 4}" y="{y + 4}" width="{cell - 8}" height="{cell - 8}" rx="6" fill="#f4ead5"{edge}/>'
    ]
    cx, cy, r = x + cell // 2, y + cell // 2, cell // 2 - 14
    if symbol == "o":
        shapes.append(f'<circle cx="{cx}" cy="{cy}" r="{r}" fill="none" stroke="#1f4e9e" stroke-width="6"/>')
    elif symbol == "x":
        for dx in (-r, r):
            shapes.append(
                f'<line x1="{cx - dx}" y1="{cy - r}" x2="{cx + dx}" y2="{cy + r}" stroke="#b3261e" '
                'stroke-width="6" stroke-linecap="round"/>'
            )
    return "<g>" + "".join(shapes) + "</g>"


def _arrow(x: int, y: int, cell: int, band: int, arrow: str, move: str) -> str:
    """A clickable triangle outside the entry cell (beyond its coordinate label), pointing the way the
    push moves the line."""
    half, gap, depth = cell // 2, 28, band - 10
    if arrow == "v":
        cx, tip, base = x + half, y - gap, y - gap - depth
        points = [(cx - 12, base), (cx + 12, base), (cx, tip)]
    elif arrow == "^":
        cx, tip, base = x + half, y + cell + gap, y + cell + gap + depth
        points = [(cx - 12, base), (cx + 12, base), (cx, tip)]
    elif arrow == ">":
        cy, tip, base = y + half, x - gap, x - gap - depth
        points = [(base, cy - 12), (base, cy + 12), (tip, cy)]
    else:
        cy, tip, base = y + half, x + cell + gap, x + cell + gap + depth
        points = [(base, cy - 12), (base, cy + 12), (tip, cy)]
    text = " ".join(f"{px},{py}" for px, py in points)
    return (
        f'<polygon class="target" data-move="{_escape(move)}" points="{text}" fill="#2a7de1" '
        'stroke="#174a8a" '
        f'stroke-width="1" cursor="pointer"><title>{_escape(move)}</title></polygon>'
    )


engine = Cambio()
