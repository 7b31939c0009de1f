"""The move path's common case over plain rows (pbem.game.rows): what it wrote is what everyone then reads."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import event, select, update

from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, Seat, User
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play, queries


def cambio(alice: User, bob: User) -> int:
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    return game.id


def test_a_game_read_before_a_move_in_its_transaction_shows_the_move_after_it(ctx: Flask, players) -> None:
    """A caller that read the game, its seats and its record in the same transaction sees each move once
    it is played, as stored, not the position it read before."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    with unit_of_work() as uow:
        game = db.session.get(Game, game_id)
        assert game is not None and game.ply == 0 and len(game.moves) == 0
        first, second = sorted(game.seats, key=lambda s: s.number)
        play.submit(game_id, alice, "b3", "web")
        assert game.ply == 1 and [m.text for m in game.moves] == ["b3"]
        assert first.moves_made == 1 and first.deadline is None and second.deadline is not None
        assert queries.seats_to_move(game) == {1}
        play.submit(game_id, bob, "a2", "web")  # A second move in the same transaction.
        assert game.ply == 2 and second.moves_made == 1 and first.deadline is not None
        uow.commit()
    db.session.expire_all()
    stored = db.session.get(Game, game_id)
    assert stored is not None and stored.ply == 2 and [m.text for m in stored.moves] == ["b3", "a2"]


def test_what_submit_returns_is_the_game_seat_and_entry_as_stored(ctx: Flask, players) -> None:
    """The caller's answer (the web's message, the API's JSON) is made of the objects the session holds
    for what the move wrote, the record entry too when it has been read since."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    with unit_of_work() as uow:
        played = play.submit(game_id, alice, "B3", "web", expect=1, comment="my first")
        entry = db.session.scalars(select(Move).where(Move.game_id == game_id)).one()
        assert played.move is entry
        assert (entry.text, entry.number, entry.comment, entry.via) == ("b3", 1, "my first", "web")
        assert played.game is db.session.get(Game, game_id) and played.game.ply == 1
        assert played.seat.number == 0 and played.seat.user_id == alice.id
        assert (played.number, played.next_number, played.outcome, played.answers) == (1, 2, None, ())
        uow.commit()
    [request] = db.session.scalars(
        select(OutboxMail).where(OutboxMail.to_addr == bob.email, OutboxMail.kind == "your-move")).all()
    assert "b3" in request.body_text and "my first" in request.body_text


def test_a_move_refused_over_plain_rows_writes_nothing_and_says_why(ctx: Flask, players) -> None:
    """A move out of turn, a stale one and an illegal one are refused as ever, and nothing is written."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    refusals = [(bob, "a2", None, "not-your-turn"), (alice, "b3", 2, "stale"), (alice, "zz9", 1, "illegal")]
    for user, text, expect, code in refusals:
        try:
            play.submit(game_id, user, text, "web", expect=expect)
        except play.PlayError as exc:
            assert exc.code == code
        else:
            raise AssertionError(f"{text} was played")
    db.session.expire_all()
    game = db.session.get(Game, game_id)
    assert game is not None and game.ply == 0 and game.moves == []


