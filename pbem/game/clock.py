"""Clocks: when a seat's turn starts and stops, its deadline, its reminder points, and the scheduler's
next look at it.

Time controls (``Game.time_control``):

- ``{"kind": "per_move", "days": N}``: N days for every move.
- ``{"kind": "bank", "initial_days": I, "increment_days": A, "max_days": M}``: a correspondence bank.
  The first move has I days; whatever is left after a move, plus A days, is the time for the next one,
  never more than M days.

Either may carry ``"weekend_pause": true``: then Saturdays and Sundays (UTC) do not count toward a
deadline.  *Counting time* below means time that counts toward a deadline.

A seat's scheduler state: ``deadline`` (when it loses on time), ``reminders_sent`` (how many of the
configured reminder points are behind it) and ``next_event_at`` (the next reminder point, else the
deadline; indexed, so the sweep reads only seats that are due).  A player on vacation has their clocks
stopped: their seats keep the deadline but have no ``next_event_at``, and when they come back
(:func:`restart_clocks`) every deadline moves later by the counting time they were away.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from flask import current_app
from sqlalchemy import select, update

from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, utcnow

DAY = 86400.0
HOUR = 3600.0

# The choices of the new-game form.  pbmserv nagged at 7 days and forfeited at 21.
DAYS_PER_MOVE = (1, 2, 3, 5, 7, 14, 21)
# Correspondence banks offered on the form: (initial days, days added per move, most days).
BANKS = ((7, 1, 14), (14, 2, 30), (30, 3, 60))
# Bounds for time controls made by hand (the API): nobody plays a move a year.
MAX_DAYS = 365


class TimeControlError(ValueError):
    """A time control that cannot be used; the message says why, for the person who chose it."""


# Time controls ---------------------------------------------------------------------------


def default_time_control() -> dict[str, Any]:
    """The time control of a game started without one: the configured days per move."""
    return {"kind": "per_move", "days": current_app.config["PBEM"]["games"]["default_days_per_move"]}


def time_control_choices() -> list[tuple[str, str]]:
    """The time controls the new-game form offers, as (value, label); the value goes to
    :func:`time_control_from_choice`, together with the weekend-pause checkbox."""
    choices = [(f"days:{d}", f"{d} day{'s' if d != 1 else ''} per move") for d in DAYS_PER_MOVE]
    choices += [
        (f"bank:{i}+{a}/{m}", f"Bank: {i} days, +{a} per move, at most {m}") for i, a, m in BANKS
    ]
    return choices


def time_control_from_choice(choice: str, weekend_pause: bool = False) -> dict[str, Any]:
    """The time control for a form value of :func:`time_control_choices` (``days:3``, ``bank:7+1/14``),
    with weekends paused or not; raises :class:`TimeControlError` for a value the form never offers."""
    offered = {value for value, _ in time_control_choices()}
    if choice not in offered:
        raise TimeControlError(
            f"{choice!r} is not a time control offered here; choose days per move "
            f"({', '.join(str(d) for d in DAYS_PER_MOVE)}) or one of the banks."
        )
    kind, _, rest = choice.partition(":")
    if kind == "days":
        control: dict[str, Any] = {"kind": "per_move", "days": int(rest)}
    else:
        initial, _, more = rest.partition("+")
        increment, _, most = more.partition("/")
        control = {"kind": "bank", "initial_days": int(initial), "increment_days": int(increment),
                   "max_days": int(most)}
    if weekend_pause:
        control["weekend_pause"] = True
    return control


def check_time_control(control: dict[str, Any]) -> dict[str, Any]:
    """``control`` checked and tidied (for time controls given by hand, e.g. through the API); raises
    :class:`TimeControlError` saying what is wrong."""

    def days(key: str, low: float) -> float:
        value = control.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= MAX_DAYS:
            raise TimeControlError(f"{key} must be a number of days from {low:g} to {MAX_DAYS}, "
                                   f"not {value!r}.")
        return value

    kind = control.get("kind")
    if kind == "per_move":
        checked: dict[str, Any] = {"kind": "per_move", "days": days("days", 1)}
    elif kind == "bank":
        checked = {
            "kind": "bank",
            "initial_days": days("initial_days", 1),
            "increment_days": days("increment_days", 0),
            "max_days": days("max_days", 1),
        }
        if checked["max_days"] < checked["initial_days"]:
            raise TimeControlError("max_days must be at least initial_days.")
    else:
        raise TimeControlError(f"The time control kind must be 'per_move' or 'bank', not {kind!r}.")
    pause = control.get("weekend_pause", False)
    if not isinstance(pause, bool):
        raise TimeControlError(f"weekend_pause must be true or false, not {pause!r}.")
    if pause:
        checked["weekend_pause"] = True
    unknown = set(control) - set(checked) - {"weekend_pause"}
    if unknown:
        raise TimeControlError(f"Unknown time control setting(s): {', '.join(sorted(unknown))}.")
    return checked


def describe_time_control(control: dict[str, Any] | None) -> str:
    """A time control for people: "3 days per move", "bank: 7 days, +1 per move, at most 14; weekends
    paused"."""
    control = control or {}
    if control.get("kind") == "bank":
        text = (
            f"bank: {control['initial_days']:g} days, +{control.get('increment_days', 0):g} per move"
            + (f", at most {control['max_days']:g}" if control.get("max_days") else "")
        )
    else:
        n = control.get("days", 3)
        text = f"{n:g} day{'s' if n != 1 else ''} per move"
    if control.get("weekend_pause"):
        text += "; weekends (Saturday and Sunday, UTC) do not count"
    return text


