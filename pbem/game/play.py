"""The one move path: every change to a game's play goes through this module.

Web views, the mail processor, links and the scheduler all call :func:`submit` (a move), :func:`resign`,
the draw functions or :func:`time_out`.  Each call runs in its caller's unit of work
(:mod:`pbem.core.unit_of_work`; a caller that opened none gets one of its own, committed when the call is
done): it locks the game, checks the seat, the turn and the expected move number, asks the engine,
appends to the record, stores the new state, moves the clocks, publishes what happened
(:mod:`pbem.game.events`: the handlers the app set up write the mails into the outbox, in this
transaction), and returns what happened (:class:`Played` for a move) — or rolls the transaction back
and raises :class:`PlayError` with a message for the player.  It never commits a caller's unit of work,
and imports nothing that writes mail.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property
from typing import Any, cast

from sqlalchemy import Integer, bindparam, case, exists, insert, inspect, select, update
from sqlalchemy.orm import make_transient, make_transient_to_detached, selectinload
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.sql import LABEL_STYLE_TABLENAME_PLUS_COL

import games
from games import IllegalMove, Outcome
from pbem.core.database import DirectRead, DirectWrite, is_postgresql
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, Move, Seat, User, Watch, utcnow
from pbem.core.redaction import blank_secrets
from pbem.core.unit_of_work import UnitOfWork, active, current, joined, reads
from pbem.game import clock, conditional, endings, events, queries, ratings, results, rows, watching
from pbem.game.queries import draws_allowed, engine_of, next_move_number, state_of

log = logging.getLogger(__name__)

VIA = {"web", "mail", "link", "command", "server", "cli", "conditional", "api"}


# Starting games ---------------------------------------------------------------------------


def create_game(
    engine_slug: str,
    players: list[User | None],
    options: dict[str, Any] | None = None,
    *,
    created_by: User | None = None,
    public: bool = True,
    time_control: dict[str, Any] | None = None,
    seed: int | None = None,
    rated: bool = True,
) -> Game:
    """A new game with one seat per entry of ``players`` (None is an open seat), added to the session.

    The options are validated by the engine's schema (raising ``marshmallow.ValidationError``).  When
    every seat is filled the game starts at once; otherwise it waits for players.  ``rated`` counts only
    for a two-player game (its result then moves the ratings, if the players are two accounts).  The
    caller commits.
    """
    engine = games.get(engine_slug)
    if len(players) not in engine.players:
        raise PlayError(
            f"{engine.title} is for {count_words(engine.players)}, not {len(players)}.", "players"
        )
    loaded = engine.options.load(options or {})
    game = Game(
        engine=engine.slug,
        options=loaded,
        seed=seed if seed is not None else random.SystemRandom().randrange(2**53),
        players=len(players),
        public=public,
        rated=rated and len(players) == 2,
        time_control=time_control or clock.default_time_control(),
        created_by=created_by,
    )
    now = utcnow()
    for number, user in enumerate(players):
        game.seats.append(Seat(number=number, user=user, joined_at=now if user else None))
    db.session.add(game)
    if all(players):
        start(game)
    return game


def start(game: Game) -> None:
    """Deal the game and ask the first mover(s) for a move.  The caller holds the transaction."""
    engine = engine_of(game)
    state = engine.new(game.players, engine.options.load(game.options), game.seed)
    game.state = engine.dump(state)
    game.status = "active"
    game.started_at = utcnow()
    db.session.flush()
    for seat in game.seats:
        if seat.number in engine.to_move(state):
            clock.start_turn(game, seat)
    events.publish(events.GameStarted(game, engine, state))


# The move path ---------------------------------------------------------------------------


@contextmanager
def locked_game(game_or_id: Game | int) -> Iterator[Game]:
    """The game, locked in the caller's unit of work (:func:`pbem.core.unit_of_work.joined`: one of its
    own, committed at the block's end, for a caller that opened none).  What the block changed is written
    and flushed, so that a conflict shows here; any error rolls the transaction back."""
    game_id = game_or_id if isinstance(game_or_id, int) else game_or_id.id
    with joined() as uow:
        game = lock_game(game_id)
        if game is None:
            uow.rollback()
            raise PlayError(f"There is no game #{game_id}.", "no-game")
        with _undone_on_failure(uow, game_id):
            yield game
            _write_back(uow, game)
            uow.flush()


# The columns of a game and of a seat, by attribute name: what _write_back may write by a plain UPDATE.
_GAME_COLUMNS = {attr.key: attr.columns[0].key for attr in Game.__mapper__.column_attrs}
_SEAT_COLUMNS = {attr.key: attr.columns[0].key for attr in Seat.__mapper__.column_attrs}
_GAME_TABLE, _SEAT_TABLE = Game.__table__, Seat.__table__
# (Their mappers, which make the identity map's keys: identity_key finds the mapper anew at each call.)
_GAME_MAPPER, _SEAT_MAPPER = Game.__mapper__, Seat.__mapper__
# Built once; the SET clause is made of the columns given with each execution.
_UPDATE_GAME = DirectWrite(update(_GAME_TABLE).where(
    _GAME_TABLE.c.id == bindparam("locked_id"), _GAME_TABLE.c.version == bindparam("read_version")
))
_UPDATE_SEAT = DirectWrite(update(_SEAT_TABLE).where(_SEAT_TABLE.c.id == bindparam("seat_id")))


@cache
def _update_seats(changes: tuple[tuple[str, ...], ...]) -> DirectWrite:
    """One UPDATE of several seats, seat n (its id ``seat_id_n``) given the columns ``changes[n]`` (each
    value ``column_n``) and keeping the others as they are; built once for each such shape.

    A move changes two seats (the mover's clock stopped, the other's started), and each UPDATE alone is a
    statement the server parses and runs, and a round trip (SQLite, PostgreSQL alike: a CASE a column)."""
    seat_id = _SEAT_TABLE.c.id
    ids = [bindparam(f"seat_id_{n}", type_=seat_id.type) for n in range(len(changes))]
    columns = {column for changed in changes for column in changed}
    values = {
        column: case(*((seat_id == ids[n], bindparam(f"{column}_{n}", type_=_SEAT_TABLE.c[column].type))
                       for n, changed in enumerate(changes) if column in changed),
                     else_=_SEAT_TABLE.c[column])
        for column in sorted(columns)
    }
    return DirectWrite(update(_SEAT_TABLE).where(seat_id.in_(ids)).values(values))


def _write_seats(uow: UnitOfWork, seats: list[tuple[dict[str, Any], int]]) -> None:
    """Write the changed columns of each seat (with its id) by one UPDATE."""
    if len(seats) == 1:
        [(values, seat_id)] = seats
        uow.write(_UPDATE_SEAT, {**values, "seat_id": seat_id})
    elif seats:
        uow.write(*_seats_update(seats))


def _seats_update(seats: list[tuple[dict[str, Any], int]]) -> tuple[DirectWrite, dict[str, Any]]:
    """The UPDATE of :func:`_update_seats` writing the changed columns of each seat (with its id), and
    its values."""
    numbered = {f"{column}_{n}": value for n, (values, seat_id) in enumerate(seats)
                for column, value in (*values.items(), ("seat_id", seat_id))}
    return _update_seats(tuple(tuple(values) for values, _ in seats)), numbered


@cache
def _entry_and_game(seats: DirectWrite | None, entry_columns: tuple[str, ...]) -> DirectWrite:
    """The game's UPDATE (its optimistic lock) with the INSERT of the move's record entry (its values
    named ``entry_column``) and the UPDATE ``seats`` as parts of it, data-modifying WITHs of PostgreSQL's,
    returning the entry's id; no row when the game's version moved on.  One statement where three cost
    the server a parse and a run each, and the client a round trip each.  (The names of the parts'
    values, ``entry_column`` and ``column_n``, are none of a game's columns, which the game's UPDATE
    would otherwise set.)"""
    move = Move.__table__
    entry = insert(move).values({
        column: bindparam(f"entry_{column}", type_=move.c[column].type) for column in entry_columns
    }).returning(move.c.id).cte("entry")
    statement = _UPDATE_GAME.statement.add_cte(entry)
    if seats is not None:
        statement = statement.add_cte(seats.statement.cte("seats"))
    return DirectWrite(statement.returning(select(entry.c.id).scalar_subquery()))


def _write_back(uow: UnitOfWork, game: Game) -> None:
    """Write what the move path changed in the locked game and its seats by plain UPDATEs (direct writes
    of the unit of work), and tell the session they are saved, so that its flush has nothing of them to do.

    The session's unit of work cost more per move than anything else in the transaction (finding the
    changes of three objects, sorting them, checking the version); here the game is one statement, and
    its changed seats one more (:func:`_update_seats`).  The game's UPDATE raises its ``version`` and
    matches the version read, as the session's would (a changed row raises StaleDataError); every UPDATE
    of a game row raises it, which is what the page cache's stamps rely on.  An object with a change this
    cannot write (a relationship, a new seat) is left to the session, and so is everything else the
    transaction added or changed.

    The session is told by SQLAlchemy's public steps for an object that stands for a row as it is stored
    (as :func:`_record` attaches a record entry): taken out of the session (``make_transient``), given
    back its identity with its history reset (``make_transient_to_detached``), and added again, the
    seats with their game.  Telling it value by value (``set_committed_value``) would leave the objects
    marked changed, and the flush would sort them out again: a third more work a move (bench/movepath.py).
    """
    game_state = inspect(game)
    saved: list[Game | Seat] = []
    changed = game_state.committed_state
    if (changed and changed.keys() <= _GAME_COLUMNS.keys() and "version" in game_state.dict
            and not game_state.expired_attributes):
        values = {_GAME_COLUMNS[key]: game_state.dict[key] for key in changed}
        version = game_state.dict["version"]
        values["version"] = version + 1
        values.setdefault("updated_at", utcnow())
        # (Inside the sweep's batches the UPDATEs are sent, and their rows checked, with the batch's others.)
        uow.write(_UPDATE_GAME, {**values, "locked_id": game.id, "read_version": version}, rows=1)
        game_state.dict["version"], game_state.dict["updated_at"] = values["version"], values["updated_at"]
        saved.append(game)
    seats_changed = []
    for seat in game.seats:
        seat_state = inspect(seat)
        changed = seat_state.committed_state
        if not changed or seat_state.key is None or not changed.keys() <= _SEAT_COLUMNS.keys():
            continue
        seats_changed.append(({_SEAT_COLUMNS[key]: seat_state.dict[key] for key in changed}, seat.id))
        saved.append(seat)
    _write_seats(uow, seats_changed)
    for written in saved:
        make_transient(written)  # (Out of the session, this object alone: no cascade.)
        make_transient_to_detached(written)
    if saved:
        uow.session.add(game)  # With its seats.


# The statements of :func:`_read_locked`, built once: building them per move cost a tenth of a move.
_GAME_ID = bindparam("game_id", type_=Integer)
_TOP = select(db.func.max(Move.number)).where(Move.game_id == _GAME_ID).scalar_subquery()
_WATCHED = exists().where(Watch.game_id == _GAME_ID)
_LOCK_GAME = select(_GAME_TABLE.c.id).where(_GAME_TABLE.c.id == _GAME_ID).with_for_update()
# Sent as its SQL text, compiled once (a Core execution's look-up and set-up cost a tenth of it).
_LOCK = DirectWrite(_LOCK_GAME)
# The game, each of its seats and each seat's player as entities of their own, one row a seat: the ORM's
# joined eager loading of the same rows cost a fifth more (its loaders are set up anew for every
# statement), and the relationships are filled in by _read_locked below.
_READ_GAME = (
    select(Game, Seat, User, _TOP, _WATCHED)
    .outerjoin(Seat, Seat.game_id == Game.id).outerjoin(User, User.id == Seat.user_id)
    .where(Game.id == _GAME_ID).order_by(Seat.number)
    .execution_options(populate_existing=True)
)


def lock_game(game_id: int) -> Game | None:
    """Inside a unit of work: lock the game and read it with its seats and players, once a transaction.

    A caller that owns the unit of work (the mail processor, which reads the game a reply names) locks it
    here before the move path runs in the same transaction, and the move path takes the game as read
    then, under the lock held since, rather than read it again.
    """
    locked = reads("locked_games")
    if game_id not in locked:
        locked[game_id] = _read_locked(game_id)
    return locked[game_id]


def _read_locked(game_id: int) -> Game | None:
    """Inside a write transaction: lock the game and read it with what every path of this module needs."""
    # What every path below needs: the game, its seats and their players, the number of its last record
    # entry, and whether anybody watches it (most games have no watcher, and a query for none per move
    # would cost as much as the move's own writes).
    # A statement that waits for a row lock sees every other row as it was when it began, so on
    # PostgreSQL the lock is taken first by a statement of its own, and what depends on it read after.
    # (On the session's connection: a statement without model objects needs none of the session's steps.)
    if is_postgresql():
        uow = current()
        connection = uow.connection() if uow is not None else db.session.connection()
        if _LOCK.run(connection, {"game_id": game_id}).first() is None:
            return None
    # On SQLite, BEGIN IMMEDIATE took the lock before this statement.
    rows = db.session.execute(_READ_GAME, {"game_id": game_id}).all()
    if not rows:
        return None
    game, _seat, _user, top, anybody_watching = rows[0]
    # As loaded, not as changed: the game's seats in order, each seat's game and player (so that reading
    # them later costs no look-up).
    seats = []
    for _game, seat, user, _top, _watched in rows:
        if seat is not None:  # (A game without seats comes as one row with none.)
            set_committed_value(seat, "game", game)
            set_committed_value(seat, "user", user)
            seats.append(seat)
    set_committed_value(game, "seats", seats)
    reads("record_numbers")[game.id] = top or 0
    if not anybody_watching:
        watching.know_unwatched(game.id)
    return game


def _seat_for(game: Game, user: User, seat_number: int | None, movers: frozenset[int]) -> Seat:
    """The user's seat that is to act, or a PlayError saying why there is none."""
    mine = [s for s in game.seats if s.user_id == user.id]
    if seat_number is not None:
        mine = [s for s in mine if s.number == seat_number]
    if not mine:
        raise PlayError(f"You are not playing in game #{game.id}.", "not-seated")
    if game.status != "active":
        raise PlayError(f"Game #{game.id} is {_status_words(game)}; no more moves can be made.", "over")
    ready = [s for s in mine if s.number in movers]
    if not ready:
        whose = ", ".join(results.handle_or_seat(game, n) for n in sorted(movers)) or "nobody"
        raise PlayError(f"It is not your move in game #{game.id}: it is {whose}'s.", "not-your-turn")
    return ready[0]


