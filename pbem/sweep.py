"""The deadline sweep: reminders before a deadline and timeouts at it, each exactly once.

The database is the truth.  A sweep reads the seats whose ``next_event_at`` has come (an indexed range,
so its cost follows the due seats, not all games) and acts on each:

- a reminder is claimed with a conditional UPDATE (``reminders_sent`` and ``next_event_at`` still as
  read) in the same transaction that writes the mail (a batch of reminders per transaction), so two
  sweepers, a restart or an overlap never remind twice and a crash never loses one;
- a timeout is claimed the same way (for a lease, in case the sweeper dies), then goes through the one
  move path, :func:`pbem.play.time_out`, with the deadline read: under the game's lock the seat must
  still have it, so even a retry after a lapsed lease acts at most once;
- a seat whose player is on vacation is set aside (its clock is stopped) until they come back.

Vacations whose allowance has run out are ended first, so their seats are swept at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from flask import current_app
from sqlalchemy import Row, select, text, update
from sqlalchemy.orm import joinedload

from pbem import clock, notify, play, vacation
from pbem.database import begin_write, is_postgresql
from pbem.digest import turn_summary
from pbem.extensions import db
from pbem.models import Game, Seat, User, utcnow

log = logging.getLogger(__name__)

# How long a sweeper's claim on a timeout lasts before another sweep may take it over.
TIMEOUT_LEASE_SECONDS = 300
# Reminders written per transaction: fewer commits, while other writers (on SQLite, every move) wait
# for the write lock only briefly.
REMINDER_BATCH = 50


@dataclass
class SweepReport:
    """What one sweep did."""

    reminded: int = 0
    timed_out: int = 0
    set_aside: int = 0
    vacations_ended: int = 0
    failed: int = 0

    def __str__(self) -> str:
        return (
            f"{self.reminded} reminded, {self.timed_out} timed out, {self.set_aside} set aside (vacation), "
            f"{self.vacations_ended} vacations ended, {self.failed} failed"
        )


def due_seats(now: datetime) -> list[Row[Any]]:
    """The seats whose next event has come, with what the sweep needs to claim them."""
    rows = db.session.execute(
        select(
            Seat.id, Seat.game_id, Seat.number, Seat.deadline, Seat.next_event_at, Seat.reminders_sent,
            User.vacation_since,
        )
        .outerjoin(User, Seat.user_id == User.id)
        .where(Seat.next_event_at <= now)
        .order_by(Seat.next_event_at, Seat.id)
    ).all()
    db.session.rollback()
    return list(rows)


def sweep() -> SweepReport:
    """One sweep as of :func:`pbem.models.utcnow`: end run-out vacations, remind, time out."""
    report = SweepReport(vacations_ended=vacation.end_expired())
    now = utcnow()
    reminders, timeouts = [], []
    for row in due_seats(now):
        if row.vacation_since is not None:
            report.set_aside += _guarded(_set_aside, row, report)
        elif row.deadline is not None and row.deadline <= now:
            timeouts.append(row)
        else:
            reminders.append(row)
    workers = current_app.config["PBEM"]["scheduler"]["sweep_workers"] if is_postgresql() else 1
    if workers > 1 and len(timeouts) > 1:
        # Each timeout is a transaction of its own through the move path, and on PostgreSQL mostly a wait
        # for the disk; several at once share those waits.  The claims keep them apart.
        app = current_app._get_current_object()  # type: ignore[attr-defined]

        def time_out_in_context(row: Row[Any]) -> int:
            with app.app_context():
                try:
                    return _guarded(_time_out, row, report, now)
                finally:
                    db.session.remove()

        with ThreadPoolExecutor(max_workers=workers) as pool:
            report.timed_out += sum(pool.map(time_out_in_context, timeouts))
    else:
        report.timed_out += sum(_guarded(_time_out, row, report, now) for row in timeouts)
    for start in range(0, len(reminders), REMINDER_BATCH):
        _remind_batch(reminders[start : start + REMINDER_BATCH], now, report)
    if report.reminded or report.timed_out or report.failed:
        log.info("sweep: %s", report)
    return report


def _guarded(action: Callable[..., int], row: Row[Any], report: SweepReport, *args: Any) -> int:
    """``action(row, *args)``; a failure is logged and counted, and the seat is tried again next sweep."""
    try:
        return action(row, *args)
    except Exception:
        db.session.rollback()
        report.failed += 1
        log.exception("sweep: seat %s of game %s failed; tried again next sweep", row.id, row.game_id)
        return 0


def _unchanged(row: Row[Any]) -> Any:
    """The condition that the seat's scheduler state is still what the sweep read."""
    return (
        (Seat.id == row.id)
        & (Seat.next_event_at == row.next_event_at)
        & (Seat.reminders_sent == row.reminders_sent)
        & (Seat.deadline.is_(None) if row.deadline is None else Seat.deadline == row.deadline)
    )


