"""Carreaux (Mark Steere, 2025): a two-player tile-sliding game.

Red and Blue slide tiles of any colour into the bubble (the one empty cell); a slide is legal only if
it lowers the **total group value**, and the first player whose tiles form one orthogonally connected
group wins.  When no slide lowers the total, the slides that raise it least are allowed (option
``when_stuck``), and no slide may recreate an earlier board arrangement.  The rules and every ruling are
in ``docs/RULES.md`` (section "Carreaux").

Speed.  A pair value depends only on the board size, the bubble and the two cells, so every slide
distance of a size is computed once per process (:func:`tables`): for each fixed tile B a reverse
breadth-first search from every state where tile A touches B gives d(A->B) for every (bubble, A) at once.
Symmetry of the square means only the B cells of one eighth of the board are searched; the others are
the same tables with cells renumbered.  A position's legal moves are then a few hundred table look-ups.
:func:`slide_distance_bfs` is the plain search the tables are checked against.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate, validates_schema

from games import Engine, IllegalMove, Outcome
from games.coords import Cell, cell_name, file_letters, parse_cell, parse_position
from games.words import join_words

__all__ = [
    "Carreaux",
    "State",
    "Tables",
    "engine",
    "group_value",
    "pair_value",
    "slide_distance",
    "slide_distance_bfs",
    "tables",
]

RED, BLUE, GREEN, BUBBLE = "r", "b", "g", "."
COLOURS = (RED, BLUE)  # the colour of each seat
NAMES = ("Red", "Blue")
SIZES = (4, 6, 8, 10)
# Option ``when_stuck``: what happens when no slide lowers the total group value.
LEAST_RISE, DRAW = "least-rise", "draw"
# Option ``group_value``: the sheet's N-1 smallest pair values, or a minimum spanning tree's.
SMALLEST, SPANNING = "smallest", "spanning"
_UNSET = 255  # table entry for an impossible state (two of bubble, A and B on one cell)


# --- cells ---------------------------------------------------------------------------------------
# Inside the engine a cell is an index ``rank * size + file``, so a board is a string of size*size
# characters with a1 first.


def _index(cell: Cell, size: int) -> int:
    return cell[1] * size + cell[0]


def _cell(index: int, size: int) -> Cell:
    return index % size, index // size


def _name(index: int, size: int) -> str:
    return cell_name(_cell(index, size))


def _as_index(cell: Cell | str, size: int) -> int:
    """A cell given as ``(file, rank)`` or as a name like ``"b3"``, as an index."""
    if isinstance(cell, str):
        cell = parse_cell(cell, size, size)
    if not (0 <= cell[0] < size and 0 <= cell[1] < size):
        raise ValueError(f"{cell} is not a cell of a {size}x{size} board")
    return _index(cell, size)


@functools.cache
def _neighbours(size: int) -> tuple[tuple[int, ...], ...]:
    """The orthogonal neighbours of every cell index."""
    out = []
    for i in range(size * size):
        f, r = _cell(i, size)
        out.append(tuple(
            _index((f + df, r + dr), size)
            for df, dr in ((0, 1), (1, 0), (0, -1), (-1, 0))
            if 0 <= f + df < size and 0 <= r + dr < size
        ))
    return tuple(out)


# --- slide distance, pair value, group value -----------------------------------------------------


def slide_distance_bfs(size: int, bubble: Cell | str, a: Cell | str, b: Cell | str) -> int:
    """d(A->B) by a plain breadth-first search: the reference the tables are checked against.

    The fewest slides after which tile A touches tile B; each slide moves a tile next to the bubble
    into it (A too, when A is the one slid) and B never moves, so the bubble never enters B's cell.
    """
    n = size
    bub, ta, tb = (_as_index(c, n) for c in (bubble, a, b))
    adj = _neighbours(n)
    if tb in adj[ta]:
        return 0
    seen = {(bub, ta)}
    queue = deque([(bub, ta, 0)])
    while queue:
        bub, ta, d = queue.popleft()
        for cell in adj[bub]:
            if cell == tb:
                continue
            # The tile on ``cell`` slides into the bubble; if it is A, A moves.
            state = (cell, bub if cell == ta else ta)
            if state in seen:
                continue
            if tb in adj[state[1]]:
                return d + 1
            seen.add(state)
            queue.append((*state, d + 1))
    raise ValueError(f"tile {_name(ta, n)} can never reach {_name(tb, n)}")  # not on boards of 4 and up


def _distances_to(size: int, b: int) -> bytes:
    """d(A->B) for the fixed tile ``b`` and every state, indexed ``bubble * size**2 + a``.

    A multi-source breadth-first search from every state where A touches B: a slide is undone by
    the slide back, so the distance from a state to the goal is the distance from the goal to it.
    """
    n2 = size * size
    adj = _neighbours(size)
    dist = bytearray([_UNSET]) * (n2 * n2)
    seen = bytearray(n2 * n2)
    for c in range(n2):  # states where two of bubble, A and B share a cell do not exist
        seen[b * n2 + c] = seen[c * n2 + b] = seen[c * n2 + c] = 1
    frontier = []
    for a in adj[b]:
        for bub in range(n2):
            s = bub * n2 + a
            if not seen[s]:
                seen[s] = 1
                dist[s] = 0
                frontier.append(s)
    d = 0
    while frontier:
        d += 1
        following = []
        for s in frontier:
            bub, a = divmod(s, n2)
            for cell in adj[bub]:
                t = cell * n2 + (bub if cell == a else a)
                if not seen[t]:
                    seen[t] = 1
                    dist[t] = d
                    following.append(t)
        frontier = following
    return bytes(dist)


def _symmetries(size: int) -> list[tuple[int, ...]]:
    """The eight symmetries of the square board, each as a permutation of cell indices."""
    m = size - 1
    maps = [
        lambda f, r: (f, r), lambda f, r: (m - f, r), lambda f, r: (f, m - r), lambda f, r: (m - f, m - r),
        lambda f, r: (r, f), lambda f, r: (m - r, f), lambda f, r: (r, m - f), lambda f, r: (m - r, m - f),
    ]
    return [tuple(_index(g(*_cell(i, size)), size) for i in range(size * size)) for g in maps]


@dataclass(frozen=True)
class Tables:
    """Every slide distance and pair value of one board size.

    ``distance[b][bubble * size**2 + a]`` is d(A->B); ``pairs[bubble][a * size**2 + b]`` is the pair
    value of A and B with the bubble there.  Entries for impossible states hold 255.
    """

    size: int
    distance: tuple[bytes, ...]
    pairs: tuple[bytes, ...]

    @property
    def nbytes(self) -> int:
        """The memory the tables' contents take."""
        return sum(map(len, self.distance)) + sum(map(len, self.pairs))


