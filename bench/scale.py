"""Flat with data: the CPU each read route costs at 10,000, 100,000 and 1,000,000 finished games.

Run: ``.venv/bin/python bench/scale.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too: scratch databases are created and dropped).
``--sizes 10000,100000`` runs fewer sizes (the million takes minutes to fill on a shared machine).

One database per size, filled in bulk as ``bench/archive.py`` fills its own (1,000 players with two seats
each, so a player has 20, 200 or 2,000 finished games; the two whose pages are read meet in 60 more, so
that their pages list as many games at every size), with every player rated in every game, the
players' tallies counted (as ``pbem verify`` rebuilds them), four games played to their end and two
left in play through the move path (the game pages need real states).  Then every route a visitor, a
signed-in player or an API client reads (each page and each API GET, with their ids and handles filled
in; the forms that show no data, the development mailbox, the static files and the signed links are left
out) is requested through the Flask test client on each database in turn, the sizes interleaved, three
turns.  A figure is the CPU of this process per request (``time.process_time``), with nothing kept by
the page cache (every page rendered, as after a change): on PostgreSQL the database server's own CPU for
the same requests is added (read from /proc, as ``bench/pagecpu.py`` does).

It prints, per route, the min and median over the turns at each size and the ratio of the medians at the
largest and smallest size: target at most 1.5x ("ok", else "GROWS").
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.security import generate_password_hash

from bench.archive import USERS, fill, play_some
from bench.pagecpu import DatabaseCpu
from bench.scratch import ScratchDatabases, analyse, arguments, machine, routes, tournament, wanted
from pbem import create_app
from pbem.accounts import apitokens
from pbem.api.kept import answers_of
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, User, utcnow
from pbem.game import play, queries, tallies
from pbem.web.pagecache import cache_of

SECRET = "bench-scale-secret-not-for-any-real-server"
PASSWORD = "bench scale password"
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
ENGINES = ("cambio", "carreaux", "truchet")
TURNS = 3


def _app(url: str, tmp: str) -> Flask:
    return create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url},
                       "ratelimit": {"enabled": False}})


def build(url: str, tmp: str, size: int) -> dict[str, Any]:
    """Fill a fresh database with ``size`` finished games and what the routes need; the ids, handles and
    token the routes are asked with."""
    app = _app(url, tmp)
    with app.app_context():
        db.create_all()
        started = time.perf_counter()
        fill(size)
        # The two players the pages show, p0 and p5, meet in the first 60 games: their pages list as
        # many games at every size (a page shows 50), so that only the data behind them grows.
        db.session.execute(sa.text("UPDATE seat SET user_id = CASE number WHEN 0 THEN 1 ELSE 6 END "
                                   "WHERE game_id <= 60"))
        db.session.execute(sa.insert(Rating.__table__), [
            {"user_id": u, "engine": e, "rating": 1200 + (u * 37 + n * 11) % 700, "deviation": 60.0,
             "volatility": 0.06, "games": 2 * size // USERS, "last_game_at": utcnow(), "updated_at": utcnow()}
            for u in range(1, USERS + 1) for n, e in enumerate(ENGINES)])
        db.session.commit()
        finished = play_some(4)
        player, opponent = db.session.get(User, 1), db.session.get(User, 2)
        active = []
        for n in range(2):
            game = play.create_game("cambio", [player, opponent], {}, created_by=player, seed=n)
            db.session.commit()
            active.append(game.id)
            for _ in range(3):  # A record to show, and a turn on the clock.
                game = db.session.get(Game, game.id)
                state = queries.state_of(game)
                (seat,) = queries.engine_of(game).to_move(state)
                move = queries.engine_of(game).moves(state, seat)[0]
                db.session.rollback()
                play.submit(game.id, game.seats[seat].user, move, "web")
        player = db.session.get(User, 1)
        player.password_hash = generate_password_hash(PASSWORD)
        db.session.execute(sa.text("DELETE FROM outbox_mail"))
        db.session.commit()
        _row, token = apitokens.create(db.session.get(User, 1), "bench")
        tour = tournament(db.session.get(User, 1), [db.session.get(User, n) for n in (1, 2, 6)])
        tallies.rebuild()
        if db.engine.dialect.name == "sqlite":
            db.session.execute(sa.text("ANALYZE"))
            db.session.commit()
        analyse(db.engine)
        print(f"  {size:>9,} games filled in {time.perf_counter() - started:.0f} s", flush=True)
        db.session.remove()
        db.engine.dispose()
    return {"fin": finished[0], "act": active[0], "player": "p0", "other": "p5", "token": token, "tour": tour}


class Reader:
    """One database's app and its three readers."""

    def __init__(self, url: str, tmp: str, ids: dict[str, Any]) -> None:
        self.app = _app(url, tmp)
        self.server = DatabaseCpu(url)
        # Nothing kept: every page and every API answer rendered.
        cache_of(self.app).max_bytes = answers_of(self.app).max_bytes = 0
        self.visitor, self.player, self.client = (self.app.test_client() for _ in range(3))
        token = TOKEN.search(self.player.get("/login").get_data(as_text=True))
        answer = self.player.post("/login", data={"login": ids["player"], "password": PASSWORD,
                                                  **({"csrf_token": token.group(1)} if token else {})})
        assert answer.status_code == 302, answer.get_data(as_text=True)
        self.headers = {"Authorization": f"Bearer {ids['token']}"}
        self.ids = ids

    def cpu_ms(self, reader: str, path: str, requests: int) -> float:
        """Milliseconds of CPU per request of ``path`` (a route of :func:`routes`) by ``reader`` (and of
        the database server's)."""
        path = path.format(**self.ids)
        client: FlaskClient = getattr(self, reader)
        headers = self.headers if reader == "client" else {}
        for _ in range(3):
            answer = client.get(path, headers=headers)
            assert answer.status_code == 200, (reader, path, answer.status_code)
        before_server = self.server.seconds()
        start = time.process_time()
        for _ in range(requests):
            client.get(path, headers=headers)
        used = time.process_time() - start
        after_server = self.server.seconds()
        if before_server is not None and after_server is not None:
            used += after_server - before_server
        return used * 1000 / requests

    def close(self) -> None:
        """Let go of the database."""
        with self.app.app_context():
            db.session.remove()
            db.engine.dispose()
        if self.server.engine is not None:
            self.server.engine.dispose()