def test_a_game_read_as_plain_rows_before_its_moves_shows_each_as_played(ctx: Flask, players) -> None:
    """The mail processor's way: the game locked and read as plain rows first (its token and words are
    checked over them), then the move played on those very rows, which show it; a second move in the same
    transaction reads the game again, and both are stored, the game's version raised by each."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    version = db.session.get_one(Game, game_id).version
    db.session.rollback()
    with unit_of_work() as uow:
        read = play.lock_game_rows(game_id)
        assert read is not None and read.ply == 0
        played = play.submit(game_id, alice, "b3", "mail")
        game, seat = played.as_left()
        assert game is read and read.ply == 1 and seat.number == 0 and seat.moves_made == 1
        assert played.text == "b3" and queries.seats_to_move(game) == {1}
        second = play.submit(game_id, bob, "a2", "mail")
        assert second.as_left()[0] is not read and second.as_left()[0].ply == 2
        uow.commit()
    db.session.expire_all()
    stored = db.session.get_one(Game, game_id)
    assert stored.ply == 2 and stored.version == version + 2
    assert [m.text for m in stored.moves] == ["b3", "a2"]


def test_a_game_read_as_plain_rows_holds_each_column_as_the_models_read_it(ctx: Flask, players) -> None:
    """The plain read (straight from the driver's cursor) makes every column of the game, its seats and
    their players what the session's objects hold: JSON decoded (a stored null too), times as datetimes,
    flags as booleans; with the last record number and whether anybody watches the game."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    play.submit(game_id, alice, "b3", "web")  # Deadlines and a record entry to read.
    db.session.commit()
    with unit_of_work() as uow:
        uow.begin()
        read = play.lock_game_rows(game_id)
        assert read is not None
        game = db.session.get_one(Game, game_id)
        columns = {table: [c.key for c in table.__mapper__.column_attrs] for table in (Game, Seat, User)}

        def held(row: object, model: type) -> dict[str, object]:
            return {key: getattr(row, key) for key in columns[model]}

        assert held(read, Game) == held(game, Game)
        assert read.result is None and isinstance(read.state, dict) and read.created_at == game.created_at
        assert len(read.seats) == 2
        for plain, seat in zip(read.seats, sorted(game.seats, key=lambda s: s.number), strict=True):
            assert held(plain, Seat) == held(seat, Seat) and held(plain.user, User) == held(seat.user, User)
        assert any(s.deadline is not None for s in read.seats)
        assert uow.reads("record_numbers")[game_id] == 1
        uow.rollback()


def test_a_move_writes_both_seats_by_one_update_and_only_what_it_changed(ctx: Flask, players) -> None:
    """The mover's seat and the other's, each with columns of its own changed, are written by one UPDATE
    that gives each seat its own values and leaves every other column as stored (here a column changed
    by another writer meanwhile, which the move did not change)."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    play.submit(game_id, alice, "b3", "web")
    db.session.commit()
    updates: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if "UPDATE seat" in statement:  # (On PostgreSQL a part of the game's UPDATE.)
            updates.append(statement)

    with unit_of_work() as uow:
        read = play.lock_game_rows(game_id)
        assert read is not None
        mover, other = read.seats[1], read.seats[0]
        # Behind the rows read: a column the move does not change, on each seat.
        uow.connection().execute(update(Seat).where(Seat.game_id == game_id).values(conditionals=[["x"]]))
        event.listen(db.engine, "before_cursor_execute", record)
        try:
            play.submit(game_id, bob, "a2", "web")
        finally:
            event.remove(db.engine, "before_cursor_execute", record)
        uow.commit()
    assert len(updates) == 1
    db.session.expire_all()
    seats = sorted(db.session.get_one(Game, game_id).seats, key=lambda s: s.number)
    assert [s.conditionals for s in seats] == [[["x"]], [["x"]]]
    assert seats[1].moves_made == 1 and seats[1].deadline is None and seats[0].deadline is not None
    assert (seats[0].moves_made, seats[0].deadline) == (other.moves_made, other.deadline)
    assert mover.moves_made == 1


def test_a_game_changed_behind_its_plain_rows_is_refused_and_its_seats_are_not_written(
        ctx: Flask, players) -> None:
    """The optimistic lock holds over plain rows, the seats' UPDATE with the game's: a game whose version
    moved on after it was read is refused as a conflict, and neither it nor its seats are written."""
    alice, bob, _ = players
    game_id = cambio(alice, bob)
    play.submit(game_id, alice, "b3", "web")
    db.session.commit()
    before = db.session.execute(select(Seat.id, Seat.moves_made, Seat.deadline).where(Seat.game_id == game_id)
                                .order_by(Seat.id)).all()
    db.session.rollback()
    with unit_of_work() as uow:
        assert play.lock_game_rows(game_id) is not None
        uow.connection().execute(update(Game).where(Game.id == game_id).values(version=Game.version + 1))
        with pytest.raises(play.PlayError) as refused:
            play.submit(game_id, bob, "a2", "web")
        assert refused.value.code == "conflict"
    db.session.expire_all()
    assert db.session.get_one(Game, game_id).ply == 1
    assert db.session.execute(select(Seat.id, Seat.moves_made, Seat.deadline).where(Seat.game_id == game_id)
                              .order_by(Seat.id)).all() == before