@functools.cache
def tables(size: int) -> Tables:
    """The tables of one board size, computed once per process (a fraction of a second on 10x10)."""
    n2 = size * size
    renumberings = []
    for g in _symmetries(size):
        # The table for the fixed tile g(B) is the table for B renumbered:
        # d(a -> g(B)) with the bubble on p equals d(g^-1(a) -> B) with the bubble on g^-1(p).
        inverse = [0] * n2
        for i, j in enumerate(g):
            inverse[j] = i
        renumber = itemgetter(*(inverse[p] * n2 + inverse[a] for p in range(n2) for a in range(n2)))
        renumberings.append((g, renumber))
    distance: list[bytes | None] = [None] * n2
    for b in range(n2):
        if distance[b] is None:  # b is the first cell of its orbit: search it, copy it to the orbit
            base = _distances_to(size, b)
            for g, renumber in renumberings:
                if distance[g[b]] is None:
                    distance[g[b]] = bytes(renumber(base))
    dist = tuple(d for d in distance if d is not None)
    # pairs[p] as an n2 x n2 matrix is the elementwise minimum of M and its transpose, where
    # M[b][a] = d(a -> b) with the bubble on p.
    transpose = itemgetter(*(a * n2 + b for b in range(n2) for a in range(n2)))
    pairs = []
    for p in range(n2):
        rows = b"".join(dist[b][p * n2:(p + 1) * n2] for b in range(n2))
        pairs.append(bytes(map(min, rows, transpose(rows))))
    return Tables(size, dist, tuple(pairs))


def slide_distance(size: int, bubble: Cell | str, a: Cell | str, b: Cell | str) -> int:
    """d(A->B): the fewest slides that bring tile A next to tile B, which never moves (0 if touching)."""
    bub, ta, tb = (_as_index(c, size) for c in (bubble, a, b))
    if len({bub, ta, tb}) < 3:
        raise ValueError("the bubble, A and B must be three different cells")
    return tables(size).distance[tb][bub * size * size + ta]


def pair_value(size: int, bubble: Cell | str, a: Cell | str, b: Cell | str) -> int:
    """The value of the pair (A, B): min(d(A->B), d(B->A))."""
    bub, ta, tb = (_as_index(c, size) for c in (bubble, a, b))
    if len({bub, ta, tb}) < 3:
        raise ValueError("the bubble, A and B must be three different cells")
    return tables(size).pairs[bub][ta * size * size + tb]


def _smallest(pairs: bytes, n2: int, tiles: tuple[int, ...]) -> int:
    """The sheet's group value: the sum of the N-1 smallest pair values of ``tiles``.

    ``pairs`` is the bubble's table row."""
    values = sorted([pairs[a * n2 + b] for i, a in enumerate(tiles) for b in tiles[i + 1:]])
    return sum(values[:len(tiles) - 1])


