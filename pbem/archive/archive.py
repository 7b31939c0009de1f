"""The public archive of finished games: how a game ended, the archive's filters, and its pages.

The web page (``/archive``), its Atom feed and the API's game list all read finished public games
through :func:`parse_filters` and :func:`search`.  Pages are cut by keyset (cursor) paging: a page
continues after the game it was given (``after``) or before it (``before``), so a deep page costs what
the first costs, and games finishing meanwhile never shift a row from one page to the next.

The order is newest finish first.  A page with no player filter walks the index ``ix_game_archive``
(or ``ix_game_archive_engine`` for one game type); a page of one or two players walks the first
player's seats through ``ix_seat_archive``, which holds each seat's finish time and result, copied from
the game when it ends (:func:`record_finish`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Select, exists, select, true, tuple_
from sqlalchemy.orm import aliased, defer, selectinload

import games
from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, Tournament, TournamentGame, User
from pbem.game import results
from pbem.game.endings import ENDINGS

RESULTS = {"win": "won", "loss": "lost", "draw": "drawn"}
PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
MAX_MOVES = 1_000_000

def result_words(game: Game) -> str:
    """How a finished game ended, in words naming the players (the ranking where seats are ranked)."""
    return results.summary(game)


# Filters ---------------------------------------------------------------------------


class ArchiveError(ValueError):
    """Filters that cannot be used; ``errors`` says why, by parameter name."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(errors.values()))
        self.errors = errors


