"""The computer players' strength and cost (issue #31): for each two-player game, the hard player
against a random one and against the easy player, sides alternating, with each player's CPU per move;
and Box Off's and Easy Slider's solvers on fresh deals.

    .venv/bin/python bench/bots.py [--games 100] [--deals 100] [--only cambio,truchet] [--jobs 2]

Targets: hard beats random in >= 95% of the games and easy in >= 70% (a draw counts half), in at most
2 s of CPU per move on the default board sizes; Box Off's hard player clears every clearable deal and
Easy Slider's solves every round.  Each player sees only its seat's view (``Engine.seat_view``), as
``pbem bots`` does through the API.  Prints a table; exits 1 when a target is missed.  Plays game 1 of
every pairing, then game 2 of every pairing and so on, logging each game's figures to stderr as it ends,
so that a run cut short still has as many games of each pairing.  Runs the games in ``--jobs`` processes
(each game is one process's CPU, so CPU per move is not shared).

With ``--record FILE`` each finished game is appended to FILE (a JSON line: the game, pairing, number,
points, CPU, moves, plies, the load average and the code's version: a digest of ``games/players.py`` and
the game's engine module), and games already recorded there for the same version are not played again:
a run cut short goes on where it stopped, in a later run or on another day, and the table counts every
recorded game of the current code.  A change to the players or the engine starts the count afresh.
``bench/results/bots.jsonl`` is the project's record (``make bench-bots`` plays into it).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import random
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import games
from games import players

DUELS = ("cambio", "carreaux", "truchet")
PAIRINGS = (("hard", "random"), ("hard", "easy"))
POINTS = {"win": 1.0, "draw": 0.5, "loss": 0.0}
MAX_PLIES = 1000


def duel(slug: str, first: str, second: str, number: int) -> dict[str, Any]:
    """One game of ``first`` against ``second`` (``first`` takes seat 1 in even-numbered games): the
    first player's points, and each player's CPU seconds and moves."""
    engine = games.get(slug)
    sides = (first, second) if number % 2 == 0 else (second, first)
    state = engine.new(2, engine.options.load({}), seed=number)
    rng = random.Random(number)
    cpu = {first: 0.0, second: 0.0}
    moves = {first: 0, second: 0}
    plies = 0
    while engine.outcome(state) is None and plies < MAX_PLIES:
        seat = min(engine.to_move(state))
        who = sides[seat]
        started = time.process_time()
        if who == "random":
            move = rng.choice(engine.moves(state, seat))
        else:
            view = engine.load(engine.seat_view(state, seat) or {})
            move = players.choose(engine, view, seat, who, rng).move or ""
        cpu[who] += time.process_time() - started
        moves[who] += 1
        state = engine.play(state, seat, move)
        plies += 1
    ended = engine.outcome(state)
    points = POINTS[ended.results[sides.index(first)]] if ended else 0.5
    return {"points": points, "cpu": cpu, "moves": moves, "plies": plies}


def code_version(slug: str) -> str:
    """A digest of what decides a game between the players: games/players.py and the game's engine."""
    digest = hashlib.sha256()
    for source in (inspect.getsourcefile(players), inspect.getsourcefile(type(games.get(slug)))):
        digest.update(Path(str(source)).read_bytes())
    return digest.hexdigest()[:16]


def recorded(path: Path | None) -> dict[tuple[str, str, str, int], dict[str, Any]]:
    """The games recorded in ``path`` for the current code, by (game, first, second, number)."""
    if path is None or not path.exists():
        return {}
    versions = {slug: code_version(slug) for slug in DUELS}
    found = {}
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if versions.get(entry["game"]) == entry["version"]:
            found[entry["game"], entry["first"], entry["second"], entry["number"]] = entry
    return found


def solitaire(slug: str, number: int) -> dict[str, Any]:
    """One deal of Box Off (8x6, 3 colours, clearable) or one game of Easy Slider (3 rounds) for the hard
    player alone: whether it cleared or solved everything, with its CPU per move."""
    engine = games.get(slug)
    state = engine.new(1, engine.options.load({}), seed=number)
    rng = random.Random(number)
    cpu, moves = 0.0, 0
    while engine.outcome(state) is None:
        view = engine.load(engine.seat_view(state, 0) or {})
        started = time.process_time()
        move = players.choose(engine, view, 0, "hard", rng).move or ""
        cpu += time.process_time() - started
        moves += 1
        state = engine.play(state, 0, move)
    ended = engine.outcome(state)
    assert ended is not None
    return {"ok": ended.results[0] == "win" if slug == "boxoff" else
            all(r.statuses[0] == "solved" for r in state.history), "cpu": cpu, "moves": moves,
            "slides": sum(r.slides[0] for r in state.history) if slug == "easyslider" else None}


