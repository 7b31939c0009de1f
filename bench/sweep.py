"""The deadline sweep against a big database: its time follows the due seats, not all the games.

Run: ``.venv/bin/python bench/sweep.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too: a scratch database is created and dropped).  For each
case it fills a fresh database in bulk with active two-player Cambio games, one seat of each on the
clock; of the due seats half are past a reminder point and half past their deadline.  It then times one
real sweep (reminder mails into the outbox, timeouts through the move path) and checks its report.
The cases: 10,000 games with 100 due, 100,000 with 100 due, and 100,000 with 1,000 (1%) due.

Figures on the 2-core development box (median of 3 sweeps, each on a fresh copy of the filled database;
the machine shared with other work, so the spread is wide):

    database       games    due  fill s  sweep s (median)    min    max ms per due
    sqlite         10000    100     0.8              0.11   0.11   0.13       1.12
    sqlite        100000    100     7.8              0.12   0.12   0.12       1.19
    sqlite        100000   1000     9.9              1.18   1.15   1.19       1.18
    postgresql     10000    100     1.2              0.16   0.15   0.22       1.60
    postgresql    100000    100    11.7              0.15   0.15   0.23       1.46
    postgresql    100000   1000    12.0              1.54   1.36   1.56       1.54

Ten times the games with the same due seats take the same time; ten times the due seats, about ten
times the time: the sweep's cost follows the due seats.  Timeouts run in batches of 50 games per
unit of work through ``pbem.game.play.time_out_batch`` (what each game's end reads — rating rows, record
numbers, last moves, watchers — is read once per batch), reminders in batches of 50 claimed under the
row lock.  A batch's record entries, mails, rating histories and game and seat UPDATEs are sent together
(``UnitOfWork.batched`` of ``pbem.core.unit_of_work``, one executemany per statement): 142 statements
for 1,000 due seats, where one a row made 3,582.  The machine's speed wanders by up to half between
runs; the medians above are one run.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

import games
from bench.scratch import ScratchDatabases, analyse, arguments
from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, set_clock
from pbem.schedule import sweep

NOW = datetime(2025, 3, 5, 12, 0)
USERS = 1000
CASES = ((10_000, 100), (100_000, 100), (100_000, 1_000))


def fill(total: int, due: int) -> None:
    """``total`` active games, of which ``due`` have a seat due now (half reminders, half timeouts)."""
    engine = games.get("cambio")
    options = engine.options.load({})
    state = engine.dump(engine.new(2, options, 1))
    control = {"kind": "per_move", "days": 3}
    db.session.execute(sa.insert(User.__table__), [
        {"id": i + 1, "handle": f"p{i}", "handle_key": f"p{i}", "email": f"p{i}@example.org",
         "verified_at": NOW, "mail_key_hash": "k" * 64, "session_token": "t" * 16,
         "token_secret": "s" * 32, "notify": "move",
         "vacation_days_used": 0.0, "is_admin": False, "created_at": NOW}
        for i in range(USERS)
    ])
    db.session.execute(sa.insert(Game.__table__), [
        {"id": g, "engine": "cambio", "options": options, "seed": 1, "players": 2, "state": state,
         "status": "active", "public": True, "time_control": control, "ply": 0, "created_at": NOW,
         "started_at": NOW, "updated_at": NOW, "version": 1}
        for g in range(1, total + 1)
    ])
    seats = []
    for g in range(1, total + 1):
        if g <= due // 2:  # Past its deadline.
            deadline, next_event, reminders = NOW - timedelta(minutes=g % 60 + 1), None, 2
            next_event = deadline
        elif g <= due:  # Past its 48-hour point.
            deadline, reminders = NOW + timedelta(hours=40), 0
            next_event = deadline - timedelta(hours=48)
        else:  # Later: spread over the next days.
            deadline = NOW + timedelta(hours=49, minutes=g % 5000)
            next_event, reminders = deadline - timedelta(hours=48), 0
        # Players spread so that games next to each other in the sweep seldom share one (as in life).
        first, second = (g * 37 % USERS) + 1, ((g * 37 + USERS // 2) % USERS) + 1
        seats.append({"game_id": g, "number": 0, "user_id": first, "moves_made": 0, "deadline": deadline,
                      "next_event_at": next_event, "reminders_sent": reminders, "joined_at": NOW})
        seats.append({"game_id": g, "number": 1, "user_id": second, "moves_made": 0, "deadline": None,
                      "next_event_at": None, "reminders_sent": 0, "joined_at": NOW})
    db.session.execute(sa.insert(Seat.__table__), seats)
    db.session.commit()


def _app(url: str):
    return create_app({
        "server": {"secret_key": "bench-secret-not-for-any-real-server",
                   "instance_path": tempfile.mkdtemp(prefix="pbem-bench-")},
        "database": {"url": url},
    })


def fill_database(url: str, total: int, due: int) -> float:
    """Create the tables at ``url`` and fill them; returns the seconds taken."""
    app = _app(url)
    with app.app_context():
        db.create_all()
        started = time.perf_counter()
        fill(total, due)
        filled = time.perf_counter() - started
        db.session.remove()
        analyse(db.engine)
        db.engine.dispose()
    return filled


def timed_sweep(url: str, due: int) -> float:
    """One real sweep of the database at ``url``, checked against what was due; returns its seconds."""
    app = _app(url)
    with app.app_context():
        set_clock(NOW)
        try:
            started = time.perf_counter()
            report = sweep.sweep()
            swept = time.perf_counter() - started
        finally:
            set_clock(None)
        assert (report.reminded, report.timed_out, report.failed) == (due - due // 2, due // 2, 0), report
        db.session.remove()
        db.engine.dispose()
    return swept


def sqlite_case(total: int, due: int, runs: int) -> tuple[float, list[float]]:
    """Fill one SQLite file, then sweep a fresh copy of it ``runs`` times."""
    with tempfile.TemporaryDirectory() as tmp:
        filled = fill_database(f"sqlite:///{tmp}/filled.db", total, due)
        times = []
        for run in range(runs):
            shutil.copy(f"{tmp}/filled.db", f"{tmp}/run{run}.db")
            times.append(timed_sweep(f"sqlite:///{tmp}/run{run}.db", due))
    return filled, times


def postgresql_case(admin_url: str, total: int, due: int, runs: int) -> tuple[float, list[float]]:
    """Fill one PostgreSQL database, then sweep a fresh copy of it (CREATE DATABASE … TEMPLATE) ``runs``
    times."""
    with ScratchDatabases(admin_url) as scratch:
        base = scratch.create()
        filled = fill_database(base, total, due)
        times = [timed_sweep(scratch.create(template=base), due) for _run in range(runs)]
    return filled, times


def main() -> None:
    """Run every case on SQLite, and on PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--runs", type=int, default=3, help="sweeps per case, each on a fresh copy")
    args = parser.parse_args()
    backends = ["sqlite"] + (["postgresql"] if args.pg else [])
    print(f"{'database':<11} {'games':>8} {'due':>6} {'fill s':>7} {'sweep s (median)':>17} {'min':>6} "
          f"{'max':>6} {'ms per due':>10}")
    for backend in backends:
        for total, due in CASES:
            if backend == "sqlite":
                filled, times = sqlite_case(total, due, args.runs)
            else:
                filled, times = postgresql_case(args.pg, total, due, args.runs)
            median = statistics.median(times)
            print(f"{backend:<11} {total:>8} {due:>6} {filled:>7.1f} {median:>17.2f} {min(times):>6.2f} "
                  f"{max(times):>6.2f} {1000 * median / due:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
