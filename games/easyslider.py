"""Easy Slider: every player solves the same piecepack sliding puzzle; the quickest beats the others.

Each seat has its own 5x5 board of the 24 piecepack tiles with a hole.  The four pawns say which suit
belongs in each of the top four rows, the five coins which value belongs in each column; the four null
tiles and the hole end in the bottom row (the "parity sponge"), in any order.  Seats move at once, each
on their own board; a round ends when the finishing order is settled, and points go to those who beat
others.  See ``docs/RULES.md`` ("Easy Slider") for the rulings followed here.
"""

from __future__ import annotations

import random
import re
import textwrap
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate, validates_schema

from games import Engine, IllegalMove, Outcome
from games.coords import Cell, cell_name, file_letters, parse_cell, parse_position
from games.words import join_words

SIZE = 5
SUITS = "smca"  # Suns, Moons, Crowns, Arms
VALUES = "na2345"  # null, ace, 2..5
COIN_VALUES = "a2345"  # the null coin stays out of the bag
SUIT_NAMES = {"s": "Suns", "m": "Moons", "c": "Crowns", "a": "Arms"}
VALUE_NAMES = {"n": "null", "a": "ace", "2": "2", "3": "3", "4": "4", "5": "5"}
# The traditional piecepack colours, so a player can match the board with their own set.
SUIT_COLOURS = {"s": "#c0392b", "m": "#222222", "c": "#1e8449", "a": "#1f5fa8"}
HOLE = ".."
TILES = tuple(s + v for s in SUITS for v in VALUES)
SCORINGS = ("slides", "race")
# Playoff rounds are repeated while the lead is still shared, but not for ever: two players who
# fumble or time out every playoff would otherwise never finish the game.
MAX_PLAYOFFS = 3

# Seat statuses within a round.
SOLVING = "solving"  # still sliding
SOLVED = "solved"  # board finished correctly
FUMBLED = "fumbled"  # called done on an unsolved board
LAST = "last"  # race scoring: the one player left solving when everyone else is out
TIMED_OUT = "timed out"  # the server's deadline passed
WAITING = "waiting"  # not in this (playoff) round


# --- options -------------------------------------------------------------------------------------------


def _tile_rows(position: str) -> list[list[str]]:
    """A written position as rows ``[rank][file]`` of tile codes (``..`` for the hole).

    Each cell takes two characters (suit then value), so a rank is ten characters long.
    """
    rows = parse_position(position, SUITS + "n2345.")
    if len(rows) != SIZE or len(rows[0]) != 2 * SIZE:
        raise ValueError(f"A position has {SIZE} ranks of {SIZE} tiles, two letters each (like mn or s2).")
    board = [["".join(row[i : i + 2]) for i in range(0, 2 * SIZE, 2)] for row in rows]
    found = sorted(code for row in board for code in row)
    if found != sorted((*TILES, HOLE)):
        bad = sorted({c for c in found if c not in TILES and c != HOLE})
        if bad:
            raise ValueError(f"{', '.join(bad)} {'is not a tile' if len(bad) == 1 else 'are not tiles'}.")
        twice = sorted({c for c in found if found.count(c) > 1})
        missing = sorted(set((*TILES, HOLE)) - set(found))
        raise ValueError(f"Every tile and the hole appear once: {', '.join(twice)} repeated, "
                         f"{', '.join(missing)} missing.")
    return board


class EasySliderOptions(Schema):
    """Options of an Easy Slider game."""

    rounds = fields.Integer(
        load_default=3,
        validate=validate.Range(min=1, max=10, error="Play from 1 to 10 rounds."),
        metadata={"description": "Number of rounds (a playoff round may follow a tie)."},
    )
    scoring = fields.String(
        load_default="slides",
        validate=validate.OneOf(SCORINGS, error="Scoring is 'slides' (fewest slides) or 'race' (first done)"),
        metadata={"description": "slides: finishing order by fewest slides; race: by who finishes first."},
    )
    position = fields.String(
        load_default="",
        metadata={"description": "Fixed tiles for every round (ranks top to bottom, two letters a tile, "
                                 "'..' the hole); needs pawns and coins."},
    )
    pawns = fields.String(
        load_default="",
        metadata={"description": "Fixed suits of rows 5 to 2, like msca; empty: shuffled every round."},
    )
    coins = fields.String(
        load_default="",
        metadata={"description": "Fixed values of columns a to e, like 2a543; empty: shuffled every round."},
    )

    @validates_schema
    def _check(self, data: dict[str, Any], **_: Any) -> None:
        pawns = _squash(data.get("pawns", ""))
        coins = _squash(data.get("coins", ""))
        position = _squash(data.get("position", ""))
        if pawns and sorted(pawns) != sorted(SUITS):
            raise ValidationError("Pawns name each suit once, top row first, like msca "
                                  "(s Suns, m Moons, c Crowns, a Arms).", "pawns")
        if coins and sorted(coins) != sorted(COIN_VALUES):
            raise ValidationError("Coins name each value once, column a first, like 2a543 (a is the ace).",
                                  "coins")
        if not position:
            return
        try:
            board = _tile_rows(position)
        except ValueError as exc:
            raise ValidationError(str(exc), "position") from None
        if not (pawns and coins):
            raise ValidationError("A position needs pawns and coins too, so the goal is fixed.", "position")
        tiles = tuple(code for rank in range(SIZE) for code in board[rank])
        if _solved(tiles, tuple(pawns), tuple(coins)):
            raise ValidationError("That position is already solved.", "position")

    @post_load
    def _normalise(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**data, **{k: _squash(data[k]) for k in ("pawns", "coins", "position")}}