def _next_record_number(game: Game) -> int:
    """The number of the game's next record entry.

    The stored maximum is read once per transaction, without flushing the session first (a flush per
    game would undo the batching of :func:`time_out_batch`); entries added since are counted here."""
    numbers = reads("record_numbers")
    if game.id not in numbers:
        with db.session.no_autoflush:
            numbers[game.id] = (
                db.session.scalar(select(db.func.max(Move.number)).where(Move.game_id == game.id)) or 0
            )
    numbers[game.id] += 1
    return numbers[game.id]


_INSERT_MOVE = DirectWrite(insert(Move.__table__))


def _entry_values(game: Game, seat: Seat, kind: str, text: str, via: str, user: User | None,
                  comment: str | None) -> dict[str, Any]:
    """The columns of the game's next record entry (all but its id)."""
    if via not in VIA:
        raise ValueError(f"unknown channel {via!r}")
    return {
        "game_id": game.id, "number": _next_record_number(game), "seat": seat.number, "kind": kind,
        "text": text, "via": via, "user_id": user.id if user else None,
        # Where every comment enters the record and the mails: nothing that acts for a player goes on.
        "comment": blank_secrets((comment or "").strip(), [s.user for s in game.seats if s.user]) or None,
        "created_at": utcnow(),
    }


