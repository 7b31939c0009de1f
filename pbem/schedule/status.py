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
- Processes: each listener and scheduler writes a heartbeat (:mod:`pbem.core.heartbeat`).  One silent past
  the limit died or hangs; none running at all, of a kind that ran, means its work waits.
- The MTA's queue, where Postfix runs on the asking host: mail for the mail domain waiting there past
  the limit has not reached a listener (all of them stopped, or refusing), which no figure of the
  database can show.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from pbem.core.extensions import db
from pbem.core.heartbeat import FORGET_AFTER
from pbem.core.models import Heartbeat, InboundMail, OutboxMail, Seat, utcnow
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
    # A process that has written no heartbeat for this long died or hangs.
    silent: timedelta = timedelta(minutes=3)


# The kinds of process that write heartbeats, as the report names them.
PROCESS_KINDS = {"listener": "Listener", "scheduler": "Scheduler"}
# What an operator does about a kind of process that is not running.
_REMEDY = {
    "listener": "mail for the domain waits in the MTA's queue; start it (`systemctl start pbem-smtpd`, "
                "then `postqueue -f`)",
    "scheduler": "no mail goes out and no deadline passes; start it (`systemctl start pbem-scheduler`)",
}


@dataclass
class ProcessBeat:
    """What one process's heartbeat row says."""

    kind: str
    name: str
    pid: int
    started_at: datetime
    beat_at: datetime
    stopped_at: datetime | None


@dataclass
class MtaQueue:
    """The mail for our domain in the local MTA's queue: how many, the oldest's arrival, and why the
    oldest is waiting (the MTA's words)."""

    count: int = 0
    oldest: datetime | None = None
    reason: str | None = None
    error: str | None = None


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
    processes: list[ProcessBeat] = field(default_factory=list)
    mta_queue: MtaQueue | None = None
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
        lines.extend(self._process_line(beat) for beat in self.processes)
        if self.mta_queue is not None:
            lines.append(self._mta_queue_line(self.mta_queue))
        if self.problems:
            lines.append("Problems:")
            lines.extend(f"- {problem}" for problem in self.problems)
        else:
            lines.append("All well.")
        return lines

    def _process_line(self, beat: ProcessBeat) -> str:
        what = f"{PROCESS_KINDS.get(beat.kind, beat.kind)} {beat.name}"
        if beat.stopped_at is not None:
            return f"{what}: stopped {describe(self.age(beat.stopped_at))} ago"
        return f"{what}: pid {beat.pid}, last heard of {describe(self.age(beat.beat_at))} ago"

    def _mta_queue_line(self, queue: MtaQueue) -> str:
        if queue.error is not None:
            return f"MTA queue: not read ({queue.error})"
        line = f"MTA queue: {queue.count} mail(s) for us"
        if queue.oldest is not None:
            line += f", the oldest {describe(self.age(queue.oldest))} old"
        if queue.reason:
            line += f" ({queue.reason})"
        return line

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form, for monitoring systems (times in ISO 8601 UTC, ages in seconds)."""
        data = _json_times(asdict(self))
        data["age_seconds"] = {
            area: None if age is None else round(age.total_seconds())
            for area, age in (
                ("inbound", self.age(self.inbound_oldest_waiting)),
                ("outbox", self.age(self.outbox_oldest)),
                ("sweep", self.age(self.sweep_oldest_due)),
                ("mta_queue", self.age(self.mta_queue.oldest) if self.mta_queue else None),
            )
        }
        return data


def _json_times(value: Any) -> Any:
    """``value`` with every time in it as ISO 8601 UTC text."""
    if isinstance(value, datetime):
        return value.isoformat() + "Z"
    if isinstance(value, dict):
        return {key: _json_times(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_times(item) for item in value]
    return value


def _ids(ids: list[int]) -> str:
    shown = ", ".join(f"#{i}" for i in ids[:5])
    return shown + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")


def check(limits: Limits | None = None, mta_queue: MtaQueue | None = None) -> Status:
    """Look at the queues, the sweep and the processes' heartbeats as of :func:`pbem.core.models.utcnow`;
    ``mta_queue`` is what the local MTA's queue holds for us, when it was read (see :func:`postfix_queue`)."""
    limits = limits or Limits()
    now = utcnow()
    status = Status(at=now, mta_queue=mta_queue)
    _inbound(status, now, limits)
    _outbox(status, now, limits)
    _sweep(status, now, limits)
    _processes(status, now, limits)
    _mta_queue(status, now, limits)
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


