"""Inbound mail as a queue: a message stored before a crash is processed once on restart, never twice,
and a message piped in by `pbem ingest` is processed and answered too."""

from __future__ import annotations

import smtplib
import socket
import threading
import time

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session

from pbem.cli import main
from pbem.core import unit_of_work
from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, OutboxMail, User
from pbem.game import play
from pbem.mailin import process, receive, smtpd
from pbem.mailout import outbox, tokens
from tests.conftest import free_port
from tests.server.test_inbound import run_ingest
from tests.server.test_mail_play import Postman, moves_of, start_postman, text_of
from tests.server.test_mail_security import reply_mail, statuses


def test_a_message_stored_before_a_crash_is_processed_once_on_restart(app: Flask, ctx: Flask, sink,
                                                                       players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    # The listener stored the reply and died before processing it.
    row, _ = receive.store(reply_mail(alice.email, tokens.reply_address(game.id, 0, alice), "b3").as_bytes(),
                           alice.email, [tokens.reply_address(game.id, 0, alice)])
    db.session.commit()
    assert row.status == "received" and moves_of(game.id) == []

    # On restart the listener's processor takes it up, once; a second processor finds nothing to do.
    for postman in start_postman(app, sink):
        postman.settle()
        assert process.process_pending() == 0
        assert process.process_one(row.id) is False
        assert moves_of(game.id) == ["b3"]
        answers = [m for m in postman.mails(alice.email) if str(m["Subject"]).startswith("Re:")]
        assert len(answers) == 1 and "Your move b3" in text_of(answers[0])


def test_ingest_processes_and_answers(ctx: Flask, sink, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    msg = reply_mail(alice.email, tokens.reply_address(game.id, 0, alice), "b3 #1",
                     Delivered_To=tokens.reply_address(game.id, 0, alice))
    assert run_ingest(ctx, msg.as_bytes()).returncode == 0
    assert moves_of(game.id) == ["b3"]
    db.session.rollback()
    assert [r.status for r in db.session.scalars(select(InboundMail))] == ["processed"]
    outbox.deliver_due()
    assert "Your move b3" in text_of(Postman(sink, 0).last(alice.email, "Re: "))


def test_pbem_mail_process_takes_up_what_waits(ctx: Flask, runner: FlaskCliRunner, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    to = tokens.reply_address(game.id, 0, alice)
    receive.store(reply_mail(alice.email, to, "b3").as_bytes(), alice.email, [to])
    result = runner.invoke(main, ["mail", "process"])
    assert result.exit_code == 0 and "1 message(s) processed" in result.stdout
    assert moves_of(game.id) == ["b3"]


def test_lmtp_delivery_from_an_mta_is_processed(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    to = tokens.reply_address(game.id, 0, alice)
    port = free_port()
    listener = smtpd.controller(app, "127.0.0.1", port, lmtp=True)
    listener.start()
    try:
        with smtplib.LMTP("127.0.0.1", port, timeout=10) as client:
            client.send_message(reply_mail(alice.email, to, "b3 #1"), to_addrs=[to])
        Postman(None, port).settle()
    finally:
        listener.stop()
    assert moves_of(game.id) == ["b3"]


def test_processors_side_by_side_take_each_message_once(app: Flask, ctx: Flask, players) -> None:
    """The listener's worker threads (``[smtpd] workers``) each take the next message no other holds:
    every message is handled and answered exactly once, however the threads interleave."""
    alice, bob, _ = players
    played = [play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}) for _ in range(12)]
    db.session.commit()
    for game in played:
        to = tokens.reply_address(game.id, 0, alice)
        receive.store(reply_mail(alice.email, to, "b3").as_bytes(), alice.email, [to])
    handled: list[int] = []

    def processor() -> None:
        with app.app_context():
            handled.append(process.process_pending())
            db.session.remove()

    threads = [threading.Thread(target=processor) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sum(handled) == 12
    db.session.rollback()
    assert all(moves_of(game.id) == ["b3"] for game in played)
    assert [r.status for r in db.session.scalars(select(InboundMail))] == ["processed"] * 12
    answers = db.session.scalars(select(OutboxMail).where(OutboxMail.kind == "answer")).all()
    assert sorted(a.game_id for a in answers) == sorted(game.id for game in played)


def test_lmtp_answers_each_recipient_of_one_message(app: Flask, ctx: Flask, players) -> None:
    """An MTA hands one message to two of our addresses in one LMTP transaction and waits for two answers
    after the data (RFC 2033); the message is stored, and acted on, once."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    to = tokens.reply_address(game.id, 0, alice)
    port = free_port()
    listener = smtpd.controller(app, "127.0.0.1", port, lmtp=True)
    listener.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            replies = conn.makefile("rb")

            def say(line: bytes) -> bytes:
                conn.sendall(line + b"\r\n")
                answer = replies.readline()
                while answer[3:4] == b"-":  # The lines of a multi-line answer.
                    answer = replies.readline()
                return answer

            assert replies.readline().startswith(b"220")
            assert say(b"LHLO mta.example.org").startswith(b"250")
            assert say(f"MAIL FROM:<{alice.email}>".encode()).startswith(b"250")
            assert say(f"RCPT TO:<{to}>".encode()).startswith(b"250")
            assert say(b"RCPT TO:<pbem@pbem.localhost>").startswith(b"250")
            assert say(b"DATA").startswith(b"354")
            body = reply_mail(alice.email, to, "b3 #1").as_bytes().replace(b"\n", b"\r\n")
            first = say(body + b".")
            second = replies.readline()
            assert first.startswith(b"250") and second.startswith(b"250"), (first, second)
            assert say(b"QUIT").startswith(b"221")
        Postman(None, port).settle()
    finally:
        listener.stop()
    assert moves_of(game.id) == ["b3"]
    assert len(db.session.scalars(select(InboundMail)).all()) == 1


def _stored_reply(game_id: int, player: User, move: str) -> int:
    to = tokens.reply_address(game_id, 0, player)
    row, _ = receive.store(reply_mail(player.email, to, move).as_bytes(), player.email, [to])
    db.session.commit()
    return row.id


def _mails_since(outbox_id: int) -> list[OutboxMail]:
    query = select(OutboxMail).where(OutboxMail.id > outbox_id).order_by(OutboxMail.id)
    return list(db.session.scalars(query))


def test_a_mailed_move_commits_with_its_outcome_and_its_answer(ctx: Flask, players) -> None:
    """The move, the message marked processed (and acted on) and the answer to its sender are one
    transaction: a crash can find the move applied only with its message answered."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    row_id = _stored_reply(game.id, alice, "b3")
    started = db.session.scalar(select(func.max(OutboxMail.id)))  # The mails that started the game.
    assert process.process_one(row_id)
    db.session.rollback()
    message = db.session.get(InboundMail, row_id)
    assert (message.status, message.game_id, message.user_id) == ("processed", game.id, alice.id)
    assert message.acted_at is not None
    assert moves_of(game.id) == ["b3"]
    request, answer = _mails_since(started)
    assert (request.to_addr, request.kind) == (bob.email, "your-move")
    assert (answer.to_addr, answer.kind) == (alice.email, "answer") and "Your move b3" in answer.body_text
    if is_postgresql():
        # The transaction that wrote each row, as PostgreSQL recorded it.
        writers = {db.session.scalar(text(f"SELECT xmin::text FROM {table} WHERE {where}"))
                   for table, where in (("move", f"game_id = {game.id}"), ("inbound_mail", f"id = {row_id}"),
                                        ("outbox_mail", f"id = {answer.id}"), ("game", f"id = {game.id}"))}
        assert len(writers) == 1


def test_a_fault_between_a_move_and_its_answer_leaves_nothing_half_done(ctx: Flask, players) -> None:
    """When the answer to a mailed move cannot be written (here the database refuses it, as a full disk
    would), the move is not applied either: the message is kept as failed, not marked acted on, and its
    sender is told of the fault."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    row_id = _stored_reply(game.id, alice, "b3")
    started = db.session.scalar(select(func.max(OutboxMail.id)))
    if is_postgresql():
        statements = [
            "CREATE FUNCTION refuse_answers() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'no space left on device'; END $$",
            "CREATE TRIGGER refuse_answers BEFORE INSERT ON outbox_mail FOR EACH ROW "
            "WHEN (NEW.kind = 'answer') EXECUTE FUNCTION refuse_answers()",
        ]
        undo = ["DROP TRIGGER refuse_answers ON outbox_mail", "DROP FUNCTION refuse_answers()"]
    else:
        statements = ["CREATE TRIGGER refuse_answers BEFORE INSERT ON outbox_mail WHEN NEW.kind = 'answer' "
                      "BEGIN SELECT RAISE(ABORT, 'no space left on device'); END"]
        undo = ["DROP TRIGGER refuse_answers"]
    for statement in statements:
        db.session.execute(text(statement))
    db.session.commit()
    try:
        assert process.process_one(row_id)
    finally:
        db.session.rollback()
        for statement in undo:
            db.session.execute(text(statement))
        db.session.commit()
    message = db.session.get(InboundMail, row_id)
    assert message.status == "failed" and "no space left on device" in message.note
    assert message.acted_at is None
    assert moves_of(game.id) == []
    assert db.session.get(Game, game.id).ply == 0
    mails = _mails_since(started)
    assert [(m.to_addr, m.kind) for m in mails] == [(alice.email, "answer-error")]
    assert "fault on the server" in mails[0].body_text


def test_the_move_path_leaves_the_commit_to_the_unit_of_work_it_runs_in(ctx: Flask, players) -> None:
    """Inside a unit of work the move path never commits: a second move there joins the same transaction,
    only the owner's commit keeps them, and a unit of work left without one keeps nothing."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    with unit_of_work.unit_of_work():
        play.submit(game.id, alice, "b3", "mail")
        play.submit(game.id, bob, "a2", "mail")
    assert moves_of(game.id) == []
    with unit_of_work.unit_of_work() as uow:
        play.submit(game.id, alice, "b3", "mail")
        play.submit(game.id, bob, "a2", "mail")
        uow.commit()
    assert moves_of(game.id) == ["b3", "a2"]


def test_a_mailed_move_writes_its_two_mails_and_two_seats_by_one_statement_each(ctx: Flask, players) -> None:
    """The processing transaction of a mailed move: the claim, the game locked and read, the record entry
    with the game's and both seats' UPDATEs (one statement on PostgreSQL; on SQLite three, the seats'
    one), the message's outcome, and the two mails (the opponent's move request and the mover's answer)
    as one INSERT of two rows, just before the commit."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    row_id = _stored_reply(game.id, alice, "b3")
    started = db.session.scalar(select(func.max(OutboxMail.id)))
    sent: list[tuple[str, bool]] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        sent.append((" ".join(statement.split()[:3]), executemany))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        assert process.process_one(row_id)
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    db.session.rollback()
    assert moves_of(game.id) == ["b3"]
    assert sorted((m.to_addr, m.kind) for m in _mails_since(started)) == [
        (alice.email, "answer"), (bob.email, "your-move")]
    writes = [statement for statement, _ in sent if not statement.startswith(("SELECT", "BEGIN"))]
    # On PostgreSQL the record entry's INSERT and the seats' UPDATE are parts of the game's UPDATE
    # (WITH entry AS (INSERT INTO move …), seats AS (UPDATE seat …) UPDATE game …).
    move = ["WITH entry AS"] if is_postgresql() else [
        "INSERT INTO move", "UPDATE game SET", "UPDATE seat SET"]
    assert writes == ["UPDATE inbound_mail SET", *move,
                      "UPDATE inbound_mail SET", "INSERT INTO outbox_mail"]
    assert not any(executemany for _, executemany in sent)
    if is_postgresql():  # The lock, then the read of the game, its seats and players (see play._read_locked).
        assert len(sent) == 6


def test_a_crash_before_a_mailed_move_commits_leaves_the_message_to_be_processed_again(
        ctx: Flask, players) -> None:
    """The claim commits with the move: a processor that dies in the middle of a message (here while the
    answer is written) leaves it waiting, not "processing", so any processor takes it up at once, without
    a restart, and the move is applied and answered once."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    game_id, alice_email, bob_email = game.id, alice.email, bob.email
    row_id = _stored_reply(game_id, alice, "b3")
    started = db.session.scalar(select(func.max(OutboxMail.id)))
    seen: list[str] = []
    other = sa.create_engine(ctx.config["SQLALCHEMY_DATABASE_URI"])

    def die_at_the_answer(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.startswith("INSERT INTO outbox_mail") and not seen:
            # What everybody else sees of the message at this point, a moment before the "crash".
            with other.connect() as look:
                seen.append(look.execute(select(InboundMail.status).where(InboundMail.id == row_id)).scalar())
            raise SystemExit("the processor died")

    event.listen(db.engine, "before_cursor_execute", die_at_the_answer)
    try:
        with pytest.raises(SystemExit):
            process.process_one(row_id)
    finally:
        event.remove(db.engine, "before_cursor_execute", die_at_the_answer)
        other.dispose()
    db.session.remove()  # Its connection goes, and the transaction with it, as when a process dies.
    assert seen == ["received"]
    message = db.session.get(InboundMail, row_id)
    assert (message.status, message.acted_at) == ("received", None)
    assert moves_of(game_id) == [] and _mails_since(started) == []
    db.session.rollback()

    assert process.process_pending() == 1
    db.session.rollback()
    assert db.session.get(InboundMail, row_id).status == "processed"
    assert moves_of(game_id) == ["b3"]
    assert sorted((m.to_addr, m.kind) for m in _mails_since(started)) == [
        (alice_email, "answer"), (bob_email, "your-move")]


def test_a_refused_move_taken_by_another_processor_meanwhile_is_answered_once(
        app: Flask, ctx: Flask, players) -> None:
    """A refused move rolls its claim back with it; if another processor takes the message before the
    refusal is recorded, the refusal is left to that one: one outcome, one answer."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    row_id = _stored_reply(game.id, alice, "z9")  # Not a square of the board: refused.
    started = db.session.scalar(select(func.max(OutboxMail.id)))
    others: list[bool] = []
    me = threading.current_thread()

    def other_processor() -> None:
        with app.app_context():
            others.append(process.process_one(row_id))
            db.session.remove()

    def after_the_refusal(session: Session) -> None:
        # The first rollback while this thread handles the message (in its unit of work) is the refused
        # move's: the session has no transaction to roll back when the message's unit of work begins.
        if threading.current_thread() is me and unit_of_work.current() is not None and not others:
            thread = threading.Thread(target=other_processor)
            thread.start()
            thread.join(60)

    db.session.rollback()
    event.listen(Session, "after_rollback", after_the_refusal)
    try:
        assert process.process_one(row_id)
    finally:
        event.remove(Session, "after_rollback", after_the_refusal)
    assert others == [True]
    db.session.rollback()
    message = db.session.get(InboundMail, row_id)
    assert message.status == "rejected" and "z9" in message.note
    assert moves_of(game.id) == []
    assert [(m.to_addr, m.kind) for m in _mails_since(started)] == [(alice.email, "answer-error")]


def test_a_refused_move_is_recorded_and_answered_once(ctx: Flask, players) -> None:
    """A refused move rolls back its claim with it; the refusal takes the message again, records it and
    answers it, once."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    row_id = _stored_reply(game.id, alice, "z9")
    started = db.session.scalar(select(func.max(OutboxMail.id)))
    assert process.process_one(row_id)
    assert process.process_one(row_id) is False and process.process_pending() == 0
    db.session.rollback()
    message = db.session.get(InboundMail, row_id)
    assert (message.status, message.acted_at) == ("rejected", None)
    assert moves_of(game.id) == []
    (answer,) = _mails_since(started)
    assert (answer.to_addr, answer.kind) == (alice.email, "answer-error") and "z9" in answer.body_text


def test_a_message_the_listener_could_not_claim_is_taken_up_with_the_next_one(app: Flask, ctx: Flask, sink,
                                                                             players) -> None:
    """The listener's processor takes each stored message by its id; one it could not claim (here the
    database refuses, as when it is away) is taken up when the next message comes, not half a minute
    later."""
    alice, bob, _ = players
    first, second = (play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}) for _ in range(2))
    db.session.commit()
    if is_postgresql():
        refuse = [
            "CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'the database is away'; END $$",
            "CREATE TRIGGER refuse_claims BEFORE UPDATE ON inbound_mail FOR EACH ROW "
            "WHEN (NEW.status = 'processing') EXECUTE FUNCTION refuse_claims()",
        ]
        allow = ["DROP TRIGGER refuse_claims ON inbound_mail", "DROP FUNCTION refuse_claims()"]
    else:
        refuse = ["CREATE TRIGGER refuse_claims BEFORE UPDATE ON inbound_mail WHEN NEW.status = 'processing' "
                  "BEGIN SELECT RAISE(ABORT, 'the database is away'); END"]
        allow = ["DROP TRIGGER refuse_claims"]
    for postman in start_postman(app, sink):
        postman.settle()  # What the start looked for: nothing.
        for statement in refuse:
            db.session.execute(text(statement))
        db.session.commit()
        postman.send(reply_mail(alice.email, tokens.reply_address(first.id, 0, alice), "b3"))
        deadline = time.monotonic() + 10
        while db.session.scalar(select(func.count(InboundMail.id))) == 0:  # Stored, not claimed.
            assert time.monotonic() < deadline
            db.session.rollback()
            time.sleep(0.02)
        time.sleep(0.3)  # The processor tried it and failed.
        db.session.rollback()
        for statement in allow:
            db.session.execute(text(statement))
        db.session.commit()
        assert statuses() == ["received"]
        postman.send(reply_mail(alice.email, tokens.reply_address(second.id, 0, alice), "a2"))
        postman.settle()
        assert statuses() == ["processed", "processed"]
        assert moves_of(first.id) == ["b3"] and moves_of(second.id) == ["a2"]
