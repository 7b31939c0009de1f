"""The web app for a WSGI server: ``gunicorn pbem.wsgi:app`` (see docs/DEPLOY.md).

Each worker process that imports this module builds the app from the settings, as ``pbem web`` does.
"""

from __future__ import annotations

import gc

from pbem import create_app

app = create_app()

# What was made while starting (modules, the app, its templates and routes) lives as long as the
# process.  Frozen, it is left out of the collector's full passes, which otherwise walk all of it now
# and then in the middle of a request and make the slowest requests several times the median.
gc.freeze()
