"""Hidden moves stay hidden in every mail: games where everyone plays the same deal at once (Easy Slider,
Box Off) played over SMTP, every mail a player gets while the game runs read line by line for what the
game page keeps from them — another player's moves, comments and board.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from email.message import Message

import pytest
from flask import Flask

import games
from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.game import play
from pbem.lobby import challenges
from pbem.present import gameview
from tests.server.test_mail_play import Postman, html_of, start_postman, text_of

# The same board every round, solved by "d2 e2 e1" (three slides from solved: e2, d2, d1).
SLIDER = {"position": "mam2m3m4m5/sas2s3s4s5/cac2c3c4c5/aaa2a3ana4/snmncn..a5", "pawns": "msca",
          "coins": "a2345", "rounds": 2}
# Lines that draw a row of a board: Easy Slider's " Arms  2  |  A1  A2 … | 2", Box Off's " 3  b b w  3".
BOARD_ROW = re.compile(r"^\s*(\S+\s+)?\d+\s+\|.*\|\s*\d+\s*$|^\s*\d+\s\s[a-z. ]+\s\s\d+\s*$")


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


class Reader:
    """One player's inbox, read as it fills: each new mail is checked against what the player may see."""

    def __init__(self, postman: Postman, game_id: int, user: User, others: list[User]) -> None:
        self.postman, self.game_id, self.user, self.others = postman, game_id, user, others
        self.read = 0
        self.secrets: list[str] = []  # The others' comments, as they write them.

    def check_new(self) -> list[Message]:
        """Every mail that came since the last look, checked: no other player's move, comment or board."""
        mails = self.postman.mails(self.user.email)
        new, self.read = mails[self.read:], len(mails)
        db.session.rollback()
        game = db.session.get_one(Game, self.game_id)
        engine = games.get(game.engine)
        seat = game.seat_of(self.user)
        assert seat is not None
        # The reader's own board as it stands, and the deal everyone started from (no secret).
        dealt = engine.new(game.players, engine.options.load(game.options), game.seed)
        own = {*engine.render_text(engine.load(game.state), seat.number).splitlines(),
               *engine.render_text(dealt, seat.number).splitlines()}
        for mail in new:
            if "game over" in str(mail["Subject"]):
                continue  # Everything is shown at the end.
            for part in (text_of(mail), html.unescape(re.sub(r"<[^>]+>", "", html_of(mail)))):
                for other in self.others:
                    assert f"{other.handle} played" not in part, (mail["Subject"], part)
                    assert f"{other.handle} says" not in part, (mail["Subject"], part)
                for said in self.secrets:
                    assert said not in part, (mail["Subject"], part)
                rows = [line for line in part.splitlines() if BOARD_ROW.match(line)]
                assert rows, (mail["Subject"], part)
                foreign = [row for row in rows if row not in own]
                assert not foreign, (mail["Subject"], foreign)
        return new


def move(postman: Postman, user: User, text: str, comment: str = "") -> str:
    """Reply to the player's latest move request with ``text`` (and ``comment``); the answer's words."""
    postman.reply(postman.last(user.email, "your move"), user.email, text, comment)
    postman.settle()
    return text_of(postman.last(user.email, "Re: "))


