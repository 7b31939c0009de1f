"""Truchet (Cameron Browne, 2007): stacking and capture within the regions of a truchet tiling.

Geometry, in the words of the rule sheet and ``docs/RULES.md``:

* The board is n x n **tiles** (n odd, 7 by default), named ``a1…g7`` on 7x7.  Pieces stand on the
  **junctions**, the tile corners: an (n+1) x (n+1) grid named ``a1…h8`` on 7x7.
* Junction colours are a fixed checkerboard: a junction is Light when (file + rank) is odd, so ``a1``
  and ``h8`` are Dark and ``a8`` is Light.  Every tile therefore has its two Light corners on one
  diagonal and its two Dark corners on the other.
* A tile's **band** is the strip of colour running from one corner to the opposite corner; the two
  remaining corners each sit in a small quarter-disc cap of the other colour, cut off from each other by
  the band.  The band joins either the two Light corners or the two Dark corners: that is the tile's
  one bit (``l`` or ``d``).  Edge colours always match, so a **flip** (which the sheet says is followed
  by reorienting the tile to match its neighbours) simply toggles the bit.
* A **region** is a connected set of same-colour junctions, two junctions being joined when they are the
  diagonal corners of a tile whose band is of their colour.  Light regions belong to Light, Dark regions
  to Dark; junction colour never changes, only which junctions a region joins.

Seats: seat 0 is Dark (makes the first piece move), seat 1 is Light.  Stacks are stored as signed
heights per junction: positive for Dark, negative for Light, 0 for empty.

For tests, puzzles and bug reports, :func:`position_state` builds a movement-phase state from written
tiles and a stack list such as ``"c3=d2 e5=l3"``; it is a module function, not a player option.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from itertools import combinations
from random import Random
from typing import Any

from marshmallow import Schema, ValidationError, fields, pre_load, validate, validates_schema

from games import Engine, IllegalMove, Outcome
from games.coords import cell_name, file_letters, parse_cell, parse_position
from games.words import join_words, quoted

__all__ = ["TruchetEngine", "TruchetState", "engine", "position_state"]

DARK, LIGHT = 0, 1
SIDE = ("Dark", "Light")
SIGN = (1, -1)  # a seat's stacks are stored with this sign
MAX_HEIGHT = 4
MIN_SIZE, MAX_SIZE = 3, 11
DIRECTIONS = "nesw"  # the canonical letter order of splits and merges
UNSET = "."  # a tile not yet set in the alternate setup


# --------------------------------------------------------------------------------------------- geometry


@dataclass(frozen=True)
class Geometry:
    """Fixed facts about an n x n board, computed once per size.

    Junction ``i`` is ``(x, y) = (i % (n+1), i // (n+1))``; tile ``t`` is ``(t % n, t // n)``.
    """

    n: int
    names: tuple[str, ...]  # junction names
    tile_names: tuple[str, ...]
    light: tuple[bool, ...]  # junction colour
    colour: tuple[str, ...]  # 'l' or 'd' per junction: the band bit that joins it diagonally
    orth: tuple[tuple[tuple[str, int], ...], ...]  # per junction: (direction letter, neighbour), n e s w
    diag: tuple[tuple[tuple[int, int], ...], ...]  # per junction: (tile, opposite corner of that tile)
    corners: tuple[tuple[int, int, int, int], ...]  # per tile: bottom-left, bottom-right, top-left, top-right
    pairs: tuple[tuple[tuple[int, int], tuple[int, int]], ...]  # per tile: (Light pair, Dark pair)
    index: dict[str, int]  # junction name -> junction
    tile_index: dict[str, int]

    @property
    def width(self) -> int:
        """Junctions per side."""
        return self.n + 1

    def junction(self, x: int, y: int) -> int:
        """The junction at file x, rank y (0-based)."""
        return y * (self.n + 1) + x


@cache
def geometry(n: int) -> Geometry:
    """The board geometry for ``n`` x ``n`` tiles."""
    w = n + 1
    names = tuple(cell_name((i % w, i // w)) for i in range(w * w))
    tile_names = tuple(cell_name((t % n, t // n)) for t in range(n * n))
    light = tuple((i % w + i // w) % 2 == 1 for i in range(w * w))
    steps = {"n": (0, 1), "e": (1, 0), "s": (0, -1), "w": (-1, 0)}
    orth = []
    diag = []
    for i in range(w * w):
        x, y = i % w, i // w
        orth.append(tuple(
            (d, (y + dy) * w + x + dx) for d, (dx, dy) in steps.items() if 0 <= x + dx < w and 0 <= y + dy < w
        ))
        around = []
        for tx, ty in ((x - 1, y - 1), (x, y - 1), (x - 1, y), (x, y)):
            if 0 <= tx < n and 0 <= ty < n:
                ox = tx if tx != x else tx + 1  # the tile's corner diagonally opposite (x, y)
                oy = ty if ty != y else ty + 1
                around.append((ty * n + tx, oy * w + ox))
        diag.append(tuple(around))
    corners = []
    pairs = []
    for t in range(n * n):
        f, r = t % n, t // n
        bl, br, tl, tr = r * w + f, r * w + f + 1, (r + 1) * w + f, (r + 1) * w + f + 1
        corners.append((bl, br, tl, tr))
        # (f + r) even: bottom-left and top-right are Dark, so the Light pair is the other diagonal.
        pairs.append(((br, tl), (bl, tr)) if (f + r) % 2 == 0 else ((bl, tr), (br, tl)))
    return Geometry(
        n=n,
        names=names,
        tile_names=tile_names,
        light=light,
        colour=tuple("l" if lt else "d" for lt in light),
        orth=tuple(orth),
        diag=tuple(diag),
        corners=tuple(corners),
        pairs=tuple(pairs),
        index={name: i for i, name in enumerate(names)},
        tile_index={name: t for t, name in enumerate(tile_names)},
    )


def pieces_per_side(n: int) -> int:
    """The sheet's formula: (n-1)(n+1)/4 pieces each (12 on 7x7)."""
    return (n - 1) * (n + 1) // 4


def start_stacks(n: int) -> tuple[int, ...]:
    """Singletons on each side's junction colour in the (n-1)/2 junction ranks nearest them."""
    geo = geometry(n)
    w = n + 1
    rows = (n - 1) // 2
    stacks = [0] * (w * w)
    for i in range(w * w):
        y = i // w
        if y < rows and not geo.light[i]:
            stacks[i] = SIGN[DARK]
        elif y >= w - rows and geo.light[i]:
            stacks[i] = SIGN[LIGHT]
    return tuple(stacks)


# ------------------------------------------------------------------------------------------------ state


@dataclass(frozen=True)
class TruchetState:
    """A Truchet position, with everything needed to go on from it.

    ``tiles`` holds one bit letter per tile (``l``/``d``, ``.`` while unset in the alternate setup),
    indexed rank by rank from a1.  ``stacks`` holds signed heights per junction.  ``history`` holds the
    keys of earlier positions since the last capture, for the threefold-repetition draw.
    """

    size: int
    tiles: str
    stacks: tuple[int, ...]
    turn: int
    ply: int = 0
    history: tuple[str, ...] = ()
    last: str = ""
    winner: int | None = None  # a seat, or -1 for a draw, once the game is over
    reason: str = ""

    @property
    def setting(self) -> bool:
        """True while tiles are still being set (alternate setup)."""
        return UNSET in self.tiles

    @property
    def over(self) -> bool:
        """True once the game has ended."""
        return self.winner is not None

    def key(self) -> str:
        """The position with the side to move, as compared for repetition."""
        return f"{self.tiles}|{','.join(map(str, self.stacks))}|{self.turn}"


def height_word(h: int) -> str:
    """``2`` -> ``"2-stack"``."""
    return f"{h}-stack"


def stack_token(v: int) -> str:
    """A stack as written in :func:`position_state` and dumps: ``d2`` or ``l3``."""
    return f"{'d' if v > 0 else 'l'}{abs(v)}"


def stacks_text(n: int, stacks: tuple[int, ...]) -> str:
    """Stacks as ``"c3=d2 e5=l3"``."""
    geo = geometry(n)
    return " ".join(f"{geo.names[i]}={stack_token(v)}" for i, v in enumerate(stacks) if v)


def parse_stacks(n: int, text: str) -> tuple[int, ...]:
    """The inverse of :func:`stacks_text`; raises ValueError with a readable reason."""
    geo = geometry(n)
    stacks = [0] * (geo.width ** 2)
    for token in text.replace(",", " ").lower().split():
        match = re.fullmatch(r"([a-z]\d{1,2})=([dl])([1-4])", token)
        if not match or match.group(1) not in geo.index:
            raise ValueError(f"{token!r} is not a stack: write junction=owner+height, like c3=d2 or e5=l3.")
        stacks[geo.index[match.group(1)]] = int(match.group(3)) * (1 if match.group(2) == "d" else -1)
    return tuple(stacks)


def tiles_from_position(text: str) -> str:
    """Written tile bits (ranks top to bottom, ``l``/``d``) as the internal string from a1."""
    rows = parse_position(text, "ld")
    n = len(rows)
    if len(rows[0]) != n:
        raise ValueError(f"The tiles must form a square: {n} ranks of {len(rows[0])} tiles.")
    return "".join("".join(row) for row in rows)


def tiles_to_position(n: int, tiles: str) -> str:
    """The internal tile string written as a position (ranks top to bottom)."""
    return "/".join(tiles[r * n:(r + 1) * n] for r in reversed(range(n)))


def position_state(tiles: str, stacks: str, to_move: int = DARK) -> TruchetState:
    """A movement-phase state from written tiles (``"ldl/dld/ldl"``) and stacks (``"c3=d2 e5=l3"``).

    For tests, puzzles and bug reports; players start games through the options instead.
    """
    bits = tiles_from_position(tiles)
    n = math.isqrt(len(bits))
    state = TruchetState(size=n, tiles=bits, stacks=parse_stacks(n, stacks), turn=to_move)
    return _settle(replace(state, history=(state.key(),)))


# ------------------------------------------------------------------------------------------------ rules


def threshold(v: int, sign: int, light: bool) -> int:
    """The least height of ``sign``'s stack that may land on junction content ``v`` (5: never).

    Empty junctions take any height; own stacks are never landed on; an enemy stack on its owner's
    colour of junction needs a taller capturer, elsewhere one of the same height suffices.
    """
    if v == 0:
        return 1
    if (v > 0) == (sign > 0):
        return MAX_HEIGHT + 1
    on_own_colour = light == (v < 0)
    return abs(v) + (1 if on_own_colour else 0)


@cache
def split_patterns(h: int, dirs: str, lows: tuple[int, ...]) -> tuple[str, ...]:
    """Every split of ``h`` pieces over the directions ``dirs`` (canonical order), as letter strings.

    ``lows[k]`` is the least number of pieces that may go in direction ``dirs[k]`` (above ``h``: none).
    At least two directions must be used.
    """
    out: list[str] = []

    def go(k: int, left: int, used: int, text: str) -> None:
        if k == len(dirs):
            if left == 0 and used >= 2:
                out.append(text)
            return
        go(k + 1, left, used, text)
        for count in range(max(lows[k], 1), left + 1):
            go(k + 1, left - count, used + 1, text + dirs[k] * count)

    go(0, h, 0, "")
    return tuple(out)


class MoveGen:
    """Legal stack moves of one side in one position, shared across every flip variant."""

    def __init__(self, state: TruchetState, seat: int) -> None:
        self.geo = geometry(state.size)
        self.tiles = state.tiles
        self.stacks = state.stacks
        self.sign = SIGN[seat]
        self.own = [i for i, v in enumerate(self.stacks) if v * self.sign > 0]
        self._pre: dict[tuple[int, int], list[str]] = {}

    # -- flip-independent moves

    def split_suffixes(self, at: int, h: int) -> tuple[str, ...]:
        """The letter strings of legal splits of an ``h``-stack standing on ``at``."""
        if h < 2:
            return ()
        geo, stacks, sign = self.geo, self.stacks, self.sign
        dirs = "".join(d for d, _ in geo.orth[at])
        lows = tuple(threshold(stacks[q], sign, geo.light[q]) for _, q in geo.orth[at])
        return split_patterns(h, dirs, lows)

    def merge_suffixes(self, target: int, fixed: tuple[str, int] | None, vacated: int) -> list[str]:
        """Letter strings of legal merges onto ``target``.

        ``fixed`` is (direction, height) of a source that must take part (the pre-stepped stack);
        ``vacated`` is a junction whose stack has left (or -1).
        """
        geo, stacks, sign = self.geo, self.stacks, self.sign
        need = threshold(stacks[target], sign, geo.light[target])
        if need > MAX_HEIGHT:
            return []
        sources = [
            (d, stacks[q] * sign)
            for d, q in geo.orth[target]
            if q != vacated and stacks[q] * sign > 0 and (fixed is None or d != fixed[0])
        ]
        out = []
        least = 2 if fixed is None else 1
        for k in range(least, len(sources) + 1):
            for group in combinations(sources, k):
                chosen = list(group) if fixed is None else [*group, fixed]
                total = sum(h for _, h in chosen)
                if need <= total <= MAX_HEIGHT:
                    out.append("".join(sorted((d for d, _ in chosen), key=DIRECTIONS.index)))
        return out

    def static_moves(self) -> list[str]:
        """Splits and merges without a pre-step: these do not depend on the tiles."""
        geo, stacks, sign = self.geo, self.stacks, self.sign
        out: list[str] = []
        for s in self.own:
            name = geo.names[s]
            out.extend(f"{name}>{x}" for x in self.split_suffixes(s, stacks[s] * sign))
        for d in range(len(stacks)):
            if stacks[d] * sign <= 0:
                name = geo.names[d]
                out.extend(f"{name}<{x}" for x in self.merge_suffixes(d, None, -1))
        return out

    def pre_moves(self, s: int, t: int) -> list[str]:
        """Every move in which the stack on ``s`` first steps to ``t``: the step, splits and merges.

        These strings do not depend on the tiles once ``t`` is reachable, so they are cached.
        ``s`` is never orthogonally next to ``t`` (same colour), so the split targets of ``t`` are
        unaffected by the stack leaving ``s``.
        """
        key = (s, t)
        found = self._pre.get(key)
        if found is not None:
            return found
        geo = self.geo
        h = self.stacks[s] * self.sign
        head = f"{geo.names[s]}-{geo.names[t]}"
        out = [head]
        out.extend(f"{head}>{x}" for x in self.split_suffixes(t, h))
        for d_from_t, d in geo.orth[t]:
            back = DIRECTIONS[(DIRECTIONS.index(d_from_t) + 2) % 4]  # where t lies seen from d
            tname = geo.names[d]
            out.extend(f"{head},{tname}<{x}" for x in self.merge_suffixes(d, (back, h), s))
        self._pre[key] = out
        return out

    # -- regions

    def components(self, tiles: str) -> list[int]:
        """A component label per empty junction (-1 for occupied), joined through matching bands."""
        stacks = self.stacks
        comp = [-1] * len(stacks)
        label = 0
        for i in range(len(stacks)):
            if stacks[i] or comp[i] >= 0:
                continue
            self._fill(tiles, comp, i, label)
            label += 1
        return comp

    def _fill(self, tiles: str, comp: list[int], start: int, label: int) -> None:
        geo, stacks = self.geo, self.stacks
        col = geo.colour[start]
        comp[start] = label
        todo = [start]
        while todo:
            k = todo.pop()
            for t, p in geo.diag[k]:
                if tiles[t] == col and comp[p] < 0 and not stacks[p]:
                    comp[p] = label
                    todo.append(p)

    def reach(self, tiles: str, comp: list[int], members: dict[int, list[int]], s: int) -> list[int]:
        """The empty junctions the stack on ``s`` can step to."""
        geo, stacks = self.geo, self.stacks
        col = geo.colour[s]
        labels = []
        for t, p in geo.diag[s]:
            if tiles[t] == col and not stacks[p]:
                label = comp[p]
                if label not in labels:
                    labels.append(label)
        out = []
        for label in labels:
            out.extend(members[label])
        return out

    def stepping_moves(self, tiles: str, comp: list[int], stackers: Iterable[int]) -> dict[int, list[str]]:
        """Per stack in ``stackers``: its steps and pre-stepped splits and merges under ``tiles``."""
        members: dict[int, list[int]] = {}
        for i, label in enumerate(comp):
            if label >= 0:
                members.setdefault(label, []).append(i)
        out = {}
        for s in stackers:
            found: list[str] = []
            for t in self.reach(tiles, comp, members, s):
                found.extend(self.pre_moves(s, t))
            out[s] = found
        return out

    def flippable(self) -> list[int]:
        """Tiles with no stack on any corner."""
        stacks = self.stacks
        return [t for t, cs in enumerate(self.geo.corners) if not any(stacks[c] for c in cs)]

    def all_moves(self) -> list[str]:
        """Every legal move: without a flip, then for each flippable tile in order."""
        geo, tiles = self.geo, self.tiles
        static = self.static_moves()
        comp = self.components(tiles)
        # Only stacks with a linked empty neighbour can step; flips never change those links,
        # because a stack pins the four tiles around it.
        steppers = [s for s in self.own if self.can_step(s)]
        base = self.stepping_moves(tiles, comp, steppers)
        body = static + [m for s in steppers for m in base[s]]
        body.sort()
        out = list(body)
        if not body:
            return out
        for t in self.flippable():
            flipped = tiles[:t] + ("d" if tiles[t] == "l" else "l") + tiles[t + 1:]
            new_comp, touched = self._reflip(flipped, comp, t)
            changed = [s for s in steppers if any(p in touched for _, p in geo.diag[s])]
            if changed:
                redo = self.stepping_moves(flipped, new_comp, changed)
                fbody = static + [m for s in steppers for m in (redo[s] if s in redo else base[s])]
                fbody.sort()
            else:
                fbody = body
            prefix = f"^{geo.tile_names[t]} "
            out.extend([prefix + m for m in fbody])
        return out

    def _reflip(self, flipped: str, comp: list[int], t: int) -> tuple[list[int], set[int]]:
        """Component labels after flipping tile ``t`` (all of whose corners are empty).

        Only the components holding the tile's corners can change; they are relabelled afresh.
        """
        corners = self.geo.corners[t]
        old = {comp[c] for c in corners}
        touched = {i for i, label in enumerate(comp) if label in old}
        new_comp = list(comp)
        for i in touched:
            new_comp[i] = -1
        label = max(comp) + 1
        for i in touched:
            if new_comp[i] < 0:
                self._fill(flipped, new_comp, i, label)
                label += 1
        return new_comp, touched

    def can_step(self, s: int) -> bool:
        """Whether the stack on ``s`` has an empty junction joined to it through a tile."""
        geo, tiles, stacks = self.geo, self.tiles, self.stacks
        return any(tiles[t] == geo.colour[s] and not stacks[p] for t, p in geo.diag[s])

    def any_move(self) -> bool:
        """Whether any stack move exists (flips never create or remove the possibility of one)."""
        return any(self.can_step(s) for s in self.own) or bool(self.static_moves())


def setting_moves(state: TruchetState) -> list[str]:
    """Tile settings open in the alternate setup; the centre tile is set last."""
    geo = geometry(state.size)
    open_tiles = [t for t, c in enumerate(state.tiles) if c == UNSET]
    centre = centre_tile(state.size)
    if len(open_tiles) > 1:
        open_tiles.remove(centre)
    return [f"{geo.tile_names[t]}={bit}" for t in open_tiles for bit in "dl"]


def centre_tile(n: int) -> int:
    """The index of the centre tile."""
    return (n // 2) * n + n // 2


def _settle(state: TruchetState) -> TruchetState:
    """Decide whether the side to move has lost or the position repeated a third time."""
    if state.setting:
        return state
    side = SIDE[state.turn]
    if state.history.count(state.key()) >= 3:
        reason = f"The same position occurred three times with {side} to move."
        return replace(state, winner=-1, reason=reason)
    if not any(v * SIGN[state.turn] > 0 for v in state.stacks):
        return replace(state, winner=1 - state.turn, reason=f"{side} has no pieces left.")
    if not MoveGen(state, state.turn).any_move():
        return replace(state, winner=1 - state.turn, reason=f"{side} cannot move a stack.")
    return state


# ---------------------------------------------------------------------------------------------- parsing

_J = r"[a-z]\d{1,2}"
_FLIP = re.compile(rf"^\^({_J})(.*)$")
_SET = re.compile(rf"^({_J})=(l|d|light|dark)$")
_STEP = re.compile(rf"^({_J})-({_J})$")
_SPLIT = re.compile(rf"^(?:({_J})-)?({_J})>([a-z]+)$")
_MERGE = re.compile(rf"^(?:({_J})-({_J}),?)?({_J})<([a-z]+)$")

FORMS = (
    "Write a step c3-e5, a split c3>nne (one letter n, e, s or w per piece), or a merge d4<ws "
    "(the target, then the direction of each source stack); a split or merge may start with a step "
    "(c1-c3>ne, b2-c4,d4<ws), and any move may follow a flip, ^f6 c3-e5."
)


def listing(names: list[str], limit: int = 12) -> str:
    """``a, b or c`` for short lists; empty when the list is too long to be useful in a mail."""
    if not names or len(names) > limit:
        return ""
    return join_words(names)


class Mover:
    """Validates one move against a position, explaining refusals; produces the next stacks."""

    def __init__(self, state: TruchetState, seat: int) -> None:
        self.sign = SIGN[seat]
        self.geo = geometry(state.size)
        self.tiles = state.tiles
        self.flip: int | None = None
        self.stacks = list(state.stacks)
        self.captured = 0

    # -- names

    def junction(self, name: str) -> int:
        """A junction by name, or a refusal naming the board's range."""
        try:
            x, y = parse_cell(name, self.geo.width, self.geo.width)
        except IllegalMove:
            last = self.geo.names[-1]
            message = f"{name} is not a junction of this board: junctions run from a1 to {last}."
            raise IllegalMove(message) from None
        return self.geo.junction(x, y)

    def describe(self, j: int) -> str:
        """What stands on junction ``j``, in words."""
        v = self.stacks[j]
        if not v:
            return "is empty"
        owner = "your" if v * self.sign > 0 else f"a {SIDE[0 if v > 0 else 1]}"
        return f"holds {owner} {height_word(abs(v))}"

    def own_height(self, j: int) -> int:
        """The height of the mover's stack on ``j``, or a refusal."""
        v = self.stacks[j] * self.sign
        if v <= 0:
            name = self.geo.names[j]
            raise IllegalMove(f"{name} {self.describe(j)}: there is no stack of yours there to move.")
        return v

    # -- parts of a move

    def do_flip(self, name: str) -> None:
        """Flip the named tile, if no stack pins it."""
        geo = self.geo
        n = geo.n
        try:
            f, r = parse_cell(name, n, n)
        except IllegalMove:
            raise IllegalMove(f"^{name} is not a tile of this board: tiles run from a1 to "
                              f"{geo.tile_names[-1]}.") from None
        t = r * n + f
        pins = [geo.names[c] for c in sorted(geo.corners[t]) if self.stacks[c]]
        if pins:
            raise IllegalMove(
                f"Tile {name} cannot be flipped: the stack on {listing(pins)} pins it "
                f"(a tile flips only when none of its four corners holds a stack)."
            )
        self.flip = t
        self.tiles = self.tiles[:t] + ("d" if self.tiles[t] == "l" else "l") + self.tiles[t + 1:]

    def _flood(self, s: int, stop_at_stacks: bool) -> set[int]:
        """The junctions joined to ``s`` through tiles of its colour (passing no stack, if asked)."""
        geo, tiles, stacks = self.geo, self.tiles, self.stacks
        col = geo.colour[s]
        seen = {s}
        todo = [s]
        while todo:
            k = todo.pop()
            for t, p in geo.diag[k]:
                if tiles[t] == col and p not in seen and not (stop_at_stacks and stacks[p]):
                    seen.add(p)
                    todo.append(p)
        return seen

    def region_reach(self, s: int) -> list[int]:
        """The empty junctions the stack on ``s`` can step to with the current (maybe flipped) tiles."""
        return sorted(self._flood(s, stop_at_stacks=True) - {s})

    def in_region(self, s: int, goal: int) -> bool:
        """Whether ``goal`` is in the region of ``s`` ignoring stacks (for a better refusal)."""
        return goal in self._flood(s, stop_at_stacks=False)

    def step(self, s: int, goal: int) -> int:
        """Move the stack on ``s`` through its region to the empty ``goal``; returns its height."""
        geo = self.geo
        h = self.own_height(s)
        a, b = geo.names[s], geo.names[goal]
        after = " after that flip" if self.flip is not None else ""
        if goal == s:
            raise IllegalMove(f"A step must go somewhere: {a}-{a} does not move the stack.")
        if self.stacks[goal]:
            raise IllegalMove(
                f"{b} {self.describe(goal)}: a step ends on an empty junction "
                f"(stacks capture only by merging or splitting)."
            )
        reach = self.region_reach(s)
        if goal not in reach:
            options = listing([geo.names[j] for j in reach])
            if not reach:
                hint = f" The stack on {a} has no step{after}."
            elif options:
                hint = f" From {a} you can step to {options}."
            else:
                hint = ""
            if geo.light[goal] != geo.light[s]:
                colour = "Light" if geo.light[s] else "Dark"
                raise IllegalMove(f"{b} is not in the region of {a}: {a} is a {colour} junction and {b} "
                                  f"is not, so no region joins them.{hint}")
            if self.in_region(s, goal):
                raise IllegalMove(f"{b} is in the region of {a}{after}, but other stacks block the way "
                                  f"(a stack cannot pass over stacks).{hint}")
            raise IllegalMove(f"{b} is not in the region of {a}{after}.{hint}")
        self.stacks[goal] = self.stacks[s]
        self.stacks[s] = 0
        return h

    def refuse_own(self, target: int) -> None:
        """Refuse a landing on one of the mover's own stacks."""
        v = self.stacks[target]
        if v * self.sign > 0:
            name = self.geo.names[target]
            raise IllegalMove(f"{name} holds your own {height_word(abs(v))}: pieces never land on their own "
                              f"side's stacks, only on empty junctions or enemy stacks.")

    def land(self, target: int, h: int, verb: str) -> None:
        """Put ``h`` of the mover's pieces on ``target``, capturing an enemy stack if allowed."""
        geo = self.geo
        v = self.stacks[target]
        name = geo.names[target]
        self.refuse_own(target)
        if h > MAX_HEIGHT:
            raise IllegalMove(f"That {verb} would make a {h}-stack on {name}; no stack may be taller than 4.")
        if v:
            need = threshold(v, self.sign, geo.light[target])
            if h < need:
                colour = "Light" if geo.light[target] else "Dark"
                if abs(v) > h:
                    why = "it is taller"
                else:
                    why = (f"it stands on a {colour} junction, its owner's colour, so only a taller stack "
                           f"can take it")
                raise IllegalMove(f"A {height_word(h)} cannot capture the {height_word(abs(v))} on {name}: "
                                  f"{why}.")
            self.captured += abs(v)
        self.stacks[target] = h * self.sign

    def split(self, at: int, letters: str) -> None:
        """Split the stack on ``at`` by the direction letters, one per piece."""
        geo = self.geo
        h = self.own_height(at)
        name = geo.names[at]
        if h == 1:
            raise IllegalMove(f"The stack on {name} is a single piece: it cannot split. Step it instead.")
        if len(letters) != h:
            raise IllegalMove(
                f"The stack on {name} is a {height_word(h)}: a split names one direction per piece, "
                f"{h} letters (like {name}>{'n' * (h - 1)}e), and you wrote {len(letters)}."
            )
        if len(set(letters)) < 2:
            raise IllegalMove("A split sends pieces in at least two directions; to move a whole stack, "
                              "step it.")
        neighbours = dict(geo.orth[at])
        for d in sorted(set(letters), key=DIRECTIONS.index):
            if d not in neighbours:
                raise IllegalMove(f"There is no junction {WORDS[d]} of {name}: that is the board's edge.")
        self.stacks[at] = 0
        for d in sorted(set(letters), key=DIRECTIONS.index):
            self.land(neighbours[d], letters.count(d), "split")

    def merge(self, target: int, letters: str, pre: tuple[int, int] | None) -> None:
        """Merge the stacks on the junctions next to ``target`` named by the letters onto it."""
        geo = self.geo
        name = geo.names[target]
        if len(set(letters)) != len(letters):
            raise IllegalMove(f"A merge names each source stack once, by its direction from {name}; "
                              f"'{letters}' repeats a direction.")
        neighbours = dict(geo.orth[target])
        for d in sorted(letters, key=DIRECTIONS.index):
            if d not in neighbours:
                raise IllegalMove(f"There is no junction {WORDS[d]} of {name}: that is the board's edge.")
        if len(letters) < 2:
            raise IllegalMove(f"A merge brings two or more stacks together; '{name}<{letters}' names one. "
                              f"To move one stack, step it.")
        if pre is not None:
            s, t = pre
            if t not in [neighbours[d] for d in letters]:
                named = listing([geo.names[neighbours[d]] for d in sorted(letters, key=DIRECTIONS.index)], 4)
                tname = geo.names[t]
                raise IllegalMove(f"The stack stepping to {tname} must then merge, but {tname} is not next "
                                  f"to {name} among the sources named ({named}).")
            self.step(s, t)
        self.refuse_own(target)
        total = 0
        for d in sorted(letters, key=DIRECTIONS.index):
            q = neighbours[d]
            total += self.own_height(q)
            self.stacks[q] = 0
        self.land(target, total, "merge")


WORDS = {"n": "north", "e": "east", "s": "south", "w": "west"}


def normalise(text: str) -> str:
    """Lower case, without spaces: the forgiving form every move is parsed from."""
    return re.sub(r"\s+", "", text.lower())


def canonical_letters(letters: str) -> str:
    """Direction letters in the canonical n, e, s, w order; refuses any other letter."""
    bad = sorted(set(letters) - set(DIRECTIONS))
    if bad:
        raise IllegalMove(f"'{''.join(bad)}' is not a direction: use n, e, s and w.")
    return "".join(sorted(letters, key=DIRECTIONS.index))


# ----------------------------------------------------------------------------------------------- engine


class TruchetOptions(Schema):
    """Options of a Truchet game."""

    size = fields.Integer(
        load_default=7,
        validate=validate.Range(
            MIN_SIZE, MAX_SIZE, error=f"The board size must be from {MIN_SIZE} to {MAX_SIZE} tiles a side."
        ),
        metadata={"description": f"Tiles a side: odd, {MIN_SIZE} to {MAX_SIZE}."},
    )
    tiles = fields.String(
        load_default="random",
        validate=validate.OneOf(["random", "alternate"], error="Tiles must be 'random' or 'alternate'."),
        metadata={"description": "random: dealt by the server; alternate: the players set them in turn "
                                 "first."},
    )
    position = fields.String(load_default=None, allow_none=True, metadata={
        "description": "Fixed tiles instead: ranks top to bottom, l or d a tile, like ldl/dld/ldl."})

    @pre_load
    def size_from_position(self, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """A written position sets the size unless the size is given too."""
        position = data.get("position") if isinstance(data, dict) else None
        if isinstance(position, str) and position.strip() and "size" not in data:
            data = {**data, "size": len(position.strip().split("/"))}
        return data

    @validates_schema
    def check(self, data: dict[str, Any], **kwargs: Any) -> None:
        """The size is odd; a position matches the size and excludes the alternate setup."""
        size = data["size"]
        if size % 2 == 0:
            raise ValidationError(f"The board size must be odd ({MIN_SIZE}, 5, 7 … {MAX_SIZE}): the setup "
                                  "needs a centre tile.", "size")
        position = data.get("position")
        if position:
            try:
                bits = tiles_from_position(position)
            except ValueError as exc:
                raise ValidationError(f"Bad position: {exc}", "position") from None
            if len(bits) != size * size:
                raise ValidationError(
                    f"The position has {math.isqrt(len(bits))} ranks but the size is {size}.", "position"
                )
            if data["tiles"] == "alternate":
                raise ValidationError("A written position fixes the tiles; leave out tiles=alternate.",
                                      "tiles")


HELP = """\
Truchet (Cameron Browne, 2007) - stacking and capture within the regions of a truchet tiling.

Board: n x n truchet tiles (default 7x7). Pieces stand on the junctions (tile corners), an (n+1)x(n+1)
grid: on 7x7 junctions run a1..h8 and tiles a1..g7. Junction colours are a fixed checkerboard: a
junction is Light when file+rank is odd (a1 and h8 Dark, a8 Light). Each tile's band joins its two
Light corners or its two Dark corners; the other two corners sit in caps of the other colour. A region
is a set of same-colour junctions joined through tiles whose band is of their colour. Light owns the
light regions, Dark the dark ones.

Players: seat 1 is Dark and makes the first piece move; seat 2 is Light. Each has (n-1)(n+1)/4 pieces
(12 on 7x7), starting as singletons on the junctions of their colour in the (n-1)/2 junction ranks
nearest them (7x7: Dark on the Dark junctions of ranks 1-3, Light on the Light junctions of ranks 6-8).

A turn: first, optionally, flip one tile that has no stack on any of its four corners (its band swaps
to the other diagonal); then one stack move:
- step: the whole stack moves to an empty junction of its region, through empty junctions only;
- merge: two or more of your stacks on the junctions orthogonally next to one junction move onto it
  whole; one of them may first step within its region (to a junction next to the target);
- split: a stack of 2 or more divides onto two or more different orthogonally adjacent junctions,
  every piece leaving; it may first step within its region.
A merge or split may land on enemy stacks and captures them (they leave the game). A stack on its
owner's colour of junction can only be taken by a taller stack; on the other colour, one of the same
height suffices. It is the height of the landing stack that counts, not of the stack it came from.
Pieces never land on their own side's stacks, and no stack is ever taller than 4.

End: a player with no pieces, or with no stack move on their turn, loses. The third occurrence of the
same position (tiles, stacks, side to move) is a draw. Draw offers and resignation are server commands.

Options:
- size: odd, 3 to 11 (default 7).
- tiles: random (default; each tile's bit drawn from the game's seed) or alternate (Light and Dark
  take turns setting one tile each, Light first and last; the centre tile is set last; then Dark makes
  the first piece move).
- position: the tile bits, ranks from top to bottom separated by /, l (band joins the Light corners)
  or d (band joins the Dark corners), e.g. ldl/dld/ldl for 3x3. The size follows the position. Pieces
  start as usual.

Notation (junctions and tiles are named like chess squares; n e s w = rank+1, file+1, rank-1, file-1):
- tile setting (alternate setup only): c3=l or c3=d
- step: c3-e5
- split: c3>nne - one letter per piece, pieces sent the same way form one stack (here a 2-stack
  north and a 1-stack east); with a step first: c1-c3>nne
- merge: d4<ws - the target, then the direction of each source stack from it (here the stacks on c4
  and d3 merge onto d4); with one source stepping first: b2-c4,d4<ws
- a flip comes first, the tile after ^, then the stack move: ^f6 c3-e5
Input is forgiving: any case, extra spaces, letters in any order. Moves are listed canonically,
letters in the order n, e, s, w. Several strings may lead to the same position (a stack next to a
merge target may also step to another junction next to it first); all are listed.

Rulings:
- Junction colours are fixed; a flip toggles the tile's bit, the reorienting the sheet mentions being
  automatic.
- A merge target and every split target must be empty or hold an enemy stack the landing stack may
  capture; a step must end on an empty junction and never captures.
- A stack that steps first must take part in the merge, so it must end next to the target.
- Flips are never a move on their own: every turn has a stack move. A player who cannot move any stack
  loses even if flips remain (a flip cannot free a stack, since a stack pins the tiles around it).
- In the alternate setup a player may set any unset tile except the centre, which is set last; tiles
  cannot be flipped until the piece moves begin.
- Board sizes are odd, 3 to 11 tiles a side; a written position fixes the size and the tiles, so it
  cannot be combined with tiles=alternate.
- The draw by repetition counts positions with the same tiles, stacks and side to move; a capture makes
  earlier positions unreachable.
- Board text: empty junctions show as + (Dark) or - (Light); stacks as D2 (Dark, height 2) or L3; the
  dark areas of the tiles are dotted, the light areas blank.
"""


class TruchetEngine(Engine):
    """The Truchet rule engine."""

    slug = "truchet"
    summary = ("Move, merge and split stacks within the dark and light regions of a truchet tiling, flipping "
               "tiles to reshape them; capture or stall your opponent.")
    title = "Truchet"
    players = range(2, 3)
    options = TruchetOptions()
    simultaneous = False
    open_information = True  # Nothing hidden, no chance after the start: moves may be tried in play.
    sides = SIDE
    help = HELP

    # -- life cycle

    def new(self, players: int, options: dict[str, Any], seed: int) -> TruchetState:
        """The starting position: tiles from the position, the seed, or (alternate) still to be set."""
        if players != 2:
            raise ValueError("Truchet is for two players.")
        n = options.get("size", 7)
        position = options.get("position")
        stacks = start_stacks(n)
        if position:
            tiles = tiles_from_position(position)
        elif options.get("tiles", "random") == "alternate":
            return TruchetState(size=n, tiles=UNSET * (n * n), stacks=stacks, turn=LIGHT)
        else:
            rng = Random(seed)
            tiles = "".join("l" if rng.random() < 0.5 else "d" for _ in range(n * n))
        state = TruchetState(size=n, tiles=tiles, stacks=stacks, turn=DARK)
        return _settle(replace(state, history=(state.key(),)))

    def to_move(self, state: TruchetState) -> frozenset[int]:
        """The seat to move, or nobody once the game is over."""
        return frozenset() if state.over else frozenset({state.turn})

    def moves(self, state: TruchetState, seat: int) -> list[str]:
        """Every legal move of ``seat``: no-flip moves first, then each flip's in tile order."""
        if state.over or seat != state.turn:
            return []
        if state.setting:
            return setting_moves(state)
        return MoveGen(state, seat).all_moves()

    def play(self, state: TruchetState, seat: int, text: str) -> TruchetState:
        """Parse, check and apply a move, explaining any refusal."""
        if state.over:
            raise IllegalMove(f"The game is over: {state.reason}")
        if seat != state.turn:
            raise IllegalMove(f"It is not your turn: {SIDE[state.turn]} is to move.")
        word = normalise(text)
        if not word:
            raise IllegalMove("The move is empty. " + FORMS)
        if state.setting:
            return self._set_tile(state, word, text)
        return self._stack_move(state, seat, word, text)

    def _set_tile(self, state: TruchetState, word: str, text: str) -> TruchetState:
        geo = geometry(state.size)
        n = state.size
        match = _SET.match(word)
        if not match:
            raise IllegalMove(
                f"{quoted(text.strip())} is not a tile setting. The tiles are still being set: name an unset "
                f"tile and the band's colour, like c3=l (band joins the Light corners) or c3=d."
            )
        name = match.group(1)
        try:
            f, r = parse_cell(name, n, n)
        except IllegalMove:
            raise IllegalMove(f"{name} is not a tile: tiles run from a1 to {geo.tile_names[-1]}.") from None
        t = r * n + f
        if state.tiles[t] != UNSET:
            raise IllegalMove(f"Tile {name} is already set.")
        centre = centre_tile(n)
        if t == centre and state.tiles.count(UNSET) > 1:
            raise IllegalMove(f"{name} is the centre tile: it is set last, once every other tile is set.")
        tiles = state.tiles[:t] + match.group(2)[0] + state.tiles[t + 1:]
        canonical = f"{name}={match.group(2)[0]}"
        if UNSET in tiles:
            return replace(state, tiles=tiles, turn=1 - state.turn, ply=state.ply + 1, last=canonical)
        after = replace(state, tiles=tiles, turn=DARK, ply=state.ply + 1, last=canonical)
        return _settle(replace(after, history=(after.key(),)))

    def _stack_move(self, state: TruchetState, seat: int, word: str, text: str) -> TruchetState:
        mover = Mover(state, seat)
        geo = mover.geo
        flip = _FLIP.match(word)
        parts = []
        if flip:
            mover.do_flip(flip.group(1))
            parts.append(f"^{flip.group(1)}")
            word = flip.group(2)
            if not word:
                raise IllegalMove("A flip must be followed by a stack move, like ^f6 c3-e5. " + FORMS)
        if _SET.match(word):
            raise IllegalMove("The tiles are all set; now every turn moves a stack. " + FORMS)
        if m := _STEP.match(word):
            s, goal = mover.junction(m.group(1)), mover.junction(m.group(2))
            mover.step(s, goal)
            parts.append(f"{geo.names[s]}-{geo.names[goal]}")
        elif m := _SPLIT.match(word):
            letters = canonical_letters(m.group(3))
            at = mover.junction(m.group(2))
            head = ""
            if m.group(1):
                s = mover.junction(m.group(1))
                mover.step(s, at)
                head = f"{geo.names[s]}-"
            mover.split(at, letters)
            parts.append(f"{head}{geo.names[at]}>{letters}")
        elif m := _MERGE.match(word):
            letters = canonical_letters(m.group(4))
            target = mover.junction(m.group(3))
            pre = None
            head = ""
            if m.group(1):
                pre = (mover.junction(m.group(1)), mover.junction(m.group(2)))
                head = f"{geo.names[pre[0]]}-{geo.names[pre[1]]},"
            mover.merge(target, letters, pre)
            parts.append(f"{head}{geo.names[target]}<{letters}")
        else:
            raise IllegalMove(f"{quoted(text.strip())} is not a Truchet move. " + FORMS)
        stacks = tuple(mover.stacks)
        after = TruchetState(
            size=state.size,
            tiles=mover.tiles,
            stacks=stacks,
            turn=1 - seat,
            ply=state.ply + 1,
            history=() if mover.captured else state.history,
            last=" ".join(parts),
        )
        return _settle(replace(after, history=(*after.history, after.key())))

    def outcome(self, state: TruchetState) -> Outcome | None:
        """Win, loss or the repetition draw, once the game is over."""
        if state.winner is None:
            return None
        reason = state.reason.rstrip(".")
        if state.winner < 0:
            return Outcome.draw(2, f"Drawn: {reason[:1].lower()}{reason[1:]}")
        return Outcome.win(state.winner, 2, f"{SIDE[state.winner]} wins: {reason}")

    # -- storage

    def evaluate(self, state: TruchetState, seat: int) -> float:
        """The seat's share of the pieces on the board (the game is won by taking them all), kept off
        certainty: a computer player's judgement of a position it cannot play out."""
        mine = sum(abs(v) for v in state.stacks if v * SIGN[seat] > 0)
        theirs = sum(abs(v) for v in state.stacks if v * SIGN[seat] < 0)
        return 0.5 + 0.45 * (mine - theirs) / max(1, mine + theirs)

    def seat_view(self, state: TruchetState, seat: int) -> dict[str, Any]:
        """The whole state: nothing of the game is hidden from either player."""
        return self.dump(state)

    def dump(self, state: TruchetState) -> dict[str, Any]:
        """A JSON-safe form of the state."""
        return {
            "size": state.size,
            "tiles": tiles_to_position(state.size, state.tiles),
            "stacks": stacks_text(state.size, state.stacks),
            "turn": state.turn,
            "ply": state.ply,
            "history": list(state.history),
            "last": state.last,
            "winner": state.winner,
            "reason": state.reason,
        }

    def load(self, data: dict[str, Any]) -> TruchetState:
        """The inverse of :meth:`dump`."""
        n = int(data["size"])
        tiles = "".join(reversed(str(data["tiles"]).split("/")))
        return TruchetState(
            size=n,
            tiles=tiles,
            stacks=parse_stacks(n, data["stacks"]),
            turn=int(data["turn"]),
            ply=int(data.get("ply", 0)),
            history=tuple(data.get("history", ())),
            last=str(data.get("last", "")),
            winner=data.get("winner"),
            reason=str(data.get("reason", "")),
        )

    # -- drawing

    def status(self, state: TruchetState, over: bool = False) -> str:
        """One line: phase, whose turn, pieces left.  ``over``: the server ended the game, so no phase or
        mover is named (the server gives the reason)."""
        counts = [sum(abs(v) for v in state.stacks if v * SIGN[s] > 0) for s in (DARK, LIGHT)]
        pieces = f"pieces: Dark {counts[0]}, Light {counts[1]}"
        if state.over:
            out = self.outcome(state)
            return f"Game over: {out.reason if out else state.reason} ({pieces})"
        if over:
            return f"Game over ({pieces})"
        if state.setting:
            left = state.tiles.count(UNSET)
            return f"Tile setting: {SIDE[state.turn]} (seat {state.turn + 1}) sets a tile, {left} left"
        return f"{SIDE[state.turn]} (seat {state.turn + 1}) to move; {pieces}"

    def turn_note(self, state: TruchetState, seat: int) -> str | None:
        """The tile setting of the alternate setup, as the text board words it, for the player asked to
        set a tile (the game page shows no text board); None once the pieces move."""
        if not state.setting or seat not in self.to_move(state):
            return None
        return self.status(state) + "."

    def render_text(self, state: TruchetState, seat: int | None = None, *, over: bool = False) -> str:
        """The tiles drawn in characters, dark areas dotted; stacks and coordinates on the edges.
        ``over``: the game has ended though the rules would go on (the server ended it), so the status
        line names no mover."""
        return render_text(state, self.status(state, over))

    def render_svg(self, state: TruchetState, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """Truchet tiles with arcs, regions shaded, stacks with heights; legal fragments for ``seat``
        (none when ``targets`` is False or the game is ``over``, which also names no mover), among them
        the source stacks of merges, which the merges' notation does not name."""
        fragments: set[str] = set()
        if targets and not over and seat is not None and seat in self.to_move(state):
            moves = self.moves(state, seat)
            fragments = move_fragments([*moves, *self.click_spellings(state, seat, moves).values()])
        return render_svg(state, self.status(state, over), fragments)

    def click_spellings(self, state: TruchetState, seat: int, moves: list[str]) -> dict[str, str]:
        """Each merge as clicked on its source stacks and its target: ``d4<ws`` is ``c4,d3>d4``, and
        ``b2-c4,d4<ws`` (b2 stepping to c4 first) is ``b2-c4,d3>d4``, a flip before either as in the move."""
        geo = geometry(state.size)
        spelled = {}
        for move in moves:
            if "<" in move:
                spelled[move] = merge_spelling(geo, move)
        return spelled


# ------------------------------------------------------------------------------------------- rendering

STEP = 4  # characters from one junction to the next in the text board: with a line per tile row and one
# per junction row, a tile looks about square in a fixed-width font
LEFT = 5  # the junction rank labels


def junction_row(geo: Geometry, stacks: tuple[int, ...], y: int) -> str:
    """The text line of junction rank ``y`` (0-based): stacks as D2/L3, empty junctions as + (Dark) or
    - (Light), its rank on both sides."""
    tokens = []
    for x in range(geo.width):
        j = geo.junction(x, y)
        v = stacks[j]
        tokens.append(stack_token(v).upper() if v else ("-" if geo.light[j] else "+"))
    row = "".join(f"{token:<{STEP}}" for token in tokens)[: STEP * geo.n + 2]
    return f"{y + 1:>3}  {row}  {y + 1}"


def tile_row(geo: Geometry, tiles: str, r: int) -> str:
    """The text line of tile rank ``r`` (0-based), between its two junction ranks: each tile's band as
    a diagonal, ``\\`` joining its top-left and bottom-right corners or ``/`` the other two, ``?``
    for a tile not yet set; the tile rank in a column of its own on the right."""
    n = geo.n
    cells = []
    for f in range(n):
        bit = tiles[r * n + f]
        if bit == UNSET:
            cells.append("  ? ")
        elif geo.colour[geo.junction(f, r + 1)] == bit:
            cells.append("  \\ ")
        else:
            cells.append("  / ")
    return " " * LEFT + "".join(cells).ljust(STEP * n + 2) + f"    {r + 1}"


def render_text(state: TruchetState, status: str) -> str:
    """The text board (see :meth:`TruchetEngine.render_text`): junctions and their stacks on every
    other line, the tiles' bands as diagonals on the lines between, so that a region can be followed
    from junction to junction along the diagonals in any fixed-width font."""
    geo = geometry(state.size)
    n = geo.n
    lines = [" " * LEFT + "".join(f"{c:<{STEP}}" for c in file_letters(n + 1))]
    for y in reversed(range(n + 1)):
        lines.append(junction_row(geo, state.stacks, y))
        if y:
            lines.append(tile_row(geo, state.tiles, y - 1))
    lines.append(" " * (LEFT + 2) + "".join(f"{c:<{STEP}}" for c in file_letters(n)))
    lines = [line.rstrip() for line in lines]
    lines.append("")
    lines.append(status)
    if state.last:
        lines.append(f"Last move: {state.last}")
    unset = " ? = a tile not yet set." if state.setting else ""
    legend = (
        "D2 = Dark 2-stack, L1 = Light piece; empty junctions: + Dark, - Light. A \\ or / in a tile is "
        "its band: it joins the two junctions it points to (both of the band's colour), so a region runs "
        f"along the diagonals; the tile's other two corners sit in caps of the other colour.{unset} "
        "Junctions: files on top, ranks on both sides. Tiles: files on the last line, ranks in the far "
        "right column; flip a tile with ^ and its name, e.g. ^c3."
    )
    lines.extend(textwrap.wrap(legend, 72))
    return "\n".join(lines) + "\n"


_FRAGMENT = re.compile(r"\^[a-z]\d+|[a-z]\d+")
_CANONICAL_MERGE = re.compile(rf"^(\^{_J} )?(?:({_J})-({_J}),)?({_J})<([nesw]+)$")


def merge_spelling(geo: Geometry, move: str) -> str:
    """A canonical merge spelled as clicked (see :meth:`TruchetEngine.click_spellings`): the junction
    a stack steps from, then the sources (the stepped stack's landing first), then the target."""
    found = _CANONICAL_MERGE.match(move)
    if found is None:
        return move
    flip, origin, landing, target, letters = found.groups()
    around = dict(geo.orth[geo.index[target]])
    sources = [geo.names[around[letter]] for letter in letters]
    if landing in sources:
        sources.remove(landing)
        sources.insert(0, landing)
    step = f"{origin}-" if origin else ""
    return f"{flip or ''}{step}{','.join(sources)}>{target}"


def move_fragments(moves: list[str]) -> set[str]:
    """The clickable fragments of a move list: flip tokens and junction names (tile names in settings)."""
    found: set[str] = set()
    for m in moves:
        found.update(_FRAGMENT.findall(m.split("=")[0] if "=" in m else m))
    return found


SVG_TILE = 60
SVG_PAD = 58  # room for the coordinates, clear of the targets on the edge junctions
LEGEND_H = 26  # a line of the legend under the board
LEGEND_ONE_LINE = 480  # the board width the legend takes on one line (some 440 units at font size 14)
FILLS = {"l": "#f1e4c3", "d": "#8a6f4d"}
INK = "#3b2f22"
TILE_INK = "#157a42"
TARGET = 'class="target" fill="transparent" stroke="#1f9d55" stroke-width="2.5" stroke-dasharray="5 3"'
TEXT = 'text-anchor="middle" font-family="sans-serif"'


def svg_tile(geo: Geometry, bit: str, f: int, r: int, x0: float, y0: float) -> list[str]:
    """One tile: the band's colour everywhere, then a quarter-disc cap of the other colour at each of
    the two corners the band does not join, outlined so the arcs show."""
    s, half = SVG_TILE, SVG_TILE / 2
    if bit == UNSET:
        return [f'<rect x="{x0}" y="{y0}" width="{s}" height="{s}" fill="#cccccc" stroke="#999999"/>']
    out = [f'<rect x="{x0}" y="{y0}" width="{s}" height="{s}" fill="{FILLS[bit]}"/>']
    for cx in (0, 1):
        for cy in (0, 1):
            j = geo.junction(f + cx, r + cy)
            if geo.colour[j] == bit:
                continue
            px, py = x0 + cx * s, y0 + (1 - cy) * s
            dx, dy = (1 if cx == 0 else -1), (-1 if cy == 0 else 1)  # into the tile, SVG y pointing down
            sweep = 1 if dx * dy > 0 else 0
            start = f"{px + dx * half} {py}"
            arc = f"A{half} {half} 0 0 {sweep} {px} {py + dy * half}"
            # The cap is filled without an outline so tile edges stay invisible; the arc alone is inked.
            out.append(f'<path d="M{px} {py} L{start} {arc} Z" fill="{FILLS[geo.colour[j]]}"/>')
            out.append(f'<path d="M{start} {arc}" fill="none" stroke="{INK}" stroke-width="1.5"/>')
    return out


def svg_stack(cx: float, cy: float, v: int) -> str:
    """A stack: a disc of its owner's colour with its height written on it."""
    dark = v > 0
    face, edge = ("#1d1d1d", "#fdfdfd") if dark else ("#fdfdfd", "#1d1d1d")
    return (
        f'<circle cx="{cx}" cy="{cy}" r="{SVG_TILE * 0.26}" fill="{face}" stroke="{edge}" stroke-width="2"/>'
        f'<text x="{cx}" y="{cy + 6}" {TEXT} font-size="17" font-weight="bold" fill="{edge}">{abs(v)}</text>'
    )


def render_svg(state: TruchetState, status: str, fragments: set[str]) -> str:
    """The SVG board (see :meth:`TruchetEngine.render_svg`)."""
    geo = geometry(state.size)
    n, s, pad = geo.n, SVG_TILE, SVG_PAD
    size = n * s + 2 * pad

    def jx(x: int) -> float:
        return pad + x * s

    def jy(y: int) -> float:
        return pad + (n - y) * s

    # The legend under the board, on one line where the board is wide enough for it, else on two.
    legend = ['Junctions: <tspan font-weight="bold">a1</tspan> above and left',
              f'tiles: <tspan font-style="italic" fill="{TILE_INK}">a1</tspan> below and right']
    if size >= LEGEND_ONE_LINE:
        legend = [" · ".join(legend)]
    height = size + LEGEND_H * len(legend)
    # Never drawn larger than its own size (a page scales it down to fit, never up): a 3x3 board stays as
    # small as its tiles, and its words at their own size.
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {height}" width="{size}" '
        f'height="{height}" style="max-width: {size}px" role="img" aria-labelledby="truchet-title">',
        f'<title id="truchet-title">{escape(f"Truchet {n}x{n}: {status}")}</title>',
        f'<rect x="0" y="0" width="{size}" height="{height}" fill="#ffffff"/>',
    ]
    for t in range(n * n):
        f, r = t % n, t // n
        name = geo.tile_names[t]
        out.append(f'<g data-tile="{name}">')
        out.extend(svg_tile(geo, state.tiles[t], f, r, jx(f), jy(r + 1)))
        out.append("</g>")
    out.append(f'<rect x="{pad}" y="{pad}" width="{n * s}" height="{n * s}" fill="none" stroke="{INK}" '
               f'stroke-width="2"/>')
    # Clickable tiles (flips, or settings in the alternate setup) sit in the tile's middle, clear of
    # the junction hooks at its corners.
    for t in range(n * n):
        name = geo.tile_names[t]
        for fragment in (f"^{name}", name) if state.setting else (f"^{name}",):
            if fragment in fragments:
                x0, y0 = jx(t % n) + s * 0.3, jy(t // n + 1) + s * 0.3
                what = "flip" if fragment.startswith("^") else "set"
                out.append(f'<rect data-move="{fragment}" {TARGET} x="{x0}" y="{y0}" width="{s * 0.4}" '
                           f'height="{s * 0.4}" rx="4"><title>{what} tile {name} ({fragment})</title></rect>')
    # Junctions are named above and on the left, tiles (at their middles, in the targets' green) below
    # and on the right, each far enough out that no target on an edge junction covers it.
    junction_label = f'{TEXT} font-size="16" font-weight="bold" fill="{INK}"'
    tile_label = f'{TEXT} font-size="15" font-style="italic" fill="{TILE_INK}"'
    for k, letter in enumerate(file_letters(n + 1)):
        out.append(f'<text x="{jx(k)}" y="{pad - 26}" {junction_label}>{letter}</text>')
        out.append(f'<text x="{pad - 32}" y="{jy(k) + 6}" {junction_label}>{k + 1}</text>')
    for k, letter in enumerate(file_letters(n)):
        out.append(f'<text x="{jx(k) + s / 2}" y="{size - pad + 40}" {tile_label}>{letter}</text>')
        out.append(f'<text x="{size - pad + 32}" y="{jy(k) - s / 2 + 5}" {tile_label}>{k + 1}</text>')
    for k, words in enumerate(legend):
        y = size + LEGEND_H * (k + 1) - 8
        out.append(f'<text x="{size / 2}" y="{y}" {TEXT} font-size="14" fill="{INK}">{words}</text>')
    for j, v in enumerate(state.stacks):
        cx, cy = jx(j % geo.width), jy(j // geo.width)
        name = geo.names[j]
        if v:
            out.append(f'<g data-junction="{name}">{svg_stack(cx, cy, v)}</g>')
        else:
            dot = "#fdfdfd" if geo.light[j] else "#1d1d1d"
            out.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{dot}" stroke="#777777" '
                       f'stroke-width="0.5"/>')
        if not state.setting and name in fragments:
            out.append(f'<circle data-move="{name}" {TARGET} cx="{cx}" cy="{cy}" r="{s * 0.32}"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def escape(text: str) -> str:
    """XML-escape text content."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


engine = TruchetEngine()
