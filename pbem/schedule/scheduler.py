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
from pbem.core import heartbeat
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


def beat(app: Flask, name: str) -> None:
    """Write the scheduler's heartbeat: run as a job, so it shows that jobs run."""
    with app.app_context():
        try:
            heartbeat.beat("scheduler", name)
        finally:
            db.session.remove()


def add_jobs(scheduler: BaseScheduler, app: Flask, name: str = "scheduler") -> None:
    """Register pbem's jobs on ``scheduler``, and its heartbeat under ``name`` (see pbem.heartbeat)."""
    settings = app.config["PBEM"]["scheduler"]
    for job, seconds, job_id in (
        (deliver_outbox, settings["outbox_interval_seconds"], "outbox"),
        (sweep_deadlines, settings["sweep_interval_seconds"], "sweep"),
        (send_digests, settings["digest_interval_seconds"], "digest"),
    ):
        scheduler.add_job(
            job, "interval", args=[app], seconds=seconds, id=job_id, max_instances=1, coalesce=True
        )
    scheduler.add_job(beat, "interval", args=[app, heartbeat.process_name(name)], id="heartbeat",
                      seconds=app.config["PBEM"]["monitoring"]["heartbeat_seconds"], max_instances=1,
                      coalesce=True)


def started(app: Flask, name: str) -> None:
    """Write the first heartbeat of the scheduler ``name`` (its jobs are about to run)."""
    with app.app_context():
        try:
            heartbeat.beat("scheduler", heartbeat.process_name(name), starting=True)
        except Exception:  # The database may be away: the heartbeat job tries again.
            log.exception("could not write the scheduler's first heartbeat")
        finally:
            db.session.remove()


def stopped(app: Flask, name: str) -> None:
    """Write that the scheduler ``name`` stopped cleanly."""
    with app.app_context():
        try:
            heartbeat.stopped("scheduler", heartbeat.process_name(name))
        except Exception:
            log.exception("could not write that the scheduler stopped")
        finally:
            db.session.remove()