def weekend_pause(game: Game) -> bool:
    """Whether Saturdays and Sundays are left out of the game's deadlines."""
    return _pauses(game.time_control)


def _pauses(control: dict[str, Any] | None) -> bool:
    return bool((control or {}).get("weekend_pause"))


# Counting time ---------------------------------------------------------------------------


def _is_weekend(day: date) -> bool:
    return day.weekday() >= 5


def _midnight_after(moment: datetime) -> datetime:
    return datetime.combine(moment.date() + timedelta(days=1), time())


def _midnight_before(moment: datetime) -> datetime:
    """The last midnight strictly before ``moment``."""
    start = datetime.combine(moment.date(), time())
    return start if start < moment else start - timedelta(days=1)


def counting_seconds(start: datetime, end: datetime, pause: bool) -> float:
    """The counting time from ``start`` to ``end`` (negative when ``end`` is earlier)."""
    if not pause:
        return (end - start).total_seconds()
    if end < start:
        return -counting_seconds(end, start, pause)
    total, moment = 0.0, start
    while moment < end:
        boundary = min(_midnight_after(moment), end)
        if not _is_weekend(moment.date()):
            total += (boundary - moment).total_seconds()
        moment = boundary
    return total


def after_counting(start: datetime, seconds: float, pause: bool) -> datetime:
    """The moment when ``seconds`` of counting time have passed since ``start`` (before it, when
    negative).  With weekends paused a deadline never falls on a weekend, except at its very start
    (Saturday 00:00 is the end of Friday)."""
    if not pause:
        return start + timedelta(seconds=seconds)
    left, moment = abs(seconds), start
    if seconds >= 0:
        while True:
            boundary = _midnight_after(moment)
            if not _is_weekend(moment.date()):
                room = (boundary - moment).total_seconds()
                if left <= room:
                    return moment + timedelta(seconds=left)
                left -= room
            moment = boundary
    while True:
        boundary = _midnight_before(moment)
        if not _is_weekend(boundary.date()):
            room = (moment - boundary).total_seconds()
            if left <= room:
                return moment - timedelta(seconds=left)
            left -= room
        moment = boundary


# Reminders ---------------------------------------------------------------------------


def reminder_hours() -> list[float]:
    """The configured reminder points, in hours before the deadline, earliest point first."""
    return sorted((float(h) for h in current_app.config["PBEM"]["scheduler"]["reminder_hours"]), reverse=True)


def reminder_points(deadline: datetime, pause: bool) -> list[datetime]:
    """When the reminders for ``deadline`` are due, earliest first (in counting time before it)."""
    return [after_counting(deadline, -hours * HOUR, pause) for hours in reminder_hours()]


def points_behind(points: list[datetime], at: datetime) -> int:
    """How many of the reminder points have come by ``at``."""
    return sum(1 for p in points if p <= at)


def next_event(points: list[datetime], deadline: datetime, reminders_sent: int) -> datetime:
    """When the scheduler next looks at a seat: its next reminder point, else its deadline."""
    return points[reminders_sent] if reminders_sent < len(points) else deadline


# Turns ---------------------------------------------------------------------------


def _allowance_seconds(game: Game, seat: Seat) -> float:
    control = game.time_control or default_time_control()
    if control.get("kind") == "bank":
        if seat.bank_seconds is None:
            seat.bank_seconds = float(control["initial_days"]) * DAY
        return seat.bank_seconds
    return float(control.get("days", 3)) * DAY


