"""The pages under load, beside their floor: a bare Flask app serving the very same bytes.

Run: ``.venv/bin/python bench/web.py`` (SQLite; add ``--pg ADMIN_URL``, or set ``PBEM_TEST_DATABASE_URL``,
for PostgreSQL too).  Needs gunicorn (installed with the project) and wrk (``apt-get install wrk``).

A database is filled through the one move path with finished and active games of every kind.  The
server then runs under gunicorn with 2 sync workers, as docs/DEPLOY.md runs it, and wrk loads each page
over loopback with 32 connections.  Each page's bytes are also served by a bare Flask app (one route
returning them, the same gunicorn settings), loaded the same way: that is the floor, the cost of HTTP,
WSGI and Flask with none of our work.  Both servers run side by side, each is loaded for a second
unmeasured, and then the two are loaded in turns, a slice of ``--slice`` seconds each, ``--turns`` times:
this machine's speed wanders by up to half within a minute, and a run of ours followed by a run of the
floor measured the wander as much as the pages (the same code gave 2.5x and 3.6x twenty minutes apart).
Printed per page: requests per second of ours and of the floor over all their slices, the worst p99
latency of any one slice, and the ratio of the throughputs (the target is within 3x, p99 under 50 ms),
with the lowest and highest ratio of one turn beside it.

Each page is loaded twice: by visitors who are not signed in, and by a player signed in with a session
cookie (the player of the game page, on their own move); the server keeps each page ready per process,
for every visitor alike and for each player.
"""

from __future__ import annotations

import http.cookiejar
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from werkzeug.security import generate_password_hash

from bench.scratch import analyse, arguments, each_database, free_port, machine, routes, tournament, wanted
from pbem import create_app
from pbem.accounts import apitokens
from pbem.accounts.accounts import handle_key
from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.game import play, queries

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-web-secret-not-for-any-real-server"
PLAYERS = 40
FINISHED = 120
ACTIVE = 60

BARE_APP = '''
import os, pathlib
from flask import Flask
app = Flask(__name__)
BODY = pathlib.Path(os.environ["BENCH_BODY"]).read_bytes()
@app.get("/<path:anything>")
@app.get("/")
def page(anything=""):
    return BODY, 200, {"Content-Type": os.environ["BENCH_TYPE"]}
'''



PASSWORD = "bench web password"

# The one browser the player signs in with and then loads the pages from: the sign-in remembers the
# browser (Flask-Login's session protection), and a session used from another would be marked anew on
# every request, since wrk never keeps the cookie it is answered with.
USER_AGENT = "bench-web/1"


def fill(url: str, tmp: str, finished: int = FINISHED, in_play: int = ACTIVE) -> tuple[int, str]:
    """Players and games of every kind (``finished`` and ``in_play`` of them), played through the move
    path; returns an active game's id and the handle of its player to move (who can sign in with
    :data:`PASSWORD`)."""
    app = create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url}})
    rng = random.Random(5)
    with app.app_context():
        db.create_all()
        # The key folded as sign-up folds it (player10's is "playerlo"): handles are looked up by it.
        users = [User(handle=f"player{i}", handle_key=handle_key(f"player{i}"), email=f"p{i}@example.org")
                 for i in range(PLAYERS)]
        db.session.add_all(users)
        db.session.commit()
        ids = []
        for n in range(finished + in_play):
            slug = ("cambio", "truchet", "carreaux")[n % 3]
            a, b = rng.sample(users, 2)
            game = play.create_game(slug, [a, b], {}, created_by=a, seed=n)
            db.session.commit()
            ids.append(game.id)
            moves = 40 if n < finished else rng.randrange(4, 16)
            for _ in range(moves):
                game = db.session.get(Game, game.id)
                if game.status != "active":
                    break
                engine = queries.engine_of(game)
                state = queries.state_of(game)
                (seat,) = engine.to_move(state)
                user = game.seats[seat].user
                move = rng.choice(engine.moves(state, seat))
                db.session.rollback()
                play.submit(game.id, user, move, "web")
            if n < finished and db.session.get(Game, game.id).status == "active":
                play.resign(game.id, a, "web")
        db.session.execute(sa.text("DELETE FROM outbox_mail"))
        db.session.commit()
        game = db.session.scalars(
            sa.select(Game).where(Game.status == "active", Game.engine == "truchet").order_by(Game.id)
        ).first()
        active = game.id
        (seat,) = queries.seats_to_move(game)
        player = game.seats[seat].user
        player.password_hash, player.verified_at = generate_password_hash(PASSWORD), play.utcnow()
        handle = player.handle
        db.session.commit()
        db.session.remove()
        analyse(db.engine)
        db.engine.dispose()
    return active, handle


