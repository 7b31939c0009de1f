"""Heartbeats: each long-running process (a mail listener, a scheduler, and whatever runs beside them
later) writes a row of the heartbeat table while it works, so that ``pbem status`` sees a process that
died or hangs, which the queues alone show only once work has piled up.

A process is named by its host and what tells it apart there (a listener by its address, a scheduler
by ``--name``), so that one restarted takes up its row again rather than leave a dead one behind.  It
writes ``beat_at`` every ``monitoring.heartbeat_seconds``, after checking that it can still do its work
(a listener that its event loop answers), and ``stopped_at`` when it stops cleanly.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

from flask import Flask
from sqlalchemy import delete, update
from sqlalchemy.engine import CursorResult
from sqlalchemy.exc import IntegrityError

from pbem.core.extensions import db
from pbem.core.models import Heartbeat, utcnow
from pbem.core.unit_of_work import unit_of_work

log = logging.getLogger(__name__)

# A process stopped cleanly this long ago is no longer reported, and its row is cleared away.
FORGET_AFTER = timedelta(days=1)


def process_name(detail: str) -> str:
    """The name of this process in the heartbeat table: the host, then ``detail``."""
    return f"{socket.gethostname()} {detail}".strip()[:200]


def beat(kind: str, name: str, *, starting: bool = False) -> None:
    """Write that the process ``kind``/``name`` is alive now (``starting``: it has just started)."""
    now = utcnow()
    values = {"pid": os.getpid(), "beat_at": now, "stopped_at": None}
    if starting:
        values["started_at"] = now
    for _attempt in range(2):
        with unit_of_work() as uow:
            try:
                # An UPDATE's result is a CursorResult (with its row count); the session's execute is typed
                # for any statement.
                found = cast(CursorResult[Any], db.session.execute(
                    update(Heartbeat).where(Heartbeat.kind == kind, Heartbeat.name == name).values(**values)
                )).rowcount
                if not found:
                    db.session.add(Heartbeat(kind=kind, name=name, **({"started_at": now} | values)))
                uow.commit()
                return
            except IntegrityError:  # Written by the process's twin a moment ago: update it instead.
                uow.rollback()


def stopped(kind: str, name: str) -> None:
    """Write that the process ``kind``/``name`` stopped cleanly; rows stopped long ago are cleared."""
    with unit_of_work() as uow:
        now = utcnow()
        db.session.execute(update(Heartbeat).where(Heartbeat.kind == kind, Heartbeat.name == name)
                           .values(stopped_at=now))
        db.session.execute(delete(Heartbeat).where(Heartbeat.stopped_at < now - FORGET_AFTER))
        uow.commit()


class Beating:
    """A thread writing a process's heartbeat every ``monitoring.heartbeat_seconds`` while ``alive``
    (a check that the process can still do its work) passes; started and stopped with the process."""

    def __init__(self, app: Flask, kind: str, name: str, alive: Callable[[], None] | None = None) -> None:
        self.app, self.kind, self.name = app, kind, name
        self.alive = alive
        self.interval = app.config["PBEM"]["monitoring"]["heartbeat_seconds"]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Write the first heartbeat now, then one every interval in a thread of its own."""
        self._write(starting=True)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"pbem-heartbeat-{self.kind}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop beating and write that the process stopped."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None
        try:
            with self.app.app_context():
                stopped(self.kind, self.name)
                db.session.remove()
        except Exception:
            log.exception("could not write that %s %r stopped", self.kind, self.name)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._write()

    def _write(self, starting: bool = False) -> None:
        try:
            if self.alive is not None:
                self.alive()
            with self.app.app_context():
                beat(self.kind, self.name, starting=starting)
                db.session.remove()
        except Exception:  # The database may be away: the next beat tries again; status sees the gap.
            log.exception("could not write the heartbeat of %s %r", self.kind, self.name)