def _record(game: Game, seat: Seat, kind: str, text: str, via: str, user: User | None,
            comment: str | None = None) -> Move:
    values = _entry_values(game, seat, kind, text, via, user, comment)
    uow = active()
    if uow.batching:
        # In a batch (the sweep's timeouts) the entry is written with the batch's others, before the
        # transaction commits: the caller gets the entry as it will be stored, without its id and outside
        # the session.
        uow.write(_INSERT_MOVE, values)
        move = Move(**values)
    else:
        # The entry is written at once by a plain INSERT rather than left to the session's flush: a
        # record entry is never changed afterwards, and the session's bookkeeping for a new object
        # cost more than the statement itself (bench/movepath.py).  It is then attached to the session
        # as the row it now is, so that it behaves like any loaded entry.
        values["id"] = uow.insert(_INSERT_MOVE, values)
        move = Move(**values)
        make_transient_to_detached(move)
        db.session.add(move)
    if kind == "move":
        uow.reads("last_moves")[game.id] = move  # What the mails show as the last move.
    # Appending through the relationship would first load the game's whole record; a record already
    # loaded in this transaction is kept in step (in a batch, let go: read again, the read sends the
    # batch's writes first and finds the entry).
    if "moves" in game.__dict__:
        if move.id is None:
            # A batched entry has no id yet (typed int, it is None until the batch is written).
            db.session.expire(game, ["moves"])  # type: ignore[unreachable]
        else:
            set_committed_value(game, "moves", [*game.moves, move])
    return move


# The longest move text handed to an engine (a record holds 500 characters).
MAX_MOVE_TEXT = 200


