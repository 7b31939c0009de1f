"""The CPU a page costs the server process, through the Flask test client: for a visitor and for a
signed-in player, with the pages kept (as served) and with nothing kept (every page rendered).

Run: ``.venv/bin/python bench/pagecpu.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too).

The database is the one ``bench/web.py`` fills.  Each figure is ``time.process_time`` over a few hundred
requests of one page, so it does not wander with the other work on the machine as wall-clock rates do;
both figures of a page come from the same run, the kept one and the rendered one in turn.  The floor, a
bare Flask app answering the same bytes the same way, is printed beside them.  On PostgreSQL the CPU the
database server's own processes spend on a kept page is printed too ("db, kept", read from /proc: the
server must run on this machine): it is spent on the same cores.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskClient

from bench.scratch import arguments, each_database, routes, wanted
from bench.web import PASSWORD, SECRET, fill, route_ids
from pbem import create_app
from pbem.web.pagecache import cache_of

TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def cpu_ms(client: FlaskClient, path: str, requests: int) -> float:
    """Milliseconds of this process's CPU per request of ``path`` (after a few unmeasured ones)."""
    for _ in range(5):
        assert client.get(path).status_code == 200
    start = time.process_time()
    for _ in range(requests):
        client.get(path)
    return (time.process_time() - start) * 1000 / requests


# The server processes of the database, but the one asking.
_BACKENDS = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"


class DatabaseCpu:
    """The CPU time the PostgreSQL server's processes serving one database have used, read from /proc
    (the server runs on this machine): what the app's statements cost the server on the same cores.
    Nothing (None) for SQLite, or a server whose processes are not readable here."""

    def __init__(self, url: str) -> None:
        postgresql = url.startswith("postgresql")
        self.engine = sa.create_engine(url, isolation_level="AUTOCOMMIT") if postgresql else None

    def seconds(self) -> float | None:
        """CPU seconds used so far by the server processes of the database, this reader's own left out."""
        if self.engine is None:
            return None
        with self.engine.connect() as connection:
            pids = connection.exec_driver_sql(_BACKENDS).scalars().all()
        ticks = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                return None
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")


def kept_ms(client: FlaskClient, path: str, requests: int, server: DatabaseCpu) -> tuple[float, float | None]:
    """:func:`cpu_ms` of a kept page, and the database server's CPU milliseconds per request meanwhile."""
    before = server.seconds()
    ms = cpu_ms(client, path, requests)
    after = server.seconds()
    return ms, (None if before is None or after is None else (after - before) * 1000 / requests)


def bare_ms(body: bytes, requests: int) -> float:
    """The floor: a bare Flask app answering ``body``, measured the same way."""
    bare = Flask("bare")
    bare.add_url_rule("/", "page", lambda: (body, 200, {"Content-Type": "text/html; charset=utf-8"}))
    return cpu_ms(bare.test_client(), "/", requests)


def pages(ids: dict[str, object], every: bool, only: str) -> list[tuple[str, str, str]]:
    """(name, reader, path) of the pages measured: the game page, ``/`` and the archive for both readers,
    or with ``every`` each page of ``bench/scratch.py``'s routes (a visitor's and a player's), those
    whose route holds one of ``only``'s comma-separated texts."""
    if not every:
        core = (("game page", "/games/{act}"), ("/", "/"), ("/archive", "/archive"))
        chosen = [(name, who, path) for name, path in core for who in ("visitor", "player")]
    else:
        chosen = [(path, who, path) for who, path in routes() if who != "client"]
    return [(name[:34], who, path.format(**ids)) for name, who, path in chosen if wanted(only, path)]


def measure(url: str, label: str, requests: int, every: bool = False, only: str = "") -> None:
    """Fill the database at ``url``, then each page's CPU for a visitor and a player, kept and not."""
    with tempfile.TemporaryDirectory() as tmp:
        active, handle = fill(url, tmp)
        ids = route_ids(url, tmp, active, handle)
        app = create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url},
                          "ratelimit": {"enabled": False}})
        visitor, player = app.test_client(), app.test_client()
        token = TOKEN.search(player.get("/login").get_data(as_text=True))
        answer = player.post("/login", data={"login": handle, "password": PASSWORD,
                                             **({"csrf_token": token.group(1)} if token else {})})
        assert answer.status_code == 302, answer.get_data(as_text=True)
        player.get("/")
        cache = cache_of(app)
        server = DatabaseCpu(url)
        clients = {"visitor": visitor, "player": player}
        for name, who, path in pages(ids, every, only):
            client = clients[who]
            answer = client.get(path)
            body = answer.get_data()
            if who == "player" and answer.mimetype == "text/html" and b"Sign out" not in body:
                raise RuntimeError(f"the player is not signed in on {path}")
            cache.max_bytes = 0
            cache.clear()
            rendered = cpu_ms(client, path, requests)
            cache.max_bytes = 32 * 2**20
            kept, database = kept_ms(client, path, requests, server)
            print(f"{label:<11} {name:<34} {who:<8} {len(body):>7} {rendered:>9.2f} {kept:>9.2f} "
                  f"{'' if database is None else f'{database:.2f}':>9} "
                  f"{bare_ms(body, requests):>7.2f}", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--requests", type=int, default=300, help="requests measured per figure")
    parser.add_argument("--every", action="store_true",
                        help="every page of bench/scratch.py's routes (else the game page, /, the archive)")
    parser.add_argument("--only", default="",
                        help="only the pages whose route holds one of these texts (comma-separated)")
    args = parser.parse_args()
    print(f"{'database':<11} {'page':<34} {'reader':<8} {'bytes':>7} {'rendered':>9} {'kept':>9} "
          f"{'db, kept':>9} {'bare':>7}   (ms of CPU per request)")
    for url, label in each_database(args.pg):
        measure(url, label, args.requests, args.every, args.only)


if __name__ == "__main__":
    main()
