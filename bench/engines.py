"""Engine figures: legal-move listing time (median, p95) and random-playout throughput, per game.

Also Box Off's solvable-deal generation (8x6, 3 colours; target: median under 1 s) and Truchet's
``moves()`` on mid-game 7x7 positions (target: median under 50 ms).  Prints a table; asserts nothing.

    .venv/bin/python bench/engines.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import games

# (players, options) per game: every size the engines offer.
CONFIGS: dict[str, list[tuple[int, dict[str, Any]]]] = {
    "boxoff": [(1, {}), (1, {"width": 10, "height": 8, "colours": 4}), (3, {"width": 6, "height": 4})],
    "cambio": [(2, {"size": 3}), (2, {"size": 4}), (2, {"size": 5})],
    "carreaux": [(2, {"size": 4}), (2, {"size": 6}), (2, {"size": 8})],
    "easyslider": [(1, {"rounds": 1}), (4, {"rounds": 1})],
    "truchet": [(2, {"size": 5}), (2, {"size": 7})],
}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def playouts(engine: games.Engine, players: int, options: dict, count: int, max_plies: int) -> dict:
    """Random playouts: per-position ``moves()`` times (ms), plies and wall time."""
    listing: list[float] = []
    plies = 0
    loaded = engine.options.load(options)
    started = time.perf_counter()
    for seed in range(count):
        rng = random.Random(seed)
        state = engine.new(players, loaded, seed)
        for _ in range(max_plies):
            movers = engine.to_move(state)
            if not movers:
                break
            seat = rng.choice(sorted(movers))
            t0 = time.perf_counter()
            legal = engine.moves(state, seat)
            listing.append((time.perf_counter() - t0) * 1000)
            state = engine.play(state, seat, rng.choice(legal))
            plies += 1
    wall = time.perf_counter() - started
    return {"listing": listing, "plies": plies, "wall": wall, "games": count}


def boxoff_deals(count: int) -> list[float]:
    """Seconds to generate a solvable 8x6, 3-colour Box Off deal, per seed."""
    engine = games.get("boxoff")
    options = engine.options.load({"width": 8, "height": 6, "colours": 3, "solvable": True})
    times = []
    for seed in range(count):
        t0 = time.perf_counter()
        engine.new(1, options, seed)
        times.append(time.perf_counter() - t0)
    return times


def truchet_midgame(count: int) -> list[float]:
    """Milliseconds of ``moves()`` (every flip variant) on 7x7 positions 10 to 40 plies into a game."""
    engine = games.get("truchet")
    options = engine.options.load({"size": 7})
    times = []
    for seed in range(count):
        rng = random.Random(seed)
        state = engine.new(2, options, seed)
        target = rng.randint(10, 40)
        for _ in range(target):
            movers = engine.to_move(state)
            if not movers:
                break
            seat = min(movers)
            state = engine.play(state, seat, rng.choice(engine.moves(state, seat)))
        movers = engine.to_move(state)
        if movers:
            t0 = time.perf_counter()
            engine.moves(state, min(movers))
            times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer games, for a smoke run")
    args = parser.parse_args()
    count = 5 if args.quick else 30
    print(f"{'game':<11} {'players/options':<40} {'moves() median':>15} {'p95':>9} "
          f"{'plies/s':>9} {'games/s':>8}")
    for engine in games.all():
        for players, options in CONFIGS.get(engine.slug, [(min(engine.players), {})]):
            n = max(2, count // 5) if engine.slug == "truchet" else count
            r = playouts(engine, players, options, n, 3000)
            label = f"{players}p {options}"
            print(f"{engine.slug:<11} {label:<40} {statistics.median(r['listing']):>12.3f} ms "
                  f"{percentile(r['listing'], 0.95):>6.3f} ms {r['plies'] / r['wall']:>9.0f} "
                  f"{r['games'] / r['wall']:>8.2f}")
    known = {e.slug for e in games.all()}
    if "boxoff" in known:
        deals = boxoff_deals(5 if args.quick else 20)
        print(f"\nBox Off solvable 8x6/3-colour deal: median {statistics.median(deals):.3f} s, "
              f"p95 {percentile(deals, 0.95):.3f} s, max {max(deals):.3f} s over {len(deals)} seeds "
              "(target: median < 1 s)")
    if "truchet" in known:
        mid = truchet_midgame(10 if args.quick else 50)
        print(f"Truchet 7x7 mid-game moves(): median {statistics.median(mid):.1f} ms, "
              f"p95 {percentile(mid, 0.95):.1f} ms over {len(mid)} positions (target: median < 50 ms)")


if __name__ == "__main__":
    main()
