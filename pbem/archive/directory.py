"""The player directory: players found by the beginning of their handle, a page at a time, each with
their rating in every game they are rated in and the number of games they have finished."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlalchemy import Select, func, or_, select

from pbem.core.extensions import db
from pbem.core.models import Rating, User
from pbem.game import ratings, tallies

PAGE_SIZE = 50
# What a search may hold: the characters of a handle, at most as many as a handle has.
SEARCH = re.compile(r"^[A-Za-z0-9_-]{0,32}$")


class DirectoryError(ValueError):
    """A search that cannot be made; the message says why."""


@dataclass
class Listed:
    """One player of the directory: their handle, their rating per game (slug and "1520?") and the
    number of games they have finished."""

    handle: str
    ratings: list[tuple[str, str]] = field(default_factory=list)
    played: int = 0


@dataclass
class DirectoryPage:
    """A page of the directory, in handle order; ``next`` is the handle to continue after, if more."""

    players: list[Listed]
    next: str | None


def _like_prefix(text: str) -> str:
    """``text`` as the start of a LIKE pattern (the handle's ``_`` and ``-`` taken literally)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def page_query(prefix: str = "", after: str | None = None, limit: int | None = None) -> tuple[Select, int]:
    """The SELECT of a page's players (id and handle, in handle order, with one more than the page to
    tell whether there are more) and the page's size; see :func:`search`."""
    prefix, limit = prefix.strip(), limit or PAGE_SIZE
    for value in (prefix, after or ""):
        if not SEARCH.match(value):
            raise DirectoryError("A handle has only letters, digits, '-' and '_' (at most 32): search by "
                                 "how it begins.")
    name = func.lower(User.handle)
    query = select(User.id, User.handle).where(or_(User.verified_at.is_not(None), User.placeholder.is_(True)))
    if prefix:
        query = query.where(name.like(_like_prefix(prefix.lower()), escape="\\"))
    if after:
        query = query.where(name > after.lower())
    return query.order_by(name).limit(limit + 1), limit


def search(prefix: str = "", after: str | None = None, limit: int | None = None) -> DirectoryPage:
    """Players whose handle begins with ``prefix`` (any case), in handle order, after the handle
    ``after``, ``limit`` to a page (:data:`PAGE_SIZE`); a player must have confirmed their address (or
    be an imported player, who has a page too).  DirectoryError for a prefix or an ``after`` that no
    handle could begin with."""
    query, limit = page_query(prefix, after, limit)
    found = db.session.execute(query).all()
    page = found[:limit]
    ids = [user_id for user_id, _handle in page]
    rated: dict[int, list[tuple[str, str]]] = {}
    for row in db.session.scalars(select(Rating).where(Rating.user_id.in_(ids)).order_by(Rating.engine)):
        rated.setdefault(row.user_id, []).append((row.engine, ratings.display(row)))
    played = tallies.finished_counts(ids)
    listed = [Listed(handle, rated.get(user_id, []), played.get(user_id, 0)) for user_id, handle in page]
    return DirectoryPage(listed, page[-1][1] if len(found) > limit else None)
