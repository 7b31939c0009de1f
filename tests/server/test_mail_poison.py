"""Poison mail: a message carrying what no stored text may (a NUL, in a subject, a Message-ID, a reply),
or one whose handling fails whatever is done, is answered once or kept "failed" with its reason, and the
queue moves past it: under the listener and under `pbem ingest`, on SQLite and PostgreSQL (which refuses
a NUL in text, so a NUL that reached the database once looped a message forever)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, OutboxMail
from pbem.game import play
from pbem.mailin import process, receive
from pbem.mailout import outbox, tokens
from tests.server.test_inbound import run_ingest
from tests.server.test_mail_play import COMMANDS, Postman, moves_of, start_postman, text_of


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _raw(sender: str, to: str, subject: bytes, body: bytes = b"\r\n", message_id: bytes = b"") -> bytes:
    """A message written byte for byte, as a hostile sender would."""
    message_id = message_id or b"<%s@example.org>" % uuid.uuid4().hex.encode()
    return (b"From: %s\r\nTo: %s\r\nSubject: %s\r\nMessage-ID: %s\r\n\r\n%s"
            % (sender.encode(), to.encode(), subject, message_id, body))


def _poison(reply_to: str) -> dict[str, bytes]:
    """The poison mails, each from a sender of its own (named by the key), the last one a reply."""
    return {
        "quoted": _raw("quoted@example.org", COMMANDS, b"=?utf-8?q?help=00?="),
        "base64": _raw("base64@example.org", COMMANDS, b"=?utf-8?b?aGVscAA=?="),
        "raw": _raw("raw@example.org", COMMANDS, b"help\x00\x07"),
        "idnul": _raw("idnul@example.org", COMMANDS, b"help", message_id=b"<a\x00b@example.org>"),
        "idword": _raw("idword@example.org", COMMANDS, b"help", message_id=b"=?utf-8?q?=00?="),
        "body": _raw("body@example.org", COMMANDS, b"help", b"help\x00\x1b[31m\r\n"),
        "alice": _raw("alice@example.org", reply_to, b"=?utf-8?q?Re:_move=00?=", b"zz9 \x00 #1\r\n"),
    }


def _settled_statuses() -> list[str]:
    db.session.rollback()
    return [r.status for r in db.session.scalars(select(InboundMail).order_by(InboundMail.id))]


def _answers(to: str) -> list[OutboxMail]:
    db.session.rollback()
    return list(db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == to,
                                                            OutboxMail.kind.like("answer%"))))


def _game(players) -> tuple[Game, str]:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    return game, tokens.reply_address(game.id, 0, alice)


def _move(reply_to: str) -> bytes:
    return _raw("alice@example.org", reply_to, b"Re: your move", b"b3 #1\r\n",
                message_id=b"<the.move@example.org>")


def _check_each_answered_once(poison: dict[str, bytes], game: Game) -> None:
    assert moves_of(game.id) == ["b3"]
    assert "received" not in _settled_statuses() and "processing" not in _settled_statuses()
    for sender in poison:
        answers = _answers(f"{sender}@example.org")
        texts = " ".join(a.subject + a.body_text for a in answers)
        assert "\x00" not in texts
        if sender == "alice":
            assert len(answers) == 2, [a.subject for a in answers]  # The refused zz9, and b3 played.
        else:
            assert len(answers) == 1 and "mail commands of pbem" in answers[0].body_text, sender


def test_poison_mail_is_answered_once_and_the_queue_moves_on_under_the_listener(
        postman: Postman, players) -> None:
    game, reply_to = _game(players)
    poison = _poison(reply_to)
    for sender, raw in poison.items():
        to = reply_to if sender == "alice" else COMMANDS
        postman.send_raw(raw, f"{sender}@example.org", to)
    postman.send_raw(_move(reply_to), "alice@example.org", reply_to)
    postman.settle()
    _check_each_answered_once(poison, game)
    # Delivered: (on PostgreSQL the listener's workers answer alice's two mails in either order).
    answered = [text_of(m) for m in postman.mails("alice@example.org") if str(m["Subject"]).startswith("Re:")]
    assert len(answered) == 2 and any("Your move b3" in t for t in answered), answered


def test_poison_mail_is_answered_once_and_the_queue_moves_on_under_ingest(ctx: Flask, players) -> None:
    """The poison waits in the queue (stored as the listener or an earlier pipe stored it); one run of
    `pbem ingest` (a real process) for the next mail answers every message, the move included."""
    game, reply_to = _game(players)
    poison = _poison(reply_to)
    for sender, raw in poison.items():
        receive.store(raw, f"{sender}@example.org", [reply_to if sender == "alice" else COMMANDS])
    assert run_ingest(ctx, b"Delivered-To: %s\r\n" % reply_to.encode() + _move(reply_to)).returncode == 0
    _check_each_answered_once(poison, game)


def test_a_message_whose_answer_cannot_be_written_is_failed_once(
        postman: Postman, players, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: whatever breaks a message's handling may break its answer too.  The message is
    kept "failed" with the reason, once, and the next one is answered."""
    game, reply_to = _game(players)
    answer = process._answer

    def breaking(mail, outcome):
        if mail.from_addr == "mallory@example.org":
            raise ValueError("this answer cannot be written")
        return answer(mail, outcome)

    monkeypatch.setattr(process, "_answer", breaking)
    postman.send_raw(_raw("mallory@example.org", COMMANDS, b"help"), "mallory@example.org", COMMANDS)
    postman.send_raw(_move(reply_to), "alice@example.org", reply_to)
    postman.settle()
    db.session.rollback()
    rows = db.session.scalars(select(InboundMail).order_by(InboundMail.id)).all()
    assert [r.status for r in rows] == ["failed", "processed"]
    assert "this answer cannot be written" in rows[0].note and "not answered" in rows[0].note
    assert moves_of(game.id) == ["b3"] and _answers("mallory@example.org") == []
    outbox.deliver_due()