@dataclass(frozen=True)
class Played:
    """What :func:`submit` did, for the mails, the mail answer, the web's message and the API to say.

    ``game``, ``seat`` and ``move`` are model objects: a move made over plain rows (see
    :func:`_submit_plain`) reads them from the session when first asked for, in the transaction or after it.
    """

    game_id: int
    seat_number: int  # The mover's seat.
    entry: Move | dict[str, Any]  # The move's record entry, or its columns as written (plain rows).
    number: int  # The move's number as the player counts it (the ``#N`` they confirm: next_move_number).
    answers: tuple[Move, ...]  # The conditional answers played at once after it, in order.
    state: Any  # The engine's state after the move and its answers.
    next_number: int  # The mover's next move number, after the answers.
    notes: dict[int, list[str]]  # Sentences for single seats about their conditional lines.
    outcome: Outcome | None  # The game's end, when the move or an answer ended it.
    loaded_game: Game | None = None  # The game as the move path held it, when it held a model object.
    # The game's plain rows as the move left them, when it was played over them (see as_left).
    plain_game: rows.PlainGame | None = None

    @property
    def text(self) -> str:
        """The move as the record writes it."""
        return self.entry.text if isinstance(self.entry, Move) else str(self.entry["text"])

    def as_left(self) -> tuple[Game, Seat]:
        """The game and the mover's seat as the move left them, for a caller that only shows them (the
        mail's answer): the plain rows when the move was played over them (their columns and the few
        relationships of :mod:`pbem.game.rows`; typed as the models, read nothing else), without reading
        them again from the session; else :attr:`game` and :attr:`seat`."""
        if self.plain_game is None:
            return self.game, self.seat
        seat = next(s for s in self.plain_game.seats if s.number == self.seat_number)
        return cast(Game, self.plain_game), cast(Seat, seat)

    @cached_property
    def game(self) -> Game:
        """The game, as a model object."""
        if self.loaded_game is not None:
            return self.loaded_game
        game = db.session.get(Game, self.game_id)
        assert game is not None  # (Its move was just played.)
        return game

    @cached_property
    def seat(self) -> Seat:
        """The mover's seat, as a model object."""
        return next(s for s in self.game.seats if s.number == self.seat_number)

    @cached_property
    def move(self) -> Move:
        """The move's record entry, as a model object."""
        if isinstance(self.entry, Move):
            return self.entry
        move = Move(**self.entry)
        make_transient_to_detached(move)
        # (The session may hold the entry already, read since; merged, it is that one.)
        return db.session.merge(move, load=False)


def submit(
    game: Game | int,
    user: User,
    text: str,
    via: str,
    expect: int | None = None,
    comment: str | None = None,
    seat: int | None = None,
    conditionals: list[str] | None = None,
) -> Played:
    """Play ``text`` for ``user`` in ``game``: the one way a move enters the record.

    ``expect`` is the move number the player saw (``#N`` in mail, the page's hidden field); when the
    game has moved on since, the move is refused rather than applied to a position the player did not
    see.  ``seat`` picks among several seats of one user.  ``conditionals`` are lines the player queues
    with the move (``if c4 then d4``), checked in the position after it: if one is refused, so is the move.

    When the opponent has queued a conditional line that expected this move, its answer is played at
    once in the same transaction (and so on, while lines keep answering), and the mails show where the
    game then stands.  Returns what happened: the move, the answers, the state after them.
    """
    if len(text) > MAX_MOVE_TEXT:
        # No game writes a move that long; refusing it here keeps every engine's parser to short input.
        raise PlayError(f"That is not a move: a move is at most {MAX_MOVE_TEXT} characters.", "illegal")
    game_id = game if isinstance(game, int) else game.id
    with joined() as uow:
        if not conditionals:
            plain = _submit_plain(uow, game_id, user, text, via, expect, comment, seat)
            if plain is not None:
                return plain
        return _submit_models(game_id, user, text, via, expect, comment, seat, conditionals)


def _submit_models(game: int, user: User, text: str, via: str, expect: int | None, comment: str | None,
                   seat: int | None, conditionals: list[str] | None) -> Played:
    """:func:`submit` over model objects: every case, the conditional moves and the game's end among them."""
    with locked_game(game) as locked:
        engine = engine_of(locked)
        state = state_of(locked)
        movers = engine.to_move(state) if locked.status == "active" else frozenset()
        try:
            player_seat = _seat_for(locked, user, seat, movers)
        except PlayError as exc:
            # A move sent for a move number the game has passed (the same mail sent twice, a second tab)
            # is told that the position has moved on, which is why it is not this player's turn now.
            if exc.code == "not-your-turn" and expect is not None:
                _refuse_if_passed(locked, user, seat, expect, text)
            raise
        number = next_move_number(locked, player_seat)
        if expect is not None and expect != number:
            raise _stale(locked, player_seat, expect, number, text)
        try:
            new_state = engine.play(state, player_seat.number, text)
        except IllegalMove as exc:
            raise PlayError(exc.message, "illegal") from None
        canonical = engine.notation(state, player_seat.number, text)
        move = _record(locked, player_seat, "move", canonical, via, user, comment)
        before = _advance(locked, engine, state, new_state, player_seat)
        if conditionals and locked.status == "active":
            conditional.add_lines(locked, engine, new_state, player_seat, conditionals)
        played, after, notes = _play_conditional_answers(locked, engine, state, new_state, move)
        if len(played) == 1:
            events.publish(events.MovePlayed(locked, engine, after, move, before, notes))
        else:
            events.publish(events.MovesPlayed(locked, engine, after, played, notes))
        log.info("game %s: %s played %r via %s", locked.id, user.handle, canonical, via)
        return Played(
            game_id=locked.id, seat_number=player_seat.number, entry=move, number=number,
            answers=tuple(played[1:]), state=after, next_number=next_move_number(locked, player_seat),
            notes=notes, outcome=engine.outcome(after) if locked.status != "active" else None,
            loaded_game=locked,
        )


# The move path over plain rows ---------------------------------------------------------------------

# The read of _read_locked as plain columns (Core, not the ORM): the game's, each seat's and each seat's
# player's, in the tables' order, one row a seat; read from the driver's cursor (see DirectRead).
_USER_TABLE = User.__table__
_GAME_NAMES = rows.attribute_names(_GAME_TABLE, Game)
_SEAT_NAMES = rows.attribute_names(_SEAT_TABLE, Seat)
_USER_NAMES = rows.attribute_names(_USER_TABLE, User)
_READ_PLAIN = DirectRead(
    select(*_GAME_TABLE.c, *_SEAT_TABLE.c, *_USER_TABLE.c, _TOP, _WATCHED)
    .select_from(_GAME_TABLE.outerjoin(_SEAT_TABLE, _SEAT_TABLE.c.game_id == _GAME_TABLE.c.id)
                 .outerjoin(_USER_TABLE, _USER_TABLE.c.id == _SEAT_TABLE.c.user_id))
    .where(_GAME_TABLE.c.id == _GAME_ID).order_by(_SEAT_TABLE.c.number)
    .set_label_style(LABEL_STYLE_TABLENAME_PLUS_COL)
)
# Where each table's columns end in a row of _READ_PLAIN.
_GAME_END = len(_GAME_NAMES)
_SEAT_END = _GAME_END + len(_SEAT_NAMES)
_USER_END = _SEAT_END + len(_USER_NAMES)


