"""A player's mails are acted on in the order they came, however many processors take mail at once.

On PostgreSQL the listener's processors (``[smtpd] workers``) take stored messages side by side.  A
player who mails several moves in a row without waiting for the answers (an Easy Slider player sliding
through a solution, each slide numbered) must see each played in turn, not one refused as "not yet your
move 3" because a processor took it before the one before it.  Each mail goes over SMTP to the real
listener; the answers come through the real SMTP sink.
"""

from __future__ import annotations

import smtplib
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from email.message import EmailMessage
from email.utils import make_msgid
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, select

from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, Move
from pbem.game import play, queries
from pbem.mailin import process, receive
from tests.server.conftest import give_mail_key
from tests.server.test_mail_play import COMMANDS, Postman, start_postman, text_of

SLIDES = 12
DISCLAIMER = ("This message and any attachments are confidential and intended solely for the addressee. "
              "If you have received it in error, please notify the sender and delete it. ")
LONG_TEXT = "Sliding on.\n\n-- \nAlice\n" + DISCLAIMER * 400
LONG_HTML = ("<html><body><p>Sliding on.</p>" + f"<p style='color:#888'>{DISCLAIMER}</p>" * 400
             + "</body></html>")


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _slides(game_id: int, seat: int, count: int) -> list[str]:
    """``count`` legal slides in a row for ``seat``, each from the position the one before leaves."""
    game = db.session.get(Game, game_id)
    engine, state = queries.engine_of(game), queries.state_of(game)
    slides: list[str] = []
    for _ in range(count):
        # Not the slide that undoes the one before: a player working towards a solution.
        slide = next(m for m in engine.moves(state, seat) if m != "done" and (not slides or m != slides[-1]))
        slides.append(slide)
        state = engine.play(state, seat, slide)
    return slides


def test_a_players_mails_sent_at_once_are_played_in_the_order_they_came(
    app: Flask, postman: Postman, players
) -> None:
    alice, bob, _ = players
    game = play.create_game("easyslider", [alice, bob], {})
    db.session.commit()
    key = give_mail_key(alice)
    slides = _slides(game.id, 0, SLIDES)
    db.session.rollback()

    # One SMTP session, one mail after the other, without waiting for any answer: the listener stores
    # each as it comes and hands it to its processors at once.  Meanwhile the game is busy (bob's move
    # being written holds its row), so that on PostgreSQL every processor has a message in hand when it
    # is free again.
    sent = []
    with ExitStack() as busy:
        if is_postgresql():
            writing = busy.enter_context(db.engine.begin())
            writing.execute(select(Game.id).where(Game.id == game.id).with_for_update())
        with smtplib.SMTP("127.0.0.1", postman.port, timeout=10) as client:
            for number, slide in enumerate(slides, start=1):
                msg = EmailMessage()
                msg["From"], msg["To"] = alice.email, COMMANDS
                msg["Subject"] = f"easyslider move {game.id} alice {key} {slide}#{number}"
                msg["Message-ID"] = make_msgid(domain="example.org")
                # Every other mail as a chatty client writes it, long (an HTML part, a signature with a
                # disclaimer): the longer mails take the longer to read.
                msg.set_content("\n" if number % 2 == 0 else LONG_TEXT)
                if number % 2:
                    msg.add_alternative(LONG_HTML, subtype="html")
                client.send_message(msg)
                sent.append(str(msg["Message-ID"]))
        time.sleep(0.3)  # The processors take what was stored.
    postman.settle()

    db.session.rollback()
    played = db.session.scalars(
        select(Move.text).where(Move.game_id == game.id, Move.seat == 0).order_by(Move.id)
    ).all()
    assert played == slides
    statuses = db.session.scalars(
        select(InboundMail.status).where(InboundMail.mail_from == alice.email).order_by(InboundMail.id)
    ).all()
    assert statuses == ["processed"] * SLIDES, statuses
    answers = {str(m["In-Reply-To"]): text_of(m) for m in postman.mails(alice.email)
               if str(m["Subject"]).startswith("Re:")}
    for number, (message_id, slide) in enumerate(zip(sent, slides, strict=True), start=1):
        assert f"Your move {slide}" in answers[message_id], (number, answers[message_id])


def _command_mail(sender: str, subject: str) -> bytes:
    """A command mail's bytes as a mail client sends them."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, COMMANDS, subject
    msg["Message-ID"] = make_msgid(domain="example.org")
    msg.set_content("\n")
    return msg.as_bytes()


def _alices_two_slides(players: Any) -> tuple[Any, Any, str, str, str]:
    """On PostgreSQL (skipped on SQLite, where one processor takes the mail in the order it came): a game
    of Easy Slider between alice and bob, alice's mail key, and two slides of hers in a row."""
    if not is_postgresql():
        pytest.skip("on SQLite one processor takes the mail, in the order it came")
    alice, bob, _ = players
    game = play.create_game("easyslider", [alice, bob], {})
    db.session.commit()
    key = give_mail_key(alice)
    first, second = _slides(game.id, 0, 2)
    db.session.rollback()
    return alice, game, key, first, second


