"""A game, its seats and their players as plain rows: what the move path's common case reads and changes.

A move that goes on with the game (see :func:`pbem.game.play.submit`) reads the game, its seats and their
players into these objects rather than into model objects: each holds its row's columns as plain
attributes, under the models' names, with the few relationships and properties the move path and the
move request read (a game's ``seats`` and ``seat_of``, a seat's ``game``, ``user`` and ``label``, a
player's ``on_vacation``).  The session never sees them, so they cost none of its bookkeeping (the
identity map, each attribute's history, the write-back through the session, the expiry at the commit:
together a third of such a move's CPU on SQLite, bench/movepath.py); what the move changed is written by
the move path's own UPDATEs, found by :meth:`PlainRow.changed`.

Every function they pass through reads only those attributes (the clocks, the names, the move request);
anything else (a lazy relationship, the session) is an AttributeError, not a silent query.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table

from pbem.core.models import Game, Seat, User


class PlainRow:
    """One row's columns as attributes, and their values as read."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
        self._read = values

    def changed(self) -> dict[str, Any]:
        """The columns given a new value since the row was read, with that value (by identity: a value
        set anew, even an equal one, is written again, as the session would)."""
        now = self.__dict__
        return {key: now[key] for key, value in self._read.items() if now[key] is not value}


class PlainUser(PlainRow):
    """A player's row, as :class:`pbem.core.models.User` reads it."""

    on_vacation = User.on_vacation
    verified = User.verified
    id: int
    handle: str


class PlainSeat(PlainRow):
    """A seat's row with its ``game`` and ``user`` (a :class:`PlainUser`, or None for an open seat)."""

    label = Seat.label
    # (Among the columns, those the move path reads here itself, typed.)
    id: int
    number: int
    conditionals: list[list[str]] | None
    game: PlainGame
    user: PlainUser | None


class PlainGame(PlainRow):
    """A game's row with its ``seats`` in order."""

    seat_of = Game.seat_of
    id: int
    status: str
    version: int
    seats: list[PlainSeat]

    def __repr__(self) -> str:
        return f"<PlainGame {self.__dict__.get('engine')} #{self.__dict__.get('id')}>"


def attribute_names(table: Table, model: type[Any]) -> tuple[str, ...]:
    """The model's attribute name for each column of its table, in the table's order."""
    by_column = {prop.columns[0].key: prop.key for prop in model.__mapper__.column_attrs}
    return tuple(by_column[column.key] for column in table.columns)
