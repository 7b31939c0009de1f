"""A web worker's memory and `make run`'s start, each beside a bare Flask app's.

Run: ``.venv/bin/python bench/startup.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for the memory on PostgreSQL too).

Memory: a small database is filled through the move path (as ``bench/web.py`` fills its own, with fewer
games); the server runs under gunicorn with 2 sync workers, as docs/DEPLOY.md runs it, and then, under
the same settings, two floors answering every path with the front page's bytes: a bare Flask app, and
Flask with SQLAlchemy and the Flask extensions we use, bound to the same database (one query a request:
what our libraries alone take).  Each worker's memory is read from ``/proc`` once it has started
(gunicorn's ``post_worker_init``), then again once both workers have served every read route of
``bench/scale.py`` (for a visitor, a signed-in player and an API client).  Printed per server: RSS (what
``ps`` shows, the target's figure: at most 60 MB), PSS and USS (the pages a worker shares with the other
and with the arbiter count in its RSS, in its PSS split between them, in its USS not at all), each the
largest of the two workers.

Start: ``make run`` on a fresh instance directory and free ports, timed from the command to the first
200 on its web port, then stopped; the first start makes the database (reported apart), the next
``--starts`` find it at its head, as a developer's daily ``make run`` does (the target: within 1 s on
a warm venv).  The floor: a bare Flask app started by ``python -c`` on Werkzeug's server, as ``pbem run``
serves, timed the same way, interleaved start by start.  Printed: min and median of ours, of the floor,
and their ratio, in wall time (what the target names, and what a loaded machine stretches) and in CPU
(user and system time of every process of the run, its stop included).

Figures are in docs/PERFORMANCE.md ("Start-up and memory").
"""

from __future__ import annotations

import compileall
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import arguments, each_database, free_port, machine, routes
from bench.web import BARE_APP, SECRET, USER_AGENT, fill, route_ids, sign_in

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)

# Each worker, once started, leaves a file named by its pid in BENCH_STARTED: its start is then done.
GUNICORN_CONFIG = '''
import os, pathlib
def post_worker_init(worker):
    pathlib.Path(os.environ["BENCH_STARTED"], str(worker.pid)).touch()
'''

# The floor of the libraries we build on: Flask, SQLAlchemy and the same Flask extensions, bound to the
# database, answering each request with one query and the bytes of our front page.
LIBRARIES_APP = '''
import os, pathlib
import marshmallow
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_mail import Mail
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import text
app = Flask(__name__)
app.config.update(SQLALCHEMY_DATABASE_URI=os.environ["PBEM_DATABASE_URL"], SECRET_KEY="floor",
                  RATELIMIT_STORAGE_URI="memory://")
db = SQLAlchemy(app)
LoginManager(app), Mail(app), CSRFProtect(app), Limiter(get_remote_address, app=app)
BODY = pathlib.Path(os.environ["BENCH_BODY"]).read_bytes()
@app.get("/<path:anything>")
@app.get("/")
def page(anything=""):
    db.session.execute(text("SELECT 1"))
    return BODY, 200, {"Content-Type": os.environ["BENCH_TYPE"]}
'''

BARE_RUN = '''
import sys
from flask import Flask
app = Flask(__name__)
@app.get("/")
def page():
    return "ok"
app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True, use_reloader=False)
'''


