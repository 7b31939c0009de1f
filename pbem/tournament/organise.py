"""Organising and entering tournaments: what the form, the API and the mail commands call.

Each function is one unit of work: it takes the write lock (:func:`pbem.core.unit_of_work.unit_of_work`)
and the tournament's (:func:`pbem.tournament.rounds.lock`), checks, changes, and commits — or raises
:class:`~pbem.core.errors.PlayError` with a message for the person and changes nothing.  A leaver's games
are ended through the one move path (:func:`pbem.game.play.resign`), inside the same transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

import games
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, Tournament, TournamentGame, TournamentPlayer, User, utcnow
from pbem.core.unit_of_work import UnitOfWork, unit_of_work
from pbem.game import clock, play, ratings
from pbem.lobby import challenges
from pbem.tournament import rounds, standings

# Bounds of what an organiser may ask for.
MAX_NAME = 80
LARGEST_FIELD = 1000
MOST_SWISS_ROUNDS = 20
DRAW_RULES = ("replay", "seed")
LEAVING_RULES = ("forfeit", "void")


def create(
    organiser: User, name: str, engine_slug: str, format: str, *, options: dict[str, Any] | None = None,
    time_control: dict[str, Any] | None = None, rated: bool = True, min_players: int = 2,
    max_players: int = 16, start_at: datetime | None = None, min_rating: int | None = None,
    max_rating: int | None = None, settings: dict[str, Any] | None = None,
) -> Tournament:
    """A new tournament taking entries; starts at ``start_at``, or when ``max_players`` have joined if
    None.  Refuses (PlayError, or marshmallow's ValidationError for the game's options) what cannot be."""
    name = " ".join((name or "").split())
    if not name or len(name) > MAX_NAME:
        raise PlayError(f"A tournament needs a name of 1 to {MAX_NAME} characters.", "invalid")
    if format not in standings.FORMATS:
        raise PlayError(f"The format must be one of: {', '.join(standings.FORMATS)}.", "invalid")
    try:
        engine = games.get(engine_slug)
    except games.UnknownGame as exc:
        raise PlayError(str(exc), "invalid") from None
    if 2 not in engine.players:
        raise PlayError(f"{engine.title} is not a game of two players; tournaments pair two.", "invalid")
    loaded = engine.options.load(options or {})
    if not 2 <= min_players <= max_players <= LARGEST_FIELD:
        raise PlayError(f"The field must be from 2 to {LARGEST_FIELD} players, the least no more than the "
                        "most.", "invalid")
    if start_at is not None and start_at <= utcnow():
        raise PlayError("The start must be in the future (or leave it empty: when full).", "invalid")
    challenges.check_rating_range(min_rating, max_rating)
    chosen = {**rounds.DEFAULT_SETTINGS, **{k: v for k, v in (settings or {}).items() if v is not None}}
    unknown = set(chosen) - set(rounds.DEFAULT_SETTINGS)
    if unknown:
        raise PlayError(f"Unknown settings: {', '.join(sorted(unknown))}.", "invalid")
    _check_settings(format, chosen, max_players)
    with unit_of_work() as uow:
        tournament = Tournament(
            name=name, engine=engine.slug, options=loaded,
            time_control=time_control or clock.default_time_control(), rated=rated, format=format,
            settings=chosen, min_players=min_players, max_players=max_players,
            start_at=start_at, min_rating=min_rating, max_rating=max_rating, organiser=organiser,
            status="open", round=0, version=1,
        )
        db.session.add(tournament)
        uow.commit()
    return tournament


def _check_settings(format: str, chosen: dict[str, Any], max_players: int) -> None:
    """Refuse format settings out of bounds."""
    if not isinstance(chosen["double"], bool):
        raise PlayError("double is yes or no.", "invalid")
    if not isinstance(chosen["rounds"], int) or not 1 <= chosen["rounds"] <= MOST_SWISS_ROUNDS:
        raise PlayError(f"A Swiss has 1 to {MOST_SWISS_ROUNDS} rounds.", "invalid")
    if format == "swiss" and chosen["rounds"] >= max_players:
        raise PlayError("A Swiss needs more players than rounds (no one may meet an opponent twice).",
                        "invalid")
    if chosen["bye_points"] not in (0, 0.5, 1, 0.0, 1.0):
        raise PlayError("A bye scores 0, ½ (0.5) or 1 point.", "invalid")
    if chosen["draw_rule"] not in DRAW_RULES:
        raise PlayError("A drawn knockout match is replayed (replay) or goes to the better seed (seed).",
                        "invalid")
    if chosen["leaving"] not in LEAVING_RULES:
        raise PlayError("A leaver's games are forfeited (forfeit) or struck out (void).", "invalid")
    if not isinstance(chosen["reach"], int) or not 1 <= chosen["reach"] <= 50:
        raise PlayError("A ladder's reach is 1 to 50 places.", "invalid")
    if not isinstance(chosen["accept_days"], int) or not 1 <= chosen["accept_days"] <= 30:
        raise PlayError("A ladder challenge is accepted within 1 to 30 days.", "invalid")


def _locked(tournament_id: int) -> Tournament:
    """Lock the tournament, in the caller's unit of work; refuse one that does not exist."""
    tournament = rounds.lock(tournament_id)
    if tournament is None:
        raise PlayError(f"There is no tournament #{tournament_id}.", "no-tournament")
    return tournament