def _vacation_since(seat: Seat) -> datetime | None:
    return seat.user.vacation_since if seat.user is not None else None


def start_turn(game: Game, seat: Seat) -> None:
    """The seat is now to move: its deadline is set from the time control, and its reminders planned.

    Reminder points already past when the turn starts are skipped (a one-day move gets no 48-hour
    reminder).  For a player on vacation the turn counts as begun when the vacation did, so that on
    return they have the whole allowance; meanwhile the sweep leaves the seat alone."""
    pause = weekend_pause(game)
    away_since = _vacation_since(seat)
    begun = away_since or utcnow()
    seat.deadline = after_counting(begun, _allowance_seconds(game, seat), pause)
    points = reminder_points(seat.deadline, pause)
    seat.reminders_sent = points_behind(points, begun)
    seat.next_event_at = None if away_since else next_event(points, seat.deadline, seat.reminders_sent)


def stop_turn(game: Game, seat: Seat) -> None:
    """The seat has moved (or the game ended): a bank keeps what was left plus the increment."""
    if seat.deadline is None:
        return
    control = game.time_control or {}
    if control.get("kind") == "bank" and game.status == "active":
        left = (time_left(seat) or timedelta(0)).total_seconds()
        added = left + float(control.get("increment_days", 0)) * DAY
        cap = control.get("max_days")
        seat.bank_seconds = min(added, float(cap) * DAY) if cap else added
    seat.deadline = None
    seat.next_event_at = None


def time_left(seat: Seat) -> timedelta | None:
    """The counting time the seat has until its deadline (frozen while its player is on vacation), or
    None when it is not on the clock."""
    if seat.deadline is None:
        return None
    return _left(seat.deadline, _vacation_since(seat) or utcnow(), weekend_pause(seat.game))


def _left(deadline: datetime, since: datetime, pause: bool) -> timedelta:
    return timedelta(seconds=max(0.0, counting_seconds(since, deadline, pause)))


def status(seat: Seat, zone: str | None = None) -> str:
    """The seat's clock for people, as shown on pages and in mails: "2 days 5 hours left (until Mon 3 Mar
    2025 12:00 UTC)", the deadline in the time zone ``zone`` (the reader's); with a word when the clock
    is stopped by vacation or the weekend."""
    left = time_left(seat)
    if left is None:
        return waiting_words(seat)
    if seat.user is not None and seat.user.vacation_since is not None:
        return f"{describe(left)} left; the clock is stopped while {seat.user.handle} is on vacation"
    text = f"{describe(left)} left (until {format_time(seat.deadline, zone)})"
    if weekend_pause(seat.game) and _is_weekend(utcnow().date()):
        text += "; the clock is paused for the weekend"
    return text


