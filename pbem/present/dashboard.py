"""A player's dashboard: challenges to answer, then games waiting for their move (soonest deadline
first), games waiting for others, games still gathering players, the games they watch, and the latest
finished ones.  An opponent on vacation is said so beside each game they play in."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_, select
from sqlalchemy.orm import selectinload

from pbem.accounts import vacation
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, Seat, User, Watch
from pbem.game import clock, queries, results
from pbem.lobby import challenges

FINISHED_SHOWN = 10
WATCHED_SHOWN = 50


@dataclass
class Entry:
    """One game on the dashboard: who the opponents are, whose move it is and how long they have, or
    how it ended and the player's own result."""

    game: Game
    title: str
    movers: str = ""
    time_left: str = ""
    deadline: datetime | None = None
    opponents: str = ""
    seats: str = ""
    result: str = ""
    summary: str = ""
    # "nora is on vacation until Wed 3 Dec; clocks stopped", for each opponent away.
    away: list[str] = field(default_factory=list)


@dataclass
class Dashboard:
    """The dashboard's lists, in the order shown."""

    challenges: list[Challenge] = field(default_factory=list)
    my_move: list[Entry] = field(default_factory=list)
    their_move: list[Entry] = field(default_factory=list)
    waiting: list[Entry] = field(default_factory=list)
    watched: list[Entry] = field(default_factory=list)
    finished: list[Entry] = field(default_factory=list)


def away_words(game: Game, user: User, zone: str) -> list[str]:
    """For each of ``user``'s opponents in ``game`` who is on vacation, a sentence saying so and until when
    at the latest (when their allowance runs out), in the reader's ``zone``."""
    words = []
    for seat in game.seats:
        other = seat.user
        if other is None or other.id == user.id or not other.on_vacation:
            continue
        until = vacation.ends_at(other)
        words.append(f"{other.handle} is on vacation until {clock.format_day(until, zone)}; clocks stopped")
    return words


def build(user: User) -> Dashboard:
    """``user``'s dashboard."""
    board = Dashboard(challenges=challenges.pending_challenges(user))
    # Games are picked by id (not joined and made distinct): PostgreSQL cannot compare JSON columns.  The
    # player's seats are read from ix_seat_archive: those not finished (games waiting, in play or called
    # off), and the latest finished, so that the page costs the same however many games they finished.
    unfinished = select(Seat.game_id).where(Seat.user_id == user.id, Seat.finished_at.is_(None))
    latest = (select(Seat.game_id).where(Seat.user_id == user.id, Seat.finished_at.is_not(None))
              .order_by(Seat.finished_at.desc(), Seat.game_id.desc()).limit(FINISHED_SHOWN))
    with_players = selectinload(Game.seats).joinedload(Seat.user)
    mine = db.session.scalars(
        select(Game).where(Game.id.in_(unfinished), Game.status.in_(("waiting", "active"))).order_by(Game.id)
        .options(with_players)
    ).all()
    zone = clock.zone_of(user)
    for game in mine:
        title = queries.engine_of(game).title
        if game.status == "waiting":
            seats = ", ".join(words for _n, words in results.seat_states(game))
            board.waiting.append(Entry(game, title, opponents=results.opponents(game, user), seats=seats))
            continue
        movers = queries.seats_to_move(game)
        my_seats = [s for s in game.seats if s.user_id == user.id and s.number in movers]
        if my_seats:
            seat = min(my_seats, key=lambda s: s.deadline or datetime.max)
            board.my_move.append(Entry(game, title, "you", clock.describe(clock.time_left(seat)),
                                       seat.deadline, opponents=results.opponents(game, user),
                                       away=away_words(game, user, zone)))
        else:
            waiting_on = [s for s in game.seats if s.number in movers]
            soonest = min(waiting_on, key=lambda s: s.deadline or datetime.max, default=None)
            board.their_move.append(Entry(
                game, title, ", ".join(results.handle_or_seat(game, s.number) for s in waiting_on),
                clock.describe(clock.time_left(soonest)) if soonest else "",
                soonest.deadline if soonest else None,
                opponents=results.opponents(game, user), away=away_words(game, user, zone),
            ))
    board.my_move.sort(key=lambda e: e.deadline or datetime.max)
    board.their_move.sort(key=lambda e: e.deadline or datetime.max)
    # Games called off before they began (a challenge declined or withdrawn) are listed too: the player
    # should see what became of a challenge.
    # Two statements, not one with OR: PostgreSQL reads every game to test an OR of two IN lists.
    called_off = and_(Game.id.in_(unfinished), Game.status == "abandoned")
    ended = {game.id: game for where in (Game.id.in_(latest), called_off) for game in db.session.scalars(
        select(Game).where(where).order_by(Game.finished_at.desc(), Game.id.desc()).limit(FINISHED_SHOWN)
        .options(with_players))}
    finished = sorted(ended.values(), key=lambda g: (g.finished_at or datetime.min, g.id),
                      reverse=True)[:FINISHED_SHOWN]
    board.watched = watched(user)
    board.finished = [
        Entry(g, queries.engine_of(g).title, opponents=results.opponents(g, user),
              result=results.user_result(g, user), summary=results.summary(g))
        for g in finished
    ]
    return board


def watched(user: User) -> list[Entry]:
    """The games ``user`` watches, those in play first (whose move it is and their time left), then
    those over (how they ended), the latest first."""
    found = db.session.scalars(
        select(Game).join(Watch, Watch.game_id == Game.id).where(Watch.user_id == user.id)
        .order_by(Game.status != "active", Game.updated_at.desc(), Game.id.desc()).limit(WATCHED_SHOWN)
    ).all()
    entries = []
    for game in found:
        title = queries.engine_of(game).title
        if game.status == "active":
            movers = [s for s in game.seats if s.number in queries.seats_to_move(game)]
            soonest = min(movers, key=lambda s: s.deadline or datetime.max, default=None)
            entries.append(Entry(
                game, title, ", ".join(results.handle_or_seat(game, s.number) for s in movers),
                clock.describe(clock.time_left(soonest)) if soonest else "",
                soonest.deadline if soonest else None, opponents=results.players(game),
                away=away_words(game, user, clock.zone_of(user))))
        else:
            entries.append(Entry(game, title, opponents=results.players(game), summary=results.summary(game)))
    return entries
