"""Conditional moves by mail, end to end: smtplib → the real listener → processing → the move path →
outbox → the real SMTP sink.  The 'if' lines are queued by replying, listed and cleared, and never reach
the opponent (not as a comment, not in any mail)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, Move, User
from pbem.game import play
from tests.server.conftest import give_mail_key
from tests.server.test_mail_play import Postman, start_postman, text_of


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink, seen from the players' side."""
    yield from start_postman(app, sink)


def cambio(alice: User, bob: User) -> Game:
    """Cambio 4x4: three placements each, on the twelve cells that are not corners; alice places first."""
    game = play.create_game("cambio", [alice, bob], {"size": 4})
    db.session.commit()
    return game


def record(game_id: int) -> list[tuple[str, str]]:
    db.session.rollback()
    query = select(Move).where(Move.game_id == game_id).order_by(Move.number)
    return [(m.text, m.via) for m in db.session.scalars(query)]


def everything_to(postman: Postman, user: User) -> str:
    return "\n".join(str(m["Subject"]) + "\n" + text_of(m) for m in postman.mails(user.email))


def test_a_three_move_line_by_mail_answers_the_opponents_two_moves(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    postman.settle()
    # Alice plays b4 and queues her next two moves: c4 if bob places on b1, then d2 if he places on c1.
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "b4 #1\nif b1 then c4 then c1 then d2\nif b2 then c4", "Over to you.")
    postman.settle()
    answer = text_of(postman.last(alice.email, "Re: "))
    assert "Your move b4 (move 1)" in answer
    assert "Your conditional moves queued: if b1 then c4 then c1 then d2; if b2 then c4." in answer

    request = postman.last(bob.email, "your move (move 2)")
    assert "alice says: Over to you." in text_of(request)
    postman.reply(request, bob.email, "b1 #2")
    postman.settle()
    # Bob's answer, and his next request, already show alice's reply.
    answer = text_of(postman.last(bob.email, "Re: "))
    assert "Answered at once by conditional move: alice c4." in answer
    # The answer numbers bob's move as his form did, not as the game stands after the answer to it.
    assert "Your move b1 (move 2)" in answer and "move 4: your move" in answer
    request = postman.last(bob.email, "your move (move 4)")
    assert "alice played c4 (a conditional move)." in text_of(request)
    answered = text_of(postman.last(alice.email, "answered by c4"))
    # The line that expected another move is dropped, and alice is told which, though one matched.
    assert "still queued: if c1 then d2." in answered
    assert "Your conditional moves that did not expect b1 are dropped: if b2 then c4." in answered

    postman.reply(request, bob.email, "c1")
    postman.settle()
    assert record(game.id) == [("b4", "mail"), ("b1", "mail"), ("c4", "conditional"), ("c1", "mail"),
                               ("d2", "conditional")]
    assert "alice played d2 (a conditional move)." in text_of(postman.last(bob.email, "your move (move 6)"))

    # Only alice ever saw her lines.
    bobs = everything_to(postman, bob)
    assert "if b1 then c4" not in bobs and "if c1 then d2" not in bobs and "queued" not in bobs
    assert "if b2" not in bobs and "dropped" not in bobs
    postman.reply(postman.last(alice.email, "answered by d2"), alice.email, "conditionals")
    postman.settle()
    assert "You have no conditional moves queued in Cambio" in text_of(postman.last(alice.email, "Re: "))