def memory(pid: int) -> tuple[float, float, float]:
    """RSS, PSS and USS of process ``pid``, in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_unit = line.split()
        fields[name.rstrip(":")] = int(value) / 1024
    return fields["Rss"], fields["Pss"], fields["Private_Clean"] + fields["Private_Dirty"]


def largest(pids: Iterable[int]) -> tuple[float, float, float]:
    """The largest RSS, PSS and USS among the processes ``pids`` (each figure of its own worker)."""
    rss, pss, uss = zip(*(memory(pid) for pid in pids), strict=True)
    return max(rss), max(pss), max(uss)


class Gunicorn:
    """``app_spec`` under gunicorn with 2 sync workers, its access log naming the worker of each
    request."""

    def __init__(self, app_spec: str, env: dict[str, str], tmp: Path, name: str) -> None:
        self.port = free_port()
        self.started = tmp / f"{name}-started"
        self.started.mkdir()
        self.log = tmp / f"{name}-access.log"
        config = tmp / f"{name}-gunicorn.py"
        config.write_text(GUNICORN_CONFIG)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", "2", "--bind", f"127.0.0.1:{self.port}",
             "--config", str(config), "--access-logfile", str(self.log), "--access-logformat", "%(p)s %(r)s",
             "--log-level", "warning", app_spec],
            env=dict(env, BENCH_STARTED=str(self.started)), cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def workers(self) -> list[int]:
        """The workers' pids, once both have started."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = [int(path.name) for path in self.started.iterdir()]
            if len(pids) == 2:
                # Leave the worker a moment to return from the hook to its loop.
                time.sleep(0.5)
                return pids
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn stopped ({self.process.returncode})")
            time.sleep(0.05)
        raise RuntimeError("gunicorn's workers did not start")

    def served_by_each(self, path: str, header: str | None, pids: list[int]) -> None:
        """Ask for ``path`` until each worker has answered it once."""
        name, value = header.split(": ", 1) if header else ("", "")
        sent = {"User-Agent": USER_AGENT, **({name: value} if name else {})}
        def ask(_number: int) -> None:
            asked = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=sent)
            with urllib.request.urlopen(asked, timeout=10) as answer:
                answer.read()

        # Four at once: on an idle machine one worker can win every accept of requests sent one by one.
        with ThreadPoolExecutor(4) as pool:
            for _ in range(200):
                list(pool.map(ask, range(4)))
                time.sleep(0.01)  # The access log is written after the answer.
                # Each line: "<pid> GET /path HTTP/1.1".
                served = {int(line.split()[0].strip("<>")) for line in self.log.read_text().splitlines()
                          if line.split()[2] == path}
                if served >= set(pids):
                    return
        raise RuntimeError(f"one worker never answered {path}")

    def stop(self) -> None:
        """Stop gunicorn and its workers."""
        self.process.terminate()
        self.process.wait(20)


def worker_memory(url: str, label: str, tmp: Path) -> None:
    """Print a worker's memory on the database at ``url``, ours and the floors', after start and after
    every read route."""
    active, handle = fill(url, str(tmp), finished=12, in_play=6)
    ids = route_ids(url, str(tmp), active, handle)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PBEM_SERVER_SECRET_KEY=SECRET, PBEM_SERVER_INSTANCE_PATH=str(tmp),
               PBEM_DATABASE_URL=url, PBEM_CONFIG=str(ROOT / "config" / "default.toml"),
               PYTHONPATH=str(ROOT), PBEM_RATELIMIT_ENABLED="false")
    figures = {}
    # The modules' bytecode written first, as a warm venv has it (where PYTHONDONTWRITEBYTECODE is set,
    # nothing else writes it): a worker that compiles them itself holds 2 MB more.
    for package in ("pbem", "games"):
        compileall.compile_dir(ROOT / package, quiet=1)
    ours = Gunicorn("pbem.wsgi:app", env, tmp, f"{label}-ours")
    try:
        pids = ours.workers()
        at_start = largest(pids)
        headers = {"visitor": None,
                   "player": f"Cookie: {sign_in(f'http://127.0.0.1:{ours.port}', handle)}",
                   "client": f"Authorization: Bearer {ids['token']}"}
        paths = [(route.format(**ids), headers[reader]) for reader, route in routes()]
        for path, header in paths:
            ours.served_by_each(path, header, pids)
        figures["ours"] = at_start, largest(pids)
        with urllib.request.urlopen(f"http://127.0.0.1:{ours.port}/", timeout=10) as answer:
            (tmp / "body").write_bytes(answer.read())
    finally:
        ours.stop()
    (tmp / "bare.py").write_text(BARE_APP)
    (tmp / "libraries.py").write_text(LIBRARIES_APP)
    for name in ("bare", "libraries"):
        floor = Gunicorn(f"{name}:app", dict(env, BENCH_BODY=str(tmp / "body"), BENCH_TYPE="text/html",
                                             PYTHONPATH=str(tmp)), tmp, f"{label}-{name}")
        try:
            pids = floor.workers()
            at_start = largest(pids)
            for path in sorted({path.split("?")[0] for path, _header in paths}):
                floor.served_by_each(path, None, pids)
            figures[name] = at_start, largest(pids)
        finally:
            floor.stop()
    print(f"\n{label}: a gunicorn worker (2 sync workers), MB: the larger worker's RSS / PSS / USS; "
          f"{len(paths)} routes", flush=True)
    print(f"{'':<34} {'ours':>20} {'bare Flask':>20} {'RSS ratio':>10} {'Flask, SQLAlchemy':>20}")
    for i, moment in enumerate(("after start", "after every route, on each worker")):
        mine, bare, libraries = (figures[name][i] for name in ("ours", "bare", "libraries"))
        print(f"{moment:<34} {mine[0]:6.1f} /{mine[1]:5.1f} /{mine[2]:5.1f} "
              f"{bare[0]:6.1f} /{bare[1]:5.1f} /{bare[2]:5.1f} {mine[0] / bare[0]:9.2f}x "
              f"{libraries[0]:6.1f} /{libraries[1]:5.1f} /{libraries[2]:5.1f}")
    rss = figures["ours"][0][0]
    print(f"target: RSS at most 60 MB after start: {rss:.1f} MB, {'ok' if rss <= 60 else 'MISSES'}")


