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

The figure is CPU, not wall time (a durable commit's wall time swings tenfold on these disks and squeezes
every wall ratio toward 1): this process's CPU (``time.process_time``) plus, on PostgreSQL, the CPU of the
server process serving the connection (``/proc/PID/schedstat``; the server runs on this machine).  Each
turn plays ``--moves`` moves per game on a fresh pair of databases, alike in every turn.

It prints, per database: CPU ms a move and of its floor (and the database server's part of each), their
ratio (the target: within 3x on SQLite, 2x on PostgreSQL), the same in wall time, the statements a move
sends (reads and writes), and the load average; each figure as min/median over the turns of each turn's
median.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from sqlalchemy import event

from bench.scratch import ScratchDatabases, analyse, arguments, load_average, machine
from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.game import play, queries

GAMES = 40
WRITES = ("INSERT", "UPDATE", "DELETE")


def writes_rows(statement: str) -> bool:
    """Whether ``statement`` writes: an INSERT, UPDATE or DELETE, or one with such parts (PostgreSQL's
    data-modifying WITH: the move's record entry, game and seats in one statement)."""
    words = statement.lstrip().upper()
    return words.startswith(WRITES) or (words.startswith("WITH") and any(w in words for w in WRITES))


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


# What :func:`recording` notes, with ``ends``, where a transaction ended (no parameters).
COMMIT, ROLLBACK = "COMMIT", "ROLLBACK"


@contextmanager
def recording(engine: sa.Engine, ends: bool = False) -> Iterator[list[tuple[str, Any, bool]]]:
    """Every statement the engine sends while inside, with its parameters (and with ``ends``, each
    transaction's end: ``COMMIT`` or ``ROLLBACK``, no parameters)."""
    sent: list[tuple[str, Any, bool]] = []

    def before(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
               executemany: bool) -> None:
        sent.append((statement, parameters, executemany))

    def ended(word: str) -> Callable[[Any], None]:
        return lambda _conn: sent.append((word, None, False))

    hooks: list[tuple[str, Callable[..., None]]] = [("before_cursor_execute", before)]
    if ends:
        hooks += [("commit", ended(COMMIT)), ("rollback", ended(ROLLBACK))]
    for name, hook in hooks:
        event.listen(engine, name, hook)
    try:
        yield sent
    finally:
        for name, hook in hooks:
            event.remove(engine, name, hook)


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


def backend_cpu(pid: int | None) -> float:
    """CPU seconds a PostgreSQL backend (a process on this machine) has used; 0 for none (SQLite).

    Read from ``/proc/PID/schedstat`` (nanoseconds, the scheduler's own sum of the time the process ran)
    where the kernel keeps it, else ``/proc/PID/stat``'s user and system time (in ticks of 10 ms, too
    coarse for one move, but summed over hundreds of moves the ticks fall where the time went)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/schedstat") as stat:
            return int(stat.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def backend_pid(dbapi_connection: Any) -> int | None:
    """The server process serving a DBAPI connection (psycopg), or None (SQLite)."""
    info = getattr(dbapi_connection, "info", None)
    return getattr(info, "backend_pid", None)


@dataclass
class Turn:
    """One turn's figures, per move: CPU (this process plus the database server's) and wall, both sides."""

    cpu: list[float] = field(default_factory=list)
    floor_cpu: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)  # The database server's share of cpu.
    floor_server_cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    floor_wall: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)
    written: list[int] = field(default_factory=list)


def run(real_url: str, floor_url: str, moves_per_game: int) -> Turn:
    """Play the games on ``real_url`` through the move path and the floor on ``floor_url``, move by move."""
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
    turn = Turn()
    with app.app_context(), floor_engine.connect() as floor:
        floor_pid = backend_pid(floor.connection.dbapi_connection)
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
                pid = backend_pid(db.session.connection().connection.dbapi_connection)
                # The read transaction is left open, as a web request leaves its own: the move path ends it.
                with recording(db.engine) as sent:
                    server = backend_cpu(pid)
                    cpu, started = time.process_time(), time.perf_counter()
                    play.submit(game_id, user, move, "web", expect=expect)
                    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                    server = backend_cpu(pid) - server
                turn.wall.append(wall)
                turn.cpu.append(cpu + server)
                turn.server_cpu.append(server)
                writes = [s for s in sent if writes_rows(s[0])]
                turn.statements.append(len(sent))
                turn.written.append(len(writes))
                server = backend_cpu(floor_pid)
                cpu, started = time.process_time(), time.perf_counter()
                floor_transaction(floor, floor_engine.dialect.name, game_id, writes)
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                server = backend_cpu(floor_pid) - server
                turn.floor_wall.append(wall)
                turn.floor_cpu.append(cpu + server)
                turn.floor_server_cpu.append(server)
        db.session.remove()
        db.engine.dispose()
    floor_engine.dispose()
    return turn


def report(label: str, turns: list[Turn]) -> None:
    """Print one database's line: min/median over the turns of each turn's medians, and the ratios."""

    def spread(figures: list[float], unit: float = 1000.0) -> str:
        return f"{unit * min(figures):.3f}/{unit * statistics.median(figures):.3f}"

    def per_turn(pick: Callable[[Turn], list[float]]) -> list[float]:
        return [statistics.median(pick(t)) for t in turns]

    ours, floor = per_turn(lambda t: t.cpu), per_turn(lambda t: t.floor_cpu)
    server, floor_server = per_turn(lambda t: t.server_cpu), per_turn(lambda t: t.floor_server_cpu)
    ratios = [o / f for o, f in zip(ours, floor, strict=True)]
    wall, floor_wall = per_turn(lambda t: t.wall), per_turn(lambda t: t.floor_wall)
    wall_ratios = [o / f for o, f in zip(wall, floor_wall, strict=True)]
    moves = sum(len(t.cpu) for t in turns)
    statements = statistics.mean(n for t in turns for n in t.statements)
    written = statistics.mean(n for t in turns for n in t.written)
    print(f"{label:<11} {moves:>6} {spread(ours):>13} {spread(server):>13} {spread(floor):>13} "
          f"{spread(floor_server):>13} {spread(ratios, 1.0):>11}x {spread(wall):>13} "
          f"{spread(floor_wall):>13} {spread(wall_ratios, 1.0):>11}x {statements:>5.1f} {written:>5.1f}  "
          f"load {load_average('/')}", flush=True)


def sqlite_case(moves_per_game: int, turns: int) -> None:
    """Both databases as SQLite files, copies of one made once; a fresh pair for each turn."""
    with tempfile.TemporaryDirectory() as tmp:
        setup(f"sqlite:///{tmp}/made.db")
        results = []
        for number in range(turns):
            for name in ("real", "floor"):
                shutil.copy(f"{tmp}/made.db", f"{tmp}/{name}{number}.db")
            results.append(run(f"sqlite:///{tmp}/real{number}.db", f"sqlite:///{tmp}/floor{number}.db",
                               moves_per_game))
        synchronous = _app(f"sqlite:///{tmp}/made.db").config["PBEM"]["database"]["sqlite_synchronous"]
        report(f"sqlite {synchronous.lower()}", results)  # The commit's wait for the disk weighs on both.


def postgresql_case(admin_url: str, moves_per_game: int, turns: int) -> None:
    """Both databases on PostgreSQL, made from one filled database as a template; a fresh pair a turn."""
    with ScratchDatabases(admin_url) as scratch:
        made = scratch.create()
        setup(made)
        results = []
        for _ in range(turns):
            results.append(run(scratch.create(template=made), scratch.create(template=made), moves_per_game))
        report("postgresql", results)


def main() -> None:
    """Run on SQLite, and on PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--moves", type=int, default=8, help="moves per game (40 games) in a turn")
    parser.add_argument("--turns", type=int, default=3, help="turns, each on a fresh pair of databases")
    args = parser.parse_args()
    print(machine())
    print("CPU ms a move (this process and the database server's), min/median over the turns of each turn's "
          "median; wall ms the same")
    print(f"{'database':<11} {'moves':>6} {'move cpu':>13} {'of it db':>13} {'floor cpu':>13} "
          f"{'of it db':>13} {'cpu ratio':>12} {'move wall':>13} {'floor wall':>13} {'wall ratio':>12} "
          f"{'stmts':>5} {'writes':>5}")
    sqlite_case(args.moves, args.turns)
    if args.pg:
        postgresql_case(args.pg, args.moves, args.turns)


if __name__ == "__main__":
    main()