def test_a_processor_that_comes_to_a_later_mail_first_leaves_it_for_after_the_earlier(
    app: Flask, ctx: Flask, sink, players
) -> None:
    alice, game, key, first, second = _alices_two_slides(players)
    earlier, later = (
        receive.store_message(_command_mail(alice.email, f"easyslider move {game.id} alice {key} {slide}"),
                              alice.email, [COMMANDS])[0]
        for slide in (f"{first}#1", f"{second}#2")
    )
    db.session.commit()

    # Two processors, the one given the later mail first, while the game is busy (bob's move being
    # written): the later mail must not be played, nor refused, before the earlier.
    took: dict[str, object] = {}

    def processor(name: str, row_id: int) -> None:
        with app.app_context():
            try:
                took[name] = process.process_one(row_id)
            finally:
                db.session.remove()

    with db.engine.begin() as busy:
        busy.execute(select(Game.id).where(Game.id == game.id).with_for_update())
        for name, row_id in (("later", later), ("earlier", earlier)):
            threading.Thread(target=processor, args=(name, row_id), daemon=True).start()
            time.sleep(0.3)
    deadline = time.monotonic() + 10
    while len(took) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    # The later mail's processor left it (an earlier one of its sender's waited); the earlier's took both.
    assert took == {"later": False, "earlier": True}
    db.session.rollback()
    assert db.session.scalars(
        select(Move.text).where(Move.game_id == game.id, Move.seat == 0).order_by(Move.id)
    ).all() == [first, second]
    assert [db.session.get(InboundMail, row_id).status for row_id in (earlier, later)] == ["processed"] * 2


def test_delivery_reports_are_not_held_up_behind_one_another(app: Flask, ctx: Flask, sink) -> None:
    if not is_postgresql():
        pytest.skip("on SQLite one processor takes the mail, in the order it came")
    # Two reports from the null sender, as MTAs send them: their order is nobody's, so a processor that
    # comes to the later one first takes it at once.
    rows = []
    for n in (1, 2):
        report = EmailMessage()
        report["From"], report["To"] = "MAILER-DAEMON@mx.example.net", "bounces+unknown@pbem.localhost"
        report["Subject"], report["Message-ID"] = "Undelivered Mail Returned to Sender", make_msgid()
        report.set_content(f"This is report {n}: the mail could not be delivered.\n")
        rows.append(receive.store_message(report.as_bytes(), "", ["bounces+unknown@pbem.localhost"])[0])
    db.session.commit()
    assert process.process_one(rows[1]) is True
    assert process.process_one(rows[0]) is True


def test_a_mail_stored_as_the_one_before_it_commits_is_not_left_waiting(
    app: Flask, ctx: Flask, sink, players
) -> None:
    alice, game, key, first, second = _alices_two_slides(players)
    subject = f"easyslider move {game.id} alice {key} {first}#1"
    earlier = receive.store_message(_command_mail(alice.email, subject), alice.email, [COMMANDS])[0]
    db.session.commit()

    # The second mail comes after the first's outcome is written and before that commits: the statement
    # that wrote it could not see the second, and the second's processor finds the first still in hand.
    took: dict[str, object] = {}

    def second_arrives() -> None:
        with app.app_context():
            try:
                row_id = receive.store_message(
                    _command_mail(alice.email, f"easyslider move {game.id} alice {key} {second}#2"),
                    alice.email, [COMMANDS])[0]
                took["later"] = row_id
                took["later taken by its own processor"] = process.process_one(row_id)
            finally:
                db.session.remove()

    def before_commit(_session: object) -> None:
        if "later" not in took:
            arriving = threading.Thread(target=second_arrives)
            arriving.start()
            arriving.join(10)

    session = db.session()
    event.listen(session, "before_commit", before_commit)
    try:
        took["earlier"] = process.process_one(earlier)
    finally:
        event.remove(session, "before_commit", before_commit)
    assert took["earlier"] is True and took["later taken by its own processor"] is False
    # The first's processor went on to the second as soon as the first was done.
    db.session.rollback()
    assert db.session.scalars(
        select(Move.text).where(Move.game_id == game.id, Move.seat == 0).order_by(Move.id)
    ).all() == [first, second]
    statuses = [db.session.get(InboundMail, row_id).status for row_id in (earlier, took["later"])]
    assert statuses == ["processed"] * 2
