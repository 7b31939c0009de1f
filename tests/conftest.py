"""Fixtures shared by every test: the testing config, and a free loopback port."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Tests read config/testing.toml unless a run chose otherwise.
os.environ.setdefault("PBEM_CONFIG", str(ROOT / "config" / "testing.toml"))


# Test servers listen on ports below the kernel's ephemeral range (32768 and up on Linux), so that no
# outgoing connection of the machine's is ever given one of them.  Under pytest-xdist (`make test` runs
# the suite on every core) each worker is a process of its own and takes its ports from a range of its
# own: a port one worker found free can never be handed to another before the first listens on it.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
_PORTS_FROM, _PORTS_TO = 20000, 32000
_SPAN = (_PORTS_TO - _PORTS_FROM) // max(_WORKERS, 1)
_pick = random.Random()


def free_port() -> int:
    """A loopback port nobody is listening on right now, and none that another test worker can be given."""
    while True:
        port = _PORTS_FROM + _WORKER * _SPAN + _pick.randrange(_SPAN)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # Taken (a service of the machine's, or a server of this run's): try another.
        return port
