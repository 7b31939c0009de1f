"""Tournaments at scale: pairing a Swiss round of 1,000 players, and the standings page of a 1,000-player
Swiss.

Run: ``.venv/bin/python bench/tournament.py`` (SQLite, in a scratch file).

- pairing: 1,000 players are given three rounds of history (paired by :func:`pbem.tournament.pairing.swiss`
  itself, results drawn at random), then round 4 is paired, five times; target: under 2 s.
- standings page: a Swiss of 1,000 entries with three rounds played and the fourth in play (2,000
  pairings) is written in bulk, then ``/tournaments/<id>`` (standings with Buchholz and median Buchholz,
  the round's 500 pairings) is fetched 300 times through the Flask test client; target: p99 under 50 ms.

Each line prints ours, the target and their ratio (under 1 is within it).
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from pbem import create_app
from pbem.accounts.accounts import handle_key
from pbem.core.extensions import db
from pbem.core.models import Tournament, TournamentGame, TournamentPlayer, User, utcnow
from pbem.tournament import pairing

PLAYERS = 1000
REQUESTS = 300


Played = list[tuple[int, int, int, str]]


def history(rng: random.Random, rounds: int) -> tuple[list[pairing.SwissPlayer], Played]:
    """``PLAYERS`` Swiss players after ``rounds`` rounds, and the pairings played (round, first, second,
    first's result)."""
    players = {i: pairing.SwissPlayer(i, 0.0) for i in range(1, PLAYERS + 1)}
    played = []
    for number in range(1, rounds + 1):
        ranked = sorted(players.values(), key=lambda p: (-p.score, p.id))
        made = pairing.swiss(ranked)
        for first, second in made.pairs:
            result = rng.choice(("1", "½", "0"))
            points = {"1": 1.0, "½": 0.5, "0": 0.0}[result]
            players[first].score += points
            players[second].score += 1 - points
            for me, other, side in ((first, second, 1), (second, first, 2)):
                players[me].opponents.add(other)
                players[me].balance += 1 if side == 1 else -1
                players[me].last_side = side
            played.append((number, first, second, result))
    return sorted(players.values(), key=lambda p: (-p.score, p.id)), played


def bench_pairing() -> list[tuple[int, int, int, str]]:
    """Time round 4's pairing; returns the three rounds of history for the page."""
    rng = random.Random(32)
    ranked, played = history(rng, 3)
    seconds = []
    for _ in range(5):
        started = time.perf_counter()
        made = pairing.swiss(ranked)
        seconds.append(time.perf_counter() - started)
        assert len(made.pairs) == PLAYERS // 2
    worst = max(seconds)
    print(f"Swiss round of {PLAYERS} players paired: median {statistics.median(seconds):.2f} s, worst "
          f"{worst:.2f} s; target 2 s; ratio {worst / 2:.2f}", flush=True)
    return played


def p99(values: list[float]) -> float:
    """The 99th percentile."""
    return statistics.quantiles(values, n=100)[98]


def bench_page(played: list[tuple[int, int, int, str]]) -> None:
    """Fill a scratch SQLite database and time the standings page."""
    path = Path(tempfile.mkdtemp(prefix="pbem-bench-")) / "pbem.db"
    app = create_app({
        "server": {"secret_key": "bench-secret-not-for-any-real-server", "instance_path": str(path.parent)},
        "database": {"url": f"sqlite:///{path}"},
    })
    with app.app_context():
        db.create_all()
        now = utcnow()
        db.session.execute(sa.insert(User.__table__), [
            {"id": i, "handle": f"player{i:04d}", "handle_key": handle_key(f"player{i:04d}"),
             "email": f"player{i}@example.org", "verified_at": now, "mail_key_hash": "x" * 64,
             "session_token": f"s{i}", "token_secret": f"t{i}", "notify": "move", "vacation_days_used": 0.0,
             "is_admin": False, "placeholder": False, "created_at": now, "time_zone": "UTC",
             "mail_bounces": 0} for i in range(1, PLAYERS + 1)])
        tournament = Tournament(name="Bench open", engine="cambio", options={}, time_control={}, rated=True,
                                format="swiss", settings={"rounds": 5}, min_players=2, max_players=PLAYERS,
                                status="running", round=4, organiser_id=1, version=1, started_at=now)
        db.session.add(tournament)
        db.session.flush()
        db.session.execute(sa.insert(TournamentPlayer.__table__), [
            {"tournament_id": tournament.id, "user_id": i, "status": "active", "seed": i, "joined_at": now}
            for i in range(1, PLAYERS + 1)])
        rows = [{"tournament_id": tournament.id, "round": number, "kind": "game", "first_id": first,
                 "second_id": second, "result": result, "void": False, "created_at": now}
                for number, first, second, result in played]
        ids = list(range(1, PLAYERS + 1))
        random.Random(4).shuffle(ids)
        rows += [{"tournament_id": tournament.id, "round": 4, "kind": "game", "first_id": ids[i],
                  "second_id": ids[i + 1], "result": None, "void": False, "created_at": now}
                 for i in range(0, PLAYERS, 2)]
        db.session.execute(sa.insert(TournamentGame.__table__), rows)
        db.session.commit()
        url = f"/tournaments/{tournament.id}"
    client = app.test_client()
    for _ in range(5):
        assert client.get(url).status_code == 200
    gc.collect()
    gc.freeze()  # As a served process does (pbem.wsgi).
    wall, cpu = [], []
    for _ in range(REQUESTS):
        started, used = time.perf_counter(), time.process_time()
        response = client.get(url)
        wall.append(1000 * (time.perf_counter() - started))
        cpu.append(1000 * (time.process_time() - used))
        assert response.status_code == 200
    print(f"Standings page of a {PLAYERS}-player Swiss ({len(rows)} pairings), {REQUESTS} requests, load "
          f"average {os.getloadavg()[0]:.1f}: median {statistics.median(wall):.1f} ms, "
          f"p99 {p99(wall):.1f} ms (CPU p99 {p99(cpu):.1f} ms); target p99 50 ms; "
          f"ratio {p99(wall) / 50:.2f}", flush=True)
    with app.app_context():
        db.engine.dispose()


def main() -> None:
    """Both benchmarks."""
    bench_page(bench_pairing())


if __name__ == "__main__":
    main()
