"""Starting games between people: challenges to named players and open seats anyone may take.

A new game holds its creator's seat at once; a named opponent's seat waits on a :class:`Challenge`
until they accept, and an open seat waits for anyone.  When the last seat is filled the game starts
through :func:`pbem.game.play.start`.  Every function here runs under the game's lock, so two players can
never both take the last seat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import MAX_COMMENT, Challenge, Game, Seat, User, utcnow
from pbem.core.redaction import blank_secrets
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play, queries, ratings, results
from pbem.game.play import PlayError
from pbem.mailout import notify

# A value longer than this (a written position) is only said to be set where a game's options are listed
# for choosing or reading at a glance; the text record keeps it whole.
_LONGEST_OPTION_SHOWN = 24

# The bounds a rating range may be given within.
LOWEST_RATING, HIGHEST_RATING = 0, 4000


def options_words(options: dict[str, Any] | None) -> str:
    """A game's options as a challenge writes them, for people choosing or looking at a game: "size=5,
    placements=4" (those that have a value), a long one as "position=(set)"; "" for none."""
    shown = []
    for name, value in (options or {}).items():
        if value is None or value == "":
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        text = str(value)
        shown.append(f"{name}={text if len(text) <= _LONGEST_OPTION_SHOWN else '(set)'}")
    return ", ".join(shown)


def new_game(
    creator: User,
    engine_slug: str,
    seats: list[User | None],
    options: dict[str, Any] | None = None,
    *,
    public: bool = True,
    time_control: dict[str, Any] | None = None,
    seed: int | None = None,
    rated: bool = True,
    min_rating: int | None = None,
    max_rating: int | None = None,
) -> Game:
    """Create a game with ``seats`` in order: the creator, named opponents (challenged) or None (open).

    The creator must hold at least one seat.  Named opponents get a challenge mail.  A game whose seats
    are all the creator's (solitaire) starts at once.  ``min_rating`` and ``max_rating`` bound the
    rating (in this game) of whoever takes an open seat.  Commits; raises PlayError or marshmallow's
    ValidationError (bad options) without storing anything.
    """
    check_rating_range(min_rating, max_rating, open_seats=None in seats)
    with unit_of_work() as uow:
        game = open_game(creator, engine_slug, seats, options, public=public, time_control=time_control,
                         seed=seed, rated=rated, min_rating=min_rating, max_rating=max_rating)
        uow.commit()
    return game


def open_game(
    creator: User,
    engine_slug: str,
    seats: list[User | None],
    options: dict[str, Any] | None = None,
    *,
    public: bool = True,
    time_control: dict[str, Any] | None = None,
    seed: int | None = None,
    rated: bool = True,
    min_rating: int | None = None,
    max_rating: int | None = None,
) -> Game:
    """:func:`new_game` inside the caller's unit of work (a ladder challenge is written with the game it
    makes); the caller commits."""
    if not any(u is not None and u.id == creator.id for u in seats):
        raise PlayError("You must take a seat in a game you start.", "creator-not-seated")
    named = [u for u in seats if u is not None and u.id != creator.id]
    if len({u.id for u in named}) != len(named):
        raise PlayError("Each opponent can hold only one seat.", "duplicate-opponent")
    for user in named:
        if not user.verified:
            raise PlayError(f"{user.handle} has not confirmed their address yet.", "unverified")
    mine = [u if u is not None and u.id == creator.id else None for u in seats]
    game = play.create_game(
        engine_slug, mine, options, created_by=creator, public=public, time_control=time_control, seed=seed,
        rated=rated,
    )
    game.min_rating, game.max_rating = min_rating, max_rating
    db.session.flush()
    for number, seated in enumerate(seats):
        if seated is not None and seated.id != creator.id:
            challenge = Challenge(game=game, seat=number, challenger_id=creator.id, challenged_id=seated.id)
            db.session.add(challenge)
    db.session.flush()
    # Every challenge is written before the mails, so that each mail lists who else is challenged.
    seat_words = [words for _n, words in results.seat_states(game)]
    for challenge in db.session.scalars(
        select(Challenge).where(Challenge.game_id == game.id).order_by(Challenge.seat)
    ):
        notify.send(challenge.challenged, game, f"{creator.handle} challenges you", "mail/challenge.txt",
                    challenge=challenge, challenger=creator, side=results.side(game, challenge.seat),
                    seats=seat_words)
    return game


