"""Out-of-office replies known only by their subject are never answered, nor counted as bounces (issue #34,
item 5), and a command behind a reply prefix of another language is read (``Odp: help``)."""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import InboundMail, OutboxMail, User
from pbem.game import play
from pbem.mailout import tokens
from tests.server.test_mail_play import COMMANDS, Postman, moves_of, start_postman, text_of

# Subjects of automatic replies, without any header that says so, as the mail systems of those languages
# write them; each is sent to the server's address, to a game's reply address and to a bounce address.
OUT_OF_OFFICE = [
    "Odpowiedź automatyczna: [pbem] Cambio #1: your move",
    "Nieobecność w biurze",
    "Alice Smith is out of the office.",
    "Re: [pbem] Cambio #1: your move [Out of office]",
    "Abwesend: [pbem] Cambio #1: your move",
    "Urlaub bis 12. August",
    "Je suis absent du bureau",
    "Ausente: [pbem] Cambio #1: your move",
    "Ausente do escritório",
    "Assente dall'ufficio",
    "Вне офиса: [pbem] Cambio #1: your move",
    "Odp: Automatyczna odpowiedź: help",
    "Res: Resposta automática: help",
    "Rif: Risposta automatica: help",
    "Ответ: Автоответ: help",
]
# A person's command behind a reply prefix of these languages.
PREFIXED = ["Odp: help", "Res: help", "Rif: help", "Ответ: help", "RE: Odp: Re[2]: help"]


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _away(sender: str, to: str, subject: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, subject
    msg.set_content("I am away until Monday and will read your mail then.\n")
    return msg


def test_out_of_office_subjects_are_never_answered_nor_counted_as_bounces(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    sent = len(postman.sink.messages())
    reply_address = tokens.reply_address(game.id, 0, alice)
    request = db.session.scalars(select(OutboxMail.id).where(OutboxMail.to_addr == alice.email)).first()
    bounce_address = tokens.bounce_address(request)
    for subject in OUT_OF_OFFICE:
        postman.send(_away(bob.email, COMMANDS, subject))
        postman.send(_away(alice.email, reply_address, subject), to=[reply_address])
        postman.send(_away(alice.email, bounce_address, subject), mail_from=alice.email, to=[bounce_address])
    postman.settle()
    db.session.rollback()
    rows = db.session.scalars(select(InboundMail).order_by(InboundMail.id)).all()
    assert [r.status for r in rows] == ["ignored"] * 3 * len(OUT_OF_OFFICE), [r.note for r in rows]
    assert len(postman.sink.messages()) == sent  # Not one answer.
    assert all(db.session.get(User, u.id).mail_bouncing_since is None for u in (alice, bob))
    assert moves_of(game.id) == []


def test_a_command_behind_a_reply_prefix_of_another_language_is_read(postman: Postman) -> None:
    for subject in PREFIXED:
        postman.command("reader@example.org", subject)
    postman.settle()
    answers = postman.mails("reader@example.org")
    assert len(answers) == len(PREFIXED)
    assert all("The mail commands of pbem:" in text_of(answer) for answer in answers)
