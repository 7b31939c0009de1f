"""The move path against its floor: ``pbem.game.play.submit`` beside a bare transaction writing the same rows.

Run: ``.venv/bin/python bench/movepath.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too: scratch databases are created and dropped).

Two identical databases are made, each holding the same two-player Cambio games between two players
who take a mail for every move.  On the first, moves go through ``pbem.game.play.submit`` exactly as a web
request or a mail would send them (engine, record, clocks, the outbox's two mails).  Every statement
that move sends to the database is recorded; on the second database the floor then runs, in one bare
transaction taken with the write lock first, a read of the game row and the very same writes with the
very same values: the rows a move must write, with none of the work that decides them.  The two are
interleaved move by move, so that whatever else the machine is doing weighs on both alike.

It prints, per database: the median and p90 wall time of a move and of its floor, their ratio (the
target is within 2x), and the statements a move sends (reads and writes).
"""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from sqlalchemy import event

from bench.scratch import ScratchDatabases, analyse, arguments
from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.game import play, queries

GAMES = 40
WRITES = ("INSERT", "UPDATE", "DELETE")


def _app(url: str):
    return create_app({
        "server": {"secret_key": "bench-secret-not-for-any-real-server",
                   "instance_path": tempfile.mkdtemp(prefix="pbem-bench-")},
        "database": {"url": url},
    })


def setup(url: str) -> None:
    """The schema, two players and ``GAMES`` fresh Cambio games between them."""
    app = _app(url)
    with app.app_context():
        db.create_all()
        alice = User(handle="alice", handle_key="alice", email="alice@example.org")
        bob = User(handle="bob", handle_key="bob", email="bob@example.org")
        db.session.add_all([alice, bob])
        db.session.flush()
        for seed in range(GAMES):
            play.create_game("cambio", [alice, bob], {"size": 5}, created_by=alice, seed=seed)
        db.session.commit()
        db.session.remove()
        analyse(db.engine)
        db.engine.dispose()


@contextmanager
def recording(engine: sa.Engine) -> Iterator[list[tuple[str, Any, bool]]]:
    """Every statement the engine sends while inside, with its parameters."""
    sent: list[tuple[str, Any, bool]] = []

    def before(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
               executemany: bool) -> None:
        sent.append((statement, parameters, executemany))

    event.listen(engine, "before_cursor_execute", before)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", before)


def floor_transaction(conn: sa.Connection, dialect: str, game_id: int,
                      writes: list[tuple[str, Any, bool]]) -> None:
    """The bare transaction: lock, read the game row, write what the move wrote, commit."""
    if dialect == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        conn.exec_driver_sql("SELECT * FROM game WHERE id = ?", (game_id,)).fetchall()
    else:
        conn.exec_driver_sql("BEGIN")
        conn.exec_driver_sql("SELECT * FROM game WHERE id = %(id)s FOR UPDATE", {"id": game_id}).fetchall()
    for statement, parameters, _many in writes:
        conn.exec_driver_sql(statement, parameters)
    conn.exec_driver_sql("COMMIT")


def run(real_url: str, floor_url: str, label: str, moves_per_game: int) -> None:
    """Play the games on ``real_url`` through the move path and the floor on ``floor_url``; print."""
    app = _app(real_url)
    floor_engine = sa.create_engine(floor_url)
    synchronous = app.config["PBEM"]["database"]["sqlite_synchronous"].upper()  # As the server commits.
    if floor_engine.dialect.name == "sqlite":
        @event.listens_for(floor_engine, "connect")
        def _sqlite(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA foreign_keys=ON")
            dbapi_connection.execute(f"PRAGMA synchronous={synchronous}")
    rng = random.Random(7)
    real_times: list[float] = []
    floor_times: list[float] = []
    statements: list[int] = []
    written: list[int] = []
    with app.app_context(), floor_engine.connect() as floor:
        if floor_engine.dialect.name != "sqlite":
            floor = floor.execution_options(isolation_level="AUTOCOMMIT")  # BEGIN by hand
        users = {u.id: u for u in db.session.scalars(sa.select(User))}
        game_ids = list(db.session.scalars(sa.select(Game.id).order_by(Game.id)))
        db.session.rollback()
        for _round in range(moves_per_game):
            for game_id in game_ids:
                game = db.session.get(Game, game_id)
                if game.status != "active":
                    continue
                engine = queries.engine_of(game)
                state = queries.state_of(game)
                (seat_number,) = engine.to_move(state)
                seat = next(s for s in game.seats if s.number == seat_number)
                user = users[seat.user_id]
                move = rng.choice(engine.moves(state, seat_number))
                expect = queries.next_move_number(game, seat)
                db.session.rollback()
                with recording(db.engine) as sent:
                    started = time.perf_counter()
                    play.submit(game_id, user, move, "web", expect=expect)
                    real_times.append(time.perf_counter() - started)
                writes = [s for s in sent if s[0].lstrip().upper().startswith(WRITES)]
                statements.append(len(sent))
                written.append(len(writes))
                started = time.perf_counter()
                floor_transaction(floor, floor_engine.dialect.name, game_id, writes)
                floor_times.append(time.perf_counter() - started)
        db.session.remove()
        db.engine.dispose()
    floor_engine.dispose()
    real, bare = statistics.median(real_times), statistics.median(floor_times)
    p90 = statistics.quantiles(real_times, n=10)[-1]
    bare_p90 = statistics.quantiles(floor_times, n=10)[-1]
    if floor_engine.dialect.name == "sqlite":
        label = f"{label} {synchronous.lower()}"  # The commit's wait for the disk weighs on both sides.
    print(f"{label:<11} {len(real_times):>6} {1000 * real:>9.2f} {1000 * p90:>8.2f} {1000 * bare:>9.2f} "
          f"{1000 * bare_p90:>8.2f} {real / bare:>7.2f}x {statistics.mean(statements):>6.1f} "
          f"{statistics.mean(written):>6.1f}", flush=True)


def sqlite_case(moves_per_game: int) -> None:
    """Both databases as SQLite files, one a copy of the other."""
    with tempfile.TemporaryDirectory() as tmp:
        setup(f"sqlite:///{tmp}/real.db")
        shutil.copy(f"{tmp}/real.db", f"{tmp}/floor.db")
        run(f"sqlite:///{tmp}/real.db", f"sqlite:///{tmp}/floor.db", "sqlite", moves_per_game)


def postgresql_case(admin_url: str, moves_per_game: int) -> None:
    """Both databases on PostgreSQL, the floor's made from the other as a template."""
    with ScratchDatabases(admin_url) as scratch:
        real = scratch.create()
        setup(real)
        run(real, scratch.create(template=real), "postgresql", moves_per_game)


def main() -> None:
    """Run on SQLite, and on PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--moves", type=int, default=8, help="moves per game (40 games)")
    args = parser.parse_args()
    print(f"{'database':<11} {'moves':>6} {'move ms':>9} {'p90':>8} {'floor ms':>9} {'p90':>8} "
          f"{'ratio':>8} {'stmts':>6} {'writes':>6}")
    sqlite_case(args.moves)
    if args.pg:
        postgresql_case(args.pg, args.moves)


if __name__ == "__main__":
    main()