def _squash(text: str) -> str:
    """Option text in canonical form: lower case, no spaces."""
    return re.sub(r"\s+", "", text).lower()


# --- state ---------------------------------------------------------------------------------------------

Board = tuple[str, ...]  # 25 tile codes indexed rank * 5 + file (rank 0 is the bottom); ".." the hole


@dataclass(frozen=True)
class Options:
    """The validated options a game was started with."""

    rounds: int = 3
    scoring: str = "slides"
    position: str = ""
    pawns: str = ""
    coins: str = ""


@dataclass(frozen=True)
class SeatState:
    """One seat in the current round: its board and how far it got."""

    board: Board
    slides: int
    status: str
    finish: int = 0  # race scoring: 1 for the first board solved this round, 2 for the next, ...


@dataclass(frozen=True)
class RoundResult:
    """A finished round: per seat its status, slides and points (None when not playing the round)."""

    number: int
    playoff: int
    statuses: tuple[str, ...]
    slides: tuple[int, ...]
    points: tuple[int | None, ...]


@dataclass(frozen=True)
class State:
    """A whole game of Easy Slider: the current round's deal and boards, totals and past rounds."""

    players: int
    seed: int
    options: Options
    round: int  # 1-based; playoff rounds continue the count
    playoff: int  # 0 in the regular rounds, then 1, 2, ... for playoff rounds
    pawns: tuple[str, ...]  # suit of ranks 5, 4, 3, 2 (the sheet's rows 1-4 from the top)
    coins: tuple[str, ...]  # value of files a..e
    start: Board  # the round's deal, the same for every seat
    seats: tuple[SeatState, ...]
    solved_count: int  # boards solved so far this round (race order)
    totals: tuple[int, ...]
    history: tuple[RoundResult, ...]
    over: bool = False


def _index(cell: Cell) -> int:
    return cell[1] * SIZE + cell[0]


