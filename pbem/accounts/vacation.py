"""Vacation: a player stops their clocks for a while, within a yearly allowance of days.

While a player is on vacation the sweep passes their seats by; when they come back (by turning it off,
or when the allowance runs out, which the sweep notices) every deadline of theirs moves later by the
counting time they were away.  The allowance (``games.vacation_days_per_year``) is counted per calendar
year, and a vacation counts against the year it began.  Each change is one transaction holding the
player's row, so turning vacation off by mail while the sweep ends it never counts the days twice.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import select

from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import User, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import clock
from pbem.mailout import outbox
from pbem.mailout.compose import compose

log = logging.getLogger(__name__)


def allowance_days() -> float:
    """The vacation days each player has per calendar year."""
    return float(current_app.config["PBEM"]["games"]["vacation_days_per_year"])


def _used(user: User, year: int) -> float:
    return user.vacation_days_used if user.vacation_year == year else 0.0


def days_left(user: User) -> float:
    """The vacation days the player has left: this year's, or while on vacation, what is left of the
    allowance of the year it began after the days away so far."""
    if user.vacation_since is not None:
        away = (utcnow() - user.vacation_since).total_seconds() / clock.DAY
        return max(0.0, allowance_days() - _used(user, user.vacation_since.year) - away)
    return max(0.0, allowance_days() - _used(user, utcnow().year))


def ends_at(user: User) -> datetime | None:
    """When the running vacation ends by itself (its allowance runs out), or None when not on vacation."""
    if user.vacation_since is None:
        return None
    left = allowance_days() - _used(user, user.vacation_since.year)
    return user.vacation_since + timedelta(days=max(0.0, left))


def _days(n: float) -> str:
    """``n`` days for people, to the nearest minute: cut down instead, a vacation of a few seconds left
    "29 days 23 hours" of 30, as if almost an hour had gone."""
    minutes = round(n * 1440)
    if minutes == 0 and n > 0:
        return "less than a minute"
    return clock.describe(timedelta(minutes=minutes))


@contextmanager
def _holding(user_id: int) -> Iterator[User]:
    """The player's row, re-read in a fresh write transaction that holds it; commits on success, rolls
    back on any error."""
    with unit_of_work() as uow:
        query = select(User).where(User.id == user_id).execution_options(populate_existing=True)
        if is_postgresql():
            query = query.with_for_update()
        try:
            yield db.session.execute(query).scalar_one()
            uow.commit()
        except BaseException:
            uow.rollback()
            raise


def turn_on(user: User) -> str:
    """Start the player's vacation now (their clocks stop); commits, and returns what to tell them."""
    with _holding(user.id) as locked:
        if locked.vacation_since is not None:
            since = clock.format_time(locked.vacation_since, locked.time_zone)
            return (
                f"You are already on vacation, since {since}. It ends by itself on "
                f"{clock.format_time(ends_at(locked), locked.time_zone)}, when your allowance runs out; "
                "send 'vacation off' when you are back."
            )
        now = utcnow()
        left = days_left(locked)
        if left <= 0:
            return (
                f"You have used all {allowance_days():g} vacation days of {now.year}, so your clocks keep "
                "running. A new allowance starts on 1 January."
            )
        if locked.vacation_year != now.year:
            locked.vacation_year, locked.vacation_days_used = now.year, 0.0
        locked.vacation_since = now
        clock.stop_clocks(locked)
        log.info("%s went on vacation", locked.handle)
        return (
            f"Vacation is on: your clocks are stopped and you will get no reminders. You have {_days(left)} "
            f"of vacation left this year; if you are not back before "
            f"{clock.format_time(ends_at(locked), locked.time_zone)} "
            "your vacation ends by itself and your clocks run again. Send 'vacation off' when you are back."
        )


def _come_back(user: User, back_at: datetime) -> float:
    """End the user's vacation at ``back_at``: count the days, restart the clocks; returns the days."""
    since = user.vacation_since
    assert since is not None
    away = min((back_at - since).total_seconds() / clock.DAY, allowance_days() - _used(user, since.year))
    away = max(0.0, away)
    user.vacation_year = since.year
    user.vacation_days_used = _used(user, since.year) + away
    user.vacation_since = None
    clock.restart_clocks(user, since, back_at)
    return away


def turn_off(user: User) -> str:
    """End the player's vacation now (their clocks run again, deadlines moved later by the time away);
    commits, and returns what to tell them."""
    with _holding(user.id) as locked:
        if locked.vacation_since is None:
            return "You are not on vacation; your clocks are running. Send 'vacation on' to stop them."
        away = _come_back(locked, utcnow())
        log.info("%s is back from vacation after %.2f days", locked.handle, away)
        return (
            f"Welcome back: vacation is off after {_days(away)}. Your clocks run again, and each of your "
            f"deadlines has moved later by the time you were away. You have {_days(days_left(locked))} of "
            "vacation left this year."
        )


def end_expired() -> int:
    """End every vacation whose allowance has run out (the sweep calls this), and tell the player by
    mail; returns how many ended."""
    now = utcnow()
    on_vacation = db.session.execute(select(User.id).where(User.vacation_since.is_not(None))).scalars().all()
    db.session.rollback()
    ended = 0
    for user_id in on_vacation:
        with _holding(user_id) as user:
            run_out = ends_at(user)
            if run_out is None or run_out > now:
                continue  # Back already, or days left.
            away = _come_back(user, run_out)
            outbox.enqueue(
                user,
                outbox.subject("your vacation is over"),
                compose(
                    "mail/vacation_over.txt", user=user, away=_days(away), year=run_out.year,
                    allowance=allowance_days(), ended=clock.format_time(run_out, user.time_zone),
                ),
                kind="vacation-over",
            )
            log.info("%s's vacation allowance ran out; clocks restarted", user.handle)
            ended += 1
    return ended
