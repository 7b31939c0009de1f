"""The unit of work (pbem.core.unit_of_work): who opens it commits it, and what it keeps lives no longer
than the transaction it was read in."""

from __future__ import annotations

from datetime import datetime

import pytest
from flask import Flask
from sqlalchemy import DateTime, event, func, inspect, select, text, update

from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, User, set_clock
from pbem.core.unit_of_work import current, unit_of_work
from pbem.game import play
from pbem.mailout import outbox


def _cambio(players) -> int:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    return game.id


def _record(game_id: int) -> list[str]:
    with db.engine.connect() as connection:
        query = select(Move.text).where(Move.game_id == game_id).order_by(Move.number)
        return list(connection.scalars(query))


def test_what_a_transaction_read_under_its_locks_is_read_again_in_the_next(ctx: Flask, players) -> None:
    """The move path reads a locked game once a transaction (UnitOfWork.reads); a change committed by
    another writer between two transactions of one unit of work is seen by the second, even where the
    objects are kept through commits (the mail processor's unit of work)."""
    game_id = _cambio(players)
    with unit_of_work(keep_loaded=True) as uow:
        assert play.lock_game(game_id).draw_offered_by is None
        uow.commit()
        with db.engine.begin() as other:  # Another writer, between the two transactions.
            other.execute(update(Game).where(Game.id == game_id).values(draw_offered_by=1,
                                                                        version=Game.version + 1))
        uow.begin()
        assert play.lock_game(game_id).draw_offered_by == 1


def test_an_error_or_a_missing_commit_keeps_nothing(ctx: Flask, players) -> None:
    """Leaving a unit of work without its commit, or by an error, keeps nothing of what was written in
    it, the move path's direct writes included; the owner's commit keeps all of it."""
    alice, bob, _ = players
    game_id = _cambio(players)
    with pytest.raises(RuntimeError), unit_of_work():
        play.submit(game_id, alice, "b3", "web")
        raise RuntimeError("a fault after the move")
    with unit_of_work():
        play.submit(game_id, alice, "b3", "web")
    assert _record(game_id) == [] and current() is None
    with unit_of_work() as uow:
        played = play.submit(game_id, alice, "b3", "web")
        assert (played.number, played.next_number, played.answers) == (1, 2, ())
        uow.commit()
    assert _record(game_id) == ["b3"]
    # Alone (a script), the move path opens a unit of work of its own and commits it.
    play.submit(game_id, bob, "a2", "web")
    assert _record(game_id) == ["b3", "a2"]


def test_reads_end_without_forgetting_prepared_statements_and_writes_are_still_undone(
        ctx: Flask, players) -> None:
    """On PostgreSQL a transaction that only read is ended by a COMMIT where a rollback is asked for
    (pbem.core.database), so that psycopg keeps the statements it has prepared (a ROLLBACK deallocates
    them all, and every move was planned afresh); one that wrote is rolled back, its writes undone."""
    if not is_postgresql():
        pytest.skip("PostgreSQL only: SQLite prepares no statements on the server")
    game_id = _cambio(players)
    alice, bob, _ = players
    with unit_of_work() as uow:
        play.submit(game_id, alice, "b3", "web")
        uow.commit()

    def prepared() -> int:
        return db.session.scalar(text("SELECT count(*) FROM pg_prepared_statements")) or 0

    read = select(Game.version).where(Game.id == game_id)
    for _ in range(6):  # (psycopg prepares a statement the fifth time it is sent.)
        db.session.scalar(read)
    assert prepared() >= 1
    db.session.rollback()  # Reads only: kept.
    assert prepared() >= 1
    db.session.execute(update(Game).where(Game.id == game_id).values(draw_offered_by=1))
    db.session.rollback()  # A write: undone, as asked.
    assert db.session.scalar(select(Game.draw_offered_by).where(Game.id == game_id)) is None
    # A unit of work begun after reads keeps them too, and a move in it is planned from what was kept.
    for _ in range(6):
        db.session.scalar(read)
    before = prepared()
    with unit_of_work() as uow:
        play.submit(game_id, bob, "a2", "web")
        uow.commit()
    assert prepared() >= before and _record(game_id) == ["b3", "a2"]


