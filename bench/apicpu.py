"""The CPU an API GET costs the server process, through the Flask test client, kept and rendered, beside
a bare Flask app answering the same bytes.

Run: ``.venv/bin/python bench/apicpu.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too).

The database is the one ``bench/web.py`` fills, and the routes are the API client's of
``bench/scratch.py``'s ``routes``, read with a Bearer token.  Each figure is ``time.process_time`` over a
few hundred requests (as ``bench/pagecpu.py`` measures pages), so it does not wander with the other work
on a loaded machine as ``bench/web.py``'s wall-clock rates do; per route, the answer rendered afresh
(nothing kept), kept, and the floor are measured in turns, ``--turns`` times, and the medians printed with
the ratio of kept to the floor.  On PostgreSQL the database server's CPU for the kept answers is added to
them ("db" is that share).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.pagecpu import DatabaseCpu, bare_ms, cpu_ms, kept_ms
from bench.scratch import arguments, each_database, machine, routes, wanted
from bench.web import SECRET, fill, route_ids
from pbem import create_app
from pbem.api.kept import MAX_BYTES, answers_of


def measure(url: str, label: str, requests: int, turns: int, only: str) -> None:
    """Fill the database at ``url``, then each API GET's CPU rendered, kept and bare."""
    print(f"{label}: {machine()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        active, handle = fill(url, tmp)
        ids = route_ids(url, tmp, active, handle)
        app = create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url},
                          "ratelimit": {"enabled": False}})
        client = app.test_client()
        client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {ids['token']}"
        answers, server = answers_of(app), DatabaseCpu(url)
        for reader, route in routes():
            if reader != "client" or not wanted(only, route):
                continue
            path = route.format(**ids)
            body = client.get(path).get_data()
            rendered, kept, database, bare = [], [], [], []
            for _ in range(turns):
                answers.max_bytes = 0
                answers.clear()
                rendered.append(cpu_ms(client, path, requests))
                answers.max_bytes = MAX_BYTES
                ms, db_ms = kept_ms(client, path, requests, server)
                kept.append(ms + (db_ms or 0.0))
                database.append(db_ms or 0.0)
                bare.append(bare_ms(body, requests))
            kept_median, bare_median = statistics.median(kept), statistics.median(bare)
            print(f"{label:<11} {route[:44]:<44} {len(body):>7} {statistics.median(rendered):>9.2f} "
                  f"{kept_median:>7.2f} {statistics.median(database):>6.2f} {bare_median:>6.2f} "
                  f"{kept_median / bare_median:>6.2f}x", flush=True)
    print(f"{label}: load average after {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--requests", type=int, default=200, help="requests measured per figure")
    parser.add_argument("--turns", type=int, default=3, help="figures of each kind per route, in turns")
    parser.add_argument("--only", default="",
                        help="only the routes whose path contains one of these (comma-separated)")
    args = parser.parse_args()
    print(f"{'database':<11} {'route':<44} {'bytes':>7} {'rendered':>9} {'kept':>7} {'db':>6} {'bare':>6} "
          f"{'ratio':>7}   (ms of CPU per request, medians; ratio kept/bare)")
    for url, label in each_database(args.pg):
        measure(url, label, args.requests, args.turns, args.only)


if __name__ == "__main__":
    main()
