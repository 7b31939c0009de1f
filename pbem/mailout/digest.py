"""The daily digest: one mail a day listing every game awaiting the player's move, for players who chose
it instead of a mail per move (``User.notify == "digest"``).

A digest is due once the day's digest hour has come and the player has had none since (a player who
has just chosen the digest gets the first one at once, if it is past the hour).  The hour is the
player's own (``User.digest_hour``, 0-23 in their time zone), or else the server's
(``scheduler.digest_hour``, UTC).  The player's ``last_digest_at`` is claimed with a conditional UPDATE
in the same transaction that writes the mail, so two schedulers never send one twice.  Players on vacation get
none: their clocks are stopped and nothing is pressing.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, time, timedelta
from typing import Any, cast

from flask import current_app
from sqlalchemy import CursorResult, or_, select, update

from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import clock, queries
from pbem.mailout import notify, outbox, tokens
from pbem.mailout.compose import compose

log = logging.getLogger(__name__)


def turn_summary(game: Game, seat: Seat) -> dict[str, Any]:
    """What a scheduler mail shows of one game awaiting ``seat``'s move: the board, the legal moves when
    they are few, the move number, the clock and the reply address that carries the player's token."""
    assert seat.user is not None
    engine = queries.engine_of(game)
    state = queries.state_of(game)
    legal = engine.moves(state, seat.number)
    return {
        "title": f"{engine.title} #{game.id}",
        "board": engine.render_text(state, seat.number),
        "legal": legal if len(legal) <= notify.MAX_LISTED_MOVES else None,
        "legal_count": len(legal),
        "move_number": queries.next_move_number(game, seat),
        "clock": clock.status(seat, seat.user.time_zone),
        "opponents": [s.user.handle for s in game.seats if s.user is not None and s.user_id != seat.user_id],
        "reply_address": tokens.reply_address(game.id, seat.number, seat.user),
        "game_url": notify.game_url(game),
    }


def last_word(game: Game, seat: Seat) -> dict[str, Any]:
    """What a digest adds to a game's summary: the last move the player may see (where moves stay hidden
    until the end, their own), by whom, and its comment when another player wrote it."""
    last = queries.last_move_seen_by(game, seat.number)
    return {
        "last": last,
        "last_by": notify.name_for(game, last.seat, seat.number) if last is not None else None,
        "said": last.comment if last is not None and last.seat != seat.number else None,
    }


def todays_digest_time(now: datetime) -> datetime:
    """When digests fall due on the day of ``now``; before it, nobody's digest is due."""
    return datetime.combine(now.date(), time(current_app.config["PBEM"]["scheduler"]["digest_hour"]))


def due_point(hour: int, zone: str | None, now: datetime) -> datetime:
    """The latest moment at or before ``now`` (naive UTC) when it was ``hour``:00 in ``zone``, as naive
    UTC.  On a day when that hour does not exist (clocks spring forward past it) it is the moment the
    clocks jumped; on a day it comes twice, the first."""
    tz = clock.time_zone(zone)
    local_now = now.replace(tzinfo=UTC).astimezone(tz)
    day = local_now.date()
    for _ in range(3):
        point = datetime.combine(day, time(hour), tzinfo=tz).astimezone(UTC).replace(tzinfo=None)
        if point <= now:
            return point
        day -= timedelta(days=1)
    raise AssertionError("an hour of the day comes within three days")


def is_due(user: User | Any, now: datetime) -> bool:
    """Whether ``user`` (with ``digest_hour``, ``time_zone`` and ``last_digest_at``) is due a digest at
    ``now``: the last occurrence of their hour has passed since their last digest; a player who has had
    none yet only once their hour has come today (their day)."""
    if user.digest_hour is None:
        point = todays_digest_time(now)
        return now >= point and (user.last_digest_at is None or user.last_digest_at < point)
    point = due_point(user.digest_hour, user.time_zone, now)
    if user.last_digest_at is None:
        tz = clock.time_zone(user.time_zone)
        today = now.replace(tzinfo=UTC).astimezone(tz).date()
        return point.replace(tzinfo=UTC).astimezone(tz).date() == today
    return user.last_digest_at < point


def _claim(user_id: int, last: datetime | None, now: datetime) -> bool:
    """Take this player's digest for this scheduler, unless another has sent it meanwhile."""
    same = User.last_digest_at.is_(None) if last is None else User.last_digest_at == last
    # An UPDATE's result is a CursorResult (with its row count); the session's execute is typed for any
    # statement.
    result = cast(CursorResult[Any], db.session.execute(
        update(User).where(User.id == user_id, same).values(last_digest_at=now)
        .execution_options(synchronize_session=False)
    ))
    return result.rowcount == 1


def send_due() -> int:
    """Write every digest that is due into the outbox; returns how many were written."""
    now = utcnow()
    due_from = todays_digest_time(now)
    taking = (User.notify == "digest", User.verified_at.is_not(None), User.vacation_since.is_(None))
    # At the server's hour, in UTC, unless the player chose their own: those are read by the database.
    due: list[tuple[int, datetime | None]] = [(row.id, row.last_digest_at) for row in db.session.execute(
        select(User.id, User.last_digest_at).where(
            *taking, User.digest_hour.is_(None),
            or_(User.last_digest_at.is_(None), User.last_digest_at < due_from),
        )
    )] if now >= due_from else []
    # At the player's own hour in their own zone: worked out for each of them.
    own_hours = db.session.execute(
        select(User.id, User.last_digest_at, User.digest_hour, User.time_zone)
        .where(*taking, User.digest_hour.is_not(None))
    ).all()
    due += [(row.id, row.last_digest_at) for row in own_hours if is_due(row, now)]
    db.session.rollback()
    written = 0
    for user_id, last in due:
        with unit_of_work() as uow:
            try:
                if not _claim(user_id, last, now):
                    uow.rollback()
                    continue
                user = db.session.get(User, user_id)
                assert user is not None
                games = [turn_summary(game, seat) | last_word(game, seat)
                         for game, seat in queries.awaiting(user)]
                if games:
                    plural = "s" if len(games) != 1 else ""
                    outbox.enqueue(
                        user,
                        outbox.subject(f"daily digest: {len(games)} game{plural} awaiting your move"),
                        compose("mail/digest.txt", user=user, games=games),
                        kind="digest",
                        # With one game, answering the digest is answering that game.
                        reply_to=games[0]["reply_address"] if len(games) == 1 else None,
                    )
                    written += 1
                uow.commit()
            except Exception:
                uow.rollback()
                log.exception("digest for user %s failed; it is tried again on the next run", user_id)
    return written