def _set_aside(row: Row[Any]) -> int:
    """Stop the clock of a seat whose player went on vacation after its turn began."""
    begin_write()
    result = db.session.execute(
        update(Seat).where(_unchanged(row)).values(next_event_at=None).execution_options(synchronize_session=False)
    )
    db.session.commit()
    return result.rowcount


def _time_out(row: Row[Any], now: datetime) -> int:
    """Claim the seat's timeout, then time it out through the move path; returns 1 if this sweep did.

    The claim (a conditional UPDATE) moves ``next_event_at`` a lease ahead rather than clearing it: if
    this sweeper dies before the move path has acted, the seat falls due again when the lease ends, and
    the move path's own check of the deadline makes the retry safe."""
    lease = now + timedelta(seconds=TIMEOUT_LEASE_SECONDS)
    begin_write()
    if is_postgresql():
        # A claim lost in a crash only makes the seat due again, so it need not wait for the disk.
        db.session.execute(text("SET LOCAL synchronous_commit TO OFF"))
    claimed = db.session.execute(
        update(Seat).where(_unchanged(row)).values(next_event_at=lease).execution_options(synchronize_session=False)
    ).rowcount
    db.session.commit()
    if not claimed:
        return 0
    if play.time_out(row.game_id, row.number, deadline=row.deadline) is not None:
        return 1
    # A round went on without the seat (its clock stopped or a new round began: the lease is gone), or
    # the seat had moved or was not on the move after all: then the lease is cleared, not left to recur.
    begin_write()
    left_over = db.session.execute(
        update(Seat).where(Seat.id == row.id, Seat.next_event_at == lease, Seat.deadline == row.deadline)
        .values(next_event_at=None).execution_options(synchronize_session=False)
    ).rowcount
    db.session.commit()
    if left_over:
        log.warning("sweep: seat %s of game %s was due but not timed out; its clock is cleared", row.id,
                    row.game_id)
    return 0 if left_over else 1


def _remind_batch(rows: list[Row[Any]], now: datetime, report: SweepReport) -> None:
    """Claim and write a batch of reminders in one transaction (one commit, which on PostgreSQL is one
    wait for the disk, for the lot); if any of them fails, the batch is redone one reminder per
    transaction, so that one bad seat cannot hold back the others."""
    try:
        begin_write()
        seats = _load_seats([row.id for row in rows])
        sent = sum(_remind(row, seats.get(row.id), now) for row in rows)
        db.session.commit()
        report.reminded += sent
        return
    except Exception:
        db.session.rollback()
        if len(rows) == 1:
            report.failed += 1
            log.exception("sweep: reminder for seat %s failed; tried again next sweep", rows[0].id)
            return
    for row in rows:
        _remind_batch([row], now, report)


def _load_seats(ids: list[int]) -> dict[int, Seat]:
    """The seats with what their reminders show (game, seats, players), in one round of queries."""
    seats = db.session.scalars(
        select(Seat).where(Seat.id.in_(ids))
        .options(joinedload(Seat.game).selectinload(Game.seats).joinedload(Seat.user))
    ).unique()
    return {seat.id: seat for seat in seats}


def _remind(row: Row[Any], seat: Seat | None, now: datetime) -> int:
    """Claim the seat's due reminder and write the mail, in the caller's transaction; returns 1 if
    written.  The claim and the mail commit together, so a crash loses neither alone."""
    if seat is None or row.deadline is None:
        return 0
    game = seat.game
    pause = clock.weekend_pause(game)
    points = clock.reminder_points(row.deadline, pause)
    # One mail however many points have passed (a scheduler that was down sends one, not a burst).
    sent = max(row.reminders_sent + 1, clock.points_behind(points, now))
    claimed = db.session.execute(
        update(Seat).where(_unchanged(row))
        .values(reminders_sent=sent, next_event_at=clock.next_event(points, row.deadline, sent))
        .execution_options(synchronize_session=False)
    ).rowcount
    if not claimed or game.status != "active" or seat.user is None:
        return 0  # Another sweeper had it, or there is nobody to remind: the claim just moves it on.
    summary = turn_summary(game, seat)
    left = clock.describe(clock.time_left(seat))
    notify.send(
        seat.user, game, f"reminder: your move (move {summary['move_number']}), {left} left",
        "mail/reminder.txt",
        summary=summary, deadline=clock.format_time(row.deadline), consequence=forfeit_words(game, seat),
        vacation_left=clock.describe(timedelta(days=vacation.days_left(seat.user))),
    )
    return 1


def forfeit_words(game: Game, seat: Seat) -> str:
    """What happens to the seat at its deadline, as :func:`pbem.play.time_out` will do it."""
    engine = play.engine_of(game)
    if game.draw_offered_by is not None and game.draw_offered_by != seat.number:
        return "the draw your opponent offered is accepted for you and the game ends drawn"
    if getattr(engine, "time_out", None) is not None and game.players > 1:
        return "you are out of this round, scored as its last finisher, and the game goes on without you"
    if game.players == 1:
        return "the game is abandoned"
    return "you forfeit the game: it ends as a loss on time for you"