def _entry(tournament: Tournament, user: User) -> TournamentPlayer | None:
    return next((e for e in tournament.entries if e.user_id == user.id), None)


def _require_organiser(tournament: Tournament, user: User) -> None:
    if tournament.organiser_id != user.id and not user.is_admin:
        raise PlayError(f"Only the organiser of tournament #{tournament.id} can do that.", "not-organiser")


def join(tournament_id: int, user: User) -> Tournament:
    """``user`` enters the tournament while it takes entries; the entry that fills a tournament without a
    start time starts it.  A ladder that is running takes newcomers at its foot."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        ladder_open = tournament.format == "ladder" and tournament.status == "running"
        if tournament.status != "open" and not ladder_open:
            raise PlayError(f"Tournament #{tournament.id} takes no more entries (it is "
                            f"{status_words(tournament)}).", "closed")
        if not user.verified:
            raise PlayError("Confirm your address before you enter a tournament.", "unverified")
        entry = _entry(tournament, user)
        if entry is not None and entry.status == "active":
            raise PlayError(f"You are in tournament #{tournament.id} already.", "entered")
        if entry is not None:
            raise PlayError(f"You left tournament #{tournament.id}; you cannot enter it again.", "left")
        active = [e for e in tournament.entries if e.status == "active"]
        if len(active) >= tournament.max_players:
            raise PlayError(f"Tournament #{tournament.id} is full ({tournament.max_players} players).",
                            "full")
        _check_rating(tournament, user)
        entry = TournamentPlayer(user=user, status="active")
        if ladder_open:
            entry.position = len(active) + 1
            entry.seed = entry.position
        tournament.entries.append(entry)
        rounds.changed(tournament)
        db.session.flush()
        if (tournament.status == "open" and tournament.start_at is None
                and len(active) + 1 >= tournament.max_players):
            rounds.begin(tournament)
        uow.commit()
    return tournament


def _check_rating(tournament: Tournament, user: User) -> None:
    """Refuse a player whose rating in the game lies outside the tournament's range."""
    low, high = tournament.min_rating, tournament.max_rating
    if low is None and high is None:
        return
    rating = ratings.points(ratings.ratings_in(tournament.engine, {user.id}).get(user.id))
    if (low is not None and rating < low) or (high is not None and rating > high):
        title = games.get(tournament.engine).title
        raise PlayError(f"Tournament #{tournament.id} is open to players rated {range_words(tournament)} in "
                        f"{title}; your {title} rating is {rating}.", "out-of-range")


