"""Who plays whom: the pairings of each format, as pure functions of player ids, scores and histories.

Nothing here reads the database; :mod:`pbem.tournament.rounds` gives these functions what the records
say and turns their answers into games.  A pairing is ``(first, second)``: ``first`` takes seat 1 (the
side that moves first), ``second`` seat 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

Pair = tuple[int, int]

# A Swiss round is matched in blocks of about this many players in ranking order: networkx's
# maximum-weight matching is cubic in the players it is given, and a block of this size matches in a few
# milliseconds, so a round of 1,000 pairs in well under the 2 seconds the bench asks.  A block whose
# players cannot all be paired (everyone in it has met) takes in the next one and is matched again.
SWISS_BLOCK = 12


def round_robin(players: Sequence[int], double: bool = False) -> list[Pair]:
    """Every pairing of ``players`` at once (correspondence style), each once — or twice, on both sides,
    when ``double``.  Sides are balanced: of the pairs ``players[i]``, ``players[j]`` (i < j), the first
    named takes seat 1 when i + j is odd, so each player moves first in half their games (within one)."""
    pairs: list[Pair] = []
    for i, a in enumerate(players):
        for j in range(i + 1, len(players)):
            b = players[j]
            pair = (a, b) if (i + j) % 2 else (b, a)
            pairs.append(pair)
            if double:
                pairs.append((pair[1], pair[0]))
    return pairs


@dataclass
class SwissPlayer:
    """What a Swiss pairing knows of a player: their score (in points), their opponents so far, how many
    more games they have played first than second (``balance``), the side of their last game (1, 2 or 0
    for none) and whether they have had a bye."""

    id: int
    score: float
    opponents: set[int] = field(default_factory=set)
    balance: int = 0
    last_side: int = 0
    had_bye: bool = False


@dataclass
class SwissRound:
    """A Swiss round's pairings, and the player given the bye (when the number is odd)."""

    pairs: list[Pair]
    bye: int | None


class PairingError(Exception):
    """No pairing without a rematch exists (more rounds than the players allow)."""


def swiss(players: Sequence[SwissPlayer]) -> SwissRound:
    """A Swiss round: players ``players`` (in ranking order, best first: score, then tie-breaks or seed)
    paired by score, no one meeting an opponent twice, sides balanced.

    With an odd number the lowest-ranked player without a bye yet sits out with the bye.  The rest are
    matched with networkx's maximum-weight matching (Edmonds' blossom algorithm), in blocks of
    :data:`SWISS_BLOCK` in ranking order, each pair weighted so that the same scores meet, the top half
    of a score meets its bottom half, and each player gets the side they are owed."""
    ranked = list(players)
    bye = None
    if len(ranked) % 2:
        candidates = [p for p in reversed(ranked) if not p.had_bye] or list(reversed(ranked))
        bye = candidates[0].id
        ranked = [p for p in ranked if p.id != bye]
    segments = _segments(len(ranked))
    matched: dict[int, list[Pair]] = {}
    i = 0
    while i < len(segments):
        low, high = segments[i]
        found = _match(ranked[low:high])
        if found is not None:
            matched[i] = found
            i += 1
        elif i + 1 < len(segments):
            # Everyone in the block cannot be paired: take in the next block and try again.
            segments[i] = (low, segments.pop(i + 1)[1])
        elif i > 0:
            # The last block cannot be paired alone: take it into the one before, and pair that again.
            segments[i - 1] = (segments[i - 1][0], segments.pop(i)[1])
            i -= 1
            matched.pop(i, None)
        else:
            raise PairingError("Every remaining pairing would be a rematch.")
    return SwissRound([pair for i in range(len(segments)) for pair in matched[i]], bye)


def _segments(total: int) -> list[tuple[int, int]]:
    """The blocks of ``total`` ranked players: :data:`SWISS_BLOCK` each, the last one taking the rest
    when a block would be short."""
    segments, start = [], 0
    while start < total:
        end = _block_end(total, start)
        segments.append((start, end))
        start = end
    return segments


def _block_end(total: int, start: int) -> int:
    """Where the block beginning at ``start`` ends: :data:`SWISS_BLOCK` on, or the end when what would
    be left is smaller than a block."""
    end = start + SWISS_BLOCK
    return total if total - end < SWISS_BLOCK else end


def _match(block: list[SwissPlayer]) -> list[Pair] | None:
    """The best pairing of ``block``, everyone paired; None if the rematches forbid it."""
    # Imported here: networkx is 12 MB, which every process that loads the tournaments (each web worker,
    # for a game's end) would carry, and only a Swiss round's pairing uses it.
    import networkx as nx

    graph = nx.Graph()
    half = len(block) / 2
    for i, a in enumerate(block):
        for j in range(i + 1, len(block)):
            b = block[j]
            if b.id in a.opponents:
                continue
            # Scores first (a gap of half a point costs more than anything else), then sides, then the
            # top half of a score group meeting its bottom half.
            gap = round(abs(a.score - b.score) * 2)
            weight = 1_000_000 - 10_000 * gap * gap - 1_000 * _side_clash(a, b) - int(abs((j - i) - half))
            graph.add_edge(i, j, weight=weight)
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    if 2 * len(matching) != len(block):
        return None
    return [_sides(block[i], block[j]) for i, j in sorted(tuple(sorted(m)) for m in matching)]


def _wants_first(p: SwissPlayer) -> int:
    """How strongly ``p`` is owed the first side: positive owed first, negative owed second."""
    if p.balance:
        return -p.balance * 2
    return {1: -1, 2: 1}.get(p.last_side, 0)


def _side_clash(a: SwissPlayer, b: SwissPlayer) -> int:
    """What pairing ``a`` with ``b`` costs in sides: both owed the same side; most when one of them would
    then be two games off balance."""
    wa, wb = _wants_first(a), _wants_first(b)
    if wa * wb <= 0:
        return 0
    return 20 if min(abs(wa), abs(wb)) >= 2 else 1


def _sides(a: SwissPlayer, b: SwissPlayer) -> Pair:
    """Who of ``a`` and ``b`` moves first: the one more owed it; the higher-ranked (``a``) when even."""
    wa, wb = _wants_first(a), _wants_first(b)
    return (b.id, a.id) if wb > wa else (a.id, b.id)


def knockout_seeding(size: int) -> list[int]:
    """The bracket order of seeds 1..``size`` (a power of two): 1 meets ``size``, and the two best seeds
    can meet only in the final (1, 8, 4, 5, 2, 7, 3, 6 for eight)."""
    order = [1]
    while len(order) < size:
        total = 2 * len(order) + 1
        order = [x for seed in order for x in (seed, total - seed)]
    return order


def knockout_first_round(players: Sequence[int]) -> list[tuple[int, int | None]]:
    """The first round of a knockout of ``players`` in seed order (best first): the bracket filled to a
    power of two, the best seeds given byes (``None`` opponents) where the field is short."""
    size = 1
    while size < len(players):
        size *= 2
    order = knockout_seeding(size)
    # The field is more than half the bracket, so every pair of slots holds its better seed: only the
    # second of a pair can be empty.
    return [(players[a - 1], players[b - 1] if b <= len(players) else None)
            for a, b in zip(order[::2], order[1::2], strict=True)]
