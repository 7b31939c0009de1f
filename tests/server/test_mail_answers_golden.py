"""The answers to mailed commands, byte for byte, against a golden file made from the code before a move's
answer was read over plain rows and showed only what it shows (issue #33): a move played (the common case,
by reply and by subject), refused as illegal, out of turn, stale or sent twice, the game's last move, a
game of hidden moves, a position with too many moves to list, ``show`` for a player and for anyone.
Tuning may not change a character of them.

Played through the real listener and its processor; the answers are read from the outbox as written (their
text and HTML parts, subject, Reply-To and recipient), with the placeholders of ``test_mail_golden`` for
what differs from run to run.  To write the golden file again from the code as it is:
``WRITE_GOLDEN_MAILS=1``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select

import games
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, User
from pbem.game import play
from tests.server.conftest import give_mail_key
from tests.server.test_mail_golden import _normal
from tests.server.test_mail_play import GAME, Postman, start_postman

GOLDEN = Path(__file__).parent / "golden" / "mail_answers.json"


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def _new(postman: Postman, made: dict[int, tuple[str, str]], name: str, slug: str, title: str,
         seated: list[User], options: dict) -> Game:
    """A game started between ``seated``, its first move requests delivered."""
    game = play.create_game(slug, seated, options, seed=3)
    db.session.commit()
    made[game.id] = (name, title)
    postman.settle()
    return game


def _exchange(postman: Postman, players: tuple[User, User, User]) -> dict[int, tuple[str, str]]:
    """Every command of the golden file, sent and answered; the games by id, with their names there."""
    alice, bob, carol = players
    made: dict[int, tuple[str, str]] = {}
    cambio = _new(postman, made, "CAMBIO", "cambio", "Cambio", [alice, bob], {"size": 3, "placements": 2})
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "a1")  # Illegal: the legal moves are listed.
    postman.reply(request, alice.email, f"{GAME[0]} #1", "Good luck <3 & \"fun\"")
    postman.settle()
    postman.reply(request, alice.email, f"{GAME[0]} #1")  # The same mail again.
    postman.reply(request, alice.email, GAME[2])  # Not her turn.
    postman.reply(postman.last(bob.email, "your move (move 2)"), bob.email, "show")
    postman.settle()
    postman.reply(postman.last(bob.email, "your move (move 2)"), bob.email, f"{GAME[1]} #1")  # Stale.
    postman.reply(postman.last(bob.email, "your move (move 2)"), bob.email, f"{GAME[1]} #2")
    postman.settle()
    keys = {alice.id: give_mail_key(alice), bob.id: give_mail_key(bob)}
    postman.command(alice.email, f"cambio move {cambio.id} alice {keys[alice.id]} {GAME[2]}#3")
    postman.command(bob.email, f"cambio move {cambio.id} bob {keys[bob.id]} a1")  # Illegal, by subject.
    postman.command(carol.email, f"cambio show {cambio.id}")  # Anyone's view of a public game.
    postman.settle()
    for number, move in enumerate(GAME[3:], start=4):
        mover = [alice, bob][(number - 1) % 2]
        postman.reply(postman.last(mover.email, f"your move (move {number})"), mover.email, move)
        postman.settle()
    postman.reply(postman.last(alice.email, "your move (move 5)"), alice.email, "show")  # Over.
    postman.settle()
    large = _new(postman, made, "LARGE", "truchet", "Truchet", [bob, alice], {})
    request = postman.last(bob.email, "your move (move 1)")
    postman.reply(request, bob.email, "zz")  # More legal moves than an answer lists.
    engine = games.get("truchet")
    postman.reply(request, bob.email, engine.moves(engine.load(large.state), 0)[0])
    postman.settle()
    slider = _new(postman, made, "SLIDER", "easyslider", "Easy Slider", [alice, bob], {
        "position": "mam2m3m4m5/sas2s3s4s5/cac2c3c4c5/aaa2a3ana4/snmncn..a5", "pawns": "msca",
        "coins": "a2345", "rounds": 2})
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "zz")
    engine = games.get("easyslider")
    postman.reply(request, alice.email, f"{engine.moves(engine.load(slider.state), 0)[0]} #1", "secret plan")
    postman.settle()
    assert large.id and cambio.id
    return made


def _placeholders(text: str | None, made: dict[int, tuple[str, str]]) -> str | None:
    """``text`` with the run's game numbers and tokens as placeholders (those of ``test_mail_golden``, and
    the game's number where an answer says it without its title)."""
    if text is None:
        return None
    numbered = re.sub(r"(game #|cambio move |cambio show )(\d+)\b",
                      lambda found: f"{found[1]}{made[int(found[2])][0]}", text)
    return _normal(numbered, made)


def test_the_answers_to_mailed_commands_are_the_golden_bytes(postman: Postman, players) -> None:
    made = _exchange(postman, players)
    db.session.rollback()
    rows = db.session.scalars(
        select(OutboxMail).where(OutboxMail.kind.in_(("answer", "answer-error"))).order_by(OutboxMail.id)
    ).all()
    answers = [
        {
            "kind": row.kind,
            "to": row.to_addr,
            "reply_to": _normal(row.reply_to, made),
            "subject": _placeholders(row.subject, made),
            "text": _placeholders(row.body_text, made),
            "html": _placeholders(row.body_html, made),
        }
        for row in rows
    ]
    if os.environ.get("WRITE_GOLDEN_MAILS"):
        GOLDEN.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert {a["kind"] for a in golden} == {"answer", "answer-error"} and len(golden) >= 15
    assert len(answers) == len(golden)
    for answer, expected in zip(answers, golden, strict=True):
        assert answer == expected
