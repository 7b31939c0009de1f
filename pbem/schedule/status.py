"""``pbem status``: what an operator watches — inbound mail that is stuck, the outbox's age, the sweep's lag.

Everything is read from the database, so the answer is the same whichever host asks and however many
listeners and schedulers run.  Each figure has a limit; past it the figure is a problem, and the command
exits 1 so that a monitoring system can run it as a check.

- Inbound: a message still "received" after the limit means no processor is running (or all are
  failing); one left "processing" after the limit was cut short mid-way and waits for an operator; a
  "failed" (or "interrupted") one in the last day is a fault of the server's own.
- Outbox: the oldest mail not yet sent.  Past the limit the deliverer is not running or the outbound
  MTA refuses (its last error is shown).
- Sweep: the seat whose reminder or deadline has been due longest.  A sweep runs every
  ``scheduler.sweep_interval_seconds``; a lag well past that means no scheduler is sweeping.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from pbem.core.extensions import db
from pbem.core.models import InboundMail, OutboxMail, Seat, utcnow
from pbem.game.clock import describe
from pbem.mailout import outbox

# How far back a failed message still counts as news.
FAILED_WINDOW = timedelta(days=1)


@dataclass(frozen=True)
class Limits:
    """How old each kind of waiting work may grow before it is a problem."""

    inbound: timedelta = timedelta(minutes=10)
    outbox: timedelta = timedelta(minutes=30)
    sweep: timedelta = timedelta(minutes=10)


@dataclass
class Status:
    """The figures of one look at the server, and the problems among them."""

    at: datetime
    inbound_waiting: int = 0
    inbound_oldest_waiting: datetime | None = None
    inbound_stuck: list[int] = field(default_factory=list)
    inbound_failed: int = 0
    inbound_failed_recently: list[int] = field(default_factory=list)
    outbox_waiting: int = 0
    outbox_oldest: datetime | None = None
    outbox_retrying: int = 0
    outbox_last_error: str | None = None
    outbox_given_up: int = 0
    sweep_due: int = 0
    sweep_oldest_due: datetime | None = None
    problems: list[str] = field(default_factory=list)

    def age(self, moment: datetime | None) -> timedelta | None:
        """How long ago ``moment`` was, as of this look."""
        return None if moment is None else max(self.at - moment, timedelta(0))

    def lines(self) -> list[str]:
        """The report for people, one line per area, then the problems."""
        waiting = f"{self.inbound_waiting} waiting"
        if self.inbound_oldest_waiting is not None:
            waiting += f" (the oldest {describe(self.age(self.inbound_oldest_waiting))} old)"
        failed = f"{self.inbound_failed} failed"
        if self.inbound_failed_recently:
            recent = self.inbound_failed_recently
            failed += f" ({len(recent)} in the last day: {_ids(recent)})"
        outbox = f"{self.outbox_waiting} waiting"
        if self.outbox_oldest is not None:
            outbox += f", the oldest {describe(self.age(self.outbox_oldest))} old"
        outbox += f"; {self.outbox_retrying} being retried"
        if self.outbox_last_error:
            outbox += f" (last error: {self.outbox_last_error})"
        if self.outbox_given_up:
            outbox += f"; {self.outbox_given_up} given up in the last day"
        sweep = f"{self.sweep_due} seat(s) due"
        if self.sweep_oldest_due is not None:
            sweep += f", the longest due for {describe(self.age(self.sweep_oldest_due))}"
        lines = [
            f"Inbound mail: {waiting}; {len(self.inbound_stuck)} stuck in processing; {failed}",
            f"Outbox: {outbox}",
            f"Sweep: {sweep}",
        ]
        if self.problems:
            lines.append("Problems:")
            lines.extend(f"- {problem}" for problem in self.problems)
        else:
            lines.append("All well.")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form, for monitoring systems (times in ISO 8601 UTC, ages in seconds)."""
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, datetime):
                data[key] = value.isoformat() + "Z"
        data["age_seconds"] = {
            area: None if age is None else round(age.total_seconds())
            for area, age in (
                ("inbound", self.age(self.inbound_oldest_waiting)),
                ("outbox", self.age(self.outbox_oldest)),
                ("sweep", self.age(self.sweep_oldest_due)),
            )
        }
        return data