def main() -> int:
    """Play the duels and the deals; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="games per pairing and game (100)")
    parser.add_argument("--deals", type=int, default=100, help="Box Off deals and Easy Slider games (100)")
    parser.add_argument("--only", default="", help="comma-separated games to bench (all by default)")
    parser.add_argument("--jobs", type=int, default=2, help="processes (2)")
    parser.add_argument("--record", default="", help="a file of recorded games to go on from and add to")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    missed = []
    with ProcessPoolExecutor(args.jobs) as pool:
        pairings = [(slug, first, second) for slug in DUELS if not only or slug in only
                    for first, second in PAIRINGS]
        # Game by game in turn across the pairings, each game's figures logged to stderr as it ends, so
        # that a run cut short still gives as many games of every pairing.
        record = Path(args.record) if args.record else None
        done = recorded(record)
        versions = {slug: code_version(slug) for slug, _first, _second in pairings}
        futures: dict[tuple[str, str, str, int], Future[dict[str, Any]]] = {}
        for number in range(args.games):
            for slug, first, second in pairings:
                if (slug, first, second, number) not in done:
                    futures[slug, first, second, number] = pool.submit(duel, slug, first, second, number)
        if done:
            print(f"{len(done)} games recorded for this code in {record}; {len(futures)} to play",
                  file=sys.stderr, flush=True)
        for (slug, first, second, number), future in futures.items():
            found = future.result()
            if record is not None:
                entry = {"game": slug, "first": first, "second": second, "number": number,
                         "version": versions[slug], "load": round(os.getloadavg()[0], 1), **found}
                with record.open("a") as out:
                    out.write(json.dumps(entry) + "\n")
            done[slug, first, second, number] = found
            print(f"{slug} {first} vs {second} game {number}: points {found['points']}, plies "
                  f"{found['plies']}, CPU {found['cpu'][first]:.2f} s / {found['moves'][first]} moves "
                  f"and {found['cpu'][second]:.3f} s / {found['moves'][second]} moves", file=sys.stderr,
                  flush=True)
        for slug, first, second in pairings:
            found = [done[slug, first, second, number] for number in range(args.games)
                     if (slug, first, second, number) in done]
            if not found:
                continue
            score = sum(f["points"] for f in found) / len(found)
            per_move = {who: sum(f["cpu"][who] for f in found)
                        / max(1, sum(f["moves"][who] for f in found)) for who in (first, second)}
            worst = max(f["cpu"][first] / max(1, f["moves"][first]) for f in found)
            target = 0.95 if second == "random" else 0.70
            ok = score >= target and per_move[first] <= 2.0
            if not ok:
                missed.append(f"{slug} {first} vs {second}")
            print(f"{slug:9} {first} vs {second:6}: {score:6.1%} of {len(found)} games (target "
                  f"{target:.0%}); CPU/move {first} {per_move[first]:.3f} s (worst game's mean "
                  f"{worst:.3f}), {second} {per_move[second]:.4f} s; plies/game "
                  f"{sum(f['plies'] for f in found) / len(found):.0f} {'ok' if ok else 'MISSED'}", flush=True)
        for slug in ("boxoff", "easyslider"):
            if only and slug not in only:
                continue
            found = list(pool.map(solitaire, [slug] * args.deals, range(args.deals)))
            cleared = sum(f["ok"] for f in found)
            per_move = sum(f["cpu"] for f in found) / max(1, sum(f["moves"] for f in found))
            slides = [f["slides"] for f in found if f["slides"] is not None]
            extra = f"; slides per game {sum(slides) / len(slides):.0f}" if slides else ""
            what = "deals cleared" if slug == "boxoff" else "games with every round solved"
            if cleared < len(found):
                missed.append(slug)
            print(f"{slug:10} hard: {cleared}/{len(found)} {what}; CPU/move {per_move:.3f} s{extra}",
                  flush=True)
    if missed:
        print("missed:", ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
