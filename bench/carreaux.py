"""Carreaux legal moves: the plain breadth-first search per pair against the per-size tables.

Run: ``cd /work/main && .venv/bin/python bench/carreaux.py`` (about a minute: the plain search is the
slow part; ``--quick`` uses a tenth of the positions).  For random positions (the default start's tiles
shuffled, the bubble anywhere, no group complete) it computes Red's legal slides both ways, checks they
agree, and prints both medians and the speed-up, plus the one-time preparation and table memory per size.
"""

from __future__ import annotations

import argparse
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
            options = engine.options.load({"position": carreaux.written("".join(cells), size)})
        except ValidationError:
            continue
        out.append(engine.new(2, options, 0))
    return out


def main() -> None:
    """Print preparation, memory, both medians and the speed-up per size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the positions")
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
