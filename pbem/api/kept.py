"""API answers kept ready in each web process, as the web pages are (:mod:`pbem.web.pagecache` gives
the reasoning at length; the machinery both use, which the API may not import from the web pages, is
in :mod:`pbem.present.keeping`; what is the API's own is here).

A GET's answer costs reading model objects, building the view and dumping it through marshmallow, while
a client polling for news (the bot runner, a mobile app) mostly reads what it read a moment before.  So
an operation declared with a ``kept`` stamp names what its answer is made of: one cheap read of every
row the answer depends on (tuples, no model objects), with the words that change with the clock alone
(a running clock's "2 days 5 hours left") computed from them.  The answer for a URL and a caller (the
token's player, or every caller without a token alike) is kept with its stamp, and served while a
fresh read of the stamp is equal.  Nothing is told to forget an answer: each request reads the stamp.

The caller is read with the stamp: the token's row and its player's, by the token's stored digest (one
indexed read), and refused (answered afresh, so with the usual 401) unless it still works; so a
revoked token, or a player who may no longer sign in, gets nothing kept.  A token whose "last used"
stamp is due to be written is answered afresh too, so a kept answer never writes.  The caller's row is
read in the stamp's own first statement, as columns of its rows (one round trip, which on PostgreSQL
is most of a kept answer's cost): the stamp is read for the caller as their row was last read in this
process, and holds only if the row read beside it is that very row (else the caller is read, and the
stamp again, on their own; see :func:`_read_folded`).

An answer is kept only when it answered 200 and set no cookie; it is kept under the caller's user id,
never given to another caller, and its stamp holds what it shows of the caller (their time zone, their
vacation, what they play as a bot).  An answer not kept is rendered in one snapshot of the database in
which the stamp is read again (on PostgreSQL REPEATABLE READ, on SQLite one transaction), and kept under
what that read: never older than its stamp, nor newer.

A kept answer carrying an ETag (``/me/turn``, ``/me/challenges``) answers 304 to a request naming it,
as the operation itself would: its stamp covers everything the ETag is made of.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast
from weakref import WeakKeyDictionary

from flask import Response, current_app, g, request
from sqlalchemy import CompoundSelect, Select, and_, bindparam, case, func, or_, select

from pbem.accounts import apitokens
from pbem.core.models import ApiToken, Game, Move, Seat, User, utcnow
from pbem.game import clock
from pbem.present import keeping
from pbem.present.keeping import KeptStore

# What one process keeps at most, answers and their URLs together, and the largest answer it keeps.
MAX_BYTES = 16 * 2**20
MAX_ANSWER_BYTES = 2**20

_EXTENSION = "pbem_api_answers"
# A token is answered afresh this long before its "last used" is due (see apitokens.USE_GRANULARITY),
# so that the answer rendered after its stamp never writes it.
_USE_MARGIN = apitokens.USE_GRANULARITY * 0.9


# An answer as rendered: the stamp it was rendered under, its bytes, headers and weak ETag.
Answer = keeping.Kept


class Answers(KeptStore):
    """Answers by URL and caller (a user's id, or None for callers without a token), each with the stamp
    it was rendered under; bounded by bytes, least recently used first out."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes, MAX_ANSWER_BYTES)
        # The token rows last read, by their digest: the caller each next stamp is read for (see
        # _read_folded); at most KNOWN_TOKENS, the least recently read going first.
        self.known: OrderedDict[str, tuple[Any, ...]] = OrderedDict()

    def know(self, digest: str, row: tuple[Any, ...] | None) -> None:
        """Note ``row`` as the token row of ``digest`` as just read (None: no working token)."""
        with self._lock:
            self.known.pop(digest, None)
            if row is not None:
                self.known[digest] = row
                while len(self.known) > KNOWN_TOKENS:
                    self.known.popitem(last=False)


KNOWN_TOKENS = 4096


def answers_of(app: Any = None) -> Answers:
    """The answers kept by ``app`` (the current app by default); each app keeps its own."""
    return keeping.store_of(app, _EXTENSION, Answers)


# The caller ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """A request's working token as the stamp's read gives it, and what answers show of its player: the
    time zone they read times in, since when they are on vacation, and what they play as a bot."""

    token_id: int
    user_id: int
    zone: str | None
    shown: tuple[Any, ...]


_CALLER_COLUMNS = (ApiToken.id, ApiToken.user_id, ApiToken.last_used_at, User.verified_at, User.time_zone,
                   User.vacation_since, User.is_bot, User.bot_games, User.bot_strength)
_CALLER = (
    select(*_CALLER_COLUMNS).join(User, User.id == ApiToken.user_id)
    .where(ApiToken.token_hash == bindparam("digest"), ApiToken.revoked_at.is_(None))
)
# The same row as columns to add to a stamp's statement (each an uncorrelated subquery, read once for the
# statement however many rows it has), by the digest bound under a name of its own.
_CALLER_ROW = tuple(
    select(column).join_from(ApiToken, User, User.id == ApiToken.user_id)
    .where(ApiToken.token_hash == bindparam("pbem_caller_digest"), ApiToken.revoked_at.is_(None))
    .correlate(None).scalar_subquery() for column in _CALLER_COLUMNS
)

# Why a request is answered afresh rather than kept: no working token where one is needed.
_UNKEPT = object()
# The request's token as last read (see _token_row), in ``g``.
_TOKEN_ROW = "pbem_api_token_row"
# In ``g`` while a stamp is read for the caller as last known: the digest whose row the stamp's first
# statement reads beside its own (see read), then that row as read (None: no working token).
_FOLD = "pbem_api_fold_digest"
_FOLDED = "pbem_api_folded_row"


def _digest() -> str | None:
    """The stored digest of the request's Bearer token, if it carries one."""
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    return apitokens.stored_digest(value) if scheme.lower() == "bearer" and value else None


def _token_row(again: bool = False) -> tuple[Any, ...] | None:
    """The row of the request's Bearer token and its player (see :data:`_CALLER`), if it names one that
    is not revoked; read once per request unless ``again`` (in the snapshot an answer is rendered in)."""
    if not again and _TOKEN_ROW in g:
        return cast(tuple[Any, ...] | None, g.get(_TOKEN_ROW))
    digest = _digest()
    rows = read(_CALLER, {"digest": digest}) if digest is not None else []
    row = rows[0] if rows else None
    setattr(g, _TOKEN_ROW, row)
    if digest is not None:
        answers_of().know(digest, row)
    return row


def working_token_id() -> int | None:
    """The id of the working token the request carries (its player may sign in), or None; one indexed
    read per request, no model object, nothing written: for the rate limit's key, asked on every
    request.  For a GET or HEAD, which a kept answer may serve, the token's row as last read in this
    process, if any, is taken without reading it: the answer's stamp reads it (see :func:`read`), so
    a token revoked meanwhile is counted as a token for one request more in each process, and
    refused all the same."""
    if _TOKEN_ROW not in g and request.method in ("GET", "HEAD"):
        digest = _digest()
        known = answers_of().known.get(digest) if digest is not None else None
        if known is not None:
            return cast(int, known[0]) if known[3] is not None else None
    if _TOKEN_ROW not in g:
        with keeping.reading():
            _token_row()
    row = _token_row()
    return row[0] if row is not None and row[3] is not None else None


def _caller(public: bool, again: bool = False) -> Caller | object | None:
    """The request's caller: None for a call without any ``Authorization`` to a public operation; or
    :data:`_UNKEPT` when the answer is to be rendered afresh (no token where one is needed, a token that
    does not work, or one whose "last used" is due)."""
    if "Authorization" not in request.headers:
        return None if public else _UNKEPT
    row = _token_row(again)
    if row is None:
        return _UNKEPT
    token_id, user_id, last_used_at, verified_at, zone, *shown = row
    if verified_at is None or last_used_at is None or utcnow() - last_used_at > _USE_MARGIN:
        return _UNKEPT
    return Caller(token_id, user_id, zone, (zone, *shown))


# Reading ------------------------------------------------------------------------------------------------


# Each stamp statement with the caller's row added (see read), made once for a statement.
_WITH_CALLER: WeakKeyDictionary[Select, Select] = WeakKeyDictionary()


def read(statement: Select | CompoundSelect,
         parameters: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """The rows of a stamp's statement as tuples (see :func:`pbem.present.keeping.read`); the first
    statement of a stamp read for the caller as last known reads their token's row beside its own, as
    its rows' last columns (kept in ``g`` for :func:`_read_folded`, and left off the rows)."""
    digest = g.pop(_FOLD, None)
    if digest is None or not isinstance(statement, Select):
        return keeping.read(statement, parameters)
    folded = _WITH_CALLER.get(statement)
    if folded is None:
        folded = _WITH_CALLER.setdefault(statement, statement.add_columns(*_CALLER_ROW))
    rows = keeping.read(folded, {**(parameters or {}), "pbem_caller_digest": digest})
    if not rows:
        return rows
    width = len(_CALLER_ROW)
    caller = rows[0][-width:]
    setattr(g, _FOLDED, caller if caller[0] is not None else None)
    return [row[:-width] for row in rows]


# Serving ------------------------------------------------------------------------------------------------

Stamp = Callable[..., object | None]
Render = Callable[[bool], Response]


# What _read_folded answers when the stamp is to be read the plain way.
_MISSED = object()


def _read_folded(stamp: Stamp, public: bool, path_args: dict[str, Any]) -> object:
    """:func:`_read_stamp` in one statement less: the stamp read for the caller as their token's row was
    last read in this process, that row read again by the stamp's first statement (see :func:`read`).
    The stamp holds if the row read is the one it was read for; else, or with no row known, or none
    read (a stamp of no statement, or of no rows: the row is then read on its own and must be the one
    known), :data:`_MISSED`, and the stamp is read the plain way."""
    digest = _digest() if _TOKEN_ROW not in g else None
    known = answers_of().known.get(digest) if digest is not None else None
    if known is None:
        return _MISSED
    setattr(g, _TOKEN_ROW, known)
    caller = _caller(public)
    if caller is _UNKEPT:
        g.pop(_TOKEN_ROW)
        return _MISSED
    setattr(g, _FOLD, digest)
    try:
        made_of = stamp(caller, **path_args)
    finally:
        g.pop(_FOLD, None)
    read_row = g.pop(_FOLDED, _MISSED)
    if read_row is _MISSED:
        read_row = _token_row(again=True)
    else:
        answers_of().know(cast(str, digest), cast(tuple[Any, ...] | None, read_row))
    if read_row != known:
        g.pop(_TOKEN_ROW)
        return _MISSED
    if made_of is None:
        return None
    who = cast(Caller, caller)
    return who, (made_of, who.shown)


def _read_stamp(stamp: Stamp, public: bool, path_args: dict[str, Any],
                again: bool = False) -> tuple[Caller | None, object] | None:
    """The caller and what their answer is made of, or None when it is answered afresh; ``again`` in the
    snapshot the answer is rendered in (the token is read again too)."""
    if not again and "Authorization" in request.headers:
        folded = _read_folded(stamp, public, path_args)
        if folded is not _MISSED:
            return cast(tuple[Caller | None, object] | None, folded)
    caller = _caller(public, again)
    if caller is _UNKEPT:
        return None
    who = cast(Caller | None, caller)
    made_of = stamp(who, **path_args)
    if made_of is None:
        return None
    return who, (made_of, who.shown if who is not None else None)


def _unchanged(etag: str) -> Response:
    """The 304 for a request whose If-None-Match names ``etag``."""
    unchanged = Response(status=304)
    unchanged.set_etag(etag, weak=True)
    return unchanged


def serve(stamp: Stamp, public: bool, path_args: dict[str, Any], render: Render) -> Response:
    """The answer kept for the request under ``stamp`` (called with the caller, None for a call without a
    token, and the path's arguments), or ``render``'s, kept when it may be.  ``render(True)`` answers as
    the operation always does; ``render(False)`` ignores If-None-Match (an answer to keep has a body)."""
    if request.method not in ("GET", "HEAD"):
        return render(True)
    answers, url = answers_of(), keeping.request_url()
    generation = keeping.generation_now()
    if generation is not None:
        unread = _unread(answers, url, generation)
        if unread is not None:
            return _answer(unread)
    with keeping.reading():
        found = _read_stamp(stamp, public, path_args)
    if found is None:
        return render(True)
    caller, made_of = found
    caller_id = caller.user_id if caller is not None else None
    digest = _digest() if caller is not None else None
    kept = answers.get(url, made_of, caller_id, keeping.checked_at(generation, digest))
    if kept is None:
        generation = keeping.generation_now()
        with keeping.snapshot():
            again = _read_stamp(stamp, public, path_args, again=True)
        if again is None or again[0] != caller:
            return render(True)
        response = render(False)
        if not keeping.plain_ok(response):
            return response
        etag, _weak = response.get_etag()
        kept = Answer(again[1], response.get_data(), keeping.kept_headers(response), etag,
                      keeping.checked_at(generation, digest))
        answers.put(url, kept, caller_id)
    return _answer(kept)


def _answer(kept: Answer) -> Response:
    """A kept answer to the request: a 304 if it names the answer's ETag."""
    if kept.etag is not None and request.if_none_match.contains_weak(kept.etag):
        return _unchanged(kept.etag)
    return current_app.response_class(kept.body, headers=list(kept.headers))


def _unread(answers: Answers, url: str, generation: tuple[bytes, float, float]) -> Answer | None:
    """The answer kept for ``url`` and the request's caller that may be served without reading its
    stamp (see :mod:`pbem.present.keeping`): found to hold lately, under the write generation that is
    still the host's, for the token the request carries (or for no token, if it carries none).  The
    token's row as read then still holds (revoking a token, or anything its player may no longer do, is
    a write); its "last used" is checked here as :func:`_caller` checks it, so that one due to be written
    is answered afresh and written."""
    now, _at, max_age = generation
    if "Authorization" not in request.headers:
        caller_id, digest = None, None
    else:
        digest = _digest()
        known = answers.known.get(digest) if digest is not None else None
        if known is None:
            return None
        _token_id, caller_id, last_used_at, verified_at = known[:4]
        if verified_at is None or last_used_at is None or utcnow() - last_used_at > _USE_MARGIN:
            return None
    found = answers.fresh(url, caller_id, now, max_age)
    if found is None or found[1][2] != digest:
        return None
    return found[0]


# Stamps -------------------------------------------------------------------------------------------------
# The statements are built once where they can be: building one costs more than SQLite takes to answer.


def _clocks(time_control: dict[str, Any] | None, running: list[tuple[Any, ...]], now: datetime
            ) -> tuple[tuple[int, bool], ...] | None:
    """What the words of a game's running clocks change with as time passes alone (see
    :func:`pbem.game.clock.status_changes`), from each running seat's (deadline, vacation_since); the
    rest of the words follow from the columns read with the stamp and the caller's zone, in its key.
    None when the answer cannot be kept: a bank's running clock is answered in seconds, which change
    with every request."""
    if not running:
        return ()
    if (time_control or {}).get("kind") == "bank":
        return None
    return tuple(clock.status_changes(deadline, away, time_control, now) for deadline, away in running)


# A game as GET /v1/games/{id} shows it: its row's version (raised by every change of the row), its
# record's length, its seats with their players, clocks and banks.  The record is counted by the game's
# id as bound, so that it is read once for the statement, not once per seat.
_RECORD = Move.game_id == bindparam("game_id")
_GAME = (
    select(Game.version, Game.public, Game.status, Game.time_control,
           select(func.count(Move.id)).where(_RECORD).scalar_subquery(),
           select(func.max(Move.number)).where(_RECORD).scalar_subquery(),
           Seat.number, Seat.user_id, Seat.deadline, Seat.bank_seconds, Seat.result, User.handle,
           User.vacation_since, User.is_bot)
    .outerjoin(Seat, Seat.game_id == Game.id).outerjoin(User, Seat.user_id == User.id)
    .where(Game.id == bindparam("game_id")).order_by(Seat.number)
)


def game(caller: Caller | None, game_id: int) -> object | None:
    """What a game's answer is made of (see :data:`_GAME`) and its running clocks' words in the caller's
    zone.  None (answered afresh) for a game not started or called off (its answer shows its
    challenges), and for a private game to anyone but its players (whoever else may see it does so by a
    challenge, which is not read)."""
    rows = read(_GAME, {"game_id": game_id})
    if not rows:
        return None
    _version, public, status, time_control = rows[0][:4]
    if status not in ("active", "finished"):
        return None
    if not public and (caller is None or all(row[7] != caller.user_id for row in rows)):
        return None
    running = [(row[8], row[12]) for row in rows if status == "active" and row[8] is not None]
    clocks = _clocks(time_control, running, utcnow())
    if clocks is None:
        return None
    return rows, clocks


def games_statement(listed: Select, *more: Any) -> Select:
    """The statement of :func:`games` for the games ``listed`` selects (their ids and versions), with the
    columns ``more`` on each row (of the game and the seat, in one read: on PostgreSQL each statement is
    a round trip); built once where it can be: building one costs more than reading it."""
    shown = listed.subquery()
    # Of the seats, those a game's version does not cover: of a game gathering players, who holds each
    # (a seat is taken without changing the game's row); of a game in play, the running clocks, whose
    # words change with time, their deadlines (moved by a return from vacation) and their players'
    # vacations, with the time control their words depend on.
    read = or_(Game.status == "waiting", and_(Game.status == "active", Seat.deadline.is_not(None)))
    return (select(shown.c.id, shown.c.version, Game.status, Seat.number, Seat.user_id, Seat.deadline,
                   User.vacation_since, case((Seat.deadline.is_not(None), Game.time_control)), *more)
            .select_from(shown).join(Game, Game.id == shown.c.id)
            .outerjoin(Seat, and_(Seat.game_id == shown.c.id, read)).outerjoin(User, User.id == Seat.user_id)
            .order_by(shown.c.id, Seat.number))


def games(statement: Select, parameters: dict[str, Any]) -> object | None:
    """What a list of games is made of, read by its :func:`games_statement`: the listed games' ids and
    versions (with the one more a page reads to know there are more), the seats of those gathering
    players, and what the words of the running clocks change with (the caller's zone is in the key).
    None when a listed game's clock is a running bank (see :func:`_clocks`)."""
    rows = read(statement, parameters)
    now = utcnow()
    running: dict[int, list[tuple[Any, ...]]] = {}
    controls: dict[int, Any] = {}
    for game_id, _version, status, _number, _user, deadline, away, control, *_more in rows:
        if status == "active" and deadline is not None:
            running.setdefault(game_id, []).append((deadline, away))
            controls[game_id] = control
    clocks = []
    for game_id, seats in running.items():
        changes = _clocks(controls[game_id], seats, now)
        if changes is None:
            return None
        clocks.append(changes)
    return rows, clocks