def _read_plain(uow: UnitOfWork, game_id: int) -> rows.PlainGame | None:
    """:func:`_read_locked` into plain rows (:mod:`pbem.game.rows`): lock the game (on PostgreSQL; on
    SQLite BEGIN IMMEDIATE did), read it with its seats and their players, note its last record number
    and whether anybody watches it."""
    connection = uow.connection()
    # (The connection's dialect rather than the app's engine, which Flask-SQLAlchemy finds anew.)
    postgresql = connection.dialect.name == "postgresql"
    if postgresql and _LOCK.run(connection, {"game_id": game_id}).first() is None:
        return None
    read = _READ_PLAIN.rows(connection, {"game_id": game_id})
    if not read:
        return None
    first = read[0]
    game = rows.PlainGame(dict(zip(_GAME_NAMES, first[:_GAME_END], strict=True)))
    seats: list[rows.PlainSeat] = []
    for row in read:
        if row[_GAME_END] is None:
            continue  # (A game without seats comes as one row with none.)
        seat = rows.PlainSeat(dict(zip(_SEAT_NAMES, row[_GAME_END:_SEAT_END], strict=True)))
        seat.game = game
        seat.user = (rows.PlainUser(dict(zip(_USER_NAMES, row[_SEAT_END:_USER_END], strict=True)))
                     if row[_SEAT_END] is not None else None)
        seats.append(seat)
    game.seats = seats
    uow.reads("record_numbers")[game_id] = first[_USER_END] or 0
    if not first[_USER_END + 1]:
        watching.know_unwatched(game_id)
    return game


def lock_game_rows(game_id: int) -> rows.PlainGame | None:
    """Inside a unit of work: lock the game and read it with its seats and players as plain rows
    (:mod:`pbem.game.rows`), for a caller that reads it before a move in the same transaction (the mail
    processor: the reply's token and words), so that the move path's common case then plays on these
    rows (see :func:`_submit_plain`) rather than on model objects.  Read once until a move takes them."""
    uow = active()
    read = uow.reads("plain_games")
    if game_id not in read:
        read[game_id] = _read_plain(uow, game_id)
    return cast(rows.PlainGame | None, read[game_id])


def _submit_plain(uow: UnitOfWork, game_id: int, user: User, text: str, via: str, expect: int | None,
                  comment: str | None, seat_number: int | None) -> Played | None:
    """:func:`submit` over plain rows, for the common case: a legal move, expected where it was sent, in
    a game of seats that take turns, that goes on after it, with no conditional move queued.  The steps
    are the model path's (the same helpers, the same statements); None, having written nothing, for any
    other case, which the model path then plays (or refuses) as ever.

    A game the caller has already locked and read as plain rows (the mail processor: see
    :func:`lock_game_rows`) is taken as read then, under the lock held since.  One it has locked and read
    as model objects (:func:`lock_game`), or a session with changes not yet sent, goes to the model path
    at once: what the session holds must not be written after this."""
    session = uow.session
    if uow.batching or game_id in uow.reads("locked_games") or session.new or session.dirty \
            or session.deleted:
        return None
    with _undone_on_failure(uow, game_id):
        # (Taken once: the move changes the rows, and a later move of the transaction reads them again.)
        plain = uow.reads("plain_games").pop(game_id, None) or _read_plain(uow, game_id)
        if plain is None or plain.status != "active" or any(s.conditionals for s in plain.seats):
            return None
        # Typed as the model: every function below reads only what a plain row has (see rows).
        game = cast(Game, plain)
        engine = engine_of(game)
        if engine.simultaneous:
            return None
        state = state_of(game)
        movers = engine.to_move(state)
        # The player as read with the game: the caller's object may have been expired by the unit of
        # work's begin, and reading its id would read its row again.
        mover_id = _identity_of(user)
        player = next((s.user for s in plain.seats if s.user is not None and s.user.id == mover_id), None)
        if player is None:
            return None
        try:
            player_seat = _seat_for(game, cast(User, player), seat_number, movers)
        except PlayError:
            return None
        number = next_move_number(game, player_seat)
        if expect is not None and expect != number:
            return None
        try:
            new_state = engine.play(state, player_seat.number, text)
        except IllegalMove:
            return None
        if engine.outcome(new_state) is not None:
            return None
        canonical = engine.notation(state, player_seat.number, text)
        values = _entry_values(game, player_seat, "move", canonical, via, cast(User, player), comment)
        # The mails are written of the entry as it will be stored (they show no id); the row itself is
        # written with the game's UPDATE, which gives its id.
        move = cast(Move, rows.PlainRow(values))
        last_moves = uow.reads("last_moves")
        last_moves[game_id] = move  # What the mails show as the last move.
        before = _advance(game, engine, state, new_state, player_seat)
        events.publish(events.MovePlayed(game, engine, new_state, move, before, {}))
        values["id"] = _write_back_plain(uow, plain, values)
        # Later readers of the transaction read the entry as stored, a model object.
        del last_moves[game_id]
        log.info("game %s: %s played %r via %s", game_id, player.handle, canonical, via)
        return Played(
            game_id=game_id, seat_number=player_seat.number, entry=values, number=number, answers=(),
            state=new_state, next_number=next_move_number(game, player_seat), notes={}, outcome=None,
            plain_game=plain,
        )