def _processes(status: Status, now: datetime, limits: Limits) -> None:
    rows = db.session.scalars(
        select(Heartbeat)
        .where((Heartbeat.stopped_at.is_(None)) | (Heartbeat.stopped_at >= now - FORGET_AFTER))
        .order_by(Heartbeat.kind, Heartbeat.name)
    )
    status.processes = [ProcessBeat(r.kind, r.name, r.pid, r.started_at, r.beat_at, r.stopped_at)
                        for r in rows]
    for kind in sorted({beat.kind for beat in status.processes}):  # Any kind that beats, bots to come too.
        title = PROCESS_KINDS.get(kind, kind)
        beats = [beat for beat in status.processes if beat.kind == kind]
        silent = [beat for beat in beats if beat.stopped_at is None and now - beat.beat_at > limits.silent]
        for beat in silent:
            status.problems.append(
                f"{title.lower()} {beat.name} (pid {beat.pid}) has been silent for "
                f"{describe(now - beat.beat_at)}: it died or hangs; look at its log and restart it"
            )
        running = [beat for beat in beats if beat.stopped_at is None and beat not in silent]
        if beats and not running and not silent:
            last = max(beat.stopped_at for beat in beats if beat.stopped_at is not None)
            status.problems.append(
                f"no {title.lower()} is running (the last stopped {describe(now - last)} ago): "
                f"{_REMEDY.get(kind, 'start it again')}."
            )


def _mta_queue(status: Status, now: datetime, limits: Limits) -> None:
    queue = status.mta_queue
    if queue is None or queue.oldest is None or now - queue.oldest <= limits.inbound:
        return
    status.problems.append(
        f"{queue.count} mail(s) for us have waited up to {describe(now - queue.oldest)} in the MTA's queue "
        f"({queue.reason or 'no reason given'}): is a listener running (`pbem smtpd --lmtp`) where the "
        "transport map points? `postqueue -f` delivers them once it is."
    )


# Reading Postfix's queue: bounded in time and size, as `pbem status` runs it every few minutes.
POSTQUEUE_TIMEOUT = 20
POSTQUEUE_MAX_BYTES = 20_000_000


def postqueue_command() -> str | None:
    """Postfix's ``postqueue`` on this host, or None where Postfix is not installed."""
    return shutil.which("postqueue") or shutil.which("postqueue", path="/usr/sbin:/usr/bin")


def postfix_queue(domain: str, command: str | None = None) -> MtaQueue | None:
    """What Postfix's queue on this host holds for addresses of ``domain`` (``postqueue -j``, which any
    user may run; MAIL_CONFIG names another instance): how many, the oldest, and the reason Postfix gave
    for holding it.  None where Postfix is not installed."""
    command = command or postqueue_command()
    if command is None:
        return None
    try:
        done = subprocess.run([command, "-j"], capture_output=True, timeout=POSTQUEUE_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return MtaQueue(error=f"{command} -j: {exc}")
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return MtaQueue(error=f"{command} -j exited {done.returncode}: {said[-1] if said else ''}"[:300])
    queue = MtaQueue()
    suffix = "@" + domain.lower()
    for line in done.stdout[:POSTQUEUE_MAX_BYTES].splitlines():
        try:
            entry = json.loads(line)
            ours = [r for r in entry.get("recipients", [])
                    if str(r.get("address", "")).lower().endswith(suffix)]
            arrived = datetime.fromtimestamp(int(entry["arrival_time"]), UTC).replace(tzinfo=None)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue  # A line cut short by the bound, or one Postfix changed: not ours to judge.
        if not ours:
            continue
        queue.count += 1
        if queue.oldest is None or arrived < queue.oldest:
            queue.oldest = arrived
            queue.reason = next((str(r["delay_reason"])[:300] for r in ours if r.get("delay_reason")), None)
    return queue
