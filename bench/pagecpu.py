"""The CPU a page costs the server process, through the Flask test client: for a visitor and for a
signed-in player, with the pages kept (as served) and with nothing kept (every page rendered).

Run: ``.venv/bin/python bench/pagecpu.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too).

The database is the one ``bench/web.py`` fills.  Each figure is ``time.process_time`` over a few hundred
requests of one page, so it does not wander with the other work on the machine as wall-clock rates do;
both figures of a page come from the same run, the kept one and the rendered one in turn.  The floor, a
bare Flask app answering the same bytes the same way, is printed beside them.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask
from flask.testing import FlaskClient

from bench.scratch import arguments, each_database
from bench.web import PASSWORD, SECRET, fill
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


def bare_ms(body: bytes, requests: int) -> float:
    """The floor: a bare Flask app answering ``body``, measured the same way."""
    bare = Flask("bare")
    bare.add_url_rule("/", "page", lambda: (body, 200, {"Content-Type": "text/html; charset=utf-8"}))
    return cpu_ms(bare.test_client(), "/", requests)


def measure(url: str, label: str, requests: int) -> None:
    """Fill the database at ``url``, then each page's CPU for a visitor and a player, kept and not."""
    with tempfile.TemporaryDirectory() as tmp:
        active, handle = fill(url, tmp)
        app = create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url},
                          "ratelimit": {"enabled": False}})
        visitor, player = app.test_client(), app.test_client()
        token = TOKEN.search(player.get("/login").get_data(as_text=True))
        answer = player.post("/login", data={"login": handle, "password": PASSWORD,
                                             **({"csrf_token": token.group(1)} if token else {})})
        assert answer.status_code == 302, answer.get_data(as_text=True)
        player.get("/")
        cache = cache_of(app)
        for name, path in (("game page", f"/games/{active}"), ("/", "/"), ("/archive", "/archive")):
            for who, client in (("visitor", visitor), ("player", player)):
                body = client.get(path).get_data()
                if who == "player" and b"Sign out" not in body:
                    raise RuntimeError(f"the player is not signed in on {path}")
                cache.max_bytes = 0
                cache.clear()
                rendered = cpu_ms(client, path, requests)
                cache.max_bytes = 32 * 2**20
                kept = cpu_ms(client, path, requests)
                print(f"{label:<11} {name:<10} {who:<8} {len(body):>7} {rendered:>9.2f} {kept:>9.2f} "
                      f"{bare_ms(body, requests):>7.2f}", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--requests", type=int, default=300, help="requests measured per figure")
    args = parser.parse_args()
    print(f"{'database':<11} {'page':<10} {'reader':<8} {'bytes':>7} {'rendered':>9} {'kept':>9} "
          f"{'bare':>7}   (ms of CPU per request)")
    for url, label in each_database(args.pg):
        measure(url, label, args.requests)


if __name__ == "__main__":
    main()