@contextmanager
def _undone_on_failure(uow: UnitOfWork, game_id: int) -> Iterator[None]:
    """Roll the unit of work back if the block fails; a game changed under it (its version moved on) is
    refused as such."""
    try:
        yield
    except StaleDataError:
        uow.rollback()
        raise PlayError(
            f"Game #{game_id} changed while your request was being applied; look at it again and resend.",
            "conflict",
        ) from None
    except BaseException:
        uow.rollback()
        raise


def _write_back_plain(uow: UnitOfWork, game: rows.PlainGame, entry: dict[str, Any]) -> int:
    """Write the move's record ``entry`` and what the move changed in the plain rows of the game and its
    seats, by the UPDATEs of :func:`_write_back` (the game's raising its ``version``), and expire the
    session's own objects of those rows, if it holds any, so that whoever reads them next reads them as
    written; the entry's id.

    On PostgreSQL the three are one statement (:func:`_entry_and_game`); on SQLite, where a statement is
    a call into the library rather than a round trip to a server, three."""
    session = uow.session
    held = session.identity_map
    stale: list[object | None] = [held.get(_GAME_MAPPER.identity_key_from_primary_key((game.id,)))]
    seats_changed = []
    for seat in game.seats:
        changed = seat.changed()
        if changed:
            seats_changed.append(({_SEAT_COLUMNS[key]: value for key, value in changed.items()}, seat.id))
        stale.append(held.get(_SEAT_MAPPER.identity_key_from_primary_key((seat.id,))))
    changed = game.changed()  # (A move always changes the game: its state and ply.)
    version = game.version
    changed["version"] = version + 1
    changed.setdefault("updated_at", utcnow())
    values = {_GAME_COLUMNS[key]: value for key, value in changed.items()}
    values["locked_id"], values["read_version"] = game.id, version
    connection = uow.connection()
    if connection.dialect.name == "postgresql":
        seats, numbered = _seats_update(seats_changed) if seats_changed else (None, {})
        entry_values = {f"entry_{column}": value for column, value in entry.items()}
        entry_id = _entry_and_game(seats, tuple(entry)).run(
            connection, {**values, **numbered, **entry_values}).scalar()
        if entry_id is None:  # The game's version moved on: its UPDATE matched no row.
            raise StaleDataError(f"game {game.id} changed since version {version} was read")
    else:
        entry_id = uow.insert(_INSERT_MOVE, entry)
        uow.write(_UPDATE_GAME, values, rows=1)
        _write_seats(uow, seats_changed)
    for model in stale:
        if model is not None and not inspect(model).expired:
            session.expire(model)
    return int(entry_id)


def _identity_of(user: User) -> int:
    """The user's id, without reading their row again when the object has been expired."""
    if isinstance(user, rows.PlainRow):  # (The mail processor's player, read with the game's rows.)
        return user.id
    identity = inspect(user).identity
    return int(identity[0]) if identity is not None else user.id


def _refuse_if_passed(game: Game, user: User, seat_number: int | None, expect: int, text: str) -> None:
    """Raise the ``stale`` refusal when ``expect`` is a move number the user's seat has already passed."""
    mine = [s for s in game.seats
            if s.user_id == user.id and (seat_number is None or s.number == seat_number)]
    if not mine:
        return
    number = next_move_number(game, mine[0])
    if expect < number:
        raise _stale(game, mine[0], expect, number, text)


class AlreadyPlayed(PlayError):
    """The ``stale`` refusal of a move sent again after it was played: nothing is wrong with it."""


def _stale(game: Game, seat: Seat, expect: int, number: int, text: str) -> PlayError:
    """The refusal of a move sent for move ``expect`` while ``seat`` is at move ``number``.

    When the very move was already played by this seat as move ``expect`` (a mail sent twice, a form
    sent again), it says so: the player's move is in, and nothing more is needed."""
    played = _played_as(game, seat, expect) if 1 <= expect < number else None
    if played is not None and played.text == _as_recorded(game, seat, text):
        return AlreadyPlayed(
            f"Your {played.text} was already played as move {expect} of game #{game.id}; nothing more "
            f"was done. The game is at move {number} now.",
            "stale",
        )
    return PlayError(
        f"Your move was for move {expect}, but game #{game.id} is at move {number}: the position has "
        "changed since. Look at the new position and send your move again.",
        "stale",
    )


def _as_recorded(game: Game, seat: Seat, text: str) -> str:
    """``text`` as the record would write it for ``seat`` now (see :meth:`games.Engine.notation`)."""
    try:
        return engine_of(game).notation(state_of(game), seat.number, text)
    except IllegalMove:  # An engine may read a move only in a position where it is legal.
        return games.as_typed(text)


def _played_as(game: Game, seat: Seat, number: int) -> Move | None:
    """The record entry of move ``number`` as :func:`next_move_number` counts, if ``seat`` played it.

    Moves are counted for the game, or where seats move at once for each seat (timeouts and the other
    entries of the record are no moves)."""
    query = select(Move).where(Move.game_id == game.id, Move.kind == "move")
    if engine_of(game).simultaneous:
        query = query.where(Move.seat == seat.number)
    with db.session.no_autoflush:
        move = db.session.scalar(query.order_by(Move.number).offset(number - 1).limit(1))
    return move if move is not None and move.seat == seat.number else None


def _play_conditional_answers(
    game: Game, engine: games.Engine, before: Any, state: Any, move: Move
) -> tuple[list[Move], Any, dict[int, list[str]]]:
    """Play the conditional answers to ``move``, one after another while lines keep answering.

    Each answer goes through the same steps as a move (record, state, clocks, the game's end) with
    ``via="conditional"``.  Returns the moves played (``move`` first), the state after the last, and
    sentences for single players (seat number: sentences) about their lines."""
    played = [move]
    notes: dict[int, list[str]] = {}
    mover = next(s for s in game.seats if s.number == move.seat)
    for _ in range(conditional.MAX_ANSWERS):
        if game.status != "active":
            break
        reply = conditional.reply_to(game, engine, before, state, mover, played[-1].text, notes)
        if reply is None:
            break
        seat, answer = reply
        try:
            after = engine.play(state, seat.number, answer)
        except IllegalMove as exc:
            # The line was legal when it was queued; only a change of the rules since can make it not.
            lines = conditional.broken(seat)
            events.publish(events.ConditionalRefused(game, seat, played[-1].text, answer, exc.message, lines))
            break
        conditional.answered(seat, answer)
        reply_move = _record(game, seat, "move", answer, "conditional", seat.user)
        _advance(game, engine, state, after, seat)
        played.append(reply_move)
        log.info("game %s: conditional answer %r to %r", game.id, answer, played[-2].text)
        before, state, mover = state, after, seat
    return played, state, notes


