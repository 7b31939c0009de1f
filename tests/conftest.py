"""Fixtures shared by every test: the testing config, and a free loopback port."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Tests read config/testing.toml unless a run chose otherwise.
os.environ.setdefault("PBEM_CONFIG", str(ROOT / "config" / "testing.toml"))


def free_port() -> int:
    """A loopback port nobody is listening on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