def _cell(index: int) -> Cell:
    return (index % SIZE, index // SIZE)


def _target(cell: Cell, pawns: tuple[str, ...], coins: tuple[str, ...]) -> str | None:
    """The tile that belongs on ``cell`` when solved; None in the bottom row (any null, or the hole)."""
    file, rank = cell
    if rank == 0:
        return None
    return pawns[SIZE - 1 - rank] + coins[file]


def _solved(board: Board, pawns: tuple[str, ...], coins: tuple[str, ...]) -> bool:
    """The top four rows match pawns x coins (the nulls and hole are then in the bottom row)."""
    return all(board[i] == _target(_cell(i), pawns, coins) for i in range(SIZE, SIZE * SIZE))


def _hole(board: Board) -> Cell:
    return _cell(board.index(HOLE))


def _sliders(board: Board) -> list[Cell]:
    """The cells whose tile can slide into the hole now, in canonical (name) order."""
    hf, hr = _hole(board)
    near = [(hf + df, hr + dr) for df, dr in ((-1, 0), (1, 0), (0, -1), (0, 1))]
    return sorted((c for c in near if 0 <= c[0] < SIZE and 0 <= c[1] < SIZE), key=cell_name)


def _slide(board: Board, cell: Cell) -> Board:
    tiles = list(board)
    hole = board.index(HOLE)
    tiles[hole], tiles[_index(cell)] = tiles[_index(cell)], HOLE
    return tuple(tiles)


def _deal(seed: int, number: int, options: Options) -> tuple[Board, tuple[str, ...], tuple[str, ...]]:
    """Round ``number``'s tiles, pawns and coins: the same for every seat, fixed by (seed, number).

    As the Caller does: tiles are laid left to right from the top rank down, the hole at e1.
    """
    # A string seed is hashed the same way on every run and platform (unlike hash()).
    rng = random.Random(f"easyslider:{seed}:{number}")
    tiles = list(TILES)
    rng.shuffle(tiles)
    pawns = list(SUITS)
    rng.shuffle(pawns)
    coins = list(COIN_VALUES)
    rng.shuffle(coins)
    if options.position:
        rows = _tile_rows(options.position)
        board = tuple(code for rank in range(SIZE) for code in rows[rank])
    else:
        laid = [*tiles, HOLE]  # top-left first
        board = tuple(laid[(SIZE - 1 - rank) * SIZE + file] for rank in range(SIZE) for file in range(SIZE))
    return (
        board,
        tuple(options.pawns) if options.pawns else tuple(pawns),
        tuple(options.coins) if options.coins else tuple(coins),
    )


def _start_round(state: State, number: int, playoff: int, playing: frozenset[int]) -> State:
    board, pawns, coins = _deal(state.seed, number, state.options)
    seats = tuple(SeatState(board, 0, SOLVING if s in playing else WAITING) for s in range(state.players))
    return replace(state, round=number, playoff=playoff, pawns=pawns, coins=coins, start=board,
                   seats=seats, solved_count=0)


def _playing(state: State) -> list[int]:
    return [s for s, seat in enumerate(state.seats) if seat.status != WAITING]


def _round_over(state: State) -> bool:
    playing = _playing(state)
    solving = [s for s in playing if state.seats[s].status == SOLVING]
    if state.options.scoring == "race" and len(playing) > 1:
        return len(solving) <= 1
    return not solving


def _round_points(state: State) -> tuple[int | None, ...]:
    """Points of the finished round: players beaten, where every non-fumbler beats every fumbler.

    The sheet's fumble bonus (one point per fumbler for each non-fumbler) is exactly that last part.
    """
    by_slides = state.options.scoring == "slides"

    def place(seat: SeatState) -> tuple[int, int]:
        if seat.status == SOLVED:
            return (0, seat.slides if by_slides else seat.finish)
        return (1, 0) if seat.status == LAST else (2, 0)

    playing = _playing(state)
    fumblers = sum(1 for s in playing if state.seats[s].status == FUMBLED)
    places = {s: place(state.seats[s]) for s in playing if state.seats[s].status != FUMBLED}
    points: list[int | None] = [None] * state.players
    for s in playing:
        if s in places:
            points[s] = fumblers + sum(1 for other in places.values() if other > places[s])
        else:
            points[s] = 0
    return tuple(points)


def _settle(state: State) -> State:
    """If the round is over, score it, then deal the next round (or a playoff) or end the game."""
    if not _round_over(state):
        return state
    seats = tuple(replace(seat, status=LAST) if seat.status == SOLVING else seat for seat in state.seats)
    state = replace(state, seats=seats)
    points = _round_points(state)
    result = RoundResult(state.round, state.playoff, tuple(seat.status for seat in seats),
                         tuple(seat.slides for seat in seats), points)
    totals = tuple(t + (p or 0) for t, p in zip(state.totals, points, strict=True))
    state = replace(state, totals=totals, history=(*state.history, result))
    if state.round < state.options.rounds:
        return _start_round(state, state.round + 1, 0, frozenset(range(state.players)))
    best = max(totals)
    leaders = frozenset(s for s, t in enumerate(totals) if t == best)
    if len(leaders) > 1 and state.playoff < MAX_PLAYOFFS:
        return _start_round(state, state.round + 1, state.playoff + 1, leaders)
    return replace(state, over=True)


# --- the solver ----------------------------------------------------------------------------------------

# How a player might solve a board, stage by stage: each stage brings a few tiles home while the tiles
# already home stay put.  "single" places the tiles of ranks 5 to 3 one at a time but the last two of a
# rank together (the classic corner); "pairs" places two at a time where it can, which finds shorter
# lines.  Ranks 2 and 1 are then solved column by column, with a null under each tile, and the last three
# columns together.
PLANS = {"single": ((0,), (1,), (2,), (3, 4)), "pairs": ((0, 1), (2,), (3, 4))}
NULL = "x"  # any null tile, in the solver's abstract boards
OTHER = "?"  # a tile the stage does not care about


def _stage(board: Board, locked: frozenset[int], goals: dict[int, str], nulls: tuple[int, ...]) -> list[int]:
    """The shortest run of slides (the cells the hole moves to) that puts each tile of ``goals`` on its
    cell and a null on each cell of ``nulls``, never moving a tile of ``locked`` (breadth-first over the
    board reduced to what the stage cares about)."""
    wanted = set(goals.values())

    def label(code: str) -> str:
        if code == HOLE or code in wanted:
            return code
        return NULL if nulls and code[1] == "n" else OTHER

    start = tuple(code if i in locked else label(code) for i, code in enumerate(board))
    near = [[c for c in (i - SIZE, i + SIZE) if 0 <= c < SIZE * SIZE and c not in locked]
            + [c for c in (i - 1, i + 1) if c // SIZE == i // SIZE and c not in locked]
            for i in range(SIZE * SIZE)]

    def done(labels: tuple[str, ...]) -> bool:
        return all(labels[c] == t for c, t in goals.items()) and all(labels[c] == NULL for c in nulls)

    came: dict[tuple[str, ...], tuple[tuple[str, ...], int] | None] = {start: None}
    frontier = [start]
    while frontier:
        reached = []
        for labels in frontier:
            if done(labels):
                line = []
                while (step := came[labels]) is not None:
                    labels, cell = step[0], step[1]
                    line.append(cell)
                return line[::-1]
            hole = labels.index(HOLE)
            for cell in near[hole]:
                moved = list(labels)
                moved[hole], moved[cell] = moved[cell], HOLE
                key = tuple(moved)
                if key not in came:
                    came[key] = (labels, cell)
                    reached.append(key)
        frontier = reached
    raise ValueError("this stage cannot be solved from this board")  # pragma: no cover - see PLANS


def solve(board: Board, pawns: tuple[str, ...], coins: tuple[str, ...], plan: str = "single") -> list[str]:
    """The slides (cells, as moves name them) that solve ``board`` for these pawns and coins, by a plan
    of :data:`PLANS`: every board is solved."""
    line: list[int] = []
    locked: set[int] = set()

    def run(goals: dict[int, str], nulls: tuple[int, ...] = ()) -> None:
        nonlocal board
        for cell in _stage(board, frozenset(locked), goals, nulls):
            board = _slide(board, _cell(cell))
            line.append(cell)
        locked.update(goals, nulls)

    for rank in (4, 3, 2):
        for files in PLANS[plan]:
            run({rank * SIZE + f: _target((f, rank), pawns, coins) or "" for f in files})
    for file in (0, 1):
        run({SIZE + file: _target((file, 1), pawns, coins) or ""}, (file,))
    run({SIZE + f: _target((f, 1), pawns, coins) or "" for f in (2, 3, 4)})
    return [cell_name(_cell(cell)) for cell in line]


# --- wording -------------------------------------------------------------------------------------------


def _seat_label(seat: int) -> str:
    return f"seat {seat + 1}"


# --- the engine ----------------------------------------------------------------------------------------

HELP = """\
# Easy Slider

Everyone gets the same shuffled 5x5 board of the 24 piecepack tiles (4 suits x null, ace, 2, 3, 4, 5)
with the hole at e1, and solves it on their own: slide tiles into the hole until each of the top four
rows holds the suit of its pawn (shown left of the row) and each column the value of its coin (shown
above the column).  The four nulls and the hole end in the bottom row, in any order (the "parity
sponge", which makes every board solvable).  All players move at once; nobody waits for anybody.

## Scoring
A player scores one point for every other player they beat in the round.  A player who declares
`done` on an unsolved board has **fumbled**: 0 points for the round, and out of it.  Every player who
did not fumble (the unfinished ones too) gets one bonus point for each fumbler: everyone else beats
every fumbler.  Points add up over the rounds; the most points wins.

## Options
- `scoring`: `slides` (default, the sheet's "Slide!" variant): the finishing order is the number of
  slides used, fewest first; equal counts tie and neither beats the other.  The round ends when every
  player has solved their board, fumbled or run out of time.
  `race` (the sheet's main rules): the finishing order is the order in which the finishing moves
  reached the server.  The round ends when only one player is still solving; that player is last.
- `rounds`: how many rounds, 1 to 10 (default 3).
- `pawns`, `coins`, `position` (for puzzles, tests and bug reports): fix the suits of rows 5 to 2
  (`msca`), the values of columns a to e (`2a543`, `a` the ace) and the tiles, ranks from top to
  bottom with two letters a tile and `..` for the hole, e.g.
  `m2m4m5mam3/s2s4s5sas3/c2c4c5cac3/a2a4a5aaa3/mnsncnan..`.  A position needs pawns and coins and is
  used for every round.

## Notation
Tiles are written suit then value: `S2` is the 2 of Suns, `MA` the ace of Moons, `Cn` the null of
Crowns (suits S Suns, M Moons, C Crowns, A Arms).  A move is one or more slides, each naming the cell
of the tile that moves into the hole: `e2`, or several at once, `d1 d2 c2`.  Or `done`.  Input is
forgiving: `D1, d2, C2` and `Done!` are read the same way.
Cells are chess-like: files a to e from left to right, ranks 1 to 5 from bottom to top.

## Rulings
- Every round is a new deal from the game's seed and the round number: the tiles, the order of the
  pawns and the order of the coins are shuffled, the same for every player.
- A board is finished the moment it is solved; you need not send `done`.  Slides after the one that
  solves the board in the same move are not played and not counted.
- A move of several slides is checked slide by slide; if one cannot be played, none is.
- `done` may end a move of slides (`d1 d2 done`); on a board that is not solved it is a fumble.
- In `slides` scoring a player's count is the number of slides played in the round; the finishing
  order by the clock does not matter.
- A player whose time for the round runs out is out of the round unsolved and scores as the last
  finisher: below everyone who did not fumble, including a race's last player still solving; players
  out of time tie with each other (and still beat every fumbler).
- If the lead is shared after the last round, the leaders alone play a playoff round (the others
  wait); its points are added to the totals.  If the lead is still shared, another playoff follows, at
  most 3 in all; after that the leaders share the win.
- With one player the rounds are played all the same (a solitaire puzzle); there is nobody to beat, so
  the result reports the boards solved and the slides used.
- There are no draw offers in Easy Slider: each player solves their own board, so there is no
  shared position to agree a draw on. A player may resign at any time.
"""


class EasySlider(Engine):
    """The Easy Slider engine (see the module docstring and ``HELP``)."""

    slug = "easyslider"
    summary = ("Everyone solves the same 5x5 slide puzzle of piecepack tiles at once; the fewest slides "
               "(or the fastest) wins the round.")
    title = "Easy Slider"
    players = range(1, 9)
    options = EasySliderOptions()
    simultaneous = True
    scores_absent_players = True
    help = HELP

    # --- life cycle ------------------------------------------------------------------------------------

    def new(self, players: int, options: dict[str, Any], seed: int) -> State:
        """The first round's deal for ``players`` seats."""
        if players not in self.players:
            raise ValueError(f"Easy Slider is for 1 to 8 players, not {players}.")
        opts = Options(**{k: options[k] for k in ("rounds", "scoring", "position", "pawns", "coins")
                          if k in options})
        state = State(players=players, seed=seed, options=opts, round=0, playoff=0, pawns=(), coins=(),
                      start=(), seats=(), solved_count=0, totals=(0,) * players, history=())
        return _start_round(state, 1, 0, frozenset(range(players)))

    def to_move(self, state: State) -> frozenset[int]:
        """Every seat still solving in the current round."""
        if state.over:
            return frozenset()
        return frozenset(s for s, seat in enumerate(state.seats) if seat.status == SOLVING)

    def moves(self, state: State, seat: int) -> list[str]:
        """The single slides open to ``seat`` now, then ``done``; empty if the seat is not solving."""
        if seat not in self.to_move(state):
            return []
        return [cell_name(c) for c in _sliders(state.seats[seat].board)] + ["done"]

    def notation(self, state: State, seat: int, text: str) -> str:
        """A move as the record writes it: its slides and ``done`` separated by single spaces (``E2, e3,
        D3`` is ``e2 e3 d3``; ``Done!`` is ``done``)."""
        written = []
        for word in _words(text):
            try:
                written.append(word if word == "done" else cell_name(parse_cell(word, SIZE, SIZE)))
            except IllegalMove:
                written.append(word)
        return " ".join(written)

    def play(self, state: State, seat: int, text: str) -> State:
        """Play a batch of slides (and perhaps ``done``) on ``seat``'s board, all of them or none."""
        self._check_mover(state, seat)
        words = _words(text)
        board = state.seats[seat].board
        if not words:
            raise IllegalMove("Send one or more slides, each the cell of a tile next to the hole "
                              f"(now you can slide {join_words(self.moves(state, seat)[:-1])}), or done.")
        if "done" in words[:-1]:
            raise IllegalMove("'done' comes last in a move: send your slides first, then done.")
        declare = words[-1] == "done"
        slides = words[:-1] if declare else words
        cells = []
        for word in slides:
            try:
                cells.append(parse_cell(word, SIZE, SIZE))
            except IllegalMove as exc:
                raise IllegalMove(f"{exc.message} A move names the tiles that slide into the hole, like "
                                  "d1 d2 c2, or is done. Nothing was played.") from None
        me = state.seats[seat]
        count = me.slides
        for n, cell in enumerate(cells, start=1):
            if _solved(board, state.pawns, state.coins):
                break  # finished the moment it was solved: later slides are not played
            open_cells = _sliders(board)
            if cell not in open_cells:
                raise IllegalMove(self._bad_slide(board, cell, n, len(cells), open_cells))
            board = _slide(board, cell)
            count += 1
        solved = _solved(board, state.pawns, state.coins)
        if solved:
            me = replace(me, board=board, slides=count, status=SOLVED, finish=state.solved_count + 1)
            state = replace(state, solved_count=state.solved_count + 1)
        else:
            me = replace(me, board=board, slides=count, status=FUMBLED if declare else SOLVING)
        return _settle(replace(state, seats=_put(state.seats, seat, me)))

    def time_out(self, state: State, seat: int) -> State:
        """The seat's time for the round ran out: it is out of the round, scored as the last finisher."""
        self._check_mover(state, seat)
        me = replace(state.seats[seat], status=TIMED_OUT)
        return _settle(replace(state, seats=_put(state.seats, seat, me)))

    def outcome(self, state: State) -> Outcome | None:
        """Seats ranked by total points, once the last round (and any playoff) is over."""
        if not state.over:
            return None
        return Outcome.ranked(tuple(float(t) for t in state.totals), _reason(state), notes=_notes(state))

    # --- refusals --------------------------------------------------------------------------------------

    def _check_mover(self, state: State, seat: int) -> None:
        self._check_seat(state, seat)
        if state.over:
            raise IllegalMove("The game is over.")
        status = state.seats[seat].status
        if status == SOLVING:
            return
        what = _round_name(state)
        if status == WAITING:
            raise IllegalMove(f"You are not in {what}; wait until it ends.")
        detail = {
            SOLVED: f"you solved your board in {state.seats[seat].slides} slides",
            FUMBLED: "you fumbled",
            TIMED_OUT: "your time ran out",
        }.get(status, "you are out of it")
        raise IllegalMove(f"You are done with {what} ({detail}); wait for the others to finish it.")

    @staticmethod
    def _check_seat(state: State, seat: int) -> None:
        if not 0 <= seat < state.players:
            raise IllegalMove(f"There is no seat {seat + 1} in this game of {state.players}.")

    @staticmethod
    def _bad_slide(board: Board, cell: Cell, n: int, total: int, open_cells: list[Cell]) -> str:
        name = cell_name(cell)
        hole = cell_name(_hole(board))
        after = ""
        if n > 1:
            after = " after your first slide" if n == 2 else f" after your first {n - 1} slides"
        why = f"{name} is the hole" if name == hole else f"{name} is not next to the hole at {hole}"
        why += after
        head = f"Slide {n} of {total}: " if total > 1 else ""
        tail = " None of your slides were played." if total > 1 else ""
        return f"{head}{why}; you can slide {join_words([cell_name(c) for c in open_cells])}.{tail}"

    # --- rendering -------------------------------------------------------------------------------------

    def render_text(self, state: State, seat: int | None = None, *, over: bool = False) -> str:
        """A seat's own board with pawns, coins and scores; for a spectator, a summary of all seats.

        ``over``: the game has ended though boards are still being solved (the server ended it), so it
        reads as a finished game: no slides offered, and a board still in play shows as unsolved."""
        over = over or state.over
        head = f"Easy Slider - {_round_name(state)}, {state.options.scoring} scoring"
        lines = [head if not over else "Easy Slider - the game is over", ""]
        if seat is not None and 0 <= seat < state.players and state.seats[seat].status != WAITING:
            lines += _text_board(state, state.seats[seat].board)
            lines.append("")
            lines += _text_legend()
            lines.append("")
            me = state.seats[seat]
            lines.append(f"You ({_seat_label(seat)}): {_status_words(me, over)}.")
            if not over and seat in self.to_move(state):
                lines.append(f"You can slide {join_words(self.moves(state, seat)[:-1])}.")
                lines.append("Send one or more slides, like 'd1 d2 c2', or 'done'.")
            lines.append("")
        elif seat is not None and 0 <= seat < state.players and not over:
            playing = join_words([str(s + 1) for s in _playing(state)], "and")
            lines += [f"You ({_seat_label(seat)}) are not in {_round_name(state)}: it is between the "
                      f"leaders, seats {playing}.", ""]
        lines += _text_scores(state, over)
        outcome = self.outcome(state)
        if outcome is not None:
            lines += ["", *textwrap.wrap(outcome.reason, 72)]
        return "\n".join(lines) + "\n"

    def render_svg(self, state: State, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """The seat's board (the round's deal for a spectator) with pawns, coins and a score table.

        For the seat to move, each tile that can slide carries ``data-move`` with its cell, and the
        ``done`` button carries ``data-move="done"`` (unless ``targets`` is False, or the game is
        ``over``: ended by the server, when a board still in play shows as unsolved).
        """
        over = over or state.over
        return _svg(state, seat, targets and not over and seat is not None and seat in self.to_move(state),
                    over)

    # --- storage ---------------------------------------------------------------------------------------

    def dump(self, state: State) -> dict[str, Any]:
        """A JSON-safe form of ``state``."""
        return {
            "players": state.players,
            "seed": state.seed,
            "options": vars(state.options).copy(),
            "round": state.round,
            "playoff": state.playoff,
            "pawns": "".join(state.pawns),
            "coins": "".join(state.coins),
            "start": list(state.start),
            "seats": [
                {"board": list(s.board), "slides": s.slides, "status": s.status, "finish": s.finish}
                for s in state.seats
            ],
            "solved_count": state.solved_count,
            "totals": list(state.totals),
            "history": [
                {"number": r.number, "playoff": r.playoff, "statuses": list(r.statuses),
                 "slides": list(r.slides), "points": list(r.points)}
                for r in state.history
            ],
            "over": state.over,
        }

    def seat_view(self, state: State, seat: int) -> dict[str, Any]:
        """The seat's own board and the round as dealt; every other board as dealt, and no seed (it would
        tell the deals of the rounds to come): the others' slides stay hidden until the end."""
        self._check_seat(state, seat)

        def hidden(number: int, other: SeatState) -> SeatState:
            if number == seat or other.status == WAITING:
                return other
            return SeatState(state.start, 0, SOLVING)

        seats = tuple(hidden(number, other) for number, other in enumerate(state.seats))
        return self.dump(replace(state, seed=0, seats=seats, solved_count=0))

    def load(self, data: dict[str, Any]) -> State:
        """The inverse of :meth:`dump`."""
        return State(
            players=data["players"],
            seed=data["seed"],
            options=Options(**data["options"]),
            round=data["round"],
            playoff=data["playoff"],
            pawns=tuple(data["pawns"]),
            coins=tuple(data["coins"]),
            start=tuple(data["start"]),
            seats=tuple(
                SeatState(tuple(s["board"]), s["slides"], s["status"], s["finish"]) for s in data["seats"]
            ),
            solved_count=data["solved_count"],
            totals=tuple(data["totals"]),
            history=tuple(
                RoundResult(r["number"], r["playoff"], tuple(r["statuses"]), tuple(r["slides"]),
                            tuple(r["points"]))
                for r in data["history"]
            ),
            over=data["over"],
        )


def _put(seats: tuple[SeatState, ...], seat: int, value: SeatState) -> tuple[SeatState, ...]:
    return (*seats[:seat], value, *seats[seat + 1 :])


def _round_name(state: State) -> str:
    if state.playoff:
        return f"playoff round {state.playoff}"
    return f"round {state.round} of {state.options.rounds}"


def _status_words(seat: SeatState, over: bool = False) -> str:
    """How a seat stands in the round; once the game is ``over``, a board still in play is unsolved."""
    slides = f"{seat.slides} slide{'' if seat.slides == 1 else 's'}"
    return {
        SOLVING: f"unsolved after {slides}" if over else f"solving, {slides} so far",
        SOLVED: f"solved in {slides}",
        FUMBLED: f"fumbled after {slides}",
        LAST: f"last, unsolved after {slides}",
        TIMED_OUT: f"out of time after {slides}",
        WAITING: "not in this playoff",
    }[seat.status]


def _tile_text(code: str) -> str:
    """``ma`` -> ``MA``, ``cn`` -> ``Cn``: the suit in capitals, nulls in lower case so they stand out."""
    if code == HOLE:
        return HOLE
    return code[0].upper() + (code[1] if code[1] == "n" else code[1].upper())


def _text_board(state: State, board: Board) -> list[str]:
    margin = " " * 14
    letters = margin + "".join(f"{f:>5}" for f in file_letters(SIZE))
    rule = margin + "+" + "-" * (5 * SIZE + 1) + "+"
    coins = " coins" + margin[6:] + "".join(f"{v.upper():>5}" for v in state.coins)
    lines = [coins, letters, rule]
    for rank in range(SIZE - 1, -1, -1):
        pawn = SUIT_NAMES[state.pawns[SIZE - 1 - rank]] if rank else "(nulls)"
        cells = "".join(f"{_tile_text(board[rank * SIZE + f]):>5}" for f in range(SIZE))
        lines.append(f" {pawn:<8}{rank + 1:>3}  |{cells} | {rank + 1}")
    return [*lines, rule, letters]


def _text_legend() -> list[str]:
    return [
        "Tiles: suit + value. S Suns, M Moons, C Crowns, A Arms; A ace, n null.",
        ".. is the hole. Goal: each row its pawn's suit, each column its coin's",
        "value; the four nulls and the hole anywhere in rank 1.",
    ]


def _text_scores(state: State, over: bool) -> list[str]:
    """Totals and each seat's round so far, then the points of every finished round; ``over`` when the
    game has ended (by its rules or the server's)."""
    lines = ["Seat  Total  " + ("Last round" if over else "This round")]
    for s, seat in enumerate(state.seats):
        lines.append(f"{s + 1:<4}{state.totals[s]:>7}  {_status_words(seat, over)}")
    if state.history:
        # A column per round, kept apart from the statuses so 10 rounds and playoffs fit in 72 columns.
        names = [f"r{r.number}" if not r.playoff else f"p{r.playoff}" for r in state.history]
        lines += ["", "Points by round:", "Seat" + "".join(f"{name:>4}" for name in names)]
        for s in range(state.players):
            points = ["-" if r.points[s] is None else str(r.points[s]) for r in state.history]
            lines.append(f"{s + 1:<4}" + "".join(f"{p:>4}" for p in points))
    return lines


def _notes(state: State) -> tuple[str, ...]:
    """How each seat finished, in a few words for a ranking: "12 points" (boards solved, alone)."""
    if state.players == 1:
        regular = [r for r in state.history if not r.playoff]
        solved = sum(1 for r in regular if r.statuses[0] == SOLVED)
        return (f"solved {solved} of {len(regular)}",)
    return tuple(f"{t} point{'' if t == 1 else 's'}" for t in state.totals)


def _words(text: str) -> list[str]:
    """The words of a move, lower-cased.  Players call "Done!" at the table, and may write it so; commas
    between slides are forgiven too."""
    return [w.rstrip("!.") for w in re.split(r"[\s,;]+", text.strip().lower()) if w.rstrip("!.")]


def _reason(state: State) -> str:
    rounds = f"{state.options.rounds} round{'s' if state.options.rounds > 1 else ''}"
    playoffs = sum(1 for r in state.history if r.playoff)
    if playoffs:
        rounds += f" and {playoffs} playoff{'s' if playoffs > 1 else ''}"
    if state.players == 1:
        regular = [r for r in state.history if not r.playoff]
        solved = sum(1 for r in regular if r.statuses[0] == SOLVED)
        slides = sum(r.slides[0] for r in regular)
        return f"Seat 1 solved {solved} of {len(regular)} boards, using {slides} slides in all."
    order = sorted(range(state.players), key=lambda s: (-state.totals[s], s))
    best = state.totals[order[0]]
    leaders = [s for s in order if state.totals[s] == best]
    scores = ", ".join(f"seat {s + 1} {state.totals[s]}" for s in order)
    if len(leaders) > 1:
        # Each leader as "seat N", so that the server can put each player's name in its place.
        names = join_words([f"seat {s + 1}" for s in leaders], "and")
        return f"{names[:1].upper()}{names[1:]} share the lead after {rounds}. Points: {scores}."
    return f"Seat {leaders[0] + 1} wins after {rounds}. Points: {scores}."


# --- SVG -----------------------------------------------------------------------------------------------

CELL = 60
PLACED = "#3a7d44"  # the dot on a tile already in its place
FUMBLE_WARNING = ("Your board is not solved: declaring done now is a fumble. You score 0 points for this "
                  "round and are out of it.")
LEFT = 96  # room for the pawns and rank numbers
TOP = 78  # room for the title line, the coins and file letters


def _svg(state: State, seat: int | None, active: bool, over: bool) -> str:
    showing = seat is not None and 0 <= seat < state.players and state.seats[seat].status != WAITING
    board = state.seats[seat].board if showing and seat is not None else state.start
    who = f"seat {seat + 1}" if showing and seat is not None else "the deal"
    title = f"Easy Slider, {_round_name(state)}: {who}"
    width = LEFT + SIZE * CELL + 30
    table_top = TOP + SIZE * CELL + 80
    legend_y = table_top + 22 * (state.players + 1) + 14
    height = legend_y + 12
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'aria-labelledby="es-title" font-family="sans-serif">',
        f'<title id="es-title">{escape(title)}</title>',
        f'<rect width="{width}" height="{height}" fill="#f7f3ea"/>',
        f'<text x="10" y="20" font-size="15" fill="#333">{escape(title)}</text>',
    ]
    open_cells = set(_sliders(board)) if active else set()
    for f in range(SIZE):
        x = LEFT + f * CELL + CELL // 2
        out.append(f'<circle cx="{x}" cy="{TOP - 40}" r="14" fill="#d9c9a3" stroke="#8a7650"/>')
        out.append(f'<text x="{x}" y="{TOP - 35}" font-size="14" text-anchor="middle" '
                   f'fill="#333">{state.coins[f].upper()}</text>')
        for y in (TOP - 8, TOP + SIZE * CELL + 18):
            out.append(f'<text x="{x}" y="{y}" font-size="13" text-anchor="middle" fill="#555">'
                       f'{file_letters(SIZE)[f]}</text>')
    for rank in range(SIZE):
        y = TOP + (SIZE - 1 - rank) * CELL
        out.append(f'<text x="{LEFT - 10}" y="{y + CELL // 2 + 5}" font-size="13" text-anchor="end" '
                   f'fill="#555">{rank + 1}</text>')
        out.append(f'<text x="{LEFT + SIZE * CELL + 10}" y="{y + CELL // 2 + 5}" font-size="13" '
                   f'fill="#555">{rank + 1}</text>')
        if rank:
            suit = state.pawns[SIZE - 1 - rank]
            out.append(f'<circle cx="14" cy="{y + CELL // 2}" r="7" fill="{SUIT_COLOURS[suit]}"/>')
            out.append(f'<text x="26" y="{y + CELL // 2 + 5}" font-size="13" fill="{SUIT_COLOURS[suit]}">'
                       f'{SUIT_NAMES[suit]}</text>')
        else:
            out.append(f'<text x="8" y="{y + CELL // 2 + 5}" font-size="12" fill="#777">nulls</text>')
    out.append(f'<rect x="{LEFT - 3}" y="{TOP - 3}" width="{SIZE * CELL + 6}" height="{SIZE * CELL + 6}" '
               f'fill="#e2d8c3" stroke="#8a7650"/>')
    for i, code in enumerate(board):
        if code == HOLE:
            continue
        cell = _cell(i)
        x, y = LEFT + cell[0] * CELL, TOP + (SIZE - 1 - cell[1]) * CELL
        colour = SUIT_COLOURS[code[0]]
        placed = _target(cell, state.pawns, state.coins) == code
        attrs = ""
        if cell in open_cells:
            attrs = f' class="target" data-move="{cell_name(cell)}" cursor="pointer"'
        out.append(f'<g{attrs}><title>{SUIT_NAMES[code[0]]} {VALUE_NAMES[code[1]]} on {cell_name(cell)}'
                   f'</title>')
        out.append(f'<rect x="{x + 3}" y="{y + 3}" width="{CELL - 6}" height="{CELL - 6}" rx="6" '
                   f'fill="#fffdf8" stroke="{colour if cell in open_cells else "#b5a888"}" '
                   f'stroke-width="{3 if cell in open_cells else 1}"/>')
        out.append(f'<text x="{x + CELL // 2}" y="{y + CELL // 2 + 8}" font-size="22" font-weight="bold" '
                   f'text-anchor="middle" fill="{colour}">{escape(_tile_text(code))}</text>')
        if placed:
            out.append(f'<circle cx="{x + CELL - 11}" cy="{y + 11}" r="3" fill="{PLACED}"/>')
        out.append("</g>")
    below = TOP + SIZE * CELL + 30
    if active:
        # The board is never solved while its player may still move (a solved board finishes at once), so
        # `done` here is always a fumble: the page warns before sending it.
        out.append(f'<g class="target" data-move="done" data-warning="{escape(FUMBLE_WARNING)}" '
                   'cursor="pointer"><title>done: give up this round (a fumble)</title>'
                   f'<rect x="{LEFT}" y="{below}" '
                   f'width="90" height="30" rx="6" fill="#8a7650"/><text x="{LEFT + 45}" y="{below + 20}" '
                   f'font-size="15" text-anchor="middle" fill="#fff">done</text></g>')
    if showing and seat is not None:
        out.append(f'<text x="{LEFT + 100}" y="{below + 20}" font-size="13" fill="#333">'
                   f'{escape(_status_words(state.seats[seat], over))}</text>')
    out.append(f'<text x="10" y="{table_top}" font-size="13" font-weight="bold" fill="#333">Seat'
               f'<tspan x="70">Total</tspan><tspan x="130">{"Last round" if over else "This round"}'
               f'</tspan></text>')
    for s in range(state.players):
        y = table_top + 22 * (s + 1)
        now = _status_words(state.seats[s], over)
        out.append(f'<text x="10" y="{y}" font-size="13" fill="#333">{s + 1}<tspan x="70">{state.totals[s]}'
                   f'</tspan><tspan x="130">{escape(now)}</tspan></text>')
    out.append(f'<circle cx="14" cy="{legend_y - 4}" r="3" fill="{PLACED}"/>')
    out.append(f'<text x="22" y="{legend_y}" font-size="12" fill="#555">= a tile already in its place '
               '(right suit and value)</text>')
    out.append("</svg>")
    return "\n".join(out)


engine = EasySlider()
