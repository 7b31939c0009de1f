"""Each player's tallies of finished games, kept as they change rather than counted per request.

A :class:`~pbem.core.models.Tally` row holds, for one player and one kind of game (its engine, public or
not, rated or not), how many of their seats in such games have the result "win", "draw" and "loss".
The invariant (``pbem verify`` checks it and rebuilds the rows that break it, :func:`rebuild`): every
row equals the count of those seats, and a player with no such seat has no row (or a row of zeros).

The move path and an import write a game's results onto its seats in one place,
:func:`pbem.game.endings.record_finish`, which calls :func:`count_finish` in the same transaction: the
counts commit, or roll back, with the results.  Each seat is one atomic increment (an upsert that adds
to what the row holds, never a read then a write), so two games of one player ending at once on
PostgreSQL both count.  Pages read a player's few rows: the standings (rated games per engine), the
player directory (every finished game) and the API's player (public games per engine).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import delete, func, insert, select, text

from pbem.core.database import DirectWrite, insert_with_conflicts, is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, Tally
from pbem.core.unit_of_work import current, unit_of_work

# The column each seat result adds to.
COLUMNS = {"win": "wins", "draw": "draws", "loss": "losses"}


@dataclass(frozen=True)
class Record:
    """Games won, drawn and lost."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def played(self) -> int:
        """Every game of the record."""
        return self.wins + self.draws + self.losses

    def __add__(self, other: Record) -> Record:
        return Record(self.wins + other.wins, self.draws + other.draws, self.losses + other.losses)


Key = tuple[int, str, bool, bool]  # user id, engine, public, rated: a Tally's primary key


@cache
def _upsert(dialect: str) -> DirectWrite:
    """The tallies' upsert for ``dialect``, built when first asked (as pbem.mailin.receive's INSERT)."""
    statement = insert_with_conflicts(dialect)(Tally.__table__)
    return DirectWrite(statement.on_conflict_do_update(
        index_elements=["user_id", "engine", "public", "rated"],
        set_={name: getattr(Tally.__table__.c, name) + getattr(statement.excluded, name)
              for name in COLUMNS.values()},
    ))


def count_finish(game: Game) -> None:
    """Add the results just written onto ``game``'s seats to their players' tallies, in the caller's
    transaction (inside the sweep's batch of timeouts, with the batch's other writes)."""
    writer = _upsert("postgresql" if is_postgresql() else "sqlite")
    uow = current()
    for seat in game.seats:
        column = COLUMNS.get(seat.result or "")
        if seat.user_id is None or column is None:
            continue
        values: dict[str, Any] = {"user_id": seat.user_id, "engine": game.engine, "public": game.public,
                                  "rated": game.rated, "wins": 0, "draws": 0, "losses": 0}
        values[column] = 1
        if uow is not None:
            uow.write(writer, values)  # In a batch (the sweep's), sent with the batch's other rows.
        else:
            writer.run(db.session.connection(), values)


def rated_records(engine: str, user_ids: Iterable[int]) -> dict[int, Record]:
    """The record of each of ``user_ids`` in the rated games of ``engine`` (public or not)."""
    return _summed(Tally.user_id, Tally.user_id.in_(list(user_ids)), Tally.engine == engine,
                   Tally.rated.is_(True))


def public_records(user_id: int) -> dict[str, Record]:
    """A player's record per engine in public games (rated or not)."""
    return _summed(Tally.engine, Tally.user_id == user_id, Tally.public.is_(True))


def finished_counts(user_ids: Iterable[int]) -> dict[int, int]:
    """How many games each of ``user_ids`` has finished (every kind)."""
    return {user_id: record.played for user_id, record in _summed(
        Tally.user_id, Tally.user_id.in_(list(user_ids))).items()}


def _summed(by: Any, *where: Any) -> dict[Any, Record]:
    rows = db.session.execute(
        select(by, func.sum(Tally.wins), func.sum(Tally.draws), func.sum(Tally.losses))
        .where(*where).group_by(by)
    )
    return {key: Record(int(w), int(d), int(lost)) for key, w, d, lost in rows}


# Checking and rebuilding (``pbem verify``) ------------------------------------------------------------


def counted() -> dict[Key, Record]:
    """The tallies as the seats give them, counted now: one pass over every finished seat."""
    rows = db.session.execute(
        select(Seat.user_id, Game.engine, Game.public, Game.rated, Seat.result, func.count())
        .join(Game, Game.id == Seat.game_id)
        .where(Seat.user_id.is_not(None), Seat.result.in_(COLUMNS))
        .group_by(Seat.user_id, Game.engine, Game.public, Game.rated, Seat.result)
    )
    found: dict[Key, dict[str, int]] = defaultdict(dict)
    for user_id, engine, public, rated, result, n in rows:
        # (The query's WHERE leaves out seats without a player or a result.)
        found[(int(user_id or 0), engine, bool(public), bool(rated))][COLUMNS[result or ""]] = n
    return {key: Record(**columns) for key, columns in found.items()}


def stored() -> dict[Key, Record]:
    """The tallies as the table holds them (rows of zeros left out)."""
    rows = db.session.execute(select(Tally.user_id, Tally.engine, Tally.public, Tally.rated, Tally.wins,
                                     Tally.draws, Tally.losses))
    return {(u, e, bool(p), bool(r)): Record(w, d, lost) for u, e, p, r, w, d, lost in rows
            if w or d or lost}


def rebuild() -> list[Key]:
    """Compare the stored tallies with a fresh count of the seats and, where they differ, rewrite the
    table from the count (in one write transaction, committed).  Returns the keys that differed."""
    db.session.rollback()
    want, have = counted(), stored()
    wrong = sorted(key for key in want.keys() | have.keys() if want.get(key) != have.get(key))
    db.session.rollback()
    if not wrong:
        return []
    with unit_of_work() as uow:
        if is_postgresql():
            # A game ending meanwhile waits to add its results until the rebuilt rows are in, and one that
            # added them before is waited for: counted once either way.
            db.session.execute(text("LOCK TABLE tally IN EXCLUSIVE MODE"))
        want = counted()  # Again, under the write lock.
        db.session.execute(delete(Tally))
        if want:
            db.session.execute(insert(Tally), [
                {"user_id": u, "engine": e, "public": p, "rated": r, "wins": rec.wins, "draws": rec.draws,
                 "losses": rec.losses} for (u, e, p, r), rec in sorted(want.items())])
        uow.commit()
    return wrong