@contextmanager
def databases(label: str, admin: str, sizes: list[int]) -> Iterator[list[str]]:
    """One empty database per size, on SQLite files or scratch PostgreSQL databases."""
    if label == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield [f"sqlite:///{tmp}/scale{size}.db" for size in sizes]
    else:
        with ScratchDatabases(admin) as scratch:
            yield [scratch.create() for _ in sizes]


def measure(label: str, admin: str, sizes: list[int], requests: int, only: str = "") -> None:
    """Fill one database per size, then time every route on each (with ``only``, those whose reader and
    path contain it), interleaved, and print the table."""
    print(f"{label}: {machine()}", flush=True)
    with databases(label, admin, sizes) as urls, tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        readers = []
        for url, size in zip(urls, sizes, strict=True):
            ids = build(url, tmp, size)
            reader = Reader(url, tmp, ids)
            stack.callback(reader.close)
            readers.append(reader)
        table = [(who, path) for who, path in routes() if wanted(only, f"{who} {path}")]
        figures: dict[tuple[str, str], list[list[float]]] = {key: [[] for _ in sizes] for key in table}
        for _turn in range(TURNS):
            for key in table:
                for n, reader in enumerate(readers):
                    figures[key][n].append(reader.cpu_ms(*key, requests))
        print(f"  load average after {os.getloadavg()[0]:.1f}; ms of CPU per request, min/median of {TURNS}")
        head = "".join(f"{size:>16,}" for size in sizes)
        print(f"  {'reader':<8} {'route':<38}{head} {'ratio':>7}")
        grows = []
        for (who, path), per_size in figures.items():
            medians = [statistics.median(values) for values in per_size]
            ratio = medians[-1] / medians[0]
            cells = "".join(f"{min(values):>8.2f}/{statistics.median(values):<7.2f}" for values in per_size)
            verdict = "ok" if ratio <= 1.5 else "GROWS"
            if verdict != "ok":
                grows.append(path)
            print(f"  {who:<8} {path[:38]:<38}{cells} {ratio:>6.2f}x {verdict}", flush=True)
        print(f"  {len(table) - len(grows)} of {len(table)} routes within 1.5x"
              + (f"; over: {', '.join(grows)}" if grows else ""), flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000",
                        help="finished games in each database, comma-separated, smallest first")
    parser.add_argument("--requests", type=int, default=30, help="requests per figure")
    parser.add_argument("--no-sqlite", action="store_true", help="only PostgreSQL")
    parser.add_argument("--only", default="",
                        help="only the routes whose reader and path contain one of these (comma-separated, "
                             "such as 'client')")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if not args.no_sqlite:
        measure("sqlite", "", sizes, args.requests, args.only)
    if args.pg:
        measure("postgresql", args.pg, sizes, args.requests, args.only)


if __name__ == "__main__":
    main()