def sign_in(base: str, handle: str) -> str:
    """Sign ``handle`` in through the sign-in form; the session cookie (``name=value``) a browser would
    then send, once the first page has put its form token into the session."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    opener.addheaders = [("User-Agent", USER_AGENT)]
    page = opener.open(f"{base}/login", timeout=10).read().decode()
    token = re.search(r'name="csrf_token" value="([^"]+)"', page)
    form = {"login": handle, "password": PASSWORD, **({"csrf_token": token.group(1)} if token else {})}
    opener.open(f"{base}/login", data=urllib.parse.urlencode(form).encode(), timeout=10).read()
    opener.open(f"{base}/", timeout=10).read()
    cookie = next(c for c in jar if c.name == "session")
    return f"{cookie.name}={cookie.value}"


def gunicorn(app_spec: str, port: int, env: dict[str, str]) -> subprocess.Popen:
    """gunicorn with 2 sync workers on ``port``, started and answering."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{port}",
         "--log-level", "warning", app_spec],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"gunicorn on port {port} did not answer")


def wrk(url: str, seconds: int, header: str | None = None) -> tuple[int, float, float]:
    """Requests, their seconds and the p99 latency (ms) of 32 connections on ``url``, sending ``header``
    (a player's cookie or a client's token)."""
    headers = ["-H", f"User-Agent: {USER_AGENT}"] + (["-H", header] if header else [])
    out = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds}s", "--latency", *headers, url],
                         capture_output=True, text=True, check=True).stdout
    requests, elapsed, unit = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", out).groups()
    elapsed_seconds = float(elapsed) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]
    value, unit = re.search(r"\s99%\s+([\d.]+)(us|ms|s)\b", out).groups()
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    if "Non-2xx" in out:
        raise RuntimeError(f"errors under load on {url}:\n{out}")
    return int(requests), elapsed_seconds, p99


class Load:
    """What the slices of one side (ours or the floor) added up to."""

    def __init__(self) -> None:
        self.requests, self.seconds, self.worst_p99 = 0, 0.0, 0.0
        self.rates: list[float] = []

    def add(self, requests: int, seconds: float, p99: float) -> None:
        """One slice's figures."""
        self.requests, self.seconds = self.requests + requests, self.seconds + seconds
        self.worst_p99 = max(self.worst_p99, p99)
        self.rates.append(max(requests, 1) / seconds)  # (A slice with no answer counts as one.)

    @property
    def rate(self) -> float:
        """Requests per second over all the slices."""
        return max(self.requests, 1) / self.seconds


def in_turns(ours_url: str, floor_url: str, header: str | None, slice_seconds: int,
             turns: int) -> tuple[Load, Load]:
    """Load ours and the floor in turns, a slice each, after a second of each unmeasured: every worker
    then has its templates compiled and its page kept, as in a server that has been up for a while (two
    requests could land on one worker and leave the other's first render inside the measured run)."""
    wrk(ours_url, 1, header)
    wrk(floor_url, 1)
    ours, floor = Load(), Load()
    for _ in range(turns):
        ours.add(*wrk(ours_url, slice_seconds, header))
        floor.add(*wrk(floor_url, slice_seconds))
    return ours, floor


def route_ids(url: str, tmp: str, active: int, handle: str) -> dict[str, Any]:
    """What the routes of ``bench/scale.py`` name, in the database :func:`fill` filled: a finished game,
    the active one, the signed-in player (the player whose pages are read too) and their API token."""
    app = create_app({"server": {"secret_key": SECRET, "instance_path": tmp}, "database": {"url": url}})
    with app.app_context():
        finished = db.session.scalar(sa.select(Game.id).where(Game.status == "finished").order_by(Game.id))
        player = db.session.scalar(sa.select(User).where(User.handle == handle))
        _row, token = apitokens.create(player, "bench")
        tour = tournament(player, [player])
        db.session.remove()
        db.engine.dispose()
    # The players of this database have no confirmed address but the one signed in: the pages of a
    # player are read of them.
    return {"fin": finished, "act": active, "player": handle, "other": handle, "token": token, "tour": tour}


