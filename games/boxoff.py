"""Box Off: a solitaire of coloured tiles, cleared two at a time (docs/RULES.md, "Box Off").

Two tiles of one colour may be removed when they are opposite corners (or the two ends) of a rectangle
holding no other tile.  Every seat gets the same deal and clears its own copy; seats are ranked by the
tiles they leave.  The module also holds the solver that proves deals clearable (:func:`solve`).
"""

from __future__ import annotations

import random
import re
import textwrap
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any
from xml.sax.saxutils import escape

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from games import Engine, IllegalMove, Outcome, as_typed
from games.coords import Cell, cell_name, file_letters, parse_cell, parse_position
from games.words import quoted

__all__ = ["COLOUR_NAMES", "PALETTE", "BoxOff", "BoxOffState", "SeatBoard", "engine", "solve"]

# One letter per colour, in the order the `colours` option takes them: 3 colours are b, w, y.
PALETTE = "bwygrp"
COLOUR_NAMES = ("black", "white", "yellow", "green", "red", "purple")
EMPTY = "."
MIN_SIZE, MAX_SIZE = 2, 12

# Deal generation: each drawn deal gets this many search nodes (on an 8x6 board; fewer on bigger ones) to
# be proven clearable before the next deal is drawn; after this many deals, a deal clearable by
# construction is used instead.
DEAL_NODE_BUDGET = 4_000
DEAL_ATTEMPTS = 3


# --------------------------------------------------------------------------------------------------
# The board geometry: cells are numbered rank * width + file, so bit i of an occupancy mask is a cell.
# --------------------------------------------------------------------------------------------------

# A pair of same-coloured tiles: (both tiles' bits, the cells strictly inside their rectangle, tile a,
# tile b, rectangle area).  Tuples rather than a dataclass: the solver reads millions of them.
Pair = tuple[int, int, int, int, int]


def _index(cell: Cell, width: int) -> int:
    return cell[1] * width + cell[0]


def _cell(index: int, width: int) -> Cell:
    return index % width, index // width


def _rectangle(a: int, b: int, width: int) -> tuple[int, int]:
    """The mask of the rectangle spanned by cells ``a`` and ``b`` (corners excluded), and its area."""
    fa, ra = _cell(a, width)
    fb, rb = _cell(b, width)
    f0, f1 = min(fa, fb), max(fa, fb)
    r0, r1 = min(ra, rb), max(ra, rb)
    row = ((1 << (f1 - f0 + 1)) - 1) << f0
    mask = 0
    for rank in range(r0, r1 + 1):
        mask |= row << (rank * width)
    return mask & ~((1 << a) | (1 << b)), (f1 - f0 + 1) * (r1 - r0 + 1)


@lru_cache(maxsize=256)
def _pairs(width: int, deal: str) -> tuple[Pair, ...]:
    """Every pair of same-coloured tiles of a deal (cells row-major from a1), in canonical move order."""
    cells = [i for i, c in enumerate(deal) if c != EMPTY]
    # Canonical order is by cell name: file first, then rank (a2 before a10 before b1).
    cells.sort(key=lambda i: _cell(i, width))
    pairs = []
    for n, a in enumerate(cells):
        for b in cells[n + 1 :]:
            if deal[a] == deal[b]:
                inside, area = _rectangle(a, b, width)
                pairs.append(((1 << a) | (1 << b), inside, a, b, area))
    return tuple(pairs)


def _legal(pairs: tuple[Pair, ...] | list[Pair], occupied: int) -> list[Pair]:
    """The pairs whose two tiles are present with nothing between them."""
    return [p for p in pairs if p[0] & occupied == p[0] and not p[1] & occupied]


def _notation(pair: Pair, width: int) -> str:
    return f"{cell_name(_cell(pair[2], width))}-{cell_name(_cell(pair[3], width))}"


def _count(mask: int) -> int:
    return bin(mask).count("1")


# --------------------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------------------


class _OutOfBudget(Exception):
    """The search used the nodes it was given without settling the position."""