def pending_challenges(user: User) -> list[Challenge]:
    """The challenges waiting for ``user``'s answer, newest first."""
    return list(db.session.scalars(
        select(Challenge).where(Challenge.challenged_id == user.id, Challenge.status == "pending")
        .order_by(Challenge.created_at.desc())
    ))


def check_rating_range(low: int | None, high: int | None, open_seats: bool = True) -> None:
    """Refuse a rating range that cannot be: a bound out of :data:`LOWEST_RATING`..:data:`HIGHEST_RATING`,
    a lowest above the highest, or a range on a game without an open seat (it bounds who takes one)."""
    for bound in (low, high):
        if bound is not None and not LOWEST_RATING <= bound <= HIGHEST_RATING:
            raise PlayError(
                f"A rating bound must be from {LOWEST_RATING} to {HIGHEST_RATING}; {bound} is not.",
                "rating-range")
    if low is not None and high is not None and low > high:
        raise PlayError(f"The lowest rating ({low}) is above the highest ({high}).", "rating-range")
    if (low is not None or high is not None) and not open_seats:
        raise PlayError("A rating range bounds who may take an open seat; this game has none.",
                        "rating-range")


def rating_range_words(game: Game) -> str:
    """Who may take the game's open seats by rating: "1400-1700", "1400 or more", "up to 1700"; ""
    when anyone may."""
    low, high = game.min_rating, game.max_rating
    if low is not None and high is not None:
        return f"{low}–{high}"
    if low is not None:
        return f"{low} or more"
    if high is not None:
        return f"up to {high}"
    return ""


def _check_rating(game: Game, user: User) -> None:
    """Refuse ``user`` a seat of ``game`` when their rating in it lies outside the game's range."""
    if game.min_rating is None and game.max_rating is None:
        return
    rating = ratings.points(ratings.ratings_in(game.engine, {user.id}).get(user.id))
    low = game.min_rating if game.min_rating is not None else LOWEST_RATING
    high = game.max_rating if game.max_rating is not None else HIGHEST_RATING
    if not low <= rating <= high:
        title = queries.engine_of(game).title
        raise PlayError(
            f"Game #{game.id} is open to players rated {rating_range_words(game)} in {title}; your "
            f"{title} rating is {rating}.", "out-of-range")


@dataclass
class OpenGame:
    """A game of the lobby: the game, its creator's rating in it ("1520?"), and who may take a seat by
    rating ("" for anyone)."""

    game: Game
    creator_rating: str
    rating_range: str


# The waiting games the lobby looks at, newest first.
LOBBY_SIZE = 50


def open_games(limit: int = LOBBY_SIZE) -> list[Game]:
    """Waiting public games with an open seat (no challenge pending on it): the lobby."""
    waiting = db.session.scalars(
        select(Game).where(Game.status == "waiting", Game.public.is_(True)).order_by(Game.created_at.desc())
        .limit(limit)
    ).all()
    return [g for g in waiting if _open_seats(g)]


def lobby(limit: int = LOBBY_SIZE) -> list[OpenGame]:
    """The lobby's games, each with its creator's rating in that game and its rating range."""
    found = open_games(limit)
    creators: dict[str, set[int]] = {}
    for game in found:
        if game.created_by_id is not None:
            creators.setdefault(game.engine, set()).add(game.created_by_id)
    rows = {engine: ratings.ratings_in(engine, ids) for engine, ids in creators.items()}
    return [OpenGame(game, ratings.display(rows.get(game.engine, {}).get(game.created_by_id or 0)),
                     rating_range_words(game)) for game in found]


def _open_seats(game: Game) -> list[Seat]:
    challenged = {c.seat for c in _challenges(game) if c.status == "pending"}
    return [s for s in game.seats if s.user_id is None and s.number not in challenged]


def _challenges(game: Game) -> list[Challenge]:
    return list(db.session.scalars(select(Challenge).where(Challenge.game_id == game.id)))