def test_easy_slider_mails_never_show_the_other_players_moves_comments_or_board(
    postman: Postman, players
) -> None:
    alice, bob, _ = players
    game = play.create_game("easyslider", [alice, bob], SLIDER, seed=1)
    db.session.commit()
    postman.settle()
    for_alice, for_bob = Reader(postman, game.id, alice, [bob]), Reader(postman, game.id, bob, [alice])
    for_bob.secrets, for_alice.secrets = ["done in three"], ["one at a time"]
    for_alice.check_new(), for_bob.check_new()

    # Round 1: bob slides one tile, then alice solves with a comment, then bob finishes.
    move(postman, bob, "d2", "one at a time")
    for_alice.check_new(), for_bob.check_new()
    answer = move(postman, alice, "d2 e2 e1", "done in three")
    for_alice.check_new(), for_bob.check_new()
    move(postman, bob, "e2 e1")
    # Round 2 on the same board: alice's request shows her own last move, never bob's (bob's answer to
    # his move asks for his next one).
    for_bob.check_new()
    assert any("You played d2 e2 e1." in text_of(m) for m in for_alice.check_new())
    request = text_of(postman.last(alice.email, "your move"))
    assert "shown to them when the game ends" in " ".join(request.split())

    move(postman, alice, "d2 e2 e1", "done in three")
    for_alice.check_new(), for_bob.check_new()
    move(postman, bob, "done")
    db.session.rollback()
    assert db.session.get_one(Game, game.id).status == "finished"
    # The answer to the mover says when the comment is shown.
    assert ("Your comment goes to the other players when the game ends: until then your moves and "
            "comments stay hidden from them.") in " ".join(answer.split())
    # The result mail ends the secrecy: it may name everyone's moves.
    assert "Easy Slider" in text_of(postman.last(bob.email, "game over"))


def test_box_off_mails_and_answers_never_show_the_other_players_moves_comments_or_boards(
    postman: Postman, players
) -> None:
    alice, bob, carol = players
    game = play.create_game("boxoff", [alice, bob, carol], {}, seed=5)
    db.session.commit()
    postman.settle()
    everyone = [alice, bob, carol]
    readers = {u.handle: Reader(postman, game.id, u, [o for o in everyone if o is not u]) for u in everyone}
    said = {"alice": "the whites first", "bob": "corner to corner", "carol": "slowly now"}
    for reader in readers.values():
        reader.secrets = [words for handle, words in said.items() if handle != reader.user.handle]

    def check_all() -> None:
        for reader in readers.values():
            reader.check_new()

    check_all()
    answers = []
    for user in (alice, bob, alice, carol):
        db.session.rollback()
        running = db.session.get_one(Game, game.id)
        seat = running.seat_of(user)
        legal = games.get("boxoff").moves(games.get("boxoff").load(running.state), seat.number)
        answers.append(move(postman, user, legal[-1], said[user.handle]))
        check_all()
    # Asking for the board by reply, and by the subject command anyone may send for a public game.
    postman.reply(postman.last(bob.email, "your move"), bob.email, "show")
    postman.settle()
    check_all()
    postman.command(carol.email, f"boxoff show {game.id}")
    postman.settle()
    shown = text_of(postman.last(carol.email, "Re: "))
    assert "The deal (each player's board is shown when the game ends)" in shown
    check_all()

    assert all("Your comment goes to the other players when the game ends" in a for a in answers)
    # The page agrees: a visitor sees the deal, a player their own board and moves alone.
    db.session.rollback()
    finished = db.session.get_one(Game, game.id)
    visitor = gameview.build(finished, None)
    assert "The deal" in str(visitor.boards[0].svg) and not visitor.moves and visitor.hidden_moves == 4
    mine = gameview.build(finished, bob)
    assert [(m.text, n) for m, _name, n in mine.moves] == [(finished.moves[1].text, 1)]
    assert mine.hidden_moves == 3



def test_accepting_a_box_off_challenge_by_mail_brings_the_position_once(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "boxoff", [alice, bob], {}, seed=5)
    postman.settle()
    postman.reply(postman.last(bob.email, "challenges you"), bob.email, "accept")
    postman.settle()
    mails = postman.mails(bob.email)[1:]  # After the challenge: the move request and the answer.
    # One mail with the board (the move request) and the answer saying it comes: not the board twice.
    with_board = [m for m in mails if "Legal moves" in text_of(m) or "legal moves" in text_of(m)]
    assert len(mails) == 2
    assert [str(m["Subject"]) for m in with_board] == [f"[pbem] Box Off #{game.id}: your move (move 1)"]
    answer = text_of(postman.last(bob.email, "Re: "))
    assert "Your move request comes in a mail of its own." in answer
