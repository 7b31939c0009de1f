"""pbem: a play-by-email and asynchronous turn server for abstract board games.

:func:`create_app` builds the Flask app (:mod:`pbem.bootstrap`); nothing starts threads, schedulers or
listeners at import.  The packages are layers, each importing only those below it (docs/ARCHITECTURE.md):
``web`` and ``api`` over ``present``, over ``mailin`` and ``schedule``, over ``lobby``, ``archive``,
``accounts``, ``mailout``, ``game`` and ``core``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask import Flask

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def create_app(config: dict[str, Any] | None = None, role: str = "pbem web", workers: int = 1) -> Flask:
    """Build the app from the settings; ``config`` overrides by section (see :mod:`pbem.bootstrap`).
    ``role`` names the process to the database (PostgreSQL's ``application_name``); ``workers`` is how
    many processes serve it side by side."""
    # Imported when called: importing any part of pbem (a migration, an engine's tool, a test of one
    # module) must not load the whole server, and the factory that knows every layer sits above them all.
    from pbem.bootstrap import create_app as build

    return build(config, role, workers)