def test_a_unit_of_work_begun_after_reads_sees_what_was_committed_meanwhile(ctx: Flask, players) -> None:
    """A unit of work begun while the session holds reads (a request that read before it moves) sees
    every change committed since those reads, whether it ends their transaction (SQLite; one that read a
    snapshot) or carries it on (PostgreSQL at READ COMMITTED, pbem.core.unit_of_work.UnitOfWork.begin);
    a transaction that wrote is never carried on: what it wrote is undone."""
    alice, _bob, _ = players
    game_id = _cambio(players)

    def another_writer(**values: object) -> None:
        with db.engine.begin() as other:
            other.execute(update(Game).where(Game.id == game_id).values(version=Game.version + 1, **values))

    def offered_under_the_lock() -> int | None:
        with unit_of_work() as uow:
            offered = play.lock_game(game_id).draw_offered_by
            uow.rollback()
        return offered

    assert db.session.get(Game, game_id).draw_offered_by is None  # The request's reads, still open.
    another_writer(draw_offered_by=1)
    assert offered_under_the_lock() == 1
    if is_postgresql():  # A snapshot: REPEATABLE READ (as the page cache reads a stamp and its page).
        db.session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        assert db.session.get(Game, game_id).draw_offered_by == 1
        another_writer(draw_offered_by=0)
        assert offered_under_the_lock() == 0
    db.session.execute(update(Game).where(Game.id == game_id).values(draw_offered_by=None))  # Not committed.
    assert offered_under_the_lock() in (0, 1)
    # And a move in a unit of work begun after reads is played on the game as it now is.
    db.session.get(Game, game_id)
    another_writer(draw_offered_by=None)
    with unit_of_work() as uow:
        played = play.submit(game_id, alice, "b3", "web", expect=1)
        uow.commit()
    assert played.game.draw_offered_by is None and _record(game_id) == ["b3"]
    assert db.session.get(Game, game_id).version == played.game.version


def test_what_the_session_holds_is_read_afresh_after_a_commit(ctx: Flask, players) -> None:
    """After a unit of work commits, the objects the session holds are read again when next used, and so
    show what another writer committed since: those left as the unit of work began them (a move over
    plain rows reads nothing through the session, and the commit does not expire them twice) as much
    as those read back inside it, or written through the session (and one deleted is let go)."""
    alice, bob, _ = players
    game_id = _cambio(players)
    zones = iter(["Europe/Paris", "Asia/Tokyo", "America/Lima"])
    ids = [alice.id, bob.id]

    def another_writer() -> str:
        zone = next(zones)
        with db.engine.begin() as other:
            other.execute(update(User).where(User.id.in_(ids)).values(time_zone=zone))
        return zone

    assert alice.time_zone == bob.time_zone == "UTC"  # The request's reads.
    for mover, move, inside in ((alice, "b3", None), (bob, "a2", "read"), (alice, "b1", "written")):
        with unit_of_work() as uow:
            play.submit(game_id, mover, move, "web")
            if inside == "read":
                assert bob.time_zone == "Europe/Paris"
            elif inside == "written":
                bob.vacation_days_used = 1.0
            uow.commit()
        zone = another_writer()
        assert alice.time_zone == bob.time_zone == zone, (move, inside)
    assert _record(game_id) == ["b3", "a2", "b1"]
    # An object deleted through the session in the transaction is let go at the commit, as ever.
    with unit_of_work() as uow:
        entry = db.session.scalars(
            select(Move).where(Move.game_id == game_id).order_by(Move.id.desc())).first()
        db.session.delete(entry)
        uow.flush()
        uow.commit()
    assert inspect(entry).detached and _record(game_id) == ["b3", "a2"]


@pytest.mark.parametrize("moment", [datetime(2025, 11, 28, 12, 0, 0), datetime(2025, 11, 28, 12, 0, 0, 70)],
                         ids=["whole second", "microseconds"])
def test_a_moment_written_directly_is_stored_as_the_session_stores_it(ctx: Flask, players, moment) -> None:
    """The move path's direct writes (the record entry, the game, the seats' deadlines, the outbox) store
    a moment as the session does, to the microsecond's digits even at a whole second: SQLite compares
    moments as text, so a deadline or a mail's due time written otherwise would sort against the sweep's
    and the deliverer's "now" wrongly."""
    alice, _bob, _ = players
    game_id = _cambio(players)
    set_clock(moment)
    try:
        play.submit(game_id, alice, "b3", "web")
    finally:
        set_clock(None)
    stored = db.session.execute(text(
        "SELECT m.created_at, g.updated_at, o.created_at, o.next_attempt_at FROM move m"
        " JOIN game g ON g.id = m.game_id JOIN outbox_mail o ON o.game_id = g.id AND o.kind = 'your-move'"
        " WHERE m.game_id = :game_id ORDER BY o.id DESC LIMIT 1"), {"game_id": game_id}).one()
    dialect = db.engine.dialect
    as_the_session_writes = DateTime().dialect_impl(dialect).bind_processor(dialect) or (lambda value: value)
    assert list(stored) == [as_the_session_writes(moment)] * 4


def _mail(to: str) -> None:
    outbox.enqueue(to, "[pbem] Test: kept", "kept for the commit\n", kind="test")


def _outbox_rows(to_addrs: tuple[str, ...]) -> list[str]:
    with db.engine.connect() as connection:
        query = select(OutboxMail.to_addr).where(OutboxMail.to_addr.in_(to_addrs)).order_by(OutboxMail.id)
        return list(connection.scalars(query))


