"""Carreaux legal moves: the plain breadth-first search per pair against the per-size tables, then
random play under the game's rules.

Run: ``.venv/bin/python bench/carreaux.py`` (a few minutes; ``--quick`` uses a tenth of the positions
and games).  ``--shares 2000 300`` only plays random games from the default start, 2,000 on 6x6 and 300
on 8x8, and prints how they end with a 95% margin: the shares docs/RULES.md gives.

For random positions (the default start's tiles shuffled, the bubble anywhere, no group
complete) it computes Red's lowering slides both ways, checks they agree, and prints both medians and
the speed-up, plus the one-time preparation and table memory per size.  Then it plays random games from
the default start (200 on 6x6 and 50 on 8x8 under the defaults, when_stuck=least-rise with the
no-repeat rule; 200 on 6x6 with group_value=spanning), choosing uniformly among the legal moves, and
prints the median time of moves() over every position met, the results and the game lengths.

Figures (2 cores shared with other work, Python 3.11; moves() timed on a state whose choice is not yet
worked out):

    tables vs plain search, median moves(): 4x4 0.060 ms (plain 13 ms), 6x6 0.112 ms (plain 586 ms),
        8x8 0.213 ms (plain 8.5 s)
    6x6 least-rise smallest: moves() median 0.079 ms; 200 games: Red 38%, Blue 46%, draws 15%;
        length min 29, p10 57, median 103, p90 241, max 455; none hit the cap of 20,000 plies
    8x8 least-rise smallest: moves() median 0.185 ms; 50 games: Red 42%, Blue 24%, draws 34%;
        length min 211, p10 327, median 586, p90 1058, max 1798; none hit the cap
    6x6 least-rise spanning: moves() median 0.198 ms; 200 games: Red 46%, Blue 53%, draws 0%;
        length min 35, p10 61, median 120, p90 272, max 553; none hit the cap
    8x8 least-rise spanning: moves() median 0.477 ms; 50 games: Red 44%, Blue 36%, draws 20%;
        length min 487, p10 692, median 1201, p90 2154, max 3265; none hit the cap
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from marshmallow import ValidationError

from games import carreaux
from games.carreaux import engine, slide_distance_bfs
from games.coords import cell_name


def _cell(index: int, size: int) -> tuple[int, int]:
    return index % size, index // size


def plain_total(size: int, board: str) -> int:
    """Red's plus Blue's group value, every slide distance by a fresh breadth-first search."""
    bubble = _cell(board.index("."), size)
    total = 0
    for colour in "rb":
        tiles = [_cell(i, size) for i, c in enumerate(board) if c == colour]
        values = sorted(
            min(slide_distance_bfs(size, bubble, a, b), slide_distance_bfs(size, bubble, b, a))
            for k, a in enumerate(tiles) for b in tiles[k + 1:]
        )
        total += sum(values[:len(tiles) - 1])
    return total


def plain_moves(size: int, board: str) -> list[str]:
    """The legal slides by the plain method: every neighbour of the bubble whose slide lowers the total."""
    bubble = board.index(".")
    f, r = _cell(bubble, size)
    total = plain_total(size, board)
    legal = []
    for nf, nr in ((f, r + 1), (f + 1, r), (f, r - 1), (f - 1, r)):
        if 0 <= nf < size and 0 <= nr < size:
            tile = nr * size + nf
            cells = list(board)
            cells[bubble], cells[tile] = cells[tile], "."
            if plain_total(size, "".join(cells)) < total:
                legal.append(cell_name((nf, nr)))
    return legal


def random_positions(size: int, count: int, rng: random.Random) -> list[carreaux.State]:
    """``count`` random positions with Red to move: shuffled default tiles, no group already complete."""
    out: list[carreaux.State] = []
    while len(out) < count:
        cells = list(carreaux.default_board(size))
        rng.shuffle(cells)
        try:
            options = engine.options.load({"position": carreaux.written("".join(cells), size),
                                           "when_stuck": "draw"})
        except ValidationError:
            continue
        out.append(engine.new(2, options, 0))
    return out


def random_games(size: int, games: int, options: dict[str, str], cap: int = 20_000) -> None:
    """Play ``games`` random games from the default start; print moves() median, results and lengths."""
    loaded = engine.options.load({"size": size, **options})
    timings: list[float] = []
    lengths: list[int] = []
    results = {"Red": 0, "Blue": 0, "draw": 0}
    capped = 0
    for seed in range(games):
        rng = random.Random(seed)
        state = engine.new(2, loaded, 0)
        while not state.over and len(state.history) < cap:
            cold = dataclasses.replace(state)  # a copy without the choice play() worked out already
            t0 = time.perf_counter()
            legal = engine.moves(cold, cold.turn)
            timings.append(time.perf_counter() - t0)
            state = engine.play(state, state.turn, rng.choice(legal))
        capped += not state.over
        lengths.append(len(state.history))
        results["draw" if state.winner is None else carreaux.NAMES[state.winner]] += 1
    lengths.sort()
    pct = {name: f"{100 * count / games:.0f}%" for name, count in results.items()}
    rules = " ".join(f"{k}={v}" for k, v in options.items())
    print(
        f"{size}x{size} {rules}: moves() median {statistics.median(timings) * 1000:.3f} ms over "
        f"{len(timings)} positions; {games} games: Red {pct['Red']}, Blue {pct['Blue']}, "
        f"draws {pct['draw']}; "
        f"length min {lengths[0]}, p10 {lengths[games // 10]}, median {statistics.median(lengths):.0f}, "
        f"p90 {lengths[games * 9 // 10]}, max {lengths[-1]}; {capped} hit the cap of {cap} plies"
    )


def shares(size: int, games: int, cap: int = 20_000) -> None:
    """Play ``games`` random games from the default start under the defaults (seeds 0 to games - 1) and
    print how they ended: Red's, Blue's and the drawn shares, each with its 95% margin, the share that
    ends with a winner, and the median length (the figures docs/RULES.md quotes)."""
    loaded = engine.options.load({"size": size})
    results = {"Red": 0, "Blue": 0, "draw": 0}
    lengths = []
    for seed in range(games):
        rng = random.Random(seed)
        state = engine.new(2, loaded, 0)
        while not state.over and len(state.history) < cap:
            state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))
        lengths.append(len(state.history))
        results["draw" if state.winner is None else carreaux.NAMES[state.winner]] += 1

    def share(count: int) -> str:
        p = count / games
        return f"{100 * p:.1f}% ± {196 * (p * (1 - p) / games) ** 0.5:.1f}"

    print(f"{size}x{size}, {games} random games: Red {share(results['Red'])}, Blue {share(results['Blue'])}, "
          f"drawn {share(results['draw'])}; with a winner {share(results['Red'] + results['Blue'])}; "
          f"median length {statistics.median(lengths):.0f} plies")


def main() -> None:
    """Print preparation, memory, both medians and the speed-up per size, then random play."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the positions")
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--shares", nargs=2, type=int, metavar=("GAMES_6X6", "GAMES_8X8"),
                        help="only measure how random games end (docs/RULES.md: 2000 and 300)")
    args = parser.parse_args()
    if args.shares:
        shares(6, args.shares[0])
        shares(8, args.shares[1])
        return
    counts = {4: 200, 6: 200, 8: 20}
    if args.quick:
        counts = {size: max(2, n // 10) for size, n in counts.items()}
    rng = random.Random(args.seed)

    for size in (4, 6, 8, 10):
        carreaux.tables.cache_clear()
        t0 = time.perf_counter()
        tables = carreaux.tables(size)
        prep = time.perf_counter() - t0
        print(f"{size}x{size}: preparation {prep * 1000:.0f} ms, tables {tables.nbytes / 2**20:.2f} MiB")

    for size, count in counts.items():
        carreaux.tables(size)
        fast_times, plain_times, legal_counts = [], [], []
        for state in random_positions(size, count, rng):
            state = dataclasses.replace(state)  # without the choice new() worked out already
            t0 = time.perf_counter()
            fast = engine.moves(state, 0)
            t1 = time.perf_counter()
            plain = plain_moves(size, state.board)
            t2 = time.perf_counter()
            if sorted(fast) != sorted(plain):
                raise SystemExit(f"disagreement on {carreaux.written(state.board, size)}: {fast} != {plain}")
            fast_times.append(t1 - t0)
            plain_times.append(t2 - t1)
            legal_counts.append(len(fast))
        fast_ms = statistics.median(fast_times) * 1000
        plain_ms = statistics.median(plain_times) * 1000
        print(
            f"{size}x{size}: {count} positions agree ({sum(legal_counts)} legal slides in all); "
            f"median moves(): plain BFS {plain_ms:.1f} ms, tables {fast_ms:.3f} ms, "
            f"speed-up {plain_ms / fast_ms:.0f}x"
        )

    scale = 10 if args.quick else 1
    defaults = {"when_stuck": "least-rise", "group_value": "smallest"}
    random_games(6, 200 // scale, defaults)
    random_games(8, 50 // scale, defaults)
    random_games(6, 200 // scale, {"when_stuck": "least-rise", "group_value": "spanning"})
    random_games(8, 50 // scale, {"when_stuck": "least-rise", "group_value": "spanning"})


if __name__ == "__main__":
    main()