def _ids(ids: list[int]) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def check(limits: Limits | None = None) -> Status:
    """Look at the queues and the sweep as of :func:`pbem.core.models.utcnow`."""
    limits = limits or Limits()
    now = utcnow()
    status = Status(at=now)
    _inbound(status, now, limits)
    _outbox(status, now, limits)
    _sweep(status, now, limits)
    db.session.rollback()
    return status


def _inbound(status: Status, now: datetime, limits: Limits) -> None:
    status.inbound_waiting, status.inbound_oldest_waiting = db.session.execute(
        select(func.count(InboundMail.id), func.min(InboundMail.received_at))
        .where(InboundMail.status == "received")
    ).one()
    if status.inbound_oldest_waiting is not None and now - status.inbound_oldest_waiting > limits.inbound:
        status.problems.append(
            f"inbound mail has waited {describe(now - status.inbound_oldest_waiting)} to be processed: is a "
            "listener running (`pbem smtpd`)? `pbem mail process` processes it by hand."
        )
    status.inbound_stuck = list(db.session.scalars(
        select(InboundMail.id)
        .where(InboundMail.status == "processing", InboundMail.processed_at < now - limits.inbound)
        .order_by(InboundMail.id)
    ))
    if status.inbound_stuck:
        status.problems.append(
            f"inbound message(s) {_ids(status.inbound_stuck)} stopped in the middle of processing; look at "
            "each in the inbound_mail table (raw message and note) and at its game before acting on it."
        )
    # A message interrupted by a crash after it had acted needs an operator as much as a failed one.
    failed = InboundMail.status.in_(("failed", "interrupted"))
    status.inbound_failed = db.session.scalar(select(func.count(InboundMail.id)).where(failed)) or 0
    status.inbound_failed_recently = list(db.session.scalars(
        select(InboundMail.id)
        .where(failed, InboundMail.processed_at >= now - FAILED_WINDOW)
        .order_by(InboundMail.id.desc())
    ))
    if status.inbound_failed_recently:
        status.problems.append(
            f"inbound message(s) {_ids(status.inbound_failed_recently)} failed in the last day (a fault of "
            "the server, or a crash after acting; the note in the inbound_mail table says which, and "
            "`pbem mail process --stuck` lists them); their senders were told."
        )


def _outbox(status: Status, now: datetime, limits: Limits) -> None:
    unsent = outbox.WAITING
    status.outbox_waiting, status.outbox_oldest = db.session.execute(
        select(func.count(OutboxMail.id), func.min(OutboxMail.created_at)).where(unsent)
    ).one()
    status.outbox_retrying = db.session.scalar(
        select(func.count(OutboxMail.id)).where(unsent, OutboxMail.attempts > 0)
    ) or 0
    status.outbox_last_error = db.session.scalar(
        select(OutboxMail.last_error).where(unsent, OutboxMail.last_error.is_not(None))
        .order_by(OutboxMail.next_attempt_at.desc()).limit(1)
    )
    status.outbox_given_up = db.session.scalar(
        # By the index of the mails due: a given-up mail is never sent.
        select(func.count(OutboxMail.id)).where(OutboxMail.sent_at.is_(None),
                                                OutboxMail.failed_at >= now - timedelta(days=1))
    ) or 0
    if status.outbox_oldest is not None and now - status.outbox_oldest > limits.outbox:
        status.problems.append(
            f"the oldest unsent mail has waited {describe(now - status.outbox_oldest)}: is a scheduler "
            "running (`pbem scheduler`), and does the outbound MTA accept mail?"
        )


def _sweep(status: Status, now: datetime, limits: Limits) -> None:
    status.sweep_due, status.sweep_oldest_due = db.session.execute(
        select(func.count(Seat.id), func.min(Seat.next_event_at)).where(Seat.next_event_at <= now)
    ).one()
    if status.sweep_oldest_due is not None and now - status.sweep_oldest_due > limits.sweep:
        status.problems.append(
            f"a reminder or deadline has been due for {describe(now - status.sweep_oldest_due)}: is a "
            "scheduler running (`pbem scheduler`)? `pbem sweep` runs one sweep by hand."
        )