def _advance(
    game: Game, engine: games.Engine, old_state: Any, new_state: Any, mover: Seat | None,
    ending: str | None = None,
) -> frozenset[int]:
    """Store the new state, move the clocks, and finish the game if the engine says it is over (by
    ``ending``, when the server's action ended it: see :func:`_finish`).

    Returns the seats that were to move before, for the notices."""
    game.state = engine.dump(new_state)
    game.ply += 1
    if mover is not None:
        mover.moves_made += 1
    if game.draw_offered_by is not None and mover is not None and mover.number != game.draw_offered_by:
        # Moving instead of answering a draw offer declines it, as over the board.
        game.draw_offered_by = None
    before, after = engine.to_move(old_state), engine.to_move(new_state)
    for seat in game.seats:
        if seat.number in before and (seat.number not in after or seat is mover):
            clock.stop_turn(game, seat)
        if seat.number in after and (seat.number not in before or seat is mover):
            clock.start_turn(game, seat)
    outcome = engine.outcome(new_state)
    if outcome is not None:
        _finish(game, outcome, ending)
    return before


def _finish(game: Game, outcome: Outcome, ending: str | None = None, last_word: Move | None = None) -> None:
    """End the game with ``outcome``: stop every clock, rate it, and tell everyone.  ``ending`` is how
    the server ended it (see :data:`pbem.game.endings.ENDINGS`); None when the engine did.
    ``last_word`` is the record entry that ended it (a resignation, an accepted draw), whose comment the
    mails pass on."""
    game.status = "finished"
    game.result = outcome.to_dict()
    game.finished_at = utcnow()
    endings.record_finish(game, outcome, ending)
    game.draw_offered_by = None
    conditional.cancel_all(game)
    for seat in game.seats:
        clock.stop_turn(game, seat)
    ratings.record_ratings(game, ratings.rate(game, outcome))
    events.publish(events.GameOver(game, outcome, last_word))


# Server actions: resignation, draws, timeouts -------------------------------------------------------------


def _players_seat(game: Game, user: User) -> Seat:
    seat = game.seat_of(user)
    if seat is None:
        raise PlayError(f"You are not playing in game #{game.id}.", "not-seated")
    if game.status != "active":
        raise PlayError(f"Game #{game.id} is {_status_words(game)}.", "over")
    return seat


def _require_draws(game: Game) -> None:
    if draws_allowed(game):
        return
    engine = engine_of(game)
    if game.players < 2:
        message = f"There is nobody to offer a draw to in a game of one player (game #{game.id})."
    elif engine.simultaneous:
        message = (f"There are no draws in {engine.title}: every player plays their own board, so there is "
                   f"no position to agree on. Play on, or resign game #{game.id}.")
    else:
        message = (f"Draws are offered only in games of two players; game #{game.id} has "
                   f"{game.players}. Play on, or resign.")
    raise PlayError(message, "no-draws")


def resign(game: Game | int, user: User, via: str, comment: str | None = None) -> Outcome:
    """``user`` resigns and the game ends: the opponent wins, or with more players the resigner loses and
    the others share first place; a solitaire game is abandoned.  ``comment`` goes to the others with the
    result, and into the record."""
    with locked_game(game) as locked:
        seat = _players_seat(locked, user)
        outcome = results.resignation(engine_of(locked), locked.players, seat.number)
        entry = _record(locked, seat, "resign", "resign", via, user, comment)
        _finish(locked, outcome, "resignation", entry)
        return outcome


def offer_draw(game: Game | int, user: User, via: str, comment: str | None = None) -> bool:
    """``user`` offers a draw; the opponents may accept or decline it (or move, which declines it).
    ``comment`` goes to them with the offer, and into the record.

    The offer cancels every conditional move queued in the game (an answer should be thought over, not
    played by a line queued before); returns whether ``user`` had lines of their own cancelled."""
    with locked_game(game) as locked:
        seat = _players_seat(locked, user)
        _require_draws(locked)
        if locked.draw_offered_by is not None:
            if locked.draw_offered_by == seat.number:
                raise PlayError("You have already offered a draw in this game.", "draw-pending")
            raise PlayError("Your opponent has offered a draw: accept or decline it.", "draw-pending")
        locked.draw_offered_by = seat.number
        cancelled = conditional.cancel_all(locked)
        entry = _record(locked, seat, "draw-offer", "draw offer", via, user, comment)
        events.publish(events.DrawOffered(locked, seat, cancelled, entry.comment))
        return seat.number in cancelled


def accept_draw(game: Game | int, user: User, via: str, comment: str | None = None) -> Outcome:
    """``user`` accepts the pending draw offer; the game ends drawn.  ``comment`` goes to the others with
    the result, and into the record."""
    with locked_game(game) as locked:
        seat = _answering_seat(locked, user, "accept")
        entry = _record(locked, seat, "draw-accept", "draw accept", via, user, comment)
        outcome = results.draw_agreed(locked.players)
        _finish(locked, outcome, "agreement", entry)
        return outcome


def _answering_seat(game: Game, user: User, answer: str) -> Seat:
    """The seat of ``user``, who would ``answer`` ("accept" or "decline") the opponent's pending draw
    offer; refused when there is none (or the game has no draws)."""
    seat = _players_seat(game, user)
    if game.draw_offered_by is None:
        _require_draws(game)
    if game.draw_offered_by is None or game.draw_offered_by == seat.number:
        raise PlayError(f"There is no draw offer from your opponent to {answer}.", "no-draw-offer")
    return seat


