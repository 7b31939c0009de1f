"""The archive and the replay against 100,000 finished games: every page costs what the first costs.

Run: ``.venv/bin/python bench/archive.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too: a scratch database is created and dropped).  It fills a
fresh database in bulk with 100,000 finished public games of 1,000 players (two seats each, results,
endings, move counts and finish times spread over two years) and 20 Truchet and Carreaux games played to
their end through the move path, then times requests through the Flask test client:

- first page: ``/archive``;
- deep page: ``/archive?after=N`` with N half-way down (the 1,000th page);
- filtered pages: a game type with a player and a result, two players against each other, a game type
  with an ending and a date range, and a move-count range;
- replay page: ``/games/<id>?move=N`` of the played games at a random position.

Target: p99 under 50 ms for each.  Figures on the 2-core development box, nothing else running, 300
requests of each, the collector's start-up objects frozen as in a served process (``pbem.wsgi``):

                     SQLite: median     p99    PostgreSQL: median     p99
    first page             11.2 ms    18.2                 12.9 ms    14.1
    deep page              11.4 ms    16.2                 13.3 ms    14.9
    filtered page          11.4 ms    14.2                 12.7 ms    15.5
    replay page             5.9 ms    23.1                  6.8 ms    14.0

The deep page (the 1,000th) costs what the first does: keyset paging reads the same 51 index entries
wherever it starts.  Without the freeze, Python's full garbage collection over the ~110,000 long-lived
objects lands in a request every few hundred and makes the p99 (62-70 ms on SQLite in the same setting).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

import games
from bench.scratch import ScratchDatabases, analyse, machine
from pbem import create_app
from pbem.accounts.accounts import handle_key
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, set_clock
from pbem.game import play, queries

GAMES = 100_000
USERS = 1_000
PLAYED = 20
REQUESTS = 300
START = datetime(2024, 1, 1)
ENDINGS = {"cambio": ("line", "blocked", "repetition"), "carreaux": ("connection", "blocked"),
           "truchet": ("capture", "blocked", "repetition")}
SERVER_ENDINGS = ("resignation", "time", "agreement")


def fill(total: int) -> None:
    """``total`` finished games between ``USERS`` players, inserted in bulk."""
    rng = random.Random(11)
    db.session.execute(sa.insert(User.__table__), [
        {"id": i + 1, "handle": f"p{i}", "handle_key": handle_key(f"p{i}"), "email": f"p{i}@example.org",
         "verified_at": START, "mail_key_hash": "k" * 64, "session_token": "t" * 16,
         "token_secret": "s" * 32, "notify": "move",
         "vacation_days_used": 0.0, "is_admin": False, "placeholder": False, "created_at": START}
        for i in range(USERS)
    ])
    engines = list(ENDINGS)
    chunk = 10_000
    for first in range(1, total + 1, chunk):
        rows, seats = [], []
        for g in range(first, min(first + chunk, total + 1)):
            engine = engines[g % 3]
            finished = START + timedelta(seconds=g * 630 + rng.randrange(600))
            ending = rng.choice(ENDINGS[engine] + SERVER_ENDINGS)
            drawn = ending in ("agreement", "repetition") or (ending == "blocked" and engine == "carreaux")
            winner = rng.randrange(2)
            results = ["draw", "draw"] if drawn else ["win" if s == winner else "loss" for s in range(2)]
            rows.append({
                "id": g, "engine": engine, "options": {}, "seed": g, "players": 2, "state": None,
                "status": "finished", "public": g % 50 != 0, "rated": g % 7 != 0, "time_control": {},
                "ply": rng.randrange(4, 90), "created_at": finished - timedelta(days=9),
                "started_at": finished - timedelta(days=9), "updated_at": finished, "finished_at": finished,
                "result": {"results": results, "reason": f"a {ending}", "ranks": [1, 1], "scores": None},
                "ending": ending, "version": 1,
            })
            # Players spread so that each has about 200 games, against many opponents.
            a = rng.randrange(USERS)
            b = (a + 1 + rng.randrange(USERS - 1)) % USERS
            for number, user in enumerate((a, b)):
                seats.append({"game_id": g, "number": number, "user_id": user + 1, "moves_made": 0,
                              "reminders_sent": 0, "joined_at": finished, "result": results[number],
                              "finished_at": finished})
        db.session.execute(sa.insert(Game.__table__), rows)
        db.session.execute(sa.insert(Seat.__table__), seats)
    if db.engine.dialect.name == "postgresql":
        # Rows inserted with their ids leave the sequences behind; the games played next need them on.
        for table in ("user", "game", "seat"):
            sequence = f"pg_get_serial_sequence('\"{table}\"', 'id')"
            db.session.execute(sa.text(f'SELECT setval({sequence}, (SELECT max(id) FROM "{table}"))'))
    db.session.commit()


def play_some(count: int) -> list[int]:
    """``count`` Truchet and Carreaux games played to their end through the move path; their ids."""
    users = db.session.scalars(sa.select(User).where(User.id <= 40).order_by(User.id)).all()
    ids = []
    set_clock(datetime(2026, 6, 1))
    try:
        for n in range(count):
            slug = "truchet" if n % 2 else "carreaux"
            game = play.create_game(slug, [users[2 * n], users[2 * n + 1]],
                                    {"size": 5} if slug == "truchet" else {}, seed=n)
            db.session.commit()
            rng = random.Random(n)
            engine = games.get(slug)
            while game.status == "active":
                state = queries.state_of(game)
                seat = min(engine.to_move(state))
                play.submit(game.id, game.seats[seat].user, rng.choice(engine.moves(state, seat)), "web",
                            comment="a thought" if rng.random() < 0.2 else None)
                game = db.session.get(Game, game.id)
            ids.append(game.id)
    finally:
        set_clock(None)
    return ids


def _app(url: str):
    return create_app({
        "server": {"secret_key": "bench-secret-not-for-any-real-server",
                   "instance_path": tempfile.mkdtemp(prefix="pbem-bench-")},
        "database": {"url": url},
    })


def timings(client, paths: list[str]) -> tuple[list[float], list[float]]:
    """The milliseconds of each GET (after a warm-up of the first few): wall-clock, and the CPU time
    this process used (which other work on a shared machine does not inflate)."""
    for path in paths[:5]:
        client.get(path)
    wall, cpu = [], []
    for path in paths:
        started, used = time.perf_counter(), time.process_time()
        response = client.get(path)
        wall.append(1000 * (time.perf_counter() - started))
        cpu.append(1000 * (time.process_time() - used))
        assert response.status_code == 200, (path, response.status_code)
    return wall, cpu


def p99(values: list[float]) -> float:
    """The 99th percentile."""
    return statistics.quantiles(values, n=100)[98]


def run(url: str, label: str) -> None:
    """Fill the database at ``url`` and time the pages."""
    app = _app(url)
    with app.app_context():
        db.create_all()
        started = time.perf_counter()
        fill(GAMES)
        played = play_some(PLAYED)
        filled = time.perf_counter() - started
        if db.engine.dialect.name == "sqlite":  # The archive's plans are checked against SQLite's statistics.
            db.session.execute(sa.text("ANALYZE"))
            db.session.commit()
        analyse(db.engine)
        middle = db.session.scalar(
            sa.select(Game.id).where(Game.status == "finished", Game.public.is_(True))
            .order_by(Game.finished_at.desc(), Game.id.desc()).offset(GAMES // 2).limit(1))
        lengths = {g: len(db.session.get(Game, g).moves) for g in played}
        db.session.remove()
    rng = random.Random(5)
    filtered = [
        "/archive?game=truchet&player=p7&result=win",
        "/archive?player=p3&opponent=p600",
        "/archive?game=cambio&ending=time&from=2024-06-01&to=2025-06-01",
        "/archive?min_moves=80&max_moves=85&rated=yes",
    ]
    cases = {
        "first page": ["/archive"] * REQUESTS,
        "deep page": [f"/archive?after={middle}"] * REQUESTS,
        "filtered page": [filtered[i % len(filtered)] for i in range(REQUESTS)],
        "replay page": [f"/games/{g}?move={rng.randrange(lengths[g] + 1)}"
                        for g in (rng.choice(played) for _ in range(REQUESTS))],
    }
    client = app.test_client()
    # As a served process does (pbem.wsgi): what exists once started is frozen out of the collector's
    # full passes, which would otherwise walk it every few hundred requests and make the p99.
    gc.collect()
    gc.freeze()
    print(f"{label}: {GAMES} games filled in {filled:.1f} s; {machine()}", flush=True)
    print(f"  {'':<14} {'wall median':>11} {'p99':>7}   {'CPU median':>10} {'p99':>7}")
    for name, paths in cases.items():
        wall, cpu = timings(client, paths)
        verdict = "ok" if p99(wall) < 50 else "over 50 ms"
        print(f"  {name:<14} {statistics.median(wall):8.1f} ms {p99(wall):7.1f}   "
              f"{statistics.median(cpu):7.1f} ms {p99(cpu):7.1f}   {verdict}", flush=True)
    gc.unfreeze()
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


def main() -> None:
    """Run on SQLite, and on PostgreSQL when given an admin URL."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg", default=os.environ.get("PBEM_TEST_DATABASE_URL", ""),
                        help="PostgreSQL URL of a database from which scratch databases can be created")
    parser.add_argument("--no-sqlite", action="store_true", help="only PostgreSQL")
    args = parser.parse_args()
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory() as tmp:
            run(f"sqlite:///{tmp}/archive.db", "sqlite")
    if args.pg:
        with ScratchDatabases(args.pg) as scratch:
            run(scratch.create(), "postgresql")


if __name__ == "__main__":
    main()
