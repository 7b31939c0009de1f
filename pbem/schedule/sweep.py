"""The deadline sweep: reminders before a deadline and timeouts at it, each exactly once.

The database is the truth.  A sweep reads the seats whose ``next_event_at`` has come (an indexed range,
so its cost follows the due seats, not all games) and acts on each:

- a reminder is claimed with a conditional UPDATE (``reminders_sent`` and ``next_event_at`` still as
  read) in the same transaction that writes the mail (a batch of reminders per transaction), so two
  sweepers, a restart or an overlap never remind twice and a crash never loses one;
- a timeout goes through the one move path, :func:`pbem.game.play.time_out_batch` (a batch of games per
  transaction), with the deadline read: under the game's lock the seat must still have it, which is
  the claim — a second sweeper, or a retry, finds the deadline gone and does nothing;
- a seat whose player is on vacation is set aside (its clock is stopped) until they come back.

Vacations whose allowance has run out are ended first, so their seats are swept at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Row, select, update
from sqlalchemy.orm import joinedload
from sqlalchemy.orm.exc import StaleDataError

from pbem.accounts import vacation
from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import clock, play, queries, results
from pbem.mailout import notify
from pbem.mailout.digest import turn_summary
from pbem.tournament import organise

log = logging.getLogger(__name__)

# Timeouts per transaction: one commit for the lot, while other writers wait only briefly.
TIMEOUT_BATCH = 50
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
    # Tournaments started (or called off for want of players) and ladder challenges settled.
    tournaments: int = 0

    def __str__(self) -> str:
        return (
            f"{self.reminded} reminded, {self.timed_out} timed out, {self.set_aside} set aside (vacation), "
            f"{self.vacations_ended} vacations ended, {self.failed} failed"
            + (f", {self.tournaments} tournament actions" if self.tournaments else "")
        )


def due_seats(now: datetime) -> list[Row]:
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
    """One sweep as of :func:`pbem.core.models.utcnow`: end run-out vacations, remind, time out."""
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
    for start in range(0, len(timeouts), TIMEOUT_BATCH):
        _time_out_batch(timeouts[start : start + TIMEOUT_BATCH], report)
    for start in range(0, len(reminders), REMINDER_BATCH):
        _remind_batch(reminders[start : start + REMINDER_BATCH], now, report)
    try:
        report.tournaments = organise.start_due(now)
    except Exception:
        log.exception("sweep: starting tournaments failed")
        report.failed += 1
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
    with unit_of_work() as uow:
        result = cast(CursorResult[Any], db.session.execute(  # An UPDATE's result has its row count.
            update(Seat).where(_unchanged(row)).values(next_event_at=None).execution_options(synchronize_session=False)
        ))
        uow.commit()
    return result.rowcount


def _time_out_batch(rows: list[Row[Any]], report: SweepReport) -> None:
    """Time out a batch of seats through the move path; a failing game is logged and tried next sweep."""
    due = [play.DueTimeout(row.game_id, row.number, row.deadline) for row in rows]
    acted, failures = time_out(due)
    report.timed_out += acted
    report.failed += len(failures)
    for item, error in failures:
        log.error("sweep: the timeout of seat %s of game %s failed; tried again next sweep",
                  item.seat + 1, item.game_id, exc_info=error)


def time_out(due: list[play.DueTimeout]) -> tuple[int, list[tuple[play.DueTimeout, Exception]]]:
    """Time out the seats ``due`` through the move path (:func:`pbem.game.play.time_out_batch`), one unit
    of work, and so one commit, for the lot.  If any game fails, the whole batch is rolled back and redone
    one game per unit of work, so that one bad game cannot hold back the others.

    Returns how many seats were acted on, and the seats that failed with their errors (nothing of those
    is changed; the next sweep finds them again).
    """
    if not due:
        return 0, []
    try:
        with unit_of_work() as uow:
            acted = play.time_out_batch(due)
            uow.commit()
        return acted, []
    except Exception as exc:
        if len(due) == 1:
            if isinstance(exc, StaleDataError):
                return 0, []  # Changed under us after all; the next sweep looks at it again.
            return 0, [(due[0], exc)]
    acted, failures = 0, []
    for item in due:
        one_acted, one_failures = time_out([item])
        acted += one_acted
        failures += one_failures
    return acted, failures


def _remind_batch(rows: list[Row[Any]], now: datetime, report: SweepReport) -> None:
    """Claim and write a batch of reminders in one transaction (one commit, which on PostgreSQL is one
    wait for the disk, for the lot); if any of them fails, the batch is redone one reminder per
    transaction, so that one bad seat cannot hold back the others."""
    try:
        with unit_of_work() as uow:
            seats = _load_seats([row.id for row in rows])
            with uow.batched():  # The batch's mails go to the server together, as one executemany.
                sent = sum(_remind(row, seats.get(row.id), now) for row in rows)
            uow.commit()
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
    """The seats, locked for this transaction, with what their reminders show (game, seats, players),
    in one round of queries.  On PostgreSQL a seat another sweeper holds is skipped, not waited for."""
    query = (
        select(Seat).where(Seat.id.in_(ids))
        .options(joinedload(Seat.user), joinedload(Seat.game).selectinload(Game.seats).joinedload(Seat.user))
    )
    if is_postgresql():
        query = query.with_for_update(of=Seat, skip_locked=True)
    return {seat.id: seat for seat in db.session.scalars(query).unique()}


def _remind(row: Row[Any], seat: Seat | None, now: datetime) -> int:
    """Claim the seat's due reminder and write the mail, in the caller's transaction; returns 1 if
    written.  The claim and the mail commit together, so a crash loses neither alone.

    The seat was read under the transaction's lock (SQLite's write lock, or PostgreSQL's row lock), so
    it is claimed by checking that it is still as the sweep found it and moving it on: another sweeper
    that got there first has moved it on already."""
    if seat is None or row.deadline is None:
        return 0  # Gone, or held by another sweeper right now.
    if (seat.next_event_at, seat.reminders_sent, seat.deadline) != (
        row.next_event_at, row.reminders_sent, row.deadline
    ):
        return 0
    game = seat.game
    pause = clock.weekend_pause(game)
    points = clock.reminder_points(row.deadline, pause)
    # One mail however many points have passed (a scheduler that was down sends one, not a burst).
    seat.reminders_sent = max(row.reminders_sent + 1, clock.points_behind(points, now))
    seat.next_event_at = clock.next_event(points, row.deadline, seat.reminders_sent)
    if game.status != "active" or seat.user is None:
        return 0  # Nobody to remind: the claim just moves it on.
    summary = turn_summary(game, seat)
    left = clock.describe(clock.time_left(seat))
    notify.send(
        seat.user, game, f"reminder: your move (move {summary['move_number']}), {left} left",
        "mail/reminder.txt",
        summary=summary, deadline=clock.format_time(row.deadline, seat.user.time_zone),
        consequence=forfeit_words(game, seat),
        vacation_left=clock.describe(timedelta(days=vacation.days_left(seat.user))),
    )
    return 1


def forfeit_words(game: Game, seat: Seat) -> str:
    """What happens to the seat at its deadline, as :func:`pbem.game.play.time_out` will do it."""
    engine = queries.engine_of(game)
    if game.draw_offered_by is not None and game.draw_offered_by != seat.number:
        return "the draw your opponent offered is accepted for you and the game ends drawn"
    if results.scores_timeout(engine, game.players):
        return "you are out of this round, scored as its last finisher, and the game goes on without you"
    if game.players == 1:
        return "the game is abandoned"
    if results.aborts_on_time(engine, game.players, seat.moves_made > 0):
        return "the game is aborted, since you have not moved in it yet, and it is not rated"
    return "you forfeit the game: it ends as a loss on time for you"