def _spanning(pairs: bytes, n2: int, tiles: tuple[int, ...]) -> int:
    """The ``spanning`` group value: the pair values along a minimum spanning tree of ``tiles``.

    Prim's algorithm on the complete graph of the tiles, N^2 table look-ups."""
    rest = list(tiles[1:])
    base = tiles[0] * n2
    best = [pairs[base + t] for t in rest]
    total = 0
    while rest:
        i = best.index(min(best))
        total += best.pop(i)
        base = rest.pop(i) * n2
        best = [min(b, pairs[base + t]) for b, t in zip(best, rest, strict=True)]
    return total


_GROUP_VALUES = {SMALLEST: _smallest, SPANNING: _spanning}


def group_value(size: int, bubble: Cell | str, tiles: Iterable[Cell | str], rule: str = SMALLEST) -> int:
    """A player's group value: the sum of the N-1 smallest pair values among their N tiles (the sheet),
    or with ``rule="spanning"`` the pair values along a minimum spanning tree of them."""
    cells = tuple(_as_index(c, size) for c in tiles)
    bub = _as_index(bubble, size)
    if bub in cells or len(set(cells)) != len(cells):
        raise ValueError("the tiles must be different cells, none of them the bubble")
    return _GROUP_VALUES[rule](tables(size).pairs[bub], size * size, cells)


def _connected(size: int, tiles: tuple[int, ...]) -> bool:
    """Whether the tiles form one orthogonally connected group."""
    if not tiles:
        return False
    adj = _neighbours(size)
    members = set(tiles)
    reached = {tiles[0]}
    stack = [tiles[0]]
    while stack:
        for c in adj[stack.pop()]:
            if c in members and c not in reached:
                reached.add(c)
                stack.append(c)
    return len(reached) == len(members)


# --- positions -----------------------------------------------------------------------------------