def range_words(tournament: Tournament) -> str:
    """The rating range as people read it: "1500–1900", "1500 or more", "up to 1900", "anyone"."""
    low, high = tournament.min_rating, tournament.max_rating
    if low is not None and high is not None:
        return f"{low}–{high}"
    if low is not None:
        return f"{low} or more"
    return f"up to {high}" if high is not None else "anyone"


def withdraw(tournament_id: int, user: User) -> Tournament:
    """``user`` leaves the tournament: before the start their entry is simply gone; after it, their
    games in play are lost by resignation (or struck out, as the settings say) and they are paired no
    more."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        entry = _entry(tournament, user)
        if entry is None or entry.status != "active":
            raise PlayError(f"You are not playing in tournament #{tournament.id}.", "not-entered")
        return _leave(uow, tournament, entry, "withdrawn")


def remove(tournament_id: int, organiser: User, handle: str) -> Tournament:
    """The organiser takes a player out; their games are settled as when a player withdraws."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        _require_organiser(tournament, organiser)
        entry = next((e for e in tournament.entries
                      if e.user.handle.lower() == (handle or "").lower() and e.status == "active"), None)
        if entry is None:
            raise PlayError(f"{handle} is not playing in tournament #{tournament.id}.", "not-entered")
        return _leave(uow, tournament, entry, "removed")


def _leave(uow: UnitOfWork, tournament: Tournament, entry: TournamentPlayer, status: str) -> Tournament:
    """End ``entry``'s part, in the caller's unit of work; commits."""
    if tournament.status == "open":
        tournament.entries.remove(entry)
        db.session.delete(entry)
        rounds.changed(tournament)
        uow.commit()
        return tournament
    if tournament.status in ("finished", "cancelled"):
        raise PlayError(f"Tournament #{tournament.id} is over.", "over")
    entry.status, entry.left_at = status, utcnow()
    rounds.changed(tournament)
    theirs = db.session.scalars(select(TournamentGame).where(
        TournamentGame.tournament_id == tournament.id,
        (TournamentGame.first_id == entry.user_id) | (TournamentGame.second_id == entry.user_id))).all()
    strike = rounds.setting(tournament, "leaving") == "void"
    in_play = []
    for made in theirs:
        if strike:
            made.void = True
        game = made.game
        if game is not None and game.status == "waiting":
            locked = play.lock_game(game.id)
            if locked is not None:
                challenges.lapse(locked)
            made.void = True
        elif game is not None and game.status == "active":
            in_play.append(game.id)
    db.session.flush()
    # Each game in play is lost by resignation through the one move path, in this unit of work; the
    # last one to end may complete the round, which pairs the next without the leaver.
    for game_id in sorted(in_play):
        play.resign(game_id, entry.user, "server")
    rounds.advance(tournament)
    uow.commit()
    return tournament


def start(tournament_id: int, organiser: User) -> Tournament:
    """The organiser starts the tournament now, with the players entered so far."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        _require_organiser(tournament, organiser)
        _begin_if_enough(tournament)
        uow.commit()
    return tournament


def _begin_if_enough(tournament: Tournament) -> None:
    if tournament.status != "open":
        raise PlayError(f"Tournament #{tournament.id} has started already.", "started")
    count = len([e for e in tournament.entries if e.status == "active"])
    if count < max(2, tournament.min_players):
        raise PlayError(f"Tournament #{tournament.id} has {count} player(s); it needs at least "
                        f"{max(2, tournament.min_players)}.", "too-few")
    if tournament.format == "swiss" and int(rounds.setting(tournament, "rounds")) >= count:
        raise PlayError(f"A Swiss of {rounds.setting(tournament, 'rounds')} rounds needs more than "
                        f"{rounds.setting(tournament, 'rounds')} players; it has {count}.", "too-few")
    rounds.begin(tournament)


def pause(tournament_id: int, organiser: User) -> Tournament:
    """No new round is paired while paused (games in play go on)."""
    return _set_running(tournament_id, organiser, "running", "paused")


def resume(tournament_id: int, organiser: User) -> Tournament:
    """Pairing goes on: a round completed while paused is followed by the next at once."""
    return _set_running(tournament_id, organiser, "paused", "running")


def _set_running(tournament_id: int, organiser: User, was: str, becomes: str) -> Tournament:
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        _require_organiser(tournament, organiser)
        if tournament.status != was:
            raise PlayError(f"Tournament #{tournament.id} is {status_words(tournament)}.", "not-" + was)
        tournament.status = becomes
        rounds.changed(tournament)
        if becomes == "running":
            rounds.advance(tournament)
        uow.commit()
    return tournament


def cancel(tournament_id: int, organiser: User) -> Tournament:
    """The organiser calls the tournament off: nothing more is paired; games in play go on as ordinary
    games; waiting ladder challenges are called off.  Everyone is told."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        _require_organiser(tournament, organiser)
        if tournament.status in ("finished", "cancelled"):
            raise PlayError(f"Tournament #{tournament.id} is {status_words(tournament)}.", "over")
        _cancel(tournament, "the organiser called it off")
        uow.commit()
    return tournament


