"""A mail key written in the wrong place is never repeated nor kept (issue #34, item 3).

Players mistake where the key goes: they forget the handle, swap handle and key, put the key first, ask
about it in a sentence.  Whatever the place, a word that is the sender's mail key (or the key of a player
the mail names) is blanked before anything is made of the mail: each mistake is sent over SMTP to the real
listener, and its answer (through the real SMTP sink), every stored row and the log are searched for it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import InboundMail, Move
from pbem.game import play
from tests.server.conftest import give_mail_key
from tests.server.test_mail_play import Postman, html_of, start_postman, text_of

WORK = "alice.at.work@example.org"  # alice's other address: no account has it.

# What players wrote (the subject, and the body when it matters), KEY standing for alice's mail key (UKEY
# for it in capitals), and what the answer says in its place.
MISTAKES = {
    "handle forgotten": ("cambio move {game} KEY b2 #1", "", "There is no player called '********'."),
    "vacation": ("vacation KEY on", "", "Write vacation commands like this"),
    "swapped": ("cambio resign {game} KEY alice", "", "There is no player called '********'."),
    "key first": ("KEY cambio move {game} alice b2", "", "it begins '********'"),
    "games": ("games alice KEY", "", "alice's games in play"),
    "a question": ("my mail key is KEY, what now?", "", "I found no command"),
    # ... where the note kept of it is cut short: no part of the key is left at the cut.
    "a long question": ("Is this the key to use for the commands? " + "Please " * 7 + "KEY?", "",
                        "I found no command"),
    "help": ("help UKEY", "", "There is no game called '********'"),
    "in the body": ("Hello", "vacation UKEY on\n\nThanks, Alice", "Write vacation commands like this"),
}


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _stored_texts() -> Iterator[str]:
    """Every value of every row the server keeps, as text (a stored mail's raw bytes aside: they are the
    mail as it came, which is never shown)."""
    db.session.rollback()
    for table in db.metadata.sorted_tables:
        for row in db.session.execute(sa.select(table)).mappings():
            for column, value in row.items():
                if value is not None and not (table.name == InboundMail.__tablename__ and column == "raw"):
                    yield f"{table.name}.{column}: {value}"


def test_a_key_in_the_wrong_place_is_never_echoed_stored_or_logged(
    postman: Postman, players, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    # A key holding the move the mistakes write ("b2"): a word in the key's place is blanked as a word,
    # never inside the real key (that left the key's other characters in the note kept and the answer).
    key = give_mail_key(alice, "u3kz7frnb26qqdfm")
    request = postman.last(alice.email, "your move (move 1)")

    def written(text: str) -> str:
        return text.format(game=game.id).replace("UKEY", key.upper()).replace("KEY", key)

    sent = {postman.command(alice.email, written(subject), written(body)): says
            for subject, body, says in MISTAKES.values()}
    # From another address: the key of the player the command names is blanked all the same.
    sent[postman.command(WORK, f"cambio move {game.id} {key} alice b2")] = "There is no player called"
    # A reply to the move request with the key where the move goes, and in a sentence under it.
    sent[postman.reply(request, alice.email, key, f"Is this my key: {key}?")] = "'********' was not played"
    # The mistakes are answered before the move is played: they are answered in the position before it
    # (on PostgreSQL the listener's workers take messages side by side, in no set order between them).
    postman.settle()
    # A move played with the key in its comment (in capitals): the comment kept has no key.
    sent[postman.command(alice.email, f"cambio move {game.id} alice {key} b3#1",
                         f"Good luck! ({key.upper()})")] = "Your move b3"
    postman.settle()

    answers = {str(m["In-Reply-To"]): m for m in postman.mails(alice.email) + postman.mails(WORK)
               if str(m["Subject"]).startswith("Re:")}
    assert answers.keys() == sent.keys()
    for message_id, says in sent.items():
        answer = answers[message_id]
        assert says in text_of(answer), text_of(answer)
        for text in (str(answer["Subject"]), text_of(answer), html_of(answer)):
            assert key[:8] not in text.lower() and key[-6:] not in text.lower(), text
    db.session.rollback()
    assert [m.comment for m in db.session.scalars(select(Move))] == ["Good luck! (********)"]
    for stored in _stored_texts():
        assert key[:8] not in stored.lower(), stored
    assert caplog.records and key[:8] not in caplog.text.lower()