def default_board(size: int) -> str:
    """The start used while the sheet's Figure 1 is missing (docs/RULES.md), as a board string.

    Red fills the left half's cells with (file+rank) even, Blue the right half's, green the rest, and
    the bubble replaces the green top-left corner.
    """
    cells = []
    for i in range(size * size):
        f, r = _cell(i, size)
        if (f + r) % 2:  # a1 is (0, 0): "even" counts files and ranks from 1, the same parity
            cells.append(GREEN)
        else:
            cells.append(RED if f < size // 2 else BLUE)
    cells[_index((0, size - 1), size)] = BUBBLE
    return "".join(cells)


def written(board: str, size: int) -> str:
    """A board string in the written position format: ranks from the top, ``/`` between them."""
    return "/".join(board[r * size:(r + 1) * size] for r in reversed(range(size)))


def _board_from_position(text: str) -> str:
    """A written position as a board string; raises ValueError with a readable reason."""
    rows = parse_position(text, RED + BLUE + GREEN + BUBBLE)
    size = len(rows)
    if len(rows[0]) != size:
        raise ValueError(f"The board must be square: {size} ranks of {len(rows[0])} cells.")
    if size not in SIZES:
        raise ValueError(f"The board is {size}x{size}; Carreaux is played on 4x4, 6x6, 8x8 or 10x10.")
    board = "".join("".join(row) for row in rows)
    if board.count(BUBBLE) != 1:
        raise ValueError(f"A position has exactly one bubble '.'; this one has {board.count(BUBBLE)}.")
    reds, blues = board.count(RED), board.count(BLUE)
    if reds != blues or reds < 2:
        raise ValueError(f"Red and Blue need the same number of tiles, at least 2; here {reds} and {blues}.")
    for colour, name in zip(COLOURS, NAMES, strict=True):
        if _connected(size, _tiles(board, colour)):
            raise ValueError(f"{name}'s tiles already form one group: the game would be over at once.")
    return board


def _tiles(board: str, colour: str) -> tuple[int, ...]:
    return tuple(i for i, c in enumerate(board) if c == colour)


# --- options -------------------------------------------------------------------------------------


class CarreauxOptions(Schema):
    """``size`` (even, 4 to 10, default 6), ``position`` (a written start; it sets the size),
    ``when_stuck`` (``least-rise`` or ``draw``) and ``group_value`` (``smallest`` or ``spanning``)."""

    size = fields.Integer(
        load_default=6,
        validate=validate.OneOf(SIZES, error="The size must be 4, 6, 8 or 10 (an even side from 4 to 10)."),
        metadata={"description": "Board side: 4, 6, 8 or 10."},
    )
    position = fields.String(load_default="", metadata={
        "description": "A written start instead: ranks top to bottom separated by /, r b g or . (the "
                       "bubble) a cell; it sets the size."})
    when_stuck = fields.String(
        load_default=LEAST_RISE,
        validate=validate.OneOf((LEAST_RISE, DRAW), error="when_stuck must be least-rise or draw."),
        metadata={"description": "When no slide lowers the total: least-rise (the smallest rise is allowed) "
                                 "or draw."},
    )
    group_value = fields.String(
        load_default=SMALLEST,
        validate=validate.OneOf((SMALLEST, SPANNING), error="group_value must be smallest or spanning."),
        metadata={"description": "smallest (the rule sheet's: the N-1 smallest pair values) or spanning."},
    )

    @validates_schema(pass_original=True)
    def _check_position(self, data: dict[str, Any], original_data: Any, **kwargs: Any) -> None:
        text = data.get("position", "").strip()
        if not text:
            return
        try:
            board = _board_from_position(text)
        except ValueError as exc:
            raise ValidationError(str(exc), "position") from None
        size = round(len(board) ** 0.5)
        if isinstance(original_data, dict) and "size" in original_data and data["size"] != size:
            raise ValidationError(f"The position is {size}x{size} but the size asked for is {data['size']}.",
                                  "size")

    @post_load
    def _size_from_position(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        text = data["position"].strip().lower()
        data["position"] = text
        if text:
            data["size"] = text.count("/") + 1
        return data


# --- the engine ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """A Carreaux position.

    ``board`` holds one of ``r b g .`` per cell, a1 first, then b1 and so on along each rank.
    ``history`` is every move played; Red moves at even plies.  ``winner`` is the winning seat once a
    group is complete; ``stuck`` is True when the player to move had no legal slide (a draw).
    ``when_stuck`` and ``group_value`` are the game's options.  ``seen`` holds the key (:func:`_key`) of
    every board arrangement of the game so far, the current one included, for the no-repeat rule; it is
    kept only under ``least-rise``, since under ``draw`` every slide lowers the total and no
    arrangement can come back.
    """

    size: int
    board: str
    history: tuple[str, ...] = ()
    winner: int | None = None
    stuck: bool = False
    when_stuck: str = DRAW
    group_value: str = SMALLEST
    seen: frozenset[int] = frozenset()
    # The position's :class:`Choice`, worked out once: ``moves`` and ``play`` both need it, and ``play``
    # works out the next position's to see whether the game goes on.  Not part of the value.
    choice: Choice | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def turn(self) -> int:
        """The seat whose turn it is (or would be, once the game is over)."""
        return len(self.history) % 2

    @property
    def bubble(self) -> int:
        """The bubble's cell index."""
        return self.board.index(BUBBLE)

    @property
    def over(self) -> bool:
        """Whether the game has ended."""
        return self.winner is not None or self.stuck


def _slide(board: str, bubble: int, tile: int) -> str:
    """The board after the tile on ``tile`` slides into the bubble."""
    cells = list(board)
    cells[bubble], cells[tile] = cells[tile], BUBBLE
    return "".join(cells)


# A board arrangement's key is the board read as a number in base 4, a1 the most significant digit: 2
# bits a cell, so a slide changes it by two terms and the key of every slide costs a few additions.
_DIGIT = {BUBBLE: 0, RED: 1, BLUE: 2, GREEN: 3}
_DIGITS = str.maketrans({piece: str(digit) for piece, digit in _DIGIT.items()})


def _key(board: str) -> int:
    """The compact key of a board arrangement, for the set of arrangements seen."""
    return int(board.translate(_DIGITS), 4)


def _key_after(key: int, board: str, bubble: int, tile: int) -> int:
    """The key after the tile on ``tile`` slides into the bubble (whose digit is 0)."""
    last = len(board) - 1
    return key + _DIGIT[board[tile]] * ((1 << 2 * (last - bubble)) - (1 << 2 * (last - tile)))


def _values(size: int, board: str, rule: str = SMALLEST) -> tuple[int, int]:
    """Red's and Blue's group values on a board."""
    row = tables(size).pairs[board.index(BUBBLE)]
    n2 = size * size
    value = _GROUP_VALUES[rule]
    return value(row, n2, _tiles(board, RED)), value(row, n2, _tiles(board, BLUE))


def _slides(size: int, board: str, rule: str = SMALLEST) -> list[tuple[int, int]]:
    """Each tile next to the bubble with the total group value after sliding it, in notation order.

    Only the slid tile and the bubble change, so each player's tiles are updated rather than
    searched for again.
    """
    n2 = size * size
    pairs = tables(size).pairs
    value = _GROUP_VALUES[rule]
    bubble = board.index(BUBBLE)
    tiles = {colour: _tiles(board, colour) for colour in COLOURS}
    out = []
    for tile in _neighbours(size)[bubble]:
        row = pairs[tile]  # the bubble moves to where the tile was
        total = 0
        for colour, own in tiles.items():
            if board[tile] == colour:
                own = tuple(bubble if c == tile else c for c in own)
            total += value(row, n2, own)
        out.append((tile, total))
    return sorted(out, key=lambda item: _cell(item[0], size))


@dataclass(frozen=True)
class Choice:
    """What the player to move may slide, and why.

    ``total`` is the total group value now; ``after`` the total after each slide next to the bubble;
    ``repeats`` the slides that would recreate an earlier arrangement (never legal); ``legal`` the
    slides allowed; ``least_rise`` is True when no slide lowers the total and ``legal`` holds the slides
    that raise it least instead.
    """

    total: int
    after: dict[int, int]
    repeats: frozenset[int]
    legal: tuple[int, ...]
    least_rise: bool


def _with_stuck(state: State) -> State:
    """``state``, drawn if the player to move has no legal slide; its worked-out choice kept."""
    choice = _choice(state)
    if choice.legal:
        return state
    stuck = replace(state, stuck=True)
    object.__setattr__(stuck, "choice", choice)
    return stuck


def _refusal(choice: Choice, tile: int, name: str, can: str) -> str:
    """Why a slide next to the bubble is not legal, in words for the player: the total it would give,
    or, for a slide that the total would allow, that it repeats an earlier position."""
    after = choice.after[tile]
    if choice.least_rise:
        least = choice.after[choice.legal[0]]
        if after > least:
            return (f"no slide lowers the total group value ({choice.total}), so only the slides that raise "
                    f"it least (to {least}) are allowed: {can}; sliding {name} would make it {after}.")
    elif after >= choice.total:
        return (f"sliding {name} would not lower the total group value ({choice.total} -> {after}); "
                f"legal: {can}.")
    return f"sliding {name} would repeat an earlier position, which is never allowed; legal: {can}."


def _choice(state: State) -> Choice:
    """The legal slides of the position under its options (worked out once per state)."""
    choice = state.choice
    if choice is None:
        choice = _work_out_choice(state)
        object.__setattr__(state, "choice", choice)
    return choice


def _work_out_choice(state: State) -> Choice:
    """The legal slides of the position under its options."""
    n, board = state.size, state.board
    total = sum(_values(n, board, state.group_value))
    after = dict(_slides(n, board, state.group_value))
    repeats: frozenset[int] = frozenset()
    if state.when_stuck == LEAST_RISE:
        key, bubble = _key(board), board.index(BUBBLE)
        repeats = frozenset(t for t in after if _key_after(key, board, bubble, t) in state.seen)
    fresh = [t for t in after if t not in repeats]
    lower = tuple(t for t in fresh if after[t] < total)
    if lower or state.when_stuck == DRAW or not fresh:
        return Choice(total, after, repeats, lower, False)
    least = min(after[t] for t in fresh)
    return Choice(total, after, repeats, tuple(t for t in fresh if after[t] == least), True)


class Carreaux(Engine):
    """The Carreaux engine: Red (seat 0) and Blue (seat 1) slide tiles into the bubble."""

    slug = "carreaux"
    summary = ("Slide tiles into the one empty cell, each slide bringing the tiles closer together when any "
               "can; the first to join all their tiles into one group wins.")
    title = "Carreaux"
    players = range(2, 3)
    options = CarreauxOptions()
    simultaneous = False
    open_information = True  # Nothing hidden, no chance after the start: moves may be tried in play.
    sides = NAMES

    help = """\
# Carreaux (Mark Steere, 2025)

Two players, Red (seat 1, moves first) and Blue (seat 2), share a square board of tiles: Red's, Blue's
and neutral green ones, with one empty cell, the **bubble**. On your turn you slide any tile (of any
colour) that is orthogonally next to the bubble into it. **Win** by forming one orthogonally connected
group of all your tiles.

Only slides that lower the **total group value** are legal (the page and the mail list them):
- **Slide distance** d(A->B): the fewest slides after which tile A is orthogonally next to tile B,
  where each slide moves any tile next to the bubble into it (A moves when A is the one slid) and B
  never moves (the bubble may not enter B's cell). It is 0 when A and B already touch. Colours do not
  matter.
- **Pair value** of two tiles = min(d(A->B), d(B->A)), with the bubble where it is now.
- **Group value** of a player with N tiles = the sum of the N-1 smallest pair values among them.
- **Total** = Red's group value + Blue's. A slide is legal only if the total afterwards is lower.

When no slide lowers the total: the sheet hopes this never happens, but it does in practice in every
game, usually within a few moves, once the bubble sits between the two armies. Taken literally, every
game would then be drawn before anyone could win. So by default (`when_stuck=least-rise`) the player to
move must then make a slide that raises the total least (any of the tied ones); the page and the mail
say when this applies. `when_stuck=draw` is the sheet's own rule: the game ends drawn there.

No repeated positions: a slide that would recreate a board arrangement already seen in the game is
never legal, lowering slides included (after a rise, a lowering slide could lead back). If every slide
would repeat, the game is drawn. This keeps every game finite.

Options:
- `size`: 4, 6 (default), 8 or 10.
- `position`: a start written rank by rank from the top, `/` between ranks, `r` red, `b` blue,
  `g` green, `.` the bubble, e.g. `.rgbgb/rgrgbg/grgbgb/rgrgbg/grgbgb/rgrgbg`. It sets the size.
- `when_stuck`: `least-rise` (default) or `draw` (the sheet's rule), as above.
- `group_value`: `smallest` (default, the sheet's rule: the N-1 smallest pair values) or `spanning`:
  the pair values along a minimum spanning tree of the player's tiles (N-1 pairs that join them all).
  With `spanning` a group value of 0 does mean one group, as the sheet says it should, and random
  play ends in fewer draws.

Notation: a move names the tile that slides into the bubble, `a5` (upper case and spaces are
accepted).

Rulings:
- The sheet's Figure 1 (the starting pattern) was not available. The default start: Red's tiles fill
  the cells of the left half with (file+rank) even, Blue's the cells of the right half with
  (file+rank) even, green fills the rest, and the bubble replaces the green top-left corner. On 6x6:
  Red a1 a3 a5 b2 b4 b6 c1 c3 c5, Blue d2 d4 d6 e1 e3 e5 f2 f4 f6, bubble a6 (Red 24, Blue 48).
- The bubble may start anywhere in a written position; Red and Blue must have the same number of tiles
  (at least 2), and neither may already form one group.
- Winning is checked by connectivity, not by a group value of 0 (two separate blocks can have value 0).
- If one slide completes both groups, the mover wins (a slide moves one tile, so in practice only the
  group of the slid tile's colour can complete). Sliding an opponent's tile that completes the
  opponent's group makes the opponent win.
- When stuck and no repeats: as above. Games created before these two rulings keep the rule they
  were started under (`when_stuck=draw`).
- Draw offers and resignation are server commands, not moves.
"""

    # --- protocol ---

    def new(self, players: int, options: dict[str, Any], seed: int) -> State:
        """The starting position; Carreaux has no random element, so ``seed`` is unused."""
        if players not in self.players:
            raise ValueError("Carreaux is for exactly 2 players.")
        position = options.get("position", "")
        if position:
            board = _board_from_position(position)
            size = round(len(board) ** 0.5)
        else:
            size = options.get("size", 6)
            board = default_board(size)
        when_stuck = options.get("when_stuck", LEAST_RISE)
        seen = frozenset({_key(board)}) if when_stuck == LEAST_RISE else frozenset()
        state = State(size, board, when_stuck=when_stuck, group_value=options.get("group_value", SMALLEST),
                      seen=seen)
        return _with_stuck(state)

    def to_move(self, state: State) -> frozenset[int]:
        """The seat to move, or nobody once the game is over."""
        return frozenset() if state.over else frozenset({state.turn})

    def moves(self, state: State, seat: int) -> list[str]:
        """The tiles ``seat`` may slide, canonical cell names ordered by file then rank."""
        if state.over or seat != state.turn:
            return []
        return [_name(t, state.size) for t in _choice(state).legal]

    def turn_note(self, state: State, seat: int) -> str | None:
        """A sentence for the player asked to move when a ruling shapes the move: the least-rise rule
        applies, or a slide that would otherwise be allowed is barred as a repeat; else None."""
        if state.over or seat != state.turn:
            return None
        n, choice = state.size, _choice(state)
        # A repeat is worth a word only when the slide would be allowed without the no-repeat rule.
        allowed = choice.after[choice.legal[0]] if choice.least_rise else choice.total - 1
        barred = [_name(t, n) for t in sorted(choice.repeats, key=lambda t: _cell(t, n))
                  if choice.after[t] <= allowed]
        notes = []
        if choice.least_rise:
            unless = " without repeating a position" if any(
                choice.after[t] < choice.total for t in choice.repeats) else ""
            legal = join_words([_name(t, n) for t in choice.legal])
            notes.append(f"No slide lowers the total group value ({choice.total}){unless}, so the slides "
                         f"that raise it least are allowed: {legal}.")
        if barred:
            notes.append(f"{join_words(barred, 'and')} would repeat an earlier position, which is never "
                         "allowed.")
        return " ".join(notes) or None

    def play(self, state: State, seat: int, text: str) -> State:
        """Slide the named tile into the bubble, if the rules allow it (see :func:`_choice`)."""
        if state.over and (outcome := self.outcome(state)) is not None:  # Over, it always has an outcome.
            raise IllegalMove(f"The game is over: {outcome.reason}.")
        if seat != state.turn:
            raise IllegalMove(f"It is {NAMES[state.turn]}'s turn, not {NAMES[seat]}'s.")
        n = state.size
        tile = _index(parse_cell(text, n, n), n)
        name = _name(tile, n)
        bubble = state.bubble
        choice = _choice(state)
        can = join_words([_name(t, n) for t in choice.legal])
        if tile == bubble:
            raise IllegalMove(f"{name} is the bubble itself; name the tile to slide into it: {can}.")
        if tile not in _neighbours(n)[bubble]:
            raise IllegalMove(f"{name} is not next to the bubble ({_name(bubble, n)}); you can slide {can}.")
        if tile not in choice.legal:
            raise IllegalMove(_refusal(choice, tile, name, can))
        board = _slide(state.board, bubble, tile)
        history = (*state.history, name)
        seen = state.seen | {_key(board)} if state.when_stuck == LEAST_RISE else state.seen
        # Only the slid tile's colour can change its connectivity, so at most one group completes here;
        # the mover is still asked first, as the rulings have the mover win when both complete.
        done = [_connected(n, _tiles(board, colour)) for colour in COLOURS]
        winner = seat if done[seat] else (1 - seat if done[1 - seat] else None)
        after = replace(state, board=board, history=history, winner=winner, seen=seen)
        return after if winner is not None else _with_stuck(after)

    def outcome(self, state: State) -> Outcome | None:
        """A win by forming a group, a draw when the player to move is stuck, else None."""
        if state.winner is not None:
            w, mover = state.winner, 1 - state.turn
            tiles = f"all {state.board.count(COLOURS[w])} {NAMES[w].lower()} tiles"
            if w != mover:
                how = f"{NAMES[w]} wins: {tiles} were joined into one group when {NAMES[mover]} slid " \
                      f"{state.history[-1]}"
            else:
                how = f"{NAMES[w]} wins by joining {tiles} into one group"
            return Outcome.win(w, 2, how)
        if state.stuck:
            if state.when_stuck == LEAST_RISE:
                why = "every slide would repeat an earlier position"
            else:
                why = f"no slide lowers the total group value {sum(self.group_values(state))}"
            return Outcome.draw(2, f"Drawn: {NAMES[state.turn]} had no legal move ({why})")
        return None

    def group_values(self, state: State) -> tuple[int, int]:
        """(Red's, Blue's) group value, for the game page."""
        return _values(state.size, state.board, state.group_value)

    # --- rendering ---

    def _status(self, state: State, over: bool = False) -> str:
        result = self.outcome(state)
        if result is not None:
            return f"Game over: {result.reason}."
        if over:
            # Ended by the server, which gives the reason: the slides made, and nobody to move.
            slides = len(state.history)
            return f"Game over after {slides} slide{'' if slides == 1 else 's'}."
        return f"Move {len(state.history) + 1}: {NAMES[state.turn]} (seat {state.turn + 1}) to move."

    def render_text(self, state: State, seat: int | None = None, *, over: bool = False) -> str:
        """A fixed-width board; tiles Red may slide (or Blue, on Blue's turn) are listed below it.

        ``over``: the game has ended though the rules would go on (the server ended it), so neither the
        mover nor the tiles it may slide are shown."""
        n = state.size
        red, blue = self.group_values(state)
        letters = ("    " + "".join(f" {f} " for f in file_letters(n))).rstrip()
        symbol = {RED: "R", BLUE: "B", GREEN: "g", BUBBLE: "."}
        lines = [f"Carreaux {n}x{n}", self._status(state, over),
                 f"Group values: Red {red}, Blue {blue}, total {red + blue}", "", letters]
        for r in reversed(range(n)):
            row = "".join(f" {symbol[state.board[r * n + f]]} " for f in range(n))
            lines.append(f"{r + 1:>3} {row} {r + 1}")
        lines += [letters, "", "R red  B blue  g green  . the bubble (empty)"]
        if state.history:
            lines.append(f"Last move: {NAMES[1 - state.turn]} slid {state.history[-1]}.")
        if not state.over and not over:
            legal = self.moves(state, state.turn)
            lines.append(f"{NAMES[state.turn]} may slide: {' '.join(legal)}")
        return "\n".join(lines) + "\n"

    def render_svg(self, state: State, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """An SVG board; when ``seat`` is to move, its legal tiles carry ``data-move`` and a target class
        (unless ``targets`` is False, or the game is ``over``: ended by the server, with no mover named)."""
        n = state.size
        cell, margin = 48, 28
        side = n * cell
        width, height = side + 2 * margin, side + 2 * margin + 34
        red, blue = self.group_values(state)
        status = self._status(state, over)
        title = f"Carreaux {n}x{n}: {status} Group values Red {red}, Blue {blue}."
        movable = set(self.moves(state, seat)) if seat is not None and targets and not over else set()
        fill = {RED: "#c62828", BLUE: "#1565c0", GREEN: "#2e7d32"}
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'role="img" aria-labelledby="carreaux-title">',
            f'<title id="carreaux-title">{_escape(title)}</title>',
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
            f'<rect x="{margin}" y="{margin}" width="{side}" height="{side}" fill="#d7ccc8"/>',
        ]
        font = 'font-family="sans-serif" text-anchor="middle" dominant-baseline="central"'
        for k, letter in enumerate(file_letters(n)):
            x = margin + k * cell + cell // 2
            for y in (margin // 2, margin + side + margin // 2):
                out.append(f'<text x="{x}" y="{y}" font-size="14" fill="#333" {font}>{letter}</text>')
        for r in range(n):
            y = margin + (n - 1 - r) * cell + cell // 2
            for x in (margin // 2, margin + side + margin // 2):
                out.append(f'<text x="{x}" y="{y}" font-size="14" fill="#333" {font}>{r + 1}</text>')
        last = state.history[-1] if state.history else None
        for i, piece in enumerate(state.board):
            f, r = _cell(i, n)
            name = cell_name((f, r))
            x, y = margin + f * cell, margin + (n - 1 - r) * cell
            cx, cy = x + cell // 2, y + cell // 2
            if piece == BUBBLE:
                out.append(f'<circle cx="{cx}" cy="{cy}" r="{cell // 3}" fill="none" stroke="#8d6e63" '
                           f'stroke-width="2" stroke-dasharray="4 3"><title>{name}: the bubble</title>'
                           '</circle>')
                continue
            colour = {RED: "red", BLUE: "blue", GREEN: "green"}[piece]
            mark = f' class="target" data-move="{name}" cursor="pointer"' if name in movable else ""
            stroke = ' stroke="#ffd600" stroke-width="4"' if name in movable else (
                ' stroke="#000000" stroke-width="2" stroke-dasharray="3 2"' if name == last else "")
            out.append(f'<rect x="{x + 2}" y="{y + 2}" width="{cell - 4}" height="{cell - 4}" rx="6" '
                       f'fill="{fill[piece]}"{stroke}{mark}><title>{name}: {colour}</title></rect>')
            if piece != GREEN:
                out.append(f'<text x="{cx}" y="{cy}" font-size="16" fill="#ffffff" pointer-events="none" '
                           f'{font}>{piece.upper()}</text>')
        out.append(f'<text x="{width // 2}" y="{margin * 2 + side + 6}" font-size="15" fill="#222" {font}>'
                   f'Red {red} · Blue {blue} · total {red + blue}</text>')
        out.append("</svg>")
        return "\n".join(out)

    # --- storage ---

    def seat_view(self, state: State, seat: int) -> dict[str, Any]:
        """The whole state: nothing of the game is hidden from either player."""
        return self.dump(state)

    def dump(self, state: State) -> dict[str, Any]:
        """A JSON-safe form; the board is in the written position format.

        The options are written only when they differ from ``when_stuck=draw, group_value=smallest``, the
        rules of games created before the options existed, so those games dump exactly as they were
        stored and :meth:`load` reads a dump without them as such a game.  The arrangements seen are
        hexadecimal keys in sorted order.
        """
        data: dict[str, Any] = {
            "size": state.size,
            "board": written(state.board, state.size),
            "history": list(state.history),
            "winner": state.winner,
            "stuck": state.stuck,
        }
        if state.when_stuck != DRAW:
            data["when_stuck"] = state.when_stuck
            data["seen"] = [format(key, "x") for key in sorted(state.seen)]
        if state.group_value != SMALLEST:
            data["group_value"] = state.group_value
        return data

    def load(self, data: dict[str, Any]) -> State:
        """The inverse of :meth:`dump`."""
        rows = parse_position(data["board"], RED + BLUE + GREEN + BUBBLE)
        board = "".join("".join(row) for row in rows)
        return State(
            int(data["size"]), board, tuple(data["history"]), data["winner"], bool(data["stuck"]),
            when_stuck=data.get("when_stuck", DRAW),
            group_value=data.get("group_value", SMALLEST),
            seen=frozenset(int(key, 16) for key in data.get("seen", ())),
        )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


engine = Carreaux()
