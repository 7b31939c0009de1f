"""The registry of mail commands (issue #28): the help mail lists every form of every command, from the
registry, as the README does; ``help COMMAND`` gives one in full.  And a challenge by subject acts for the
challenger only with their mail key (issue #30, item 8): a forged From address starts nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import func, select

from pbem.core.extensions import db
from pbem.core.models import Game, MailKeyFailure
from pbem.mailin.commands import COMMANDS
from tests.conftest import ROOT
from tests.server.conftest import give_mail_key
from tests.server.test_mail_play import Postman, start_postman, text_of

WORK = "alice.at.work@example.org"  # alice's other address: no account has it.


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _forms(reply: bool) -> list[str]:
    """Every form of every command, in a reply or by subject, as the help mail writes it."""
    return [usage.written() for c in COMMANDS for usage in (c.in_reply if reply else c.by_subject)]


def test_the_help_mail_lists_every_command_and_help_command_gives_one_in_full(postman: Postman) -> None:
    asked = {postman.command("newcomer@example.org", subject): subject
             for subject in ("help", "help challenge", "help Draw", "help conditional", "help chess")}
    postman.settle()
    said = {asked[str(m["In-Reply-To"])]: text_of(m) for m in postman.mails("newcomer@example.org")}
    listed = said["help"]
    for form in _forms(reply=True) + _forms(reply=False):
        assert re.search(rf"^  {re.escape(form)}  ", listed, re.MULTILINE), form
    assert "body of a move, resign, draw, accept or decline command goes with it" in listed
    challenge = said["help challenge"]
    assert "The mail command 'challenge': start a game" in challenge
    assert "cambio challenge alice MAILKEY bob size=4" in challenge
    assert "seated in the order named" in challenge
    assert "draw offer" in said["help Draw"] and "cambio draw 12 alice MAILKEY offer" in said["help Draw"]
    assert "The mail command 'conditionals'" in said["help conditional"]  # By its alias.
    assert "There is no game called 'chess'" in said["help chess"]
    assert "The commands are: move, show" in said["help chess"]


def test_the_readme_lists_every_form_of_every_command() -> None:
    readme = (ROOT / "README.md").read_text()
    for form in _forms(reply=True) + _forms(reply=False):
        assert f"`{form}`" in readme, form


def _games() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count(Game.id))) or 0


def test_a_challenge_by_subject_needs_the_challengers_mail_key(postman: Postman, players) -> None:
    alice, bob, _ = players
    key = give_mail_key(alice)
    # Anyone can write alice's address in From: without her key, nothing starts and bob hears nothing.
    forged = postman.command(alice.email, "cambio challenge alice bob size=3 placements=2")
    wrong = postman.command(alice.email, "cambio challenge alice 23456789abcdefgh bob size=3")
    postman.settle()
    answers = {str(m["In-Reply-To"]): text_of(m) for m in postman.mails(alice.email)}
    assert "carries your handle and your mail key" in answers[forged]
    assert "cambio challenge alice MAILKEY bob size=4" in answers[forged]
    assert "The mail key for alice is wrong" in answers[wrong]
    assert _games() == 0 and postman.mails(bob.email) == []
    db.session.rollback()  # Only the wrong key counts against alice's key, not the old form without one.
    assert db.session.scalar(select(func.count(MailKeyFailure.id))) == 1

    # With her key, from whatever address, the challenge goes to bob, who accepts by replying to it.
    made = postman.command(WORK, f"cambio challenge alice {key.upper()} bob size=3 placements=2")
    postman.settle()
    [answer] = [m for m in postman.mails(WORK) if str(m["In-Reply-To"]) == made]
    assert str(answer["Subject"]) == "Re: cambio challenge alice ******** bob size=3 placements=2"
    assert "Cambio #1 is set up (seat 1 alice, seat 2 bob)" in text_of(answer)
    postman.reply(postman.last(bob.email, "alice challenges you"), bob.email, "accept")
    postman.settle()
    assert "has started" in text_of(postman.last(bob.email, "Re: "))
    db.session.rollback()
    assert db.session.scalars(select(Game.status)).one() == "active"
