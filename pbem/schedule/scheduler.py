"""The scheduler process: APScheduler jobs that deliver the outbox, sweep deadlines and send digests.

It runs in its own process (``pbem scheduler``) or, for one machine, beside the web server in
``pbem run``; never inside web workers.  Every job is safe to run twice at once, in one process or in
several, because the database claims each piece of work.
"""

from __future__ import annotations

import logging

from apscheduler.schedulers.base import BaseScheduler
from flask import Flask

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.mailout import digest, outbox
from pbem.schedule import sweep

log = logging.getLogger(__name__)


def deliver_outbox(app: Flask) -> None:
    """One pass of the outbox deliverer."""
    with app.app_context():
        try:
            sent, failed = outbox.deliver_due()
            if sent or failed:
                log.info("outbox: %s sent, %s failed", sent, failed)
        finally:
            db.session.remove()


def sweep_deadlines(app: Flask) -> None:
    """One deadline sweep: vacations run out, reminders, timeouts; unconfirmed accounts expire."""
    with app.app_context():
        try:
            sweep.sweep()
            expired = accounts.expire_unconfirmed()
            if expired:
                log.info("%s unconfirmed account(s) expired", expired)
        finally:
            db.session.remove()


def send_digests(app: Flask) -> None:
    """Write the daily digests that are due."""
    with app.app_context():
        try:
            written = digest.send_due()
            if written:
                log.info("digest: %s written", written)
        finally:
            db.session.remove()


def add_jobs(scheduler: BaseScheduler, app: Flask) -> None:
    """Register pbem's jobs on ``scheduler``."""
    settings = app.config["PBEM"]["scheduler"]
    for job, seconds, name in (
        (deliver_outbox, settings["outbox_interval_seconds"], "outbox"),
        (sweep_deadlines, settings["sweep_interval_seconds"], "sweep"),
        (send_digests, settings["digest_interval_seconds"], "digest"),
    ):
        scheduler.add_job(
            job, "interval", args=[app], seconds=seconds, id=name, max_instances=1, coalesce=True
        )