def decline_draw(game: Game | int, user: User, via: str, comment: str | None = None) -> None:
    """``user`` declines the pending draw offer; play goes on.  ``comment`` goes to the offerer with the
    answer, and into the record."""
    with locked_game(game) as locked:
        seat = _answering_seat(locked, user, "decline")
        locked.draw_offered_by = None
        entry = _record(locked, seat, "draw-decline", "draw decline", via, user, comment)
        events.publish(events.DrawDeclined(locked, seat, entry.comment))


@dataclass(frozen=True)
class DueTimeout:
    """A seat the sweep found past its deadline: ``deadline`` is the one it read."""

    game_id: int
    seat: int
    deadline: datetime | None = None


def time_out(game: Game | int, seat_number: int, deadline: datetime | None = None) -> Outcome | None:
    """The seat's deadline has passed: end its part as the rules for absent players say.

    A pending draw offer from the opponent is accepted instead (as pbmserv did).  Engines with a
    ``time_out`` of their own (simultaneous games) score the absent seat and play goes on; a solitaire
    game is abandoned; otherwise the absent seat loses on time.  Returns the outcome if the game ended.

    ``deadline`` is the one the sweep read: under the game's lock the seat must still have it (and its
    player must not be on vacation), so a sweep acting late, or twice, never times out a seat that has
    moved or begun a new turn since.
    """
    with locked_game(game) as locked:
        _acted, outcome = _time_out_locked(locked, seat_number, deadline)
        return outcome


def time_out_batch(due: list[DueTimeout]) -> int:
    """Time out many seats in the caller's unit of work (one commit for the lot); how many were acted on.

    The sweep's way of calling :func:`time_out`: the same rules and the same checks under each game's
    lock, but one transaction for a batch, since a commit per game (on PostgreSQL a wait for the disk)
    would cost more than the work itself.  The games are locked in the order of their ids, so two
    sweepers never wait on each other in a circle.  What every game's end reads is read for the batch at
    once, and its writes go to the server together (see :meth:`pbem.core.unit_of_work.UnitOfWork.batched`).
    On any error nothing is written; the caller rolls back (and may try the games one by one).
    """
    if not due:
        return 0
    ids = sorted({d.game_id for d in due})
    with joined() as uow:
        query = (
            select(Game).where(Game.id.in_(ids)).order_by(Game.id)
            .options(selectinload(Game.seats).joinedload(Seat.user))
            .execution_options(populate_existing=True)
        )
        if is_postgresql():
            query = query.with_for_update(of=Game)
        locked = {g.id: g for g in db.session.scalars(query)}
        # What every game's end reads, read for the whole batch at once.
        numbers = uow.reads("record_numbers")
        numbers.update({game_id: 0 for game_id in locked})
        numbers.update((game_id, top) for game_id, top in db.session.execute(
            select(Move.game_id, db.func.max(Move.number)).where(Move.game_id.in_(ids)).group_by(Move.game_id)
        ))
        queries.prefetch_last_moves(ids)
        watching.prefetch_watchers(ids)
        events.publish(events.GamesLocked(ids))
        ratings.lock_ratings(
            {(user_id, g.engine) for g in locked.values() for user_id in ratings.rated_players(g) or ()}
        )
        acted = 0
        # The batch's record entries, mails and game and seat UPDATEs go to the server together (one
        # executemany each) rather than a round trip each; nothing in it reads them back.
        with uow.batched():
            for item in sorted(due, key=lambda d: (d.game_id, d.seat)):
                game = locked.get(item.game_id)
                if game is not None:
                    acted += _time_out_locked(game, item.seat, item.deadline)[0]
            for game in locked.values():
                _write_back(uow, game)
        return acted


def _time_out_locked(game: Game, seat_number: int, deadline: datetime | None) -> tuple[bool, Outcome | None]:
    """:func:`time_out` inside the caller's lock; returns (acted, outcome if the game ended)."""
    if game.status != "active":
        return False, None
    engine = engine_of(game)
    state = state_of(game)
    seat = next(s for s in game.seats if s.number == seat_number)
    if deadline is not None and seat.deadline != deadline:
        return False, None  # The seat moved, or began a new turn, since the sweep read it.
    if seat.user is not None and seat.user.on_vacation:
        return False, None
    if seat_number not in engine.to_move(state):
        # A clock left running on a seat that is not to move (nothing should leave one): stop it, so the
        # sweep does not find it again and again.
        clock.stop_turn(game, seat)
        return False, None
    if game.draw_offered_by is not None and game.draw_offered_by != seat_number:
        _record(game, seat, "draw-accept", results.DRAW_ON_TIME, "server", None)
        outcome = results.draw_on_time(engine, game.players, seat_number)
        _finish(game, outcome, "time")
        return True, outcome
    if results.scores_timeout(engine, game.players):
        record = _record(game, seat, "timeout", "timeout", "server", None)
        new_state = engine.time_out(state, seat_number)
        # A timeout that leaves nobody to play ends the game on time; its game-over mail tells everyone,
        # and a notice that "the game goes on" would say the opposite in the same minute.
        before = _advance(game, engine, state, new_state, None, ending="time")
        if game.status == "active":
            events.publish(events.TimedOut(game, seat))
            events.publish(events.MovePlayed(game, engine, new_state, record, before))
        return True, engine.outcome(new_state)
    _record(game, seat, "timeout", "timeout", "server", None)
    if results.aborts_on_time(engine, game.players, seat.moves_made > 0):
        game.rated = False  # Aborted: it counts for nobody.
        outcome = results.aborted_on_time(engine, game.players, seat_number)
        _finish(game, outcome, results.ABORTED)
    else:
        outcome = results.loss_on_time(engine, game.players, seat_number)
        _finish(game, outcome, "time")
    if game.players == 1 or results.is_aborted(game):
        game.status = "abandoned"
    return True, outcome


# Words ---------------------------------------------------------------------------


def _status_words(game: Game) -> str:
    return {"waiting": "still waiting for players", "finished": "over", "abandoned": "abandoned"}.get(
        game.status, game.status
    )


def count_words(players: range) -> str:
    """How many players a game is for, in words: "2 players", "1 to 8 players"."""
    low, high = players.start, players.stop - 1
    if low == high:
        return f"{low} player{'s' if low != 1 else ''}"
    return f"{low} to {high} players"
