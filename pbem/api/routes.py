"""The API's operations.  Each reads its request, calls one service function (:mod:`pbem.game.play`,
:mod:`pbem.lobby.challenges`) or reads, and answers through its schema; refusals become JSON errors."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC
from types import SimpleNamespace
from typing import Any, cast

from flask import current_app, request
from marshmallow import EXCLUDE, ValidationError
from sqlalchemy import Exists, Select, bindparam, case, exists, func, literal, or_, select
from sqlalchemy.orm import aliased, defer, selectinload
from sqlalchemy.orm.interfaces import ORMOption

import games
from pbem.accounts import accounts, bots
from pbem.api import kept, present
from pbem.api import schemas as s
from pbem.api.errors import ApiError
from pbem.api.openapi import operation
from pbem.archive import archive, directory
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, GameNote, Rating, Seat, Tally, Tournament, User
from pbem.core.unit_of_work import unit_of_work
from pbem.game import clock, conditional, notes, play, queueing, ratings, results
from pbem.lobby import challenges
from pbem.present import dashboard, gameview, newgame, tournamentview
from pbem.tournament import organise


def _game_for(user: User | None, game_id: int, *options: ORMOption) -> Game:
    """The game, if the caller may see it (loaded with ``options``); else a 404 that does not say
    whether it exists."""
    game = db.session.get(Game, game_id, options=options)
    if game is None or not gameview.visible(game, user):
        raise ApiError(404, "no-game", f"There is no game #{game_id} (or it is not yours to see).")
    return game


def _fresh_game(user: User, game_id: int, seat: int | None = None) -> dict[str, Any]:
    """The game as it stands after a change, for the caller (the change's commit expired what was
    loaded before it)."""
    return present.game(_game_for(user, game_id, *gameview.PAGE_LOADS), user, seat)


# Reading ---------------------------------------------------------------------------


def _listing(user_id: int | None, query: dict[str, Any]) -> tuple[Select, int, bool, tuple[User, ...]]:
    """The SELECT of the games a list answers (one more than the page, to tell whether there are more),
    the page's size, whether it reads the archive (finished games, newest finish first), and the players
    its filters name; raises ApiError for filters in error."""
    params = {name: str(query[key]) for name, key in _ARCHIVE_PARAMS.items() if key in query}
    try:
        filters = archive.parse_filters(params)
    except archive.ArchiveError as exc:
        raise ApiError(422, "invalid", str(exc), fields={k: [v] for k, v in exc.errors.items()}) from None
    finished_only = sorted(set(params) & set(_FINISHED_ONLY))
    status = query.get("status", "finished" if finished_only else None)
    if status == "finished":
        try:
            found, limit = archive.page_query(filters, after=query.get("after"), limit=query["limit"])
        except archive.ArchiveError as exc:
            raise ApiError(422, "invalid", str(exc), fields={k: [v] for k, v in exc.errors.items()}) from None
        return found, limit, True, filters.players
    if finished_only:
        message = f"Only finished games can be filtered by {', '.join(finished_only)}."
        raise ApiError(422, "invalid", message, fields={name: [message] for name in finished_only})
    limit = query["limit"]
    # What the list holds: games the caller may see, of the status, game and rating asked for, before the
    # page asked for.  A game the caller may see only as a player is found by its seat when it is not
    # public (per game, and mostly not asked: most games are public), not by reading all their seats,
    # which grow with their archive.
    conditions: list[Any] = [Game.public.is_(True) if user_id is None else or_(
        Game.public.is_(True), _seated(user_id))]
    if status is not None:
        conditions.append(Game.status == status)
    if filters.engine:
        conditions.append(Game.engine == filters.engine)
    if filters.rated is not None:
        conditions.append(Game.rated.is_(filters.rated))
    if "after" in query:
        conditions.append(Game.id < query["after"])
    if not filters.players:
        wanted = select(Game).where(*conditions)
    elif status in _LIVE:
        # Few: every player's games waiting or in play, from their unfinished seats.
        wanted = select(Game).where(*conditions,
                                    *(Game.id.in_(_unfinished_seats_of(p.id)) for p in filters.players))
    else:
        # The first player's seats newest first (ix_seat_user_game), each game looked at in turn until the
        # page is full: as many as the page, however many games the player has (a player of 2,000 games
        # made a hash of all their seats, 3x the CPU of one of 80 on PostgreSQL, bench/scale.py).
        # The other players' seats are looked up for each game on the way.
        first, *others = filters.players
        seat = aliased(Seat)
        page = (select(seat.game_id).join(Game, Game.id == seat.game_id)
                .where(seat.user_id == first.id, *conditions,
                       *(_seated(p.id) for p in others))
                .distinct().order_by(seat.game_id.desc()).limit(limit + 1))
        if "after" in query:  # (Where the walk starts: a planner carries no inequality across the join.)
            page = page.where(seat.game_id < query["after"])
        # Joined, not "IN": the page's few ids drive the read of their games (with "IN" a planner may walk
        # every game instead, asking of each whether it is among them).
        page_ids = page.subquery()
        wanted = select(Game).join(page_ids, page_ids.c.game_id == Game.id)
    return wanted.order_by(Game.id.desc()).limit(limit + 1), limit, False, filters.players


# Games waiting or in play: none of their seats is finished (a seat's finished_at is copied from its game
# when the game ends, pbem.game.endings.record_finish).
_LIVE = frozenset({"waiting", "active"})


def _seated(user_id: int) -> Exists:
    """Whether the player holds a seat in the game at hand: asked of each game in turn.

    OFFSET 0 keeps PostgreSQL from answering it for every game at once by a hash of all the player's
    seats (5 ms of its CPU for a player of 2,000 games, against 0.07 ms for the page's few private
    games asked in turn: bench/scale.py's million)."""
    return select(literal(1)).where(Seat.game_id == Game.id, Seat.user_id == user_id).offset(0).exists()


def _unfinished_seats_of(user_id: int) -> Select:
    """The ids of the games waiting or in play the player holds a seat in.

    Read from the player's unfinished seats (``ix_seat_archive``'s unfinished end): as many as their games
    in play, where all their seats grow with their archive (a player of 2,000 finished games made the
    list of their active games 5x dearer than one of 20, and SQLite's statistics, one average for every
    status, cannot tell it to start from the few active games instead)."""
    return select(Seat.game_id).where(Seat.user_id == user_id, Seat.finished_at.is_(None))


# The statements of lists' stamps, kept per app by caller and query string (at most _LISTS_KEPT): building
# one (its query loaded, its filters' players found) cost more than reading it.
_LISTS = "pbem_api_list_statements"
_LISTS_KEPT = 256


def _list_statement(caller: kept.Caller | None) -> Select | None:
    """The statement of the list of games the request asks for (see :func:`kept.games_statement`); None
    for a query in error, answered afresh."""
    statements: OrderedDict[tuple[int | None, bytes], Select] = current_app.extensions.setdefault(
        _LISTS, OrderedDict())
    key = (caller.user_id if caller else None, request.query_string)
    statement = statements.get(key)
    if statement is not None:
        return statement
    try:
        query = s.GameQuerySchema(unknown=EXCLUDE).load(request.args.to_dict())
        found, _limit, _archived, players = _listing(key[0], query)
    except (ValidationError, ApiError):
        return None
    statement = kept.games_statement(found.with_only_columns(Game.id, Game.version))
    # A filter's player is named by their id: kept only for players holding a seat, whose account is
    # never deleted (pbem.accounts.accounts.expire_unconfirmed), so their handle always names them.
    if all(db.session.scalar(select(Seat.id).where(Seat.user_id == p.id).limit(1)) for p in players):
        statements[key] = statement
        while len(statements) > _LISTS_KEPT:
            statements.popitem(last=False)
    return statement


def _list_stamp(caller: kept.Caller | None) -> object | None:
    """What a list of games is made of: the games its query lists (see :func:`kept.games`); None for a
    query in error, answered afresh."""
    statement = _list_statement(caller)
    return None if statement is None else kept.games(statement, {})


@operation("/v1/games", "GET", "List games", query=s.GameQuerySchema, response=s.GameListSchema,
           errors=(422,), public=True, keep=_list_stamp)
def list_games(user: User | None, query: dict[str, Any]) -> dict[str, Any]:
    """Games newest first, filtered as the archive is (game, player, opponent, rated, and for finished
    games result, ending, from, to, min_moves, max_moves) and by status.  Finished games are the public
    archive, newest finish first; other statuses list public games and private ones you play in.  Page
    with after (the previous page's next).  Needs no token: without one, public games only."""
    found_query, limit, archived, _players = _listing(user.id if user else None, query)
    if archived:
        # A list shows no boards: the stored states (the biggest column) stay unread.
        found_query = found_query.options(defer(Game.state))
    found = db.session.scalars(found_query.options(selectinload(Game.seats).joinedload(Seat.user))).all()
    page = found[:limit]
    return {"games": [present.summary(g, user) for g in page],
            "next": page[-1].id if len(found) > limit else None}


# The archive's parameters, by the name the archive reads them under and the query schema's key.
_ARCHIVE_PARAMS = {"game": "game", "player": "player", "opponent": "opponent", "rated": "rated",
                   "result": "result", "ending": "ending", "from": "from_", "to": "to",
                   "min_moves": "min_moves", "max_moves": "max_moves"}
_FINISHED_ONLY = ("result", "ending", "from", "to", "min_moves", "max_moves")


@operation("/v1/games/<int:game_id>", "GET", "A game", response=s.GameSchema, errors=(404,), public=True,
           keep=kept.game)
def get_game(user: User | None, game_id: int) -> dict[str, Any]:
    """The game as you see it: players, whose turn, the move number to confirm, the board as text, your
    legal moves when it is your turn, clocks, the record and the result.  Needs no token for a public
    game, which is then shown as to a visitor of its page."""
    return present.game(_game_for(user, game_id, *gameview.PAGE_LOADS), user)


def _stamp(user: User, rows: Sequence[Any]) -> str:
    """An ETag from the caller, how they read times, and the rows an answer is made of."""
    seen = repr((user.id, user.time_zone, user.vacation_since, [tuple(row) for row in rows]))
    return hashlib.sha256(seen.encode()).hexdigest()[:32]


def _turn_stamp(user: User) -> str:
    """What /me/turn depends on: the caller's games in play, each with its version (every change to a
    game, a move, a clock stopped, a seat's deadline, bumps it)."""
    return _stamp(user, db.session.execute(
        select(Game.id, Game.version).join(Seat, Seat.game_id == Game.id)
        .where(Seat.user_id == user.id, Seat.finished_at.is_(None), Game.status == "active")
        .order_by(Game.id)).all())


def _challenge_stamp(user: User) -> str:
    """What /me/challenges depends on: the challenges awaiting the caller, each with its game's version."""
    return _stamp(user, db.session.execute(
        select(Challenge.id, Game.version).join(Game, Game.id == Challenge.game_id)
        .where(Challenge.challenged_id == user.id, Challenge.status == "pending")
        .order_by(Challenge.id)).all())


# A player as /players/{handle} and /me show them: their row with their ratings (one row per rating),
# then their public record per game (from the tallies), each row marked by its part.
_PLAYER_COLUMNS = (User.id, User.handle, User.verified_at, User.is_bot, User.bot_games, User.bot_strength,
                   User.created_at, User.vacation_since)
_RATING_COLUMNS = (Rating.engine, Rating.rating, Rating.deviation, Rating.volatility, Rating.games,
                   Rating.last_game_at)
_PLAYER = {
    by: select(*_PLAYER_COLUMNS, *_RATING_COLUMNS).outerjoin(Rating, Rating.user_id == User.id)
    .where(where).order_by(Rating.engine)
    for by, where in (("handle", User.handle_key == bindparam("key")), ("id", User.id == bindparam("key")))
}
_RECORD = (select(Tally.engine, func.sum(Tally.wins), func.sum(Tally.draws), func.sum(Tally.losses))
           .where(Tally.user_id == bindparam("user_id"), Tally.public.is_(True)).group_by(Tally.engine)
           .order_by(Tally.engine))


def _rating(row: Sequence[Any]) -> Rating:
    """A rating as read by :data:`_RATING_COLUMNS`, with what :mod:`pbem.game.ratings` reads of one."""
    return cast(Rating, SimpleNamespace(**{column.key: value
                                           for column, value in zip(_RATING_COLUMNS, row, strict=True)}))


def _player_stamp(by: str, key: object) -> object | None:
    """What a player's answer is made of: their row, their ratings with the deviations as of now (as the
    answer rounds them), and their public record; None for no such confirmed player."""
    rows = kept.read(_PLAYER[by], {"key": key})
    if not rows or rows[0][2] is None:
        return None
    width = len(_PLAYER_COLUMNS)
    rated = [_rating(row[width:]) for row in rows if row[width] is not None]
    record = kept.read(_RECORD, {"user_id": rows[0][0]})
    return rows, present.rated(rated), record


def _kept_me(caller: kept.Caller | None) -> object | None:
    """What /me is made of (see :func:`_player_stamp`)."""
    return None if caller is None else _player_stamp("id", caller.user_id)


def _kept_player(caller: kept.Caller | None, handle: str) -> object | None:
    """What /players/{handle} is made of (see :func:`_player_stamp`)."""
    if not accounts.HANDLE.match(handle):
        return None
    return _player_stamp("handle", accounts.handle_key(handle.strip()))


@operation("/v1/me", "GET", "Me", response=s.PlayerSchema, tag="me", keep=_kept_me)
def me(user: User) -> dict[str, Any]:
    """The player the token acts for, as /players/{handle} shows them (a computer player learns here what
    it plays)."""
    return present.player(user)


_BOTS = select(User.id, User.handle, User.bot_games, User.bot_strength).where(User.is_bot.is_(True))


def _kept_bots(caller: kept.Caller | None) -> object | None:
    """What the list of computer players is made of: each one's row."""
    return kept.read(_BOTS, {})


@operation("/v1/bots", "GET", "Computer players", response=s.BotListSchema, tag="players", public=True,
           keep=_kept_bots)
def list_bots(user: User | None) -> dict[str, Any]:
    """The computer players (marked BOT): each one's games and strength. Challenge one by its handle
    like anyone.  Needs no token."""
    return {"bots": [{"handle": bot.handle, **(present.bot(bot) or {})} for bot in bots.all_bots()]}


# The caller's games in play, of which /me/turn lists those awaiting their move: read from their seats not
# finished (ix_seat_archive), so that it costs the same however many games they finished.
_IN_PLAY = kept.games_statement(select(Game.id, Game.version).where(
    Game.id.in_(select(Seat.game_id).where(Seat.user_id == bindparam("user_id"), Seat.finished_at.is_(None))),
    Game.status == "active"))


def _kept_turn(caller: kept.Caller | None) -> object | None:
    """What /me/turn is made of: the caller's games in play (see :func:`kept.games`)."""
    return None if caller is None else kept.games(_IN_PLAY, {"user_id": caller.user_id})


@operation("/v1/me/turn", "GET", "Games awaiting my move", response=s.TurnListSchema, tag="me",
           stamp=_turn_stamp, keep=_kept_turn)
def my_turn(user: User) -> dict[str, Any]:
    """The games where it is your move, the soonest deadline first. The answer carries an ETag: send it
    back as If-None-Match and, while nothing has changed, the answer is 304 with no body, so a program
    may poll often."""
    return {"games": [present.summary(entry.game, user) for entry in dashboard.build(user).my_move]}


# The challenges awaiting the caller, and their games.
_PENDING = (Challenge.challenged_id == bindparam("user_id"), Challenge.status == "pending")
_CHALLENGES = select(Challenge.id, Challenge.game_id, Challenge.seat, Challenge.challenger_id,
                     Challenge.created_at).where(*_PENDING).order_by(Challenge.id)
_CHALLENGED = kept.games_statement(
    select(Game.id, Game.version).where(Game.id.in_(select(Challenge.game_id).where(*_PENDING))))


def _kept_challenges(caller: kept.Caller | None) -> object | None:
    """What /me/challenges is made of: the challenges awaiting the caller and their games (see
    :func:`kept.games`)."""
    if caller is None:
        return None
    parameters = {"user_id": caller.user_id}
    listed = kept.games(_CHALLENGED, parameters)
    return None if listed is None else (kept.read(_CHALLENGES, parameters), listed)


@operation("/v1/me/challenges", "GET", "Challenges awaiting my answer", response=s.ChallengeListSchema,
           tag="me", stamp=_challenge_stamp, keep=_kept_challenges)
def my_challenges(user: User) -> dict[str, Any]:
    """The challenges to you that you have not answered: accept or decline each. With an ETag, as
    /me/turn."""
    return {"challenges": [present.challenge(c) for c in challenges.pending_challenges(user)]}


@operation("/v1/players/<handle>", "GET", "A player", response=s.PlayerSchema, errors=(404,), tag="players",
           public=True, keep=_kept_player)
def get_player(user: User | None, handle: str) -> dict[str, Any]:
    """A player's Glicko-2 rating in each game (rating, deviation as of now, volatility, provisional)
    and their record of finished public games.  Needs no token."""
    player = accounts.find_user(handle) if accounts.HANDLE.match(handle) else None
    if player is None or not player.verified:
        raise ApiError(404, "no-player", f"There is no player called {handle!r}.")
    return present.player(player)


# The statements of the directory's stamps, kept per app by query string (at most _LISTS_KEPT).
_DIRECTORIES = "pbem_api_directory_statements"


def _directory_statement() -> Select | None:
    """What a page of the directory is made of, as one statement: its players (and the one more that
    tells whether there are more), each with their ratings and the games they have finished; None for a
    query in error, answered afresh."""
    statements: OrderedDict[bytes, Select] = current_app.extensions.setdefault(_DIRECTORIES, OrderedDict())
    statement = statements.get(request.query_string)
    if statement is not None:
        return statement
    try:
        query = s.DirectoryQuerySchema(unknown=EXCLUDE).load(request.args.to_dict())
    except ValidationError:
        return None
    prefix, after = query["q"].strip(), query.get("after") or ""
    if not (directory.SEARCH.match(prefix) and directory.SEARCH.match(after)):
        return None  # (Answered afresh: the search says what is wrong.)
    found = directory.page_query(query["limit"]).params(**directory.page_parameters(prefix, after))
    listed = found.subquery()
    played = (select(func.sum(Tally.wins + Tally.draws + Tally.losses)).where(Tally.user_id == listed.c.id)
              .scalar_subquery())
    statement = (select(listed.c.id, listed.c.handle, played, *_RATING_COLUMNS).select_from(listed)
                 .outerjoin(Rating, Rating.user_id == listed.c.id).order_by(listed.c.id, Rating.engine))
    statements[request.query_string] = statement
    while len(statements) > _LISTS_KEPT:
        statements.popitem(last=False)
    return statement


def _kept_directory(caller: kept.Caller | None) -> object | None:
    """What a page of the directory is made of (see :func:`_directory_statement`), with the ratings as
    shown now."""
    statement = _directory_statement()
    if statement is None:
        return None
    rows = kept.read(statement, {})
    return rows, [ratings.display(_rating(row[3:])) for row in rows if row[3] is not None]


@operation("/v1/players", "GET", "Find players", query=s.DirectoryQuerySchema, response=s.DirectorySchema,
           errors=(422,), tag="players", public=True, keep=_kept_directory)
def find_players(user: User | None, query: dict[str, Any]) -> dict[str, Any]:
    """The player directory: players whose handle begins with q (any case), in handle order, each with
    their rating in every game they are rated in and the games they have finished. Page with after (the
    previous page's next). Needs no token."""
    try:
        page = directory.search(query["q"], query.get("after"), query["limit"])
    except directory.DirectoryError as exc:
        raise ApiError(422, "invalid", str(exc), fields={"q": [str(exc)]}) from None
    return {"players": [{"handle": p.handle, "ratings": [{"game": g, "display": r} for g, r in p.ratings],
                         "played": p.played} for p in page.players], "next": page.next}


# Starting and answering ---------------------------------------------------------------------------


@operation("/v1/games", "POST", "Start a game", body=s.NewGameSchema, response=s.GameSchema, status=201,
           errors=(400, 404, 422))
def start_game(user: User, body: dict[str, Any]) -> dict[str, Any]:
    """Start a game: ``seats`` lists handles in seat order — yours (or "me"), players to challenge (each
    gets a challenge to accept or decline), or null for an open seat anyone may take."""
    try:
        engine = games.get(body["game"])
    except games.UnknownGame as exc:
        raise ApiError(422, "invalid", str(exc), fields={"game": [str(exc)]}) from None
    seats: list[User | None] = []
    for number, handle in enumerate(body["seats"]):
        if handle is None:
            seats.append(None)
        elif handle.lower() == "me" or accounts.handle_key(handle) == user.handle_key:
            seats.append(user)
        else:
            found = accounts.find_user(handle) if accounts.HANDLE.match(handle) else None
            if found is None:
                message = f"There is no player called {handle!r}."
                raise ApiError(422, "invalid", message, fields={"seats": {str(number): [message]}})
            seats.append(found)
    try:
        time_control = clock.time_control_from_choice(body.get("time") or newgame.default_time_choice(),
                                                      body["weekend_pause"])
    except clock.TimeControlError as exc:
        raise ApiError(422, "invalid", str(exc), fields={"time": [str(exc)]}) from None
    if not body["public"] and None in seats:
        raise PlayError("A private game cannot have open seats: name every player, or make it public.",
                        "private")
    created = challenges.new_game(user, engine.slug, seats, body["options"], public=body["public"],
                                  time_control=time_control, rated=body["rated"],
                                  min_rating=body["min_rating"], max_rating=body["max_rating"])
    return _fresh_game(user, created.id)


# The lobby's games (see pbem.lobby.challenges.open_games: the newest waiting public games, of which those
# with an open seat are shown), the challenges to their seats, and their creators' ratings in each game.
_WAITING = (select(Game.id, Game.version).where(Game.status == "waiting", Game.public.is_(True))
            .order_by(Game.created_at.desc()).limit(challenges.LOBBY_SIZE).subquery())
# With each seat whether a challenge to it is pending (a seat so asked is not open), and with each game its
# creator's rating in it (the columns of _RATING_COLUMNS but the engine).
_CREATOR_RATING = (Rating.user_id == Game.created_by_id, Rating.engine == Game.engine)
_LOBBY = kept.games_statement(
    select(_WAITING.c.id, _WAITING.c.version),
    exists().where(Challenge.game_id == Game.id, Challenge.seat == Seat.number,
                   Challenge.status == "pending"),
    *(select(column).where(*_CREATOR_RATING).scalar_subquery() for column in _RATING_COLUMNS[1:]))


def _kept_lobby(caller: kept.Caller | None) -> object | None:
    """What the lobby is made of: its games (see :func:`kept.games`), the challenges pending to their
    seats, and their creators' ratings as shown now."""
    listed = kept.games(_LOBBY, {})
    if listed is None:
        return None
    rows, _clocks = cast(tuple[list[tuple[Any, ...]], Any], listed)
    creators = {row[0]: ratings.display(_rating(("", *row[9:])) if row[9] is not None else None)
                for row in rows}
    return listed, sorted(creators.items())


@operation("/v1/lobby", "GET", "The lobby: games with an open seat", response=s.LobbySchema, public=True,
           keep=_kept_lobby)
def lobby(user: User | None) -> dict[str, Any]:
    """Public games waiting for players with an open seat, newest first, each with its creator's rating
    in that game and who may take a seat by rating. Take one with POST /v1/games/{id}/take. Needs no
    token."""
    return {"games": [{"game": present.summary(entry.game, user),
                       "creator": entry.game.created_by.handle if entry.game.created_by else None,
                       "creator_rating": entry.creator_rating, "rating_range": entry.rating_range}
                      for entry in challenges.lobby()]}


@operation("/v1/games/<int:game_id>/take", "POST", "Take an open seat", response=s.GameSchema,
           errors=(400, 403, 404, 409))
def take_seat(user: User, game_id: int) -> dict[str, Any]:
    """Take an open seat of a game in the lobby; taking the last one starts the game. A player whose
    rating in the game lies outside the game's range is refused (403, out-of-range) with the reason."""
    challenges.take_seat(_game_for(user, game_id).id, user)
    return _fresh_game(user, game_id)


@operation("/v1/games/<int:game_id>/accept", "POST", "Accept a challenge", body=s.AnswerSchema,
           body_required=False, response=s.GameSchema, errors=(400, 404, 409))
def accept(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Accept your challenge to this game; it starts when every seat is taken. A comment in the body
    is passed on to the challenger."""
    challenges.accept(_game_for(user, game_id).id, user, body.get("comment"))
    return _fresh_game(user, game_id)


@operation("/v1/games/<int:game_id>/decline", "POST", "Decline a challenge", body=s.AnswerSchema,
           body_required=False, response=s.GameSchema, errors=(400, 404, 409))
def decline(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Decline your challenge to this game; the game is called off. A comment in the body is passed
    on to the challenger."""
    challenges.decline(_game_for(user, game_id).id, user, body.get("comment"))
    return _fresh_game(user, game_id)


# Playing ---------------------------------------------------------------------------


@operation("/v1/games/<int:game_id>/moves", "POST", "Move", body=s.MoveSchema, response=s.MoveResultSchema,
           status=201, errors=(400, 403, 404, 409, 422))
def move(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Play a move in the game's notation.  Send ``expect`` (the ``move_number`` you saw) so that a
    move made on an out-of-date position is refused (409, stale) rather than played.  An illegal move is
    refused (400, illegal) with the reason and your legal moves."""
    game = _game_for(user, game_id)
    try:
        # The objects the move wrote are kept through the commit: the answer shows them as committed,
        # without reading them back.
        with unit_of_work(keep_loaded=True) as uow:
            played = play.submit(game.id, user, body["move"], "api", expect=body.get("expect"),
                                 comment=body.get("comment"), seat=body.get("seat"))
            uow.commit()
            name = results.handle_or_seat(played.game, played.seat.number)
            return {"move": present.record_entry(played.move, name, played.number),
                    "game": present.game(played.game, user, body.get("seat"))}
    except PlayError as exc:
        if exc.code != "illegal":
            raise
        # (Rolled back: the game is read again as it stands.)
        legal = present.game(_game_for(user, game_id), user, body.get("seat"))["legal_moves"] or []
        raise ApiError(exc.http_status, exc.code, exc.message, legal_moves=legal) from None


@operation("/v1/games/<int:game_id>/resign", "POST", "Resign", body=s.ResignSchema, body_required=False,
           response=s.GameSchema, errors=(400, 403, 404, 409, 422))
def resign(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Resign the game (or abandon a game played alone), with an optional comment to the others."""
    game = _game_for(user, game_id)
    with unit_of_work() as uow:
        play.resign(game.id, user, "api", body.get("comment"))
        uow.commit()
    return _fresh_game(user, game_id)


@operation("/v1/games/<int:game_id>/draw", "POST", "Offer or answer a draw", body=s.DrawSchema,
           response=s.GameSchema, errors=(400, 403, 404, 409, 422))
def draw(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Offer a draw (``offer``), or answer your opponent's offer (``accept`` or ``decline``), with an
    optional comment to the others."""
    action = {"offer": play.offer_draw, "accept": play.accept_draw, "decline": play.decline_draw}
    game = _game_for(user, game_id)
    with unit_of_work() as uow:
        action[body["action"]](game.id, user, "api", body.get("comment"))
        uow.commit()
    return _fresh_game(user, game_id)


# Conditional moves ---------------------------------------------------------------------------


def _lines(user: User, game_id: int, seat: int | None) -> dict[str, Any]:
    """The caller's lines in the game, as written; refused when they do not play in it."""
    owner = conditional.owner_seat(_game_for(user, game_id), user, seat)
    return {"lines": [conditional.describe(line) for line in owner.conditionals or []]}


# A game's row and seats as its conditional lines and notes are answered from: who holds each seat, and
# of the caller's own seats their lines (nobody else's are read).
_SEATS = (
    select(Game.version, Game.public, Game.status, Seat.number, Seat.user_id,
           case((Seat.user_id == bindparam("user_id"), Seat.conditionals)))
    .outerjoin(Seat, Seat.game_id == Game.id).where(Game.id == bindparam("game_id")).order_by(Seat.number)
)
# The same with the caller's note on the game, on every row.
_NOTE = _SEATS.add_columns(select(GameNote.text).where(GameNote.game_id == Game.id,
                                                       GameNote.user_id == bindparam("user_id"))
                           .scalar_subquery())


def _kept_lines(caller: kept.Caller | None, game_id: int) -> object | None:
    """What the caller's conditional lines in a game are answered from (see :data:`_SEATS`)."""
    if caller is None:
        return None
    return kept.read(_SEATS, {"game_id": game_id, "user_id": caller.user_id})


def _kept_note(caller: kept.Caller | None, game_id: int) -> object | None:
    """What the caller's note on a game is answered from: the game's seats (see :data:`_SEATS`) and
    their note."""
    if caller is None:
        return None
    return kept.read(_NOTE, {"game_id": game_id, "user_id": caller.user_id})


@operation("/v1/games/<int:game_id>/conditionals", "GET", "My conditional lines",
           response=s.ConditionalLinesSchema, errors=(403, 404), keep=_kept_lines)
def my_conditionals(user: User, game_id: int) -> dict[str, Any]:
    """The conditional lines you have queued in this game. Nobody else, your opponent least of all, can
    read them."""
    return _lines(user, game_id, None)


@operation("/v1/games/<int:game_id>/conditionals", "POST", "Queue conditional lines",
           body=s.ConditionalQueueSchema, response=s.ConditionalLinesSchema, status=201,
           errors=(400, 403, 404, 409))
def queue_conditionals(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Queue answers to your opponent's next moves while they are to move: "if c4 then d4" plays d4 for
    you the moment they play c4. Every move of a line is checked when it is queued (400 with the reason);
    lines sharing a beginning must agree. Answers all your lines."""
    queueing.queue(_game_for(user, game_id).id, user, body["lines"], body.get("seat"))
    return _lines(user, game_id, body.get("seat"))


@operation("/v1/games/<int:game_id>/conditionals", "DELETE", "Delete conditional lines",
           query=s.ConditionalDeleteSchema, response=s.ConditionalLinesSchema, errors=(400, 403, 404))
def delete_conditionals(user: User, game_id: int, query: dict[str, Any]) -> dict[str, Any]:
    """Delete the line given as ``line`` and every line it begins, or every line when ``line`` is
    omitted. Answers the lines left."""
    queueing.delete(_game_for(user, game_id).id, user, query.get("line"), query.get("seat"))
    return _lines(user, game_id, query.get("seat"))


# Private notes ---------------------------------------------------------------------------


@operation("/v1/games/<int:game_id>/note", "GET", "My note on a game", response=s.NoteSchema,
           errors=(403, 404), tag="me", keep=_kept_note)
def my_note(user: User, game_id: int) -> dict[str, Any]:
    """Your private note on a game you play in ("" for none). Nobody else can read it: not your
    opponents, not watchers; it is in no page but yours, no mail, record or export."""
    game = _game_for(user, game_id)
    if not notes.may_keep_notes(game, user):
        raise PlayError(f"Only the players of game #{game.id} keep notes on it.", "not-seated")
    return {"note": notes.note_of(game, user)}


@operation("/v1/games/<int:game_id>/note", "PUT", "Keep my note on a game", body=s.NoteSchema,
           response=s.NoteSchema, errors=(400, 403, 404, 422), tag="me")
def save_note(user: User, game_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """Replace your private note on a game you play in (an empty note deletes it); it stays after the
    game ends. Answers the note as kept."""
    return {"note": notes.save(_game_for(user, game_id), user, body["note"])}


# Tournaments ---------------------------------------------------------------------------


def _tournament(tournament_id: int) -> dict[str, Any]:
    """The tournament as it stands, for the answer."""
    db.session.expire_all()
    found = db.session.get(Tournament, tournament_id)
    if found is None:
        raise ApiError(404, "no-tournament", f"There is no tournament #{tournament_id}.")
    return tournamentview.as_dict(tournamentview.build(found))


# Every tournament's version, which each change of it, its entries or its pairings' results raises
# (pbem.tournament.rounds.changed); handles never change.
_TOURNAMENTS = select(Tournament.id, Tournament.version).order_by(Tournament.id)
_TOURNAMENT = select(Tournament.id, Tournament.version).where(Tournament.id == bindparam("tournament_id"))


def _kept_tournaments(caller: kept.Caller | None) -> object | None:
    """What the list of tournaments is made of: every tournament's version."""
    return kept.read(_TOURNAMENTS, {})


def _kept_tournament(caller: kept.Caller | None, tournament_id: int) -> object | None:
    """What a tournament's answer is made of: its version."""
    return kept.read(_TOURNAMENT, {"tournament_id": tournament_id})


@operation("/v1/tournaments", "GET", "List tournaments", response=s.TournamentListSchema, tag="tournaments",
           public=True, keep=_kept_tournaments)
def list_tournaments(user: User | None) -> dict[str, Any]:
    """Tournaments taking entries or running first, then those over, newest first. Needs no token."""
    return {"tournaments": [tournamentview.as_dict(tournamentview.build(t), with_rounds=False)
                            for t in organise.listing()]}


@operation("/v1/tournaments/<int:tournament_id>", "GET", "A tournament", response=s.TournamentSchema,
           errors=(404,), tag="tournaments", public=True, keep=_kept_tournament)
def get_tournament(user: User | None, tournament_id: int) -> dict[str, Any]:
    """A tournament: its settings, standings with tie-breaks (Sonneborn-Berger in a round-robin, Buchholz
    and median Buchholz in a Swiss) and every round's pairings with their games. Needs no token."""
    return _tournament(tournament_id)


@operation("/v1/tournaments", "POST", "Organise a tournament", body=s.NewTournamentSchema,
           response=s.TournamentSchema, status=201, errors=(400, 422), tag="tournaments")
def create_tournament(user: User, body: dict[str, Any]) -> dict[str, Any]:
    """Organise a tournament of a two-player game: round_robin, swiss, knockout or ladder. It takes
    entries until start_at, or until max_players have joined when start_at is null."""
    try:
        time_control = clock.time_control_from_choice(body.get("time") or newgame.default_time_choice(),
                                                      body["weekend_pause"])
    except clock.TimeControlError as exc:
        raise ApiError(422, "invalid", str(exc), fields={"time": [str(exc)]}) from None
    start_at = body["start_at"]
    if start_at is not None and start_at.tzinfo is not None:
        start_at = start_at.astimezone(UTC).replace(tzinfo=None)
    settings = {key: body[key] for key in ("double", "rounds", "bye_points", "draw_rule", "leaving", "reach",
                                           "accept_days")}
    made = organise.create(
        user, body["name"], body["game"], body["format"], options=body["options"], time_control=time_control,
        rated=body["rated"], min_players=body["min_players"], max_players=body["max_players"],
        start_at=start_at, min_rating=body["min_rating"], max_rating=body["max_rating"], settings=settings)
    return _tournament(made.id)


def _tournament_action(name: str, summary: str, doc: str, action: Any, body: type | None = None) -> None:
    """Declare ``POST /v1/tournaments/{id}/<name>``, which calls ``action(id, user[, player])``."""

    def view(user: User, tournament_id: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
        if body is not None:
            action(tournament_id, user, body["player"])
        else:
            action(tournament_id, user)
        return _tournament(tournament_id)

    view.__name__ = f"tournament_{name}"
    view.__doc__ = doc
    operation(f"/v1/tournaments/<int:tournament_id>/{name}", "POST", summary, body=body,
              response=s.TournamentSchema, errors=(400, 403, 404, 409), tag="tournaments")(view)


_tournament_action("join", "Enter a tournament",
                   "Enter the tournament while it takes entries (a ladder: at its foot, at any time). The "
                   "entry that fills a tournament without a start time starts it.", organise.join)
_tournament_action("withdraw", "Leave a tournament",
                   "Leave the tournament: your games in play are lost by resignation (or struck out, as its "
                   "settings say) and you are paired no more.", organise.withdraw)
_tournament_action("start", "Start a tournament now", "The organiser starts it with the players entered.",
                   organise.start)
_tournament_action("pause", "Pause a tournament", "The organiser stops the pairing of new rounds.",
                   organise.pause)
_tournament_action("resume", "Resume a tournament", "The organiser lets pairing go on.", organise.resume)
_tournament_action("cancel", "Cancel a tournament",
                   "The organiser calls it off; games in play go on as ordinary games.", organise.cancel)
_tournament_action("remove", "Remove a player", "The organiser takes a player out, as if they withdrew.",
                   organise.remove, s.TournamentPlayerSchema)
_tournament_action("challenge", "Challenge on a ladder",
                   "Challenge a player up to the ladder's reach above you; they accept the game's challenge "
                   "as any other, within the ladder's days, or lose by default.", organise.challenge,
                   s.TournamentPlayerSchema)
