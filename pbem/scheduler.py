"""The scheduler process: APScheduler jobs that deliver the outbox (and, later, sweep deadlines).

It runs in its own process (``pbem scheduler``) or, for one machine, beside the web server in
``pbem run``; never inside web workers.  Every job is safe to run twice at once, because the database
claims each piece of work.
"""

from __future__ import annotations

import logging

from apscheduler.schedulers.base import BaseScheduler
from flask import Flask

from pbem import outbox

log = logging.getLogger(__name__)


def deliver_outbox(app: Flask) -> None:
    """One pass of the outbox deliverer."""
    with app.app_context():
        sent, failed = outbox.deliver_due()
        if sent or failed:
            log.info("outbox: %s sent, %s failed", sent, failed)


def add_jobs(scheduler: BaseScheduler, app: Flask) -> None:
    """Register pbem's jobs on ``scheduler``."""
    settings = app.config["PBEM"]["scheduler"]
    scheduler.add_job(
        deliver_outbox, "interval", args=[app], seconds=settings["outbox_interval_seconds"],
        id="outbox", max_instances=1, coalesce=True,
    )