def measure(url: str, label: str, slice_seconds: int, turns: int, every: bool, only: str = "") -> None:
    """Fill the database at ``url``, then load each route of ours and its floor: the game page, ``/``
    and the archive, for a visitor and the player, or with ``every`` every read route; with ``only``,
    those whose reader and path (``client /api/v1/me``) contain it."""
    with tempfile.TemporaryDirectory() as tmp:
        active, handle = fill(url, tmp)
        ids = route_ids(url, tmp, active, handle)
        env = dict(os.environ, PBEM_SERVER_SECRET_KEY=SECRET, PBEM_SERVER_INSTANCE_PATH=tmp,
                   PBEM_DATABASE_URL=url, PBEM_CONFIG=str(ROOT / "config" / "default.toml"),
                   PYTHONPATH=str(ROOT), PBEM_RATELIMIT_ENABLED="false")
        port, bare_port = free_port(), free_port()
        server = gunicorn("pbem.wsgi:app", port, env)
        core = ["/games/{act}", "/", "/archive"]
        pages = [(reader, path) for reader, path in routes()
                 if (every or (reader != "client" and path in core)) and wanted(only, f"{reader} {path}")]
        headers = {"visitor": None, "player": f"Cookie: {sign_in(f'http://127.0.0.1:{port}', handle)}",
                   "client": f"Authorization: Bearer {ids['token']}"}
        try:
            for reader, route in pages:
                path, header = route.format(**ids), headers[reader]
                name, value = header.split(": ", 1) if header else ("", "")
                sent = {"User-Agent": USER_AGENT, **({name: value} if name else {})}
                asked = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=sent)
                with urllib.request.urlopen(asked, timeout=5) as answer:
                    body, kind = answer.read(), answer.headers.get("Content-Type", "")
                if reader == "player" and kind.startswith("text/html") and b"Sign out" not in body:
                    raise RuntimeError(f"the player is not signed in on {path}")
                with urllib.request.urlopen(asked, timeout=5) as again:
                    if reader == "player" and again.headers.get("Set-Cookie"):
                        raise RuntimeError(f"the player's session is written on every request of {path}")
                Path(tmp, "body").write_bytes(body)
                Path(tmp, "bare.py").write_text(BARE_APP)
                bare = gunicorn("bare:app", bare_port, dict(env, BENCH_BODY=str(Path(tmp, "body")),
                                                            BENCH_TYPE=kind, PYTHONPATH=tmp))
                try:
                    ours, floor = in_turns(f"http://127.0.0.1:{port}{path}", f"http://127.0.0.1:{bare_port}{path}",
                                           header, slice_seconds, turns)
                finally:
                    bare.terminate()
                    bare.wait(10)
                each_turn = [f / o for o, f in zip(ours.rates, floor.rates, strict=True)]
                ratio = floor.rate / ours.rate
                verdict = "ok" if ratio <= 3 and ours.worst_p99 < 50 else "MISSES"
                print(f"{label:<11} {reader:<8} {route[:34]:<34} {len(body):>7} {ours.rate:>7.0f} "
                      f"{ours.worst_p99:>7.1f} {floor.rate:>7.0f} {floor.worst_p99:>7.1f} {ratio:>6.2f}x "
                      f"{min(each_turn):>5.2f}-{max(each_turn):.2f}x {verdict}", flush=True)
        finally:
            server.terminate()
            server.wait(10)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--slice", type=int, default=2, help="whole seconds of load per slice")
    parser.add_argument("--turns", type=int, default=4, help="slices of each side, taken in turns")
    parser.add_argument("--core", action="store_true",
                        help="only the game page, / and the archive (by default: every read route)")
    parser.add_argument("--only", default="",
                        help="only the routes whose reader and path (\"player /settings\") hold one of these "
                             "texts (comma-separated)")
    args = parser.parse_args()
    print(machine(), flush=True)
    print(f"{'database':<11} {'reader':<8} {'route':<34} {'bytes':>7} {'req/s':>7} {'p99 ms':>7} "
          f"{'floor/s':>7} {'p99 ms':>7} {'ratio':>7} {'a turn':>11}")
    for url, label in each_database(args.pg):
        measure(url, label, args.slice, args.turns, not args.core, args.only)
        print(f"load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