class _Solver:
    """Depth-first search for a clearing line, over occupancy bitmasks.

    Removing tiles never blocks a move, so the only way to fail is to use a tile with the wrong partner.
    Three things keep the search small:

    * a relaxation that ignores which partner a tile uses: a tile is *removable* if some pair holding
      it has every tile inside its rectangle removable.  A tile that is not removable (two colours
      crossing each other's rectangles) is a dead end found without search;
    * forced pairs: a tile with only one possible partner must go with it, and at once if it can
      (removing a pair early never hurts the other moves), so that node does not branch;
    * positions proven dead are remembered, and the search restarts with growing node budgets,
      alternating two move orders (smallest rectangle first; tiles that block most pairs first) and
      shuffling ties: on a clearable deal one order usually walks straight to a line where the other
      wanders into a dead corner.  The dead positions carry over between restarts, so the last run
      (with no budget) is still an exhaustive proof.
    """

    START_BUDGET = 50
    GROWTH = 1.3

    def __init__(self, width: int, deal: str, occupied: int) -> None:
        self.occupied = occupied
        self.pairs = [
            (bits, inside & occupied, a, b, area)
            for bits, inside, a, b, area in _pairs(width, deal)
            if bits & occupied == bits
        ]
        # How many pairs of the position each tile stands inside: removing it frees them.
        self.blocking = dict.fromkeys(range(len(deal)), 0)
        for p in self.pairs:
            inside = p[1]
            while inside:
                low = inside & -inside
                self.blocking[low.bit_length() - 1] += 1
                inside ^= low
        self.dead: set[int] = set()
        self.nodes = 0
        self.limit = 0
        self.order = 0
        self.shuffle: random.Random | None = None

    def run(self, budget: int | None = None) -> list[Pair] | None:
        """A clearing line, or None if there is none; raises _OutOfBudget after ``budget`` nodes."""
        jitter = random.Random(0)  # The solver's own fixed seed: a deal's proof is reproducible.
        limit = float(self.START_BUDGET)
        used = 0
        for run in range(1_000_000):
            self.order = run % 2
            self.shuffle = jitter if run >= 2 else None
            self.limit = int(limit) if budget is None else min(int(limit), budget - used)
            self.nodes = 0
            try:
                return self._search(self.occupied, self.pairs)
            except _OutOfBudget:
                used += self.nodes
                if budget is not None and used >= budget:
                    raise
                limit *= self.GROWTH
        raise _OutOfBudget  # pragma: no cover - budgets grow without bound long before this

    def _removable(self, occupied: int, pairs: list[Pair]) -> tuple[list[Pair], list[Pair]] | None:
        """The pairs that may still be removed some day and the forced ones; None for a dead end."""
        removable = 0
        possible: list[Pair] = []
        pending = pairs
        grew = True
        while grew:
            grew = False
            waiting = []
            for p in pending:
                if p[1] & occupied & ~removable:
                    waiting.append(p)
                else:
                    possible.append(p)
                    if p[0] & ~removable:
                        removable |= p[0]
                        grew = True
            pending = waiting
        if removable != occupied:
            return None
        partners: dict[int, int] = {}
        only: dict[int, Pair] = {}
        for p in possible:
            for tile in (p[2], p[3]):
                partners[tile] = partners.get(tile, 0) + 1
                only[tile] = p
        forced: list[Pair] = []
        taken = 0
        for tile, n in partners.items():
            if n == 1:
                p = only[tile]
                if p in forced:
                    continue
                if p[0] & taken:
                    return None  # Two tiles each need the same third tile as their only partner.
                taken |= p[0]
                forced.append(p)
        return possible, forced

    def _search(self, occupied: int, pairs: list[Pair]) -> list[Pair] | None:
        if not occupied:
            return []
        if occupied in self.dead:
            return None
        self.nodes += 1
        if self.nodes > self.limit:
            raise _OutOfBudget
        pairs = [p for p in pairs if p[0] & occupied == p[0]]
        found = self._removable(occupied, pairs)
        if found is None:
            self.dead.add(occupied)
            return None
        possible, forced = found
        for p in forced:
            if not p[1] & occupied:
                line = self._search(occupied & ~p[0], possible)
                if line is None:
                    self.dead.add(occupied)
                    return None
                return [p, *line]
        ready = [p for p in possible if not p[1] & occupied]
        if self.order == 0:
            keys = {p: float(p[4]) for p in ready}
        else:
            keys = {p: -float(self.blocking[p[2]] + self.blocking[p[3]]) for p in ready}
        if self.shuffle is not None:
            keys = {p: k + self.shuffle.random() * 2 for p, k in keys.items()}
        ready.sort(key=keys.__getitem__)
        for p in ready:
            line = self._search(occupied & ~p[0], possible)
            if line is not None:
                return [p, *line]
        self.dead.add(occupied)
        return None


def _clearing_line(width: int, deal: str, occupied: int, budget: int | None = None) -> list[Pair] | None:
    """A clearing line for the tiles of ``deal`` present in ``occupied``, or None if there is none."""
    return _Solver(width, deal, occupied).run(budget)


def _deal_of(board: str) -> tuple[int, int, str]:
    """A written position as (width, height, cells row-major from a1)."""
    rows = parse_position(board, PALETTE + EMPTY)
    return len(rows[0]), len(rows), "".join("".join(row) for row in rows)


def solve(board: str, budget: int | None = None) -> list[str] | None:
    """A line of moves that clears a written position (``"bbwbbw/byyywb/ywwwyy"``), or None: there is
    none, or (given a ``budget`` of search nodes) none was found within it.

    Letters are the colours ``b w y g r p``, ``.`` an empty cell, ranks from top to bottom.
    """
    width, _, deal = _deal_of(board)
    occupied = sum(1 << i for i, c in enumerate(deal) if c != EMPTY)
    try:
        line = _clearing_line(width, deal, occupied, budget)
    except _OutOfBudget:
        return None
    return None if line is None else [_notation(p, width) for p in line]


