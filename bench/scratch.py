"""What the benchmarks share: their command line, scratch PostgreSQL databases, and free loopback ports."""

from __future__ import annotations

import argparse
import os
import platform
import socket
import tempfile
import uuid
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import sqlalchemy as sa


def arguments(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first line of its docstring ``doc``, with ``--pg``:
    the PostgreSQL admin URL to run on too (``PBEM_TEST_DATABASE_URL`` by default)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--pg", default=os.environ.get("PBEM_TEST_DATABASE_URL", ""),
                        help="PostgreSQL URL of a database from which scratch databases can be created")
    return parser


def load_average(separator: str = " ") -> str:
    """The machine's load average over 1, 5 and 15 minutes, as ``uptime`` gives it."""
    return separator.join(f"{n:.2f}" for n in os.getloadavg())


def machine() -> str:
    """The machine a run's figures come from, for the line a benchmark starts with: its load average, its
    cores and their processor, and the Python.  Two hosts of one kind can differ by half in speed, and
    not alike for Python's work and the database's (docs/PERFORMANCE.md, run X): figures in
    milliseconds compare only with figures from the same processor."""
    model = "an unnamed processor"
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            fields = dict((key.strip(), value) for key, _, value in (line.partition(":") for line in info))
        model = f"{fields['model name'].strip()} at {float(fields['cpu MHz']):.0f} MHz"
    except (OSError, KeyError, ValueError):
        pass
    return (f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores of {model}, "
            f"Python {platform.python_version()}")


def wanted(only: str, text: str) -> bool:
    """Whether ``text`` (a route, or its reader and path) holds one of ``--only``'s comma-separated texts;
    every text is wanted when ``only`` is empty."""
    return any(part in text for part in only.split(","))


def each_database(admin_url: str) -> Iterator[tuple[str, str]]:
    """An empty SQLite database file, then, given an admin URL, a scratch PostgreSQL database: each as
    its URL and its label, each gone once the next is asked for."""
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{tmp}/bench.db", "sqlite"
    if admin_url:
        with ScratchDatabases(admin_url) as scratch:
            yield scratch.create(), "postgresql"


class ScratchDatabases:
    """Databases made for one benchmark run from an admin URL, and dropped with everything in them at
    the end of the ``with`` block, even with connections left open."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self.names: list[str] = []

    def create(self, template: str | None = None) -> str:
        """A new database, empty or a copy of the one at ``template`` (a URL made here); its URL."""
        name = f"pbem_bench_{uuid.uuid4().hex[:10]}"
        copy = f' TEMPLATE "{sa.make_url(template).database}"' if template else ""
        with self.admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"{copy}')
        self.names.append(name)
        return sa.make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def __enter__(self) -> ScratchDatabases:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        with self.admin.connect() as conn:
            for name in self.names:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.admin.dispose()


def analyse(engine: sa.Engine) -> None:
    """Give a freshly filled PostgreSQL database its planner statistics (a no-op on SQLite).

    A live database has them; a freshly filled one has none until autovacuum gets round to it, and the
    benchmark would be timed against plans made blind."""
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("ANALYZE")


def free_port() -> int:
    """A loopback port nobody is listening on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tournament(organiser: Any, entrants: list[Any]) -> int:
    """A round-robin of Cambio taking entries, made by ``organiser`` and joined by ``entrants``, for the
    tournament pages of :func:`routes`; its id."""
    from pbem.tournament import organise

    made = organise.create(organiser, "Bench cup", "cambio", "round_robin", max_players=16)
    for user in entrants:
        organise.join(made.id, user)
    return made.id


def routes() -> list[tuple[str, str]]:
    """(reader, path) of every read route: "visitor", "player" (signed in) or "client" (API token); the
    path names a finished game ``{fin}``, a game in play ``{act}``, a player ``{other}`` and a tournament
    taking entries ``{tour}``."""
    visitor = ["/", "/archive", "/archive?player={other}", "/archive.atom", "/standings",
               "/standings/cambio", "/players", "/players?q=p1", "/players/{other}",
               "/players/{other}.atom", "/games/{fin}", "/games/{fin}.json", "/games/{fin}.txt",
               "/games/{fin}/replay/3", "/games/{fin}/analysis", "/games/{act}",
               "/games/{act}/live", "/games/{act}/version", "/lobby", "/rules", "/rules/cambio",
               "/tournaments", "/tournaments/{tour}", "/tournaments/{tour}/crosstable",
               "/tournaments/{tour}.atom", "/login", "/signup", "/reset", "/healthz"]
    player = ["/", "/dashboard", "/games/{act}", "/players/{player}", "/settings", "/games/new", "/lobby",
              "/archive", "/standings", "/standings/cambio", "/players", "/players/{other}",
              "/games/{fin}", "/games/{fin}.json", "/rules", "/tournaments", "/tournaments/{tour}",
              "/tournaments/new"]
    client = ["/api/v1/games", "/api/v1/games?player={other}", "/api/v1/games/{fin}", "/api/v1/games/{act}",
              "/api/v1/players/{other}", "/api/v1/players?q=p1", "/api/v1/lobby", "/api/v1/me/turn",
              "/api/v1/me/challenges", "/api/v1/games/{act}/conditionals", "/api/v1/games/{act}/note",
              "/api/openapi.json", "/api/", "/api/v1/me", "/api/v1/bots",
              # The bot runner's poll of its games in play.
              "/api/v1/games?status=active&player={player}&limit=100",
              "/api/v1/tournaments", "/api/v1/tournaments/{tour}"]
    return ([("visitor", p) for p in visitor] + [("player", p) for p in player]
            + [("client", p) for p in client])