def test_if_lines_alone_are_queued_listed_and_cleared(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    postman.settle()
    notice = postman.last(alice.email, "your move (move 1)")  # Its reply address serves the whole game.
    # Anything else in the mail is read as a command, as ever: here, a move when it is not hers.
    postman.reply(notice, alice.email, "If b1 then c4\nThanks!")
    postman.settle()
    refusal = text_of(postman.last(alice.email, "Re: "))
    assert "Nothing was queued either: 'Thanks' was read as a move" in refusal
    postman.reply(notice, alice.email, "If b1 then c4\nif b2 THEN c4 then c1 then d2")
    postman.settle()
    answer = text_of(postman.last(alice.email, "Re: "))
    assert "Queued in Cambio" in answer
    assert "  if b1 then c4\n  if b2 then c4 then c1 then d2" in answer

    postman.reply(notice, alice.email, "conditionals")
    postman.settle()
    assert "if b2 then c4 then c1 then d2" in text_of(postman.last(alice.email, "Re: "))

    # A line the engine refuses is answered with its reason, and nothing of the mail is queued.
    postman.reply(notice, alice.email, "if b1 then c4 then a1 then d2\nif b3 then c4")
    postman.settle()
    refusal = text_of(postman.last(alice.email, "Re: "))
    assert "Not done" in refusal and "a1 is a corner" in refusal and "Nothing was queued" in refusal

    postman.reply(notice, alice.email, "conditionals clear")
    postman.settle()
    assert "are deleted (2 lines)" in text_of(postman.last(alice.email, "Re: "))
    db.session.rollback()
    assert db.session.get(Game, game.id).seats[0].conditionals is None

    # 'if' lines with any other command are refused rather than dropped.
    postman.reply(notice, alice.email, "show\nif b1 then c4")
    postman.settle()
    assert "send them alone, or with your move" in text_of(postman.last(alice.email, "Re: "))
    assert "if b1" not in everything_to(postman, bob)


def test_an_if_line_under_a_move_never_becomes_a_comment(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    postman.settle()
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "b4", "Good luck!\n\nif b2 then c4")
    postman.settle()
    assert record(game.id) == [("b4", "mail")]
    db.session.rollback()
    assert db.session.get(Game, game.id).seats[0].conditionals == [["b2", "c4"]]
    assert db.session.scalars(select(Move.comment)).one() == "Good luck!"
    assert "if b2" not in everything_to(postman, bob)


def test_conditionals_by_subject_command(postman: Postman, players) -> None:
    alice, bob, carol = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    key = give_mail_key(alice)
    postman.command(alice.email, f"cambio conditionals {game.id} alice {key} if b1 then c4")
    postman.settle()
    answer = postman.last(alice.email, "Re: cambio conditionals")
    assert key not in str(answer["Subject"]) and "  if b1 then c4" in text_of(answer)
    postman.command(alice.email, f"cambio conditionals {game.id} alice {key}")
    postman.command(bob.email, f"cambio conditionals {game.id} bob {give_mail_key(bob)}")
    postman.settle()
    assert "if b1 then c4" in text_of(postman.last(alice.email, "Re: cambio conditionals"))
    assert "You have no conditional moves" in text_of(postman.last(bob.email, "Re: cambio conditionals"))
    postman.command(carol.email, f"cambio conditionals {game.id} carol {give_mail_key(carol)}")
    postman.settle()
    assert "You are not playing in Cambio" in text_of(postman.last(carol.email, "Re: cambio conditionals"))
    postman.command(alice.email, f"cambio conditionals {game.id} alice {key} clear")
    postman.settle()
    assert "are deleted (1 line)" in text_of(postman.last(alice.email, "Re: cambio conditionals"))


def test_a_subject_move_takes_the_if_lines_of_its_body(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    key = give_mail_key(alice)
    postman.command(alice.email, f"cambio move {game.id} alice {key} b4#1", "if b1 then c4\n")
    postman.settle()
    assert "Your conditional moves queued: if b1 then c4." in text_of(
        postman.last(alice.email, "Re: cambio move"))
    postman.command(bob.email, f"cambio move {game.id} bob {give_mail_key(bob)} b1")
    postman.settle()
    assert record(game.id) == [("b4", "command"), ("b1", "command"), ("c4", "conditional")]
    assert "alice c4" in text_of(postman.last(bob.email, "Re: cambio move"))


def test_a_draw_offer_tells_its_offerer_that_their_own_lines_are_cancelled(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    postman.settle()
    postman.reply(postman.last(alice.email, "your move"), alice.email, "b4\nif b1 then c4")
    postman.settle()
    postman.reply(postman.last(alice.email, "Re: "), alice.email, "draw offer")
    postman.settle()
    answer = " ".join(text_of(postman.last(alice.email, "Re: ")).split())
    assert "Your draw offer" in answer
    assert "Your conditional moves in this game are cancelled by the offer" in answer
    db.session.rollback()
    assert db.session.get_one(Game, game.id).seats[0].conditionals is None