@dataclass(frozen=True)
class Filters:
    """What the archive is asked to show.  ``players`` holds one or two players: with two, only their
    games against each other.  ``result`` is the first player's result; with no player, "draw" asks
    for drawn games, and "win" or "loss" for games someone won or lost."""

    engine: str | None = None
    players: tuple[User, ...] = ()
    result: str | None = None
    ending: str | None = None
    since: date | None = None
    until: date | None = None
    min_moves: int | None = None
    max_moves: int | None = None
    rated: bool | None = None
    # A tournament's games only (its number).
    tournament: int | None = None

    def params(self) -> dict[str, str]:
        """The filters as GET parameters (the inverse of :func:`parse_filters`), for links."""
        out: dict[str, str] = {}
        if self.engine:
            out["game"] = self.engine
        if self.players:
            out["player"] = self.players[0].handle
        if len(self.players) > 1:
            out["opponent"] = self.players[1].handle
        for name in ("result", "ending"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.since:
            out["from"] = self.since.isoformat()
        if self.until:
            out["to"] = self.until.isoformat()
        if self.min_moves is not None:
            out["min_moves"] = str(self.min_moves)
        if self.max_moves is not None:
            out["max_moves"] = str(self.max_moves)
        if self.rated is not None:
            out["rated"] = "yes" if self.rated else "no"
        if self.tournament is not None:
            out["tournament"] = str(self.tournament)
        return out


FILTER_PARAMS = ("game", "player", "opponent", "result", "ending", "from", "to", "min_moves", "max_moves",
                 "rated", "tournament")


def parse_filters(args: Mapping[str, str]) -> Filters:
    """The archive filters in GET parameters (``game``, ``player``, ``opponent``, ``result``,
    ``ending``, ``from``, ``to``, ``min_moves``, ``max_moves``, ``rated``, ``tournament``); empty ones are
    ignored.  Raises :class:`ArchiveError` naming each parameter that cannot be used."""
    errors: dict[str, str] = {}
    values = {name: (args.get(name) or "").strip()[:64] for name in FILTER_PARAMS}
    engine = None
    if values["game"]:
        try:
            engine = games.get(values["game"]).slug
        except games.UnknownGame as exc:
            errors["game"] = str(exc)
    players: list[User] = []
    for name in ("player", "opponent"):
        handle = values[name]
        if not handle:
            continue
        user = accounts.find_user(handle) if accounts.HANDLE.match(handle) else None
        if user is None:
            errors[name] = f"There is no player called {handle!r}."
        else:
            players.append(user)
    if values["opponent"] and not values["player"]:
        errors["opponent"] = "Name a player first, then their opponent."
    if len(players) == 2 and players[0].id == players[1].id:
        errors["opponent"] = "The opponent must be another player."
    result = values["result"].lower() or None
    if result and result not in RESULTS:
        errors["result"] = f"The result is one of {', '.join(RESULTS)}."
    ending = values["ending"].lower() or None
    if ending and ending not in ENDINGS:
        errors["ending"] = f"The ending is one of {', '.join(ENDINGS)}."
    since, until = _date(values["from"], "from", errors), _date(values["to"], "to", errors)
    if since and until and since > until:
        errors["to"] = "The end of the date range is before its start."
    min_moves = _count(values["min_moves"], "min_moves", errors)
    max_moves = _count(values["max_moves"], "max_moves", errors)
    if min_moves is not None and max_moves is not None and min_moves > max_moves:
        errors["max_moves"] = "The most moves is fewer than the fewest."
    rated_words: dict[str, bool | None] = {"": None, "yes": True, "no": False}
    rated_word = values["rated"].lower()
    if rated_word not in rated_words:
        errors["rated"] = "Rated is yes or no."
    tournament = None
    if values["tournament"]:
        number = values["tournament"].lstrip("#")
        if number.isascii() and number.isdigit() and len(number) <= 9 and db.session.get(
                Tournament, int(number)) is not None:
            tournament = int(number)
        else:
            errors["tournament"] = f"There is no tournament {values['tournament']!r}."
    if errors:
        raise ArchiveError(errors)
    return Filters(engine, tuple(players), result, ending, since, until, min_moves, max_moves,
                   rated_words[rated_word], tournament)


def _date(text: str, name: str, errors: dict[str, str]) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        errors[name] = f"{text!r} is not a date (write it as 2026-03-31)."
        return None


def _count(text: str, name: str, errors: dict[str, str]) -> int | None:
    if not text:
        return None
    if not text.isdigit() or int(text) > MAX_MOVES:
        errors[name] = f"{text!r} is not a number of moves."
        return None
    return int(text)


# Pages ---------------------------------------------------------------------------


@dataclass
class Page:
    """One page of the archive, newest first.  ``newer`` and ``older`` are the cursors of the
    neighbouring pages (the ids to pass as ``before`` and ``after``), None at either end."""

    games: list[Game]
    filters: Filters
    newer: int | None = None
    older: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# The seats an archive query joins, made once: making an alias costs more than the query.
_FIRST = aliased(Seat, name="first_seat")
_EARLIER = aliased(Seat, name="earlier_seat")
_SECOND = aliased(Seat, name="second_seat")
_UNDRAWN = aliased(Seat, name="undrawn_seat")
_SOME = aliased(Seat, name="result_seat")


def archive_query(filters: Filters) -> tuple[Select[Game], tuple[Any, Any]]:
    """The SELECT of the games matching ``filters`` (unordered, unpaged) and the two columns of its
    order key: (finish time, game id)."""
    query = select(Game).where(Game.status == "finished", Game.public == true())
    first, earlier, second, other, some = _FIRST, _EARLIER, _SECOND, _UNDRAWN, _SOME
    if filters.players:
        key = (first.finished_at, first.game_id)
        query = query.join(first, first.game_id == Game.id).where(
            first.user_id == filters.players[0].id, first.finished_at.is_not(None))
        # A player holding two seats of one game is listed once, by their first seat.
        query = query.where(~exists().where(earlier.game_id == first.game_id,
                                            earlier.user_id == first.user_id, earlier.number < first.number))
        if len(filters.players) == 2:
            # The seats of one game share its finish time, so the opponent's seat is found by equality
            # on the whole of ix_seat_archive.
            query = query.where(exists().where(
                second.user_id == filters.players[1].id, second.finished_at == first.finished_at,
                second.game_id == first.game_id, second.number != first.number))
        if filters.result:
            query = query.where(first.result == filters.result)
    else:
        key = (Game.finished_at, Game.id)
        if filters.result == "draw":
            query = query.where(~exists().where(other.game_id == Game.id, other.result != "draw"))
        elif filters.result:
            query = query.where(exists().where(some.game_id == Game.id, some.result == filters.result))
    if filters.engine:
        query = query.where(Game.engine == filters.engine)
    if filters.ending:
        query = query.where(Game.ending == filters.ending)
    if filters.since:
        query = query.where(key[0] >= datetime.combine(filters.since, datetime.min.time()))
    if filters.until and filters.until < date.max:  # The last day there is bounds nothing.
        query = query.where(key[0] < datetime.combine(filters.until + timedelta(days=1), datetime.min.time()))
    if filters.min_moves is not None:
        query = query.where(Game.ply >= filters.min_moves)
    if filters.max_moves is not None:
        query = query.where(Game.ply <= filters.max_moves)
    if filters.rated is not None:
        query = query.where(Game.rated == filters.rated)
    if filters.tournament is not None:
        query = query.where(Game.id.in_(select(TournamentGame.game_id).where(
            TournamentGame.tournament_id == filters.tournament)))
    return query, key


def page_query(filters: Filters, after: int | None = None, before: int | None = None,
               limit: int | None = None) -> tuple[Select[Game], int]:
    """The SELECT of a page of the archive (see :func:`search`), ordered as its games are read, with
    one game more than the page shows (whether there are more), and the page's size."""
    limit = max(1, min(limit or PAGE_SIZE, MAX_PAGE_SIZE))
    query, key = archive_query(filters)
    cursor_id = after if after is not None else before
    if cursor_id is not None:
        cursor = db.session.execute(
            select(Game.finished_at, Game.id).where(Game.id == cursor_id, Game.status == "finished")
        ).first()
        if cursor is None or cursor.finished_at is None:
            raise ArchiveError({"after" if after is not None else "before":
                                "That page no longer exists; start again from the newest games."})
        mark = tuple_(cursor.finished_at, cursor.id)
        query = query.where(tuple_(*key) < mark if after is not None else tuple_(*key) > mark)
    order = (key[0].asc(), key[1].asc()) if _backwards(after, before) else (key[0].desc(), key[1].desc())
    return query.order_by(*order).limit(limit + 1), limit


def _backwards(after: int | None, before: int | None) -> bool:
    """Whether a page is read from its oldest game up (the page before a cursor)."""
    return before is not None and after is None


def search(filters: Filters, after: int | None = None, before: int | None = None,
           limit: int | None = None) -> Page:
    """A page of the archive: up to ``limit`` games newest first, after the game ``after`` or before
    the game ``before`` (ids from a previous page's cursors).  Raises :class:`ArchiveError` for a
    cursor that is not a finished game."""
    query, limit = page_query(filters, after, before, limit)
    cursor_id = after if after is not None else before
    backwards = _backwards(after, before)
    # A page shows no boards: the stored states (the biggest column) stay unread.
    query = query.options(defer(Game.state), selectinload(Game.seats).joinedload(Seat.user))
    found = list(db.session.scalars(query))
    more = len(found) > limit
    found = found[:limit]
    if backwards:
        found.reverse()
    page = Page(found, filters)
    if found:
        if backwards:
            page.newer = found[0].id if more else None
            page.older = found[-1].id
        else:
            page.newer = found[0].id if cursor_id is not None else None
            page.older = found[-1].id if more else None
    return page