def status_changes(deadline: datetime, vacation_since: datetime | None, control: dict[str, Any] | None,
                   now: datetime) -> tuple[int, bool]:
    """What the words of :func:`status` for a running clock (its seat's ``deadline``, its player away
    since ``vacation_since``, under the time ``control``) change with as time passes alone, at ``now``:
    the whole minutes left (as :func:`describe` counts them) and whether the weekend pauses the clock.
    For an answer kept while they stay the same: besides these, the words follow from the deadline, the
    player's handle and vacation, and the reader's zone."""
    pause = _pauses(control)
    left = _left(deadline, vacation_since or now, pause)
    return int(left.total_seconds() // 60), pause and _is_weekend(now.date())


def waiting_words(seat: Seat) -> str:
    """The clock of a seat that is not to move, in a game going on: what its bank holds ("6 days 23
    hours in the bank, not running"), or the time each move has ("3 days per move, not running"); it
    changes only when the seat moves, so a page showing it stays true."""
    if seat.game.status != "active":
        return "no clock running"
    control = seat.game.time_control or default_time_control()
    if control.get("kind") == "bank":
        bank = seat.bank_seconds if seat.bank_seconds is not None else float(control["initial_days"]) * DAY
        return f"{describe(timedelta(seconds=bank))} in the bank, not running"
    days = control.get("days", 3)
    return f"{days} day{'s' if days != 1 else ''} per move, not running"


def bank_seconds(seat: Seat) -> float | None:
    """What the seat's bank holds (its counting seconds left, running or not), or None without a bank."""
    control = seat.game.time_control or {}
    if control.get("kind") != "bank" or seat.game.status != "active":
        return None
    left = time_left(seat)
    if left is not None:
        return left.total_seconds()
    return seat.bank_seconds if seat.bank_seconds is not None else float(control["initial_days"]) * DAY


def format_time(moment: datetime | None, zone: str | None = None, date_only: bool = False) -> str:
    """A moment (naive UTC, as stored) for people, in the time zone ``zone`` (UTC by default): "Mon 3 Mar
    2025 12:00 UTC", "Mon 3 Mar 2025 13:00 CET"; with ``date_only`` just the day, "2025-03-03".

    Every time a page or a mail shows goes through here (templates through the ``local_time`` filter),
    so that each reader sees times in their own zone."""
    if moment is None:
        return "never"
    local = moment.replace(tzinfo=UTC).astimezone(time_zone(zone))
    if date_only:
        return f"{local:%Y-%m-%d}"
    name = local.tzname() or "UTC"
    if name[:1] in "+-":
        name = f"UTC{name}"  # Zones without an abbreviation name themselves by their offset.
    return (f"{_DAYS[local.weekday()]} {local.day} {_MONTHS[local.month]} {local.year} "
            f"{local.hour:02d}:{local.minute:02d} {name}")


def format_day(moment: datetime | None, zone: str | None = None) -> str:
    """The day of a moment (naive UTC) in ``zone``, for a sentence: "Wed 3 Dec" ("never" for None)."""
    if moment is None:
        return "never"
    local = moment.replace(tzinfo=UTC).astimezone(time_zone(zone))
    return f"{_DAYS[local.weekday()]} {local.day} {_MONTHS[local.month]}"


# The names strftime's %a and %b give (the C locale's: the server sets no other), looked up rather than
# formatted: strftime was two thirds of writing a time, which every move request and clock shown does.
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def time_zone(name: str | None) -> ZoneInfo:
    """The time zone called ``name`` (IANA, e.g. "Europe/Paris"); UTC for none or an unknown name."""
    if not name or name not in zone_names():
        return ZoneInfo("UTC")
    return ZoneInfo(name)


@cache
def zone_names() -> frozenset[str]:
    """Every IANA time zone name there is."""
    return frozenset(available_timezones())


def zone_choices() -> list[str]:
    """The time zones a player may choose, UTC first, then the others in order."""
    return ["UTC", *sorted(z for z in zone_names() if z != "UTC" and "/" in z)]


def zone_of(user: Any) -> str:
    """The time zone a reader sees times in: theirs when signed in, else UTC."""
    if not getattr(user, "is_authenticated", False):
        return "UTC"
    return getattr(user, "time_zone", None) or "UTC"


def describe(delta: timedelta | None) -> str:
    """A duration for people: "2 days 5 hours", "40 minutes"."""
    if delta is None:
        return "no clock running"
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    parts = []
    if days:
        parts.append(f"{days} day{'s' if days != 1 else ''}")
    if hours:
        parts.append(f"{hours} hour{'s' if hours != 1 else ''}")
    if not days and (mins or not parts):
        parts.append(f"{mins} minute{'s' if mins != 1 else ''}")
    return " ".join(parts)


# Vacation ---------------------------------------------------------------------------


def _running_seats(user: User) -> list[Seat]:
    return list(
        db.session.scalars(
            select(Seat).join(Game).where(
                Seat.user_id == user.id, Seat.deadline.is_not(None), Game.status == "active"
            )
        )
    )


def stop_clocks(user: User) -> None:
    """The player has gone on vacation: the sweep passes their seats by until :func:`restart_clocks`."""
    db.session.execute(
        update(Seat).where(Seat.user_id == user.id, Seat.deadline.is_not(None)).values(next_event_at=None)
    )


def restart_clocks(user: User, away_since: datetime, back_at: datetime) -> None:
    """The player is back at ``back_at``: each deadline moves later by the counting time they were away,
    and the sweep looks at their seats again.

    Each seat is updated only if its deadline is still the one read, so a move made meanwhile (which
    stops or restarts that clock itself) is never undone."""
    for seat in _running_seats(user):
        assert seat.deadline is not None  # A running clock has a deadline (see _running_seats).
        pause = weekend_pause(seat.game)
        left = max(0.0, counting_seconds(away_since, seat.deadline, pause))
        deadline = after_counting(back_at, left, pause)
        points = reminder_points(deadline, pause)
        db.session.execute(
            update(Seat)
            .where(Seat.id == seat.id, Seat.deadline == seat.deadline)
            .values(deadline=deadline, next_event_at=next_event(points, deadline, seat.reminders_sent))
            .execution_options(synchronize_session=False)
        )