def _cancel(tournament: Tournament, why: str) -> None:
    tournament.status = "cancelled"
    tournament.finished_at = utcnow()
    rounds.changed(tournament)
    for made in db.session.scalars(select(TournamentGame).where(
            TournamentGame.tournament_id == tournament.id, TournamentGame.kind == "challenge",
            TournamentGame.result.is_(None))):
        if made.game is not None and made.game.status == "waiting":
            locked = play.lock_game(made.game.id)
            if locked is not None:
                challenges.lapse(locked)
            made.void = True
    rounds.tell_everyone(tournament, "cancelled", "mail/tournament_cancelled.txt", why=why)


def challenge(tournament_id: int, challenger: User, handle: str) -> TournamentGame:
    """On a ladder, ``challenger`` challenges the player ``handle`` standing up to the reach above."""
    with unit_of_work() as uow:
        tournament = _locked(tournament_id)
        wanted = (handle or "").lower()
        defender = next((e.user for e in tournament.entries if e.user.handle.lower() == wanted), None)
        if defender is None:
            raise PlayError(f"{handle} is not on this ladder.", "not-entered")
        made = rounds.challenge(tournament, challenger, defender)
        uow.commit()
    return made


def start_due(now: datetime) -> int:
    """Start every tournament whose start time has come (one without enough players is called off), and
    settle the ladder challenges that lapsed.  One transaction each; returns how many were acted on."""
    due = db.session.scalars(select(Tournament.id).where(
        Tournament.status == "open", Tournament.start_at.is_not(None), Tournament.start_at <= now)).all()
    db.session.rollback()
    acted = 0
    for tournament_id in due:
        with unit_of_work() as uow:
            tournament = _locked(tournament_id)
            if tournament.status == "open":
                try:
                    _begin_if_enough(tournament)  # Refuses before it changes anything.
                except PlayError as exc:
                    _cancel(tournament, f"it could not start: {exc.message}")
                acted += 1
            uow.commit()
    with unit_of_work() as uow:
        acted += rounds.lapse_challenges(now)
        uow.commit()
    return acted


def status_words(tournament: Tournament) -> str:
    """The tournament's state in words: "taking entries", "in round 2", …"""
    if tournament.status == "open":
        return "taking entries"
    if tournament.status == "running":
        return "running" if tournament.format in ("ladder", "round_robin") else f"in round {tournament.round}"
    return {"paused": "paused", "finished": "over", "cancelled": "cancelled"}[tournament.status]


def listing(limit: int = 100) -> list[Tournament]:
    """Tournaments taking entries or running first, then the rest, newest first."""
    order = db.case((Tournament.status.in_(("open", "running", "paused")), 0), else_=1)
    return list(db.session.scalars(select(Tournament).order_by(order, Tournament.id.desc()).limit(limit)))


def games_of(tournament: Tournament) -> dict[int, Game]:
    """The tournament's games, by id."""
    found = select(Game).join(TournamentGame, TournamentGame.game_id == Game.id).where(
        TournamentGame.tournament_id == tournament.id)
    return {g.id: g for g in db.session.scalars(found)}