def test_the_mails_of_a_unit_of_work_are_kept_and_written_by_one_insert_before_its_commit(ctx: Flask) -> None:
    """The outbox's rows are kept by the unit of work (UnitOfWork.keep) and written just before its
    commit, the transaction's mails as one INSERT of many VALUES; a rollback, or a new transaction begun
    instead of the commit, writes none of them."""
    sent: list[tuple[str, bool]] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        sent.append((statement, executemany))

    addresses = ("kept1@example.org", "kept2@example.org", "kept3@example.org")
    event.listen(db.engine, "before_cursor_execute", record)
    try:
        with unit_of_work() as uow:
            for to in addresses:
                _mail(to)
            assert not any(statement.startswith("INSERT INTO outbox_mail") for statement, _ in sent)
            assert _outbox_rows(addresses) == []
            uow.commit()
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    [(insert, many)] = [(statement, many) for statement, many in sent
                        if statement.startswith("INSERT INTO outbox_mail")]
    assert insert.count("VALUES") == 1 and not many
    assert _outbox_rows(addresses) == list(addresses)  # In the order they were written.

    others = ("dropped1@example.org", "dropped2@example.org")
    with unit_of_work() as uow:
        _mail(others[0])
        uow.rollback()
        uow.begin()
        _mail(others[1])
        uow.begin()  # The transaction that kept it ends without its commit.
        uow.commit()
    with unit_of_work():
        _mail(others[0])  # Left without a commit.
    with pytest.raises(RuntimeError), unit_of_work() as uow:
        _mail(others[1])
        raise RuntimeError("a fault before the commit")
    assert _outbox_rows(others) == []


def test_a_read_through_the_session_sees_the_mails_kept_before_it(ctx: Flask) -> None:
    """A read through the session in the transaction (the mail processor's count of its refusals lately)
    sends the rows kept first, so it sees them; they are written once, and go if the transaction is rolled
    back."""
    to = "seen@example.org"
    counted = select(func.count(OutboxMail.id)).where(OutboxMail.to_addr == to)
    with unit_of_work() as uow:
        _mail(to)
        _mail(to)
        assert db.session.scalar(counted) == 2
        _mail(to)
        assert db.session.scalar(counted) == 3
        uow.rollback()
        assert db.session.scalar(counted) == 0
        uow.begin()
        _mail(to)
        assert db.session.scalar(counted) == 1
        uow.commit()
    assert _outbox_rows((to,)) == [to]


def test_a_mail_is_written_at_once_outside_a_unit_of_work_or_when_its_id_is_asked(ctx: Flask) -> None:
    """Outside a unit of work (and with ``at_once``, for a caller that needs the row) enqueue writes the
    row at once and gives its id."""
    row_id = outbox.enqueue("now@example.org", "[pbem] Test: now", "now\n", kind="test")
    assert row_id is not None and db.session.get(OutboxMail, row_id).to_addr == "now@example.org"
    db.session.rollback()
    with unit_of_work() as uow:
        row_id = outbox.enqueue("asked@example.org", "[pbem] Test: now", "now\n", kind="test", at_once=True)
        assert row_id is not None
        assert db.session.connection().scalar(select(OutboxMail.to_addr).where(OutboxMail.id == row_id)) \
            == "asked@example.org"
        uow.commit()
    assert _outbox_rows(("asked@example.org",)) == ["asked@example.org"]


def test_the_direct_statements_pass_the_listeners_of_the_engine_and_of_the_connection(
        ctx: Flask, players) -> None:
    """The move path's statements, sent on the driver's cursor, pass the cursor events of the engine and
    those of the transaction's own connection alike (a statement log set on either, the benchmarks')."""
    alice, _, _ = players
    game_id = _cambio(players)
    on_engine: list[str] = []
    on_connection: list[str] = []

    def engine_heard(_conn, _cursor, statement, *_rest) -> None:
        on_engine.append(statement.split()[0])

    def connection_heard(_conn, _cursor, statement, *_rest) -> None:
        on_connection.append(statement.split()[0])

    event.listen(db.engine, "after_cursor_execute", engine_heard)
    try:
        with unit_of_work() as uow:
            event.listen(uow.connection(), "after_cursor_execute", connection_heard)
            play.submit(game_id, alice, "b3", "web")
            uow.commit()
    finally:
        event.remove(db.engine, "after_cursor_execute", engine_heard)
    # (On PostgreSQL the entry, the game and its seats are one WITH; the mails an INSERT on both.)
    assert ("WITH" if is_postgresql() else "UPDATE") in on_connection and "INSERT" in on_connection
    assert on_engine[-len(on_connection):] == on_connection
    assert _record(game_id) == ["b3"]