def group_cpu(group: int) -> float:
    """Seconds of CPU of the processes of a process group alive now, with what each has of the children
    it waited for (from /proc, in ticks of 10 ms).

    Not the children's usage of this process: ``make`` answers the signal that stops ``make run`` by
    exiting without waiting for ``pbem run``, whose CPU was then never counted (0.00 s in run W)."""
    ticks = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (Gone meanwhile.)
        if int(fields[2]) == group:  # Its process group; then its utime, stime, cutime and cstime.
            ticks += sum(int(field) for field in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def first_answer(command: list[str], port: int, env: dict[str, str]) -> tuple[float, float]:
    """Start ``command`` (in a session of its own), time it to its first 200 on ``port``, then stop it
    and every process it started: the wall seconds to that answer and the CPU seconds its processes had
    used by then."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError(f"{command} stopped ({process.returncode})") from None
                time.sleep(0.005)
            if time.perf_counter() - started > 60:
                raise RuntimeError(f"{command} did not answer on port {port}")
        wall = time.perf_counter() - started
        cpu = group_cpu(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return wall, cpu


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive loopback ports nobody listens on (the mail listener's port
    and, next to it, the dev mailbox's)."""
    while True:
        first, held = free_port(), []
        try:
            for port in range(first, first + count):
                held.append(socket.socket())
                held[-1].bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in held:
                s.close()


def start_time(tmp: Path, starts: int) -> None:
    """Print ``make run``'s time to its first answer beside a bare Flask app's."""
    # As a developer runs it: the development settings, and the modules' bytecode cached (a warm venv:
    # the first start writes what is missing).  PYTHONPATH: this checkout's code, whichever checkout the
    # venv was installed from.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PBEM_") and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PBEM_CONFIG="config/development.toml", PYTHONPATH=str(ROOT))
    instance = tmp / "instance"
    port, mail_port = free_port(), free_ports(2)
    make = ["make", "--no-print-directory", "-o", str(VENV / ".installed"), "run", f"VENV={VENV}",
            f"PORT={port}", f"MAIL_PORT={mail_port}", f"INSTANCE={instance}"]
    (tmp / "bare_run.py").write_text(BARE_RUN)
    bare_port = free_port()
    bare = [sys.executable, str(tmp / "bare_run.py"), str(bare_port)]
    fresh = first_answer(make, port, env)
    ours, floor = [], []
    for _ in range(starts):
        ours.append(first_answer(make, port, env))
        floor.append(first_answer(bare, bare_port, env))
    print(f"\n`make run` to its first 200 on the web port, seconds (min / median of {starts}), wall and CPU")
    print(f"{'':<34} {'wall':>15} {'CPU':>15}")
    print(f"{'ours, a fresh database':<34} {fresh[0]:15.2f} {fresh[1]:15.2f}")
    for label, runs in (("ours, the database at its head", ours), ("bare Flask (python -c)", floor)):
        walls, cpus = [run[0] for run in runs], [run[1] for run in runs]
        print(f"{label:<34} {min(walls):6.2f} / {statistics.median(walls):5.2f} "
              f"{min(cpus):6.2f} / {statistics.median(cpus):5.2f}")
    ratio = statistics.median(r[0] for r in ours) / statistics.median(r[0] for r in floor)
    cpu_ratio = statistics.median(r[1] for r in ours) / statistics.median(r[1] for r in floor)
    median = statistics.median(r[0] for r in ours)
    print(f"ratio of the medians: wall {ratio:.2f}x, CPU {cpu_ratio:.2f}x; "
          f"target: serving within 1 s: {median:.2f} s, {'ok' if median <= 1 else 'MISSES'}")


def main() -> None:
    """The worker's memory, then `make run`'s start."""
    parser = arguments(__doc__)
    parser.add_argument("--starts", type=int, default=3, help="timed starts of each (3)")
    parser.add_argument("--only", choices=("memory", "start"), help="one of the two figures")
    args = parser.parse_args()
    print(machine(), flush=True)
    if args.only != "start":
        for url, label in each_database(args.pg):
            with tempfile.TemporaryDirectory() as tmp:
                worker_memory(url, label, Path(tmp))
    if args.only != "memory":
        with tempfile.TemporaryDirectory() as tmp:
            start_time(Path(tmp), args.starts)
    print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