def _pending_for(game: Game, user: User) -> Challenge:
    for challenge in _challenges(game):
        if challenge.challenged_id == user.id and challenge.status == "pending":
            return challenge
    raise PlayError(f"There is no challenge for you in game #{game.id} to answer.", "no-challenge")


def _fill(game: Game, seat_number: int, user: User) -> None:
    seat = next(s for s in game.seats if s.number == seat_number)
    seat.user = user
    seat.joined_at = utcnow()
    if all(s.user_id is not None or s.user is not None for s in game.seats):
        play.start(game)


def _comment(comment: str | None, author: User, challenge: Challenge) -> str | None:
    """A comment to pass on, bounded like a move's comment and without any secret of ours (see
    :func:`pbem.core.redaction.blank_secrets`; the mail keys looked for are the author's and the
    challenger's); None for none."""
    return blank_secrets((comment or "").strip()[:MAX_COMMENT], [author, challenge.challenger]) or None


def accept(game: Game | int, user: User, comment: str | None = None) -> Game:
    """``user`` accepts their challenge; the game starts when every seat is filled.

    The challenger is told while the game still waits for others, and whenever ``user`` wrote a
    comment with the answer (it is passed on)."""
    with play.locked_game(game) as locked:
        _require_waiting(locked)
        challenge = _pending_for(locked, user)
        challenge.status, challenge.answered_at = "accepted", utcnow()
        _fill(locked, challenge.seat, user)
        comment = _comment(comment, user, challenge)
        if locked.status == "waiting" or comment:
            notify.send(challenge.challenger, locked, f"{user.handle} accepted your challenge",
                        "mail/challenge_answered.txt", answer="accepted", who=user, comment=comment,
                        started=locked.status == "active")
        return locked


def decline(game: Game | int, user: User, comment: str | None = None) -> Game:
    """``user`` declines their challenge; the game is called off and the challenger told (with the
    comment ``user`` wrote, if any)."""
    with play.locked_game(game) as locked:
        _require_waiting(locked)
        challenge = _pending_for(locked, user)
        challenge.status, challenge.answered_at = "declined", utcnow()
        _call_off(locked)
        notify.send(challenge.challenger, locked, f"{user.handle} declined your challenge",
                    "mail/challenge_answered.txt", answer="declined", who=user,
                    comment=_comment(comment, user, challenge))
        return locked


def withdraw(game: Game | int, user: User) -> Game:
    """The creator withdraws a game still waiting for players; the challenged are told."""
    with play.locked_game(game) as locked:
        _require_waiting(locked)
        if locked.created_by_id != user.id:
            raise PlayError("Only the player who started this game can withdraw it.", "not-creator")
        _call_off(locked)
        for challenge in _challenges(locked):
            if challenge.status == "pending":
                challenge.status, challenge.answered_at = "withdrawn", utcnow()
                notify.send(challenge.challenged, locked, f"{user.handle} withdrew the challenge",
                            "mail/challenge_answered.txt", answer="withdrawn", who=user)
        return locked


def lapse(game: Game) -> None:
    """Call off a game whose challenges were not answered in time (a ladder challenge), in the caller's
    transaction under the game's lock; the challenges are marked "lapsed"."""
    _call_off(game)
    for challenge in _challenges(game):
        if challenge.status == "pending":
            challenge.status, challenge.answered_at = "lapsed", utcnow()


def take_seat(game: Game | int, user: User) -> Game:
    """``user`` takes an open seat; taking the last one starts the game."""
    with play.locked_game(game) as locked:
        _require_waiting(locked)
        if any(s.user_id == user.id for s in locked.seats):
            raise PlayError(f"You already have a seat in game #{locked.id}.", "already-seated")
        seats = _open_seats(locked)
        if not seats:
            raise PlayError(f"Game #{locked.id} has no open seat left.", "no-open-seat")
        _check_rating(locked, user)
        _fill(locked, seats[0].number, user)
        return locked


def _require_waiting(game: Game) -> None:
    if game.status != "waiting":
        words = "has started" if game.status == "active" else "is no longer waiting for players"
        raise PlayError(f"Game #{game.id} {words}.", "not-waiting")


def _call_off(game: Game) -> None:
    game.status = "abandoned"
    game.finished_at = utcnow()
