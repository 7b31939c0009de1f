"""Computer players: pure functions from a position a seat may know to the move it plays.

* Games of two players who take turns get a general Monte Carlo tree search (UCT) over the engine
  protocol alone: ``to_move``, ``moves``, ``play`` and ``outcome`` on the immutable states.  It knows
  nothing of any game; a strength is its budget.  Playouts run to the end while the game is cheap to
  play out; where a ply is dear (many legal moves), they are cut short so that the search still sees
  enough positions, and a cut playout is scored by the two sides' mobility (their numbers of legal
  moves), the one judgement every game of the protocol allows.  The search answers at once with a move
  that wins at once (or the only move), and stops as soon as more search could not change its choice:
  when the most visited move leads the next by more visits than the budget has iterations left.
* Box Off and Easy Slider, where each seat solves its own board, get their solvers
  (:func:`games.boxoff.solve`, :func:`games.easyslider.solve`): the hard player clears every clearable
  deal and solves every round in few slides; the easy one plays as a person might.

A player is given only what its seat may know: the engines' :meth:`games.Engine.seat_view`.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from games import DRAW, WIN, Engine, boxoff, easyslider

__all__ = ["STRENGTHS", "Budget", "Decision", "choose", "plays"]

STRENGTHS = ("easy", "medium", "hard")


@dataclass(frozen=True)
class Budget:
    """What a strength may spend on a move: search iterations, CPU seconds, and how many playouts it
    wants at least (playouts are cut short to fit them in)."""

    iterations: int
    seconds: float
    playouts: int


BUDGETS = {
    "easy": Budget(iterations=40, seconds=0.05, playouts=40),
    "medium": Budget(iterations=400, seconds=0.4, playouts=200),
    "hard": Budget(iterations=20_000, seconds=1.6, playouts=300),
}

# The longest playout, in plies, however cheap the game: a game that has not ended by then is scored as
# a cut playout is.
MAX_PLAYOUT = 200
EXPLORATION = 1.4
# The part of a move's budget spent looking for a move that wins at once before the search: enough for
# every move of Truchet's widest positions at hard, too little to let easy see more than its budget.
WIN_SCAN = 0.1


@dataclass(frozen=True)
class Decision:
    """A move to play, and the player's estimate of its chances after it (0 lost … 1 won; None where the
    player makes no estimate), by which a program resigns, offers or accepts draws."""

    move: str | None
    value: float | None = None
    visits: int = 0


def plays(engine: Engine, players: int) -> bool:
    """Whether a computer player plays this game for this many seats."""
    if engine.slug in _SOLVERS:
        return True
    return not engine.simultaneous and players == 2


def choose(engine: Engine, state: Any, seat: int, strength: str = "hard",
           rng: random.Random | None = None) -> Decision:
    """The move the computer plays for ``seat`` at ``strength`` (see :data:`STRENGTHS`); a Decision
    without a move when the seat has none."""
    if strength not in BUDGETS:
        raise ValueError(f"There is no strength {strength!r}: the strengths are {', '.join(STRENGTHS)}.")
    rng = rng or random.Random()
    legal = engine.moves(state, seat)
    if not legal:
        return Decision(None)
    solver = _SOLVERS.get(engine.slug)
    if solver is not None:
        return solver(engine, state, seat, strength, rng)
    if len(legal) == 1:
        return Decision(legal[0])
    return _Search(engine, seat, BUDGETS[strength], rng).run(state, legal)


# The tree search ---------------------------------------------------------------------------------------


class _Node:
    """A position in the tree.  ``wins`` count for the seat that moved into it (its parent's mover).
    Its legal moves are listed only when the search first goes on from it: where a ply is dear, most
    positions are only judged."""

    __slots__ = ("children", "mover", "result", "state", "untried", "visits", "wins")

    def __init__(self, state: Any, mover: int | None, result: tuple[float, ...] | None):
        self.state = state
        self.mover = mover
        self.untried: list[str] | None = None
        self.children: list[tuple[str, _Node]] = []
        self.visits = 0
        self.wins = 0.0
        self.result = result


def _settled(root: _Node, remaining: int) -> bool:
    """Whether the search's choice (its most visited move) can no longer change: the runner-up could not
    catch up even if every iteration left went to it."""
    first = second = 0
    for _, child in root.children:
        if child.visits > first:
            first, second = child.visits, first
        elif child.visits > second:
            second = child.visits
    return first - second > remaining


def _rewards(results: tuple[str, ...]) -> tuple[float, ...]:
    return tuple(1.0 if r == WIN else 0.5 if r == DRAW else 0.0 for r in results)


class _Search:
    """UCT for two players who take turns, in a CPU-time and iteration budget; without ``early_stop`` it
    spends the whole budget even when its choice is settled (to compare the two)."""

    def __init__(self, engine: Engine, seat: int, budget: Budget, rng: random.Random,
                 early_stop: bool = True) -> None:
        self.engine, self.seat, self.budget, self.rng = engine, seat, budget, rng
        self.early_stop = early_stop
        self.depth = MAX_PLAYOUT

    def node(self, state: Any) -> _Node:
        ended = self.engine.outcome(state)
        if ended is not None:
            return _Node(state, None, _rewards(ended.results))
        movers = self.engine.to_move(state)
        return _Node(state, min(movers) if movers else None, None if movers else (0.5, 0.5))

    def untried(self, node: _Node) -> list[str]:
        if node.untried is None:
            node.untried = self.engine.moves(node.state, node.mover) if node.mover is not None else []
            self.rng.shuffle(node.untried)
            if not node.untried and node.result is None:
                node.result = (0.5, 0.5)
        return node.untried

    def run(self, state: Any, legal: list[str]) -> Decision:
        started = time.process_time()
        root = self.node(state)
        root.untried = list(legal)
        self.rng.shuffle(root.untried)
        # A ply's cost, measured on the root, sets how long the playouts may be.
        sample = self.engine.play(state, self.seat, legal[0])
        self.untried(self.node(sample))
        ply = max(time.process_time() - started, 1e-6)
        self.depth = max(0, min(MAX_PLAYOUT, int(self.budget.seconds / (self.budget.playouts * ply))))
        deadline = started + self.budget.seconds
        won = self.winning_move(state, legal, started + self.budget.seconds * WIN_SCAN)
        if won is not None:
            return Decision(won, 1.0, 0)
        searching = time.process_time()
        iterations = 0
        while iterations < self.budget.iterations and (iterations < 2 or time.process_time() < deadline):
            self.iterate(root)
            iterations += 1
            move, last = root.children[-1] if root.children else ("", None)
            if last is not None and last.result is not None and last.result[self.seat] == 1.0:
                return Decision(move, 1.0, root.visits)  # A move that wins outright: look no further.
            if self.early_stop and not root.untried and len(root.children) > 1:
                now = time.process_time()
                rate = iterations / max(now - searching, 1e-9)
                remaining = min(self.budget.iterations - iterations, math.ceil(rate * (deadline - now)))
                if _settled(root, remaining):
                    break
        move, best = max(root.children, key=lambda child: (child[1].visits, child[1].wins))
        return Decision(move, best.wins / best.visits if best.visits else None, root.visits)

    def winning_move(self, state: Any, legal: list[str], until: float) -> str | None:
        """A legal move that wins at once, looked for until the CPU clock reads ``until`` (a small part of
        the budget, so that a strength's budget still sets how much it sees)."""
        for move in legal:
            if time.process_time() > until:
                return None
            ended = self.engine.outcome(self.engine.play(state, self.seat, move))
            if ended is not None and ended.results[self.seat] == WIN:
                return move
        return None

    def iterate(self, root: _Node) -> None:
        node, path = root, [root]
        while node.result is None and not self.untried(node) and node.children:
            node = self.select(node)
            path.append(node)
        if node.result is None and node.untried:
            move = node.untried.pop()
            assert node.mover is not None
            child = self.node(self.engine.play(node.state, node.mover, move))
            node.children.append((move, child))
            path.append(child)
            node = child
        parent = path[-2] if len(path) > 1 else root
        rewards = node.result if node.result is not None else self.playout(
            node, parent.mover, len(parent.untried or ()) + len(parent.children))
        for parent, child in itertools.pairwise(path):
            child.visits += 1
            if parent.mover is not None:
                child.wins += rewards[parent.mover]
        root.visits += 1

    def select(self, node: _Node) -> _Node:
        log_n = math.log(node.visits + 1)

        def score(child: _Node) -> float:
            if child.visits == 0:
                return math.inf
            return child.wins / child.visits + EXPLORATION * math.sqrt(log_n / child.visits)

        return max((child for _, child in node.children), key=score)

    def playout(self, node: _Node, other: int | None, other_count: int) -> tuple[float, ...]:
        """Random moves from the node to the end, or to the playout's length: then the position is
        judged by the engine's estimate, or else by the two sides' numbers of legal moves."""
        engine, state, mover = self.engine, node.state, node.mover
        for _ in range(self.depth):
            ended = engine.outcome(state)
            if ended is not None:
                return _rewards(ended.results)
            movers = engine.to_move(state)
            mover = min(movers) if movers else None
            legal = engine.moves(state, mover) if mover is not None else []
            if mover is None or not legal:
                return (0.5, 0.5)
            state = engine.play(state, mover, self.rng.choice(legal))
            other, other_count = mover, len(legal)
        ended = engine.outcome(state)
        if ended is not None:
            return _rewards(ended.results)
        estimate = engine.evaluate(state, 0)
        if estimate is not None:
            return (estimate, 1.0 - estimate)
        movers = engine.to_move(state)
        mover = min(movers) if movers else None
        if state is node.state:  # Judged where it stands: its moves are listed for the search anyway.
            return _mobility(mover, len(self.untried(node)), other, other_count)
        count = len(engine.moves(state, mover)) if mover is not None else 0
        return _mobility(mover, count, other, other_count)


def _mobility(mover: int | None, count: int, other: int | None, other_count: int) -> tuple[float, ...]:
    """The two seats' chances as their shares of the legal moves, kept off certainty."""
    if mover is None or other is None or mover == other or count + other_count == 0:
        return (0.5, 0.5)
    share = 0.5 + 0.4 * (count - other_count) / (count + other_count)
    chances = [0.5, 0.5]
    chances[mover], chances[other] = share, 1.0 - share
    return tuple(chances)


# The solvers of Box Off and Easy Slider ----------------------------------------------------------------


def _boxoff(engine: Engine, state: Any, seat: int, strength: str, rng: random.Random) -> Decision:
    """Hard: the solver's clearing line (with a budget, for a deal that may not clear); medium: the same
    with a small budget; easy: as a person plays, a pair with the fewest cells between, at random."""
    board = engine.seat_view(state, seat)
    assert board is not None
    legal = engine.moves(state, seat)
    budget = {"hard": 200_000, "medium": 2_000}.get(strength)
    line = boxoff.solve(board["seats"][seat]["board"], budget) if budget else None
    if line:
        return Decision(line[0], 1.0)
    spans = {move: _span(move) for move in legal}
    least = min(spans.values())
    return Decision(rng.choice([m for m in legal if spans[m] == least]))


def _span(move: str) -> int:
    """The area of the rectangle a Box Off move's two tiles span."""
    first, second = move.split("-")
    files = abs(ord(first[0]) - ord(second[0])) + 1
    ranks = abs(int(first[1:]) - int(second[1:])) + 1
    return files * ranks


# Easy Slider: slides a move (a move is at most 200 characters, three a slide).
SLIDES_PER_MOVE = {"easy": 12, "medium": 30, "hard": 60}


def _easyslider(engine: Engine, state: Any, seat: int, strength: str, rng: random.Random) -> Decision:
    """The slides that solve the round, a batch at a time: hard the shortest line of its plans, easy the
    one-tile-at-a-time line a person follows, sent a few slides at a time."""
    mine = state.seats[seat]
    plans = list(easyslider.PLANS) if strength == "hard" else ["pairs" if strength == "medium" else "single"]
    lines = [easyslider.solve(mine.board, state.pawns, state.coins, plan) for plan in plans]
    line = min(lines, key=len)
    if not line:
        return Decision("done", 1.0)
    return Decision(" ".join(line[:SLIDES_PER_MOVE[strength]]), 1.0)


_SOLVERS: dict[str, Callable[[Engine, Any, int, str, random.Random], Decision]] = {
    "boxoff": _boxoff,
    "easyslider": _easyslider,
}
