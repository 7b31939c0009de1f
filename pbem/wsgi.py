"""The web app for a WSGI server: ``gunicorn pbem.wsgi:app`` (see docs/DEPLOY.md).

Each worker process that imports this module builds the app from the settings, as ``pbem web`` does,
told how many workers gunicorn runs: several workers cannot keep rate limits in each one's memory.
"""

from __future__ import annotations

import gc
import sys
from types import FrameType

from pbem import create_app


def gunicorn_workers() -> int:
    """How many worker processes the gunicorn importing this module runs; 1 under anything else.

    Gunicorn tells its app nothing of its settings, but it imports the app from within its own objects
    (the worker's or, with ``--preload``, the arbiter's ``self``), each holding the one ``cfg`` it runs
    by, with every way of setting it (command line, ``GUNICORN_CMD_ARGS``, config file) applied.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        cfg = getattr(frame.f_locals.get("self"), "cfg", None)
        workers = getattr(cfg, "workers", None)
        if type(cfg).__module__ == "gunicorn.config" and isinstance(workers, int):
            return workers
        frame = frame.f_back
    return 1


app = create_app(workers=gunicorn_workers())

# What was made while starting (modules, the app, its templates and routes) lives as long as the
# process.  Frozen, it is left out of the collector's full passes, which otherwise walk all of it now
# and then in the middle of a request and make the slowest requests several times the median.
gc.freeze()