# --------------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------------


def _colour_counts(width: int, height: int) -> list[int]:
    """The colour counts that split a board into an even number of tiles per colour."""
    cells = width * height
    return [k for k in range(2, len(PALETTE) + 1) if cells % k == 0 and (cells // k) % 2 == 0]


class BoxOffOptions(Schema):
    """Board size, number of colours, an optional written position, and whether deals must be clearable."""

    width = fields.Integer(
        load_default=8,
        validate=validate.Range(MIN_SIZE, MAX_SIZE, error="The width must be {min} to {max} cells."),
        metadata={"description": f"Cells a rank: {MIN_SIZE} to {MAX_SIZE}."},
    )
    height = fields.Integer(
        load_default=6,
        validate=validate.Range(MIN_SIZE, MAX_SIZE, error="The height must be {min} to {max} cells."),
        metadata={"description": f"Ranks: {MIN_SIZE} to {MAX_SIZE}."},
    )
    colours = fields.Integer(
        load_default=3,
        validate=validate.Range(2, len(PALETTE), error="The number of colours must be {min} to {max}."),
        metadata={"description": f"2 to {len(PALETTE)}, taken in the order {', '.join(PALETTE)}."},
    )
    position = fields.String(load_default="", metadata={
        "description": "A written deal instead: ranks top to bottom separated by /, a colour letter or . "
                       "a cell."})
    solvable = fields.Boolean(load_default=True, metadata={
        "description": "Deal only boards the solver proves can be cleared."})

    @pre_load
    def _size_from_position(self, data: Any, **_: Any) -> Any:
        """A position gives the board size and colours unless they are given too."""
        if not isinstance(data, dict) or not isinstance(data.get("position"), str):
            return data
        text = data["position"].strip().lower()
        if not text:
            return data
        data = dict(data)
        ranks = [r.strip() for r in text.split("/")]
        data.setdefault("height", len(ranks))
        data.setdefault("width", len(ranks[0]))
        used = [PALETTE.index(c) for c in text if c in PALETTE]
        data.setdefault("colours", max(2, *[i + 1 for i in used]) if used else 2)
        return data

    @validates_schema
    def _consistent(self, data: dict[str, Any], **_: Any) -> None:
        width, height, colours = data["width"], data["height"], data["colours"]
        position = data["position"].strip().lower()
        letters = PALETTE[:colours]
        if not position:
            if colours not in _colour_counts(width, height):
                cells = width * height
                fits = ", ".join(map(str, _colour_counts(width, height))) or "none"
                raise ValidationError(
                    f"The {width}x{height} board has {cells} cells, which cannot be dealt as an even number "
                    f"of tiles in each of {colours} colours. Colour counts that fit: {fits}.",
                    "colours",
                )
            return
        try:
            rows = parse_position(position, letters + EMPTY)
        except ValueError as exc:
            raise ValidationError(
                f"{exc} With {colours} colours the letters are {' '.join(letters)} and . for an empty cell.",
                "position",
            ) from None
        if (len(rows[0]), len(rows)) != (width, height):
            raise ValidationError(
                f"The position is {len(rows[0])}x{len(rows)} but the board is {width}x{height}.", "position"
            )
        cells = "".join("".join(row) for row in rows)
        odd = [f"{COLOUR_NAMES[i]} ({cells.count(c)})" for i, c in enumerate(letters) if cells.count(c) % 2]
        if odd:
            raise ValidationError(
                f"Every colour needs an even number of tiles to be cleared; odd: {', '.join(odd)}.",
                "position",
            )
        if not cells.strip(EMPTY):
            raise ValidationError("The position has no tiles.", "position")


# --------------------------------------------------------------------------------------------------
# States
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeatBoard:
    """One seat's copy of the deal: the tiles still on it, the moves played, whether time ran out."""

    occupied: int
    moves: tuple[str, ...] = ()
    timed_out: bool = False


@dataclass(frozen=True)
class BoxOffState:
    """The deal every seat got (cells row-major from a1, ``.`` empty) and each seat's board."""

    width: int
    height: int
    colours: int
    solvable: bool
    position: str
    deal: str
    seats: tuple[SeatBoard, ...]

    @property
    def pairs(self) -> tuple[Pair, ...]:
        """Every same-coloured pair of the deal."""
        return _pairs(self.width, self.deal)


def _written(state: BoxOffState, occupied: int) -> str:
    """A board as a written position: ranks top to bottom, ``.`` for empty cells."""
    w = state.width
    ranks = []
    for rank in reversed(range(state.height)):
        ranks.append(
            "".join(state.deal[i] if occupied >> i & 1 else EMPTY for i in range(rank * w, rank * w + w))
        )
    return "/".join(ranks)


def _occupied(deal: str) -> int:
    return sum(1 << i for i, c in enumerate(deal) if c != EMPTY)


def _shuffled_deal(rng: random.Random, width: int, height: int, colours: int) -> str:
    tiles = [PALETTE[i % colours] for i in range(width * height)]
    rng.shuffle(tiles)
    return "".join(tiles)


def _built_deal(rng: random.Random, width: int, height: int, colours: int) -> str:
    """A deal clearable by construction, for when no drawn deal could be proven in time.

    Tiles are cleared off a board of blank tiles first: each step takes a random pair of blank tiles
    with nothing between them (one always exists: the pair with the smallest rectangle).  Then the
    pairs get colours, the same number of pairs per colour, and that clearing line clears the deal.
    """
    cells = width * height
    occupied = (1 << cells) - 1
    every = [(a, b) for a in range(cells) for b in range(a + 1, cells)]
    spans = [((1 << a) | (1 << b), _rectangle(a, b, width)[0], a, b) for a, b in every]
    line: list[tuple[int, int]] = []
    while occupied:
        spans = [p for p in spans if p[0] & occupied == p[0]]
        bits, _, a, b = rng.choice([p for p in spans if not p[1] & occupied])
        line.append((a, b))
        occupied &= ~bits
    colour_of_pair = [PALETTE[i % colours] for i in range(len(line))]
    rng.shuffle(colour_of_pair)
    deal = [EMPTY] * cells
    for (a, b), colour in zip(line, colour_of_pair, strict=True):
        deal[a] = deal[b] = colour
    return "".join(deal)


def _new_deal(rng: random.Random, width: int, height: int, colours: int, solvable: bool) -> str:
    """A shuffled deal; with ``solvable``, the first one the solver proves clearable within its budget."""
    deal = _shuffled_deal(rng, width, height, colours)
    if not solvable:
        return deal
    # The budget is in nodes, not seconds, so that a seed always gives the same deal.  A node costs
    # about one look at every pair, so big boards with many pairs get fewer nodes.
    budget = max(200, DEAL_NODE_BUDGET * 400 // max(1, len(_pairs(width, deal))))
    for _ in range(DEAL_ATTEMPTS):
        try:
            if _clearing_line(width, deal, _occupied(deal), budget) is not None:
                return deal
        except _OutOfBudget:
            pass
        deal = _shuffled_deal(rng, width, height, colours)
    return _built_deal(rng, width, height, colours)


# --------------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------------

_MOVE = re.compile(r"([a-z]\d{1,2})\s*(?:[-,/]|to)?\s*([a-z]\d{1,2})")
_CELL_WORD = re.compile(r"[a-z]\d{1,2}")

# Fill and ink per colour letter, for the SVG.
_FILL = {"b": "#222222", "w": "#f7f7f2", "y": "#f2c200", "g": "#2e9d4a", "r": "#d23b2e", "p": "#7d3fa8"}
_INK = {"b": "#ffffff", "w": "#333333", "y": "#333333", "g": "#ffffff", "r": "#ffffff", "p": "#ffffff"}

HELP = """\
# Box Off

A solitaire: clear every tile off the board.

**A move** removes two tiles of the same colour that are opposite corners of a rectangle holding no
other tile -- or the two ends of a row or column segment with nothing between them, or two neighbours.
Any other tile inside the rectangle blocks the move, even one of the same colour. Removing tiles never
blocks a move, but pairing a tile with the wrong partner can strand others: not every line clears.
The game ends when no two tiles can be removed. Clearing the board is a win; otherwise your result is
the number of tiles left (fewer is better).

**Several players** (up to 8) are dealt the same board and each clears their own copy, all at once.
They are ranked by tiles left; equal counts tie. A player whose time runs out keeps the tiles they have.

**Options**
- `width` (2-12, default 8) and `height` (2-12, default 6): the board size.
- `colours` (2-6, default 3): b black, w white, y yellow, g green, r red, p purple (the first
  `colours` of these). width x height / colours must be an even number.
- `solvable` (default on): deals are drawn until the solver proves the deal can be cleared.
- `position`: a written position instead of a deal, ranks from top to bottom separated by `/`, one
  letter per cell, `.` for an empty cell, e.g. `bbwbbw/byyywb/ywwwyy`.

**Notation**: the two tiles, `b1-c1`. Either order, upper or lower case, and a space instead of the
dash are accepted (`C1 B1`); moves are written sorted by file, then rank: `a2-a3`, `b1-c1`, `c3-d1`.
Files are letters from the left, ranks numbers from the bottom; a1 is the bottom-left cell.

**Rulings**
- The deal has the same number of tiles of each colour, shuffled by the game's seed; every seat gets
  the same deal.
- With `solvable` on, each drawn deal gets a fixed amount of search to be proven clearable before the
  next one is drawn; if none of three draws is proven (big boards with many colours), the deal is built
  clearable instead: random pairs of blank tiles are cleared in turn, then the pairs are coloured.
- A seat's board is finished when no move is left on it; the game ends when every board is finished.
- With one player the result is a win if the board is cleared, else a loss with the tiles left as the
  score; with several, seats are ranked by tiles left.
- A seat that runs out of time stops where it is: its tiles left count as they stand.
- A `position` may leave cells empty and need not have equal colours, but every colour must have an
  even number of tiles; its size and colours are read from it, and `solvable` does not apply to it.
- Moves are sorted by file, then rank, so `a2` comes before `a10`.
- Whether your board can still be cleared is a hint the server may offer; it is not shown by default.
- There are no draw offers in Box Off: each player clears their own board, so there is no
  shared position to agree a draw on. A player may resign (alone: abandon) at any time.
"""


class BoxOff(Engine):
    """The Box Off engine: every seat clears its own copy of one deal (see the module docstring)."""

    slug = "boxoff"
    summary = ("Clear the board by removing pairs of same-colour tiles that see each other across an empty "
               "rectangle; alone, or racing others on the same deal.")
    title = "Box Off"
    players = range(1, 9)
    options = BoxOffOptions()
    simultaneous = True
    help = HELP
    scores_absent_players = True
    offers_clearable_hint = True

    # -- the protocol ---------------------------------------------------------------------------

    def new(self, players: int, options: dict[str, Any], seed: int) -> BoxOffState:
        """The deal for ``players`` seats: a written position, or a shuffled (and proven) deal."""
        if players not in self.players:
            raise ValueError(f"Box Off is for 1 to 8 players, not {players}.")
        width, height, colours = options["width"], options["height"], options["colours"]
        position = options["position"].strip().lower()
        if position:
            _, _, deal = _deal_of(position)
        else:
            deal = _new_deal(random.Random(seed), width, height, colours, options["solvable"])
        board = SeatBoard(_occupied(deal))
        return BoxOffState(width, height, colours, options["solvable"], position, deal, (board,) * players)

    def to_move(self, state: BoxOffState) -> frozenset[int]:
        """Every seat whose board still has a move and whose time has not run out."""
        return frozenset(s for s in range(len(state.seats)) if self._playing(state, s))

    def moves(self, state: BoxOffState, seat: int) -> list[str]:
        """Every pair the seat may remove, sorted by cell name."""
        if not 0 <= seat < len(state.seats) or state.seats[seat].timed_out:
            return []
        return [_notation(p, state.width) for p in _legal(state.pairs, state.seats[seat].occupied)]

    def notation(self, state: BoxOffState, seat: int, text: str) -> str:
        """A move as the record writes it: its two tiles sorted by file, then rank, with a dash between
        (``B1 a1`` and ``a1 to b1`` are ``a1-b1``); anything else lower-cased, with single spaces."""
        words = as_typed(text)
        match = _MOVE.fullmatch(words)
        if match is None:
            return words
        try:
            cells = sorted(parse_cell(m, state.width, state.height) for m in match.groups())
        except IllegalMove:
            return words
        return "-".join(map(cell_name, cells))

    def play(self, state: BoxOffState, seat: int, text: str) -> BoxOffState:
        """Remove the two named tiles from the seat's board, or explain why they cannot go."""
        board = self._board(state, seat)
        if board.timed_out:
            raise IllegalMove(
                f"Your time ran out: your board stays as it is, with {_count(board.occupied)} tiles left."
            )
        legal = _legal(state.pairs, board.occupied)
        if not legal:
            raise IllegalMove(self._finished_words(board.occupied) + " Your board is finished.")
        a, b = self._parse(state, board, legal, text)
        pair = next((p for p in legal if p[0] == (1 << a) | (1 << b)), None)
        if pair is None:
            raise IllegalMove(self._why_not(state, board, legal, a, b))
        seats = list(state.seats)
        seats[seat] = replace(
            board, occupied=board.occupied & ~pair[0], moves=(*board.moves, _notation(pair, state.width))
        )
        return replace(state, seats=tuple(seats))

    def outcome(self, state: BoxOffState) -> Outcome | None:
        """Once every board is finished: win or loss alone, else seats ranked by tiles left."""
        if self.to_move(state):
            return None
        left = tuple(_count(b.occupied) for b in state.seats)
        notes = tuple(self._result_note(b) for b in state.seats)
        if len(left) == 1:
            reason = f"Seat 1 {self._result_verb(state.seats[0])}"
            return Outcome(("loss" if left[0] else "win",), reason, scores=left, notes=notes)
        reason = "; ".join(f"seat {s + 1} {self._result_verb(b)}" for s, b in enumerate(state.seats))
        return Outcome.ranked(left, reason[0].upper() + reason[1:], higher_is_better=False, notes=notes)

    def time_out(self, state: BoxOffState, seat: int) -> BoxOffState:
        """The seat's deadline passed: its board stops as it is (a finished board is left alone)."""
        self._board(state, seat)
        if not self._playing(state, seat):
            return state
        seats = list(state.seats)
        seats[seat] = replace(seats[seat], timed_out=True)
        return replace(state, seats=tuple(seats))

    def clearable(self, state: BoxOffState, seat: int) -> bool:
        """Whether the seat's board, as it stands, can still be cleared (a hint; exhaustive search)."""
        board = self._board(state, seat)
        return _clearing_line(state.width, state.deal, board.occupied) is not None

    # -- rendering ------------------------------------------------------------------------------

    def render_text(self, state: BoxOffState, seat: int | None = None, *, over: bool = False) -> str:
        """The seat's board (or every board, for a spectator) in fixed width for a plain-text mail.

        ``over``: the game has ended though boards are still in play (the server ended it), so no board
        asks for a move: each one still in play says how many tiles it was left with."""
        legend = "Legend: " + ", ".join(
            f"{PALETTE[i]} {COLOUR_NAMES[i]}" for i in range(state.colours)
        ) + ", . empty"
        many = len(state.seats) > 1
        shown = range(len(state.seats)) if seat is None else [seat]
        parts = [f"Box Off, {state.width}x{state.height}, {state.colours} colours"]
        for s in shown:
            board = state.seats[s]
            if many:
                parts.append(f"Seat {s + 1}:")
            parts.append(self._text_board(state, board.occupied))
            parts.append(self._status(state, s, own=seat is not None, over=over))
        parts.append(legend)
        if seat is not None and many:
            others = [
                f"seat {s + 1}: {self._short_status(state, s, over)}" for s in range(len(state.seats))
                if s != seat
            ]
            parts.extend(textwrap.wrap("Others: " + "; ".join(others) + ".", 72))
        return "\n".join(parts) + "\n"

    def render_svg(self, state: BoxOffState, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """The seat's board (or every board, for a spectator); the seat's movable tiles carry data-move
        (unless ``targets`` is False, or the game is ``over``: ended by the server, no board in play)."""
        cell, margin, gap = 40, 24, 16
        shown = list(range(len(state.seats))) if seat is None else [seat]
        labelled = len(state.seats) > 1
        label_h = 20 if labelled else 0
        board_w = state.width * cell + 2 * margin
        board_h = state.height * cell + 2 * margin + label_h
        columns = min(len(shown), 4)
        rows = (len(shown) + columns - 1) // columns
        total_w = columns * board_w + (columns - 1) * gap
        total_h = rows * board_h + (rows - 1) * gap
        title_id = f"boxoff-title-{'all' if seat is None else seat + 1}"
        if seat is None:
            title = f"Box Off, {state.width}x{state.height}: " + "; ".join(
                (f"seat {s + 1} " if labelled else "") + self._short_status(state, s, over) for s in shown
            )
        else:
            status = self._short_status(state, seat, over)
            title = f"Box Off, {state.width}x{state.height}, seat {seat + 1}: {status}"
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {total_w} {total_h}" '
            f'width="{total_w}" height="{total_h}" role="img" aria-labelledby="{title_id}" '
            f'font-family="sans-serif">',
            f'<title id="{title_id}">{escape(title)}</title>',
        ]
        for n, s in enumerate(shown):
            x0 = (n % columns) * (board_w + gap)
            y0 = (n // columns) * (board_h + gap)
            movable: set[int] = set()
            if targets and not over and seat is not None and self._playing(state, s):
                for p in _legal(state.pairs, state.seats[s].occupied):
                    movable.update((p[2], p[3]))
            out.append(f'<g transform="translate({x0},{y0})">')
            if labelled:
                out.append(
                    f'<text x="{margin}" y="14" font-size="14" fill="#333">'
                    f"Seat {s + 1}: {escape(self._short_status(state, s, over))}</text>"
                )
            out.extend(self._svg_board(state, state.seats[s].occupied, movable, cell, margin, label_h))
            out.append("</g>")
        out.append("</svg>")
        return "\n".join(out)

    # -- storage --------------------------------------------------------------------------------

    def dump(self, state: BoxOffState) -> dict[str, Any]:
        """A JSON-safe form: the options, the deal and each seat's board as written positions."""
        return {
            "width": state.width,
            "height": state.height,
            "colours": state.colours,
            "solvable": state.solvable,
            "position": state.position,
            "deal": _written(state, _occupied(state.deal)),
            "seats": [
                {"board": _written(state, b.occupied), "moves": list(b.moves), "timed_out": b.timed_out}
                for b in state.seats
            ],
        }

    def seat_view(self, state: BoxOffState, seat: int) -> dict[str, Any]:
        """The seat's own board; every other board as dealt, since how far the others got is hidden until
        the end."""
        self._board(state, seat)
        dealt = SeatBoard(_occupied(state.deal))
        return self.dump(replace(state, seats=tuple(
            board if number == seat else dealt for number, board in enumerate(state.seats))))

    def load(self, data: dict[str, Any]) -> BoxOffState:
        """The inverse of :meth:`dump`."""
        _, _, deal = _deal_of(data["deal"])
        seats = tuple(
            SeatBoard(_occupied(_deal_of(s["board"])[2]), tuple(s["moves"]), bool(s["timed_out"]))
            for s in data["seats"]
        )
        return BoxOffState(
            data["width"], data["height"], data["colours"], data["solvable"], data["position"], deal, seats
        )

    # -- helpers --------------------------------------------------------------------------------

    @staticmethod
    def _board(state: BoxOffState, seat: int) -> SeatBoard:
        if not 0 <= seat < len(state.seats):
            raise IllegalMove(f"There is no seat {seat + 1} in this game of {len(state.seats)}.")
        return state.seats[seat]

    @staticmethod
    def _playing(state: BoxOffState, seat: int) -> bool:
        board = state.seats[seat]
        return not board.timed_out and bool(_legal(state.pairs, board.occupied))

    @staticmethod
    def _parse(state: BoxOffState, board: SeatBoard, legal: list[Pair], text: str) -> tuple[int, int]:
        """The two cells named by a move, as cell indices; refuses anything that is not two cells."""
        words = " ".join(text.lower().split())
        match = _MOVE.fullmatch(words)
        if not match:
            example = _notation(legal[0], state.width)
            named = _CELL_WORD.fullmatch(words)
            if named:
                cell = parse_cell(words, state.width, state.height)
                partners = [
                    cell_name(_cell(p[3] if p[2] == _index(cell, state.width) else p[2], state.width))
                    for p in legal
                    if _index(cell, state.width) in (p[2], p[3])
                ]
                more = (
                    f" {words} can go with {', '.join(partners)}."
                    if partners
                    else f" {words} cannot be removed now." + BoxOff._choices(state, legal)
                )
                raise IllegalMove(f"A move names two tiles, like {example}; you named only {words}.{more}")
            raise IllegalMove(
                f"{quoted(text.strip())} is not a move: name two tiles of one colour, like {example}."
                + BoxOff._choices(state, legal)
            )
        a, b = (_index(parse_cell(m, state.width, state.height), state.width) for m in match.groups())
        return a, b

    @staticmethod
    def _choices(state: BoxOffState, legal: list[Pair]) -> str:
        if len(legal) <= 12:
            return " You can remove " + ", ".join(_notation(p, state.width) for p in legal) + "."
        return f" There are {len(legal)} pairs you can remove."

    def _why_not(self, state: BoxOffState, board: SeatBoard, legal: list[Pair], a: int, b: int) -> str:
        """Why cells ``a`` and ``b`` cannot be removed together, and what can."""
        w = state.width
        na, nb = cell_name(_cell(a, w)), cell_name(_cell(b, w))
        choices = self._choices(state, legal)
        if a == b:
            return f"You named {na} twice; a move removes two different tiles." + choices
        for i, name in ((a, na), (b, nb)):
            if not board.occupied >> i & 1:
                return f"{name} is empty." + choices
        ca, cb = state.deal[a], state.deal[b]
        if ca != cb:
            return (
                f"{na} is {COLOUR_NAMES[PALETTE.index(ca)]} and {nb} is {COLOUR_NAMES[PALETTE.index(cb)]}: "
                f"only two tiles of one colour can be removed." + choices
            )
        inside, _ = _rectangle(a, b, w)
        inside &= board.occupied
        blockers = sorted(_cell(i, w) for i in range(w * state.height) if inside >> i & 1)
        names = [cell_name(c) for c in blockers]
        listed = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        one = len(names) == 1
        first, second = sorted((na, nb), key=lambda n: (n[0], int(n[1:])))
        straight = _cell(a, w)[0] == _cell(b, w)[0] or _cell(a, w)[1] == _cell(b, w)[1]
        shape = "the ends of an empty line" if straight else "opposite corners of an empty rectangle"
        where = "between them" if straight else "inside it"
        return f"{first} and {second} are not {shape}: {listed} {'lies' if one else 'lie'} {where}." + choices

    @staticmethod
    def _finished_words(occupied: int) -> str:
        left = _count(occupied)
        if not left:
            return "The board is cleared."
        return f"No two tiles can be removed: {left} tiles are left."

    @staticmethod
    def _result_note(board: SeatBoard) -> str:
        """How a finished board ended, in a few words for a ranking: "cleared", "10 tiles left"."""
        left = _count(board.occupied)
        if not left:
            return "cleared"
        tiles = f"{left} tile{'' if left == 1 else 's'} left"
        return f"out of time, {tiles}" if board.timed_out else tiles

    @classmethod
    def _result_verb(cls, board: SeatBoard) -> str:
        """How a finished board ended, as what its player did: "got stuck with 3 tiles left"."""
        words = cls._result_words(board)
        return f"got {words}" if words.startswith("stuck") else words

    @staticmethod
    def _result_words(board: SeatBoard) -> str:
        left = _count(board.occupied)
        if not left:
            return "cleared the board"
        tiles = "tile" if left == 1 else "tiles"
        if board.timed_out:
            return f"ran out of time with {left} {tiles} left"
        return f"stuck with {left} {tiles} left"

    def _short_status(self, state: BoxOffState, seat: int, over: bool = False) -> str:
        board = state.seats[seat]
        left = _count(board.occupied)
        if self._playing(state, seat):
            return self._stopped_words(board) if over else f"{left} tiles left, playing"
        return self._result_words(board)

    @staticmethod
    def _stopped_words(board: SeatBoard) -> str:
        """A board still in play when the server ended the game (a resignation, a time-out)."""
        left = _count(board.occupied)
        return f"{left} tile{'' if left == 1 else 's'} left when the game ended"

    def _status(self, state: BoxOffState, seat: int, own: bool, over: bool = False) -> str:
        """Tiles left per colour, the last move, and what the seat may do now (nothing, once ``over``)."""
        board = state.seats[seat]
        present = [c for n, c in enumerate(state.deal) if board.occupied >> n & 1]
        counts = ", ".join(f"{PALETTE[i]} {present.count(PALETTE[i])}" for i in range(state.colours))
        lines = [f"Tiles left: {_count(board.occupied)} ({counts}). Moves played: {len(board.moves)}."]
        if board.moves:
            lines[0] += f" Last: {board.moves[-1]}."
        legal = _legal(state.pairs, board.occupied)
        if self._playing(state, seat) and over:
            lines.append("Finished: " + self._stopped_words(board) + ".")
        elif self._playing(state, seat):
            example = _notation(legal[0], state.width)
            who = "Your move" if own else "To move"
            lines.append(f"{who}: two tiles of one colour, like {example} ({len(legal)} pairs can go).")
        else:
            lines.append("Finished: " + self._result_words(board) + ".")
        return "\n".join(lines)

    @staticmethod
    def _text_board(state: BoxOffState, occupied: int) -> str:
        files = "    " + " ".join(file_letters(state.width))
        lines = [files]
        for rank in reversed(range(state.height)):
            row = " ".join(
                state.deal[rank * state.width + f] if occupied >> (rank * state.width + f) & 1 else EMPTY
                for f in range(state.width)
            )
            lines.append(f"{rank + 1:>2}  {row}  {rank + 1}")
        lines.append(files)
        return "\n".join(lines)

    @staticmethod
    def _svg_board(
        state: BoxOffState, occupied: int, targets: set[int], cell: int, margin: int, top: int
    ) -> list[str]:
        w, h = state.width, state.height
        out = [
            f'<rect x="{margin}" y="{margin + top}" width="{w * cell}" height="{h * cell}" '
            f'fill="#c9b48a" stroke="#6b5a3a" stroke-width="2"/>'
        ]
        label = '<text x="{}" y="{}" font-size="13" text-anchor="middle" fill="#333">{}</text>'
        for f, letter in enumerate(file_letters(w)):
            x = margin + f * cell + cell // 2
            for y in (margin + top - 7, margin + top + h * cell + 17):
                out.append(label.format(x, y, letter))
        for rank in range(h):
            y = margin + top + (h - 1 - rank) * cell + cell // 2 + 5
            for x in (margin - 10, margin + w * cell + 10):
                out.append(label.format(x, y, rank + 1))
        for i, colour in enumerate(state.deal):
            if colour == EMPTY or not occupied >> i & 1:
                continue
            f, rank = _cell(i, w)
            x = margin + f * cell + 3
            y = margin + top + (h - 1 - rank) * cell + 3
            name = cell_name((f, rank))
            # A tile that can be played now is outlined in blue, so the player sees before clicking
            # which tiles have a partner; each tile is a group, so that a page can fade it whole.
            if i in targets:
                mark = (f' class="target" data-move="{name}" cursor="pointer" stroke="#2a7de1" '
                        'stroke-width="4"')
                playable = ", can be played"
            else:
                mark, playable = ' stroke="#555" stroke-width="1"', ""
            out.append(
                f'<g class="tile"><rect x="{x}" y="{y}" width="{cell - 6}" height="{cell - 6}" rx="5" '
                f'fill="{_FILL[colour]}"{mark}><title>{name} {COLOUR_NAMES[PALETTE.index(colour)]}{playable}'
                f"</title></rect>"
            )
            out.append(
                f'<text x="{x + (cell - 6) // 2}" y="{y + (cell - 6) // 2 + 5}" font-size="13" '
                f'text-anchor="middle" fill="{_INK[colour]}" pointer-events="none">{colour}</text></g>'
            )
        return out


engine = BoxOff()
