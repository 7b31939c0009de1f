"""Playing by mail end to end: smtplib → the real listener → processing → outbox → the real SMTP sink.

A whole game of Cambio is played only by replying to the mails the server sends (reading each mail's
Reply-To), and a game is started and played with pbmserv-style subject commands.
"""

from __future__ import annotations

import email
import smtplib
import time
from collections.abc import Iterator
from email.message import EmailMessage, Message
from email.policy import default as default_policy
from email.utils import make_msgid

import pytest
from flask import Flask
from sqlalchemy import func, select

from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, Move, User
from pbem.game import play
from pbem.lobby import challenges
from pbem.mailin import smtpd
from pbem.mailout import outbox
from tests.conftest import free_port
from tests.server.conftest import give_mail_key

# Cambio 3x3, two placements each: O places b3, X a2, O c2, X b1; O pushes c1^, X pushes c3< and wins
# with a full line on rank 3 (see tests/server/test_play.py for the opening).
GAME = ["b3", "a2", "c2", "b1", "c1^", "c3<"]
COMMANDS = "pbem@pbem.localhost"


class Postman:
    """The players' side of the mail: sends through the real listener, reads what the sink received."""

    def __init__(self, sink, port: int) -> None:
        self.sink, self.port = sink, port
        self.seen = 0

    def send(self, msg: EmailMessage, mail_from: str | None = None, to: str | None = None) -> str:
        """Send ``msg`` over SMTP; returns its Message-ID."""
        if "Message-ID" not in msg:
            msg["Message-ID"] = make_msgid(domain="example.org")
        with smtplib.SMTP("127.0.0.1", self.port, timeout=10) as client:
            client.send_message(msg, from_addr=mail_from, to_addrs=to)
        return str(msg["Message-ID"])

    def send_raw(self, raw: bytes, mail_from: str, to: str) -> None:
        """Send bytes exactly as given."""
        with smtplib.SMTP("127.0.0.1", self.port, timeout=10) as client:
            client.sendmail(mail_from, [to], raw)

    def command(self, sender: str, subject: str, body: str = "") -> str:
        """A pbmserv-style command mail to the server's own address."""
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = sender, COMMANDS, subject
        msg.set_content(body or "\n")
        return self.send(msg)

    def reply(self, original: Message, sender: str, first_line: str, comment: str = "") -> str:
        """Reply to ``original`` as a mail client does: to its Reply-To, quoting it under the answer."""
        msg = EmailMessage()
        msg["From"], msg["To"] = sender, str(original["Reply-To"])
        msg["Subject"] = "Re: " + str(original["Subject"])
        msg["In-Reply-To"] = str(original["Message-ID"])
        quoted = "\n".join("> " + line for line in text_of(original).splitlines())
        words = first_line + ("\n" + comment if comment else "")
        attribution = "On Mon, 3 Mar 2025 at 12:00, pbem <pbem@pbem.localhost> wrote:"
        msg.set_content(f"{words}\n\n{attribution}\n{quoted}\n")
        return self.send(msg)

    def settle(self) -> None:
        """Wait until every stored message is processed, then deliver the outbox to the sink."""
        deadline = time.monotonic() + 20
        while True:
            db.session.rollback()
            waiting = db.session.scalar(
                select(func.count(InboundMail.id)).where(InboundMail.status.in_(("received", "processing")))
            )
            if not waiting:
                break
            assert time.monotonic() < deadline, "the processor did not finish"
            time.sleep(0.02)
        outbox.deliver_due()

    def mails(self, to: str) -> list[Message]:
        """Every mail the sink received for ``to``, oldest first, parsed."""
        return [email.message_from_bytes(m.as_bytes(), policy=default_policy) for m in self.sink.messages(to)]

    def last(self, to: str, subject_has: str = "") -> Message:
        """The newest mail to ``to`` whose subject contains ``subject_has`` (answers, "Re: …", only when
        ``subject_has`` asks for them)."""
        answers = subject_has.startswith("Re:")
        found = [m for m in self.mails(to) if subject_has in str(m["Subject"])
                 and str(m["Subject"]).startswith("Re:") == answers]
        assert found, f"no mail to {to} with {subject_has!r}: {[str(m['Subject']) for m in self.mails(to)]}"
        return found[-1]


def text_of(msg: Message) -> str:
    """The plain-text part of a received mail."""
    return msg.get_body(preferencelist=("plain",)).get_content()


def html_of(msg: Message) -> str:
    """The HTML part of a received mail."""
    return msg.get_body(preferencelist=("html",)).get_content()


def start_postman(app: Flask, sink) -> Iterator[Postman]:
    """The listener on a free port with its processor, and a Postman for it (for fixtures)."""
    port = free_port()
    listener = smtpd.controller(app, "127.0.0.1", port)
    listener.start()
    try:
        yield Postman(sink, port)
    finally:
        listener.stop()


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink, seen from the players' side."""
    yield from start_postman(app, sink)


def moves_of(game_id: int) -> list[str]:
    db.session.rollback()
    query = select(Move).where(Move.game_id == game_id).order_by(Move.number)
    return [m.text for m in db.session.scalars(query)]


def test_a_whole_game_of_cambio_by_replying_to_the_mails(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3, "placements": 2})
    postman.settle()
    challenge = postman.last(bob.email, "challenges you")
    assert str(challenge["Reply-To"]).startswith("play+") and "accept" in text_of(challenge)

    postman.reply(challenge, bob.email, "accept")
    postman.settle()
    assert "has started" in text_of(postman.last(bob.email, "Re: "))

    request = postman.last(alice.email, "your move (move 1)")
    assert str(request["Subject"]) == f"[pbem] Cambio #{game.id}: your move (move 1)"
    body = text_of(request)
    assert "Legal moves: a2, b1, b2, b3, c2" in body and "+-------+" in body and "a2 #1" in body
    assert "b3" in html_of(request) and "<pre" in html_of(request) and "<svg" not in html_of(request)
    assert str(request["In-Reply-To"]) == f"<game-{game.id}@pbem.localhost>"

    # One wrong move, answered with an error that lists what is legal; nothing is played.
    postman.reply(request, alice.email, "a1")
    postman.settle()
    error = postman.last(alice.email, "Re: ")
    assert "Not done" in text_of(error) and "Legal moves: a2, b1, b2, b3, c2" in text_of(error)
    assert moves_of(game.id) == []

    players_by_seat = [alice, bob]
    for number, move in enumerate(GAME, start=1):
        mover = players_by_seat[(number - 1) % 2]
        request = postman.last(mover.email, f"your move (move {number})")
        if number == 3:
            # A move confirmed for a stale move number is refused; the position is sent again.
            postman.reply(request, mover.email, f"{move} #{number - 1}")
            postman.settle()
            refusal = text_of(postman.last(mover.email, "Re: "))
            assert f"Your move was for move {number - 1}, but game #{game.id} is at move {number}" in refusal
            assert moves_of(game.id) == GAME[: number - 1]
        comment = "Your turn, bob." if number == 5 else ""
        postman.reply(request, mover.email, f"{move} #{number}", comment)
        postman.settle()
        assert f"Your move {move}" in text_of(postman.last(mover.email, "Re: "))
        if number == 2:
            # The same mail sent again is told its move is in, not that it is not its sender's turn.
            postman.reply(request, mover.email, f"{move} #{number}", comment)
            postman.settle()
            again = text_of(postman.last(mover.email, "Re: "))
            assert f"Not done: Your {move} was already played as move 2 of game #{game.id}; nothing" in again
    assert moves_of(game.id) == GAME
    # The comment went to the opponent with the next move request.
    assert "alice says: Your turn, bob." in text_of(postman.last(bob.email, "your move (move 6)"))
    db.session.rollback()
    finished = db.session.get(Game, game.id)
    assert finished.status == "finished" and finished.result["results"] == ["loss", "win"]
    for player in (alice, bob):
        assert "full line on rank 3" in text_of(postman.last(player.email, "game over"))


def test_a_move_written_as_a_sentence_or_marked_is_played(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3, "placements": 2})
    challenges.accept(game.id, bob)
    postman.settle()
    postman.reply(postman.last(alice.email, "your move (move 1)"), alice.email, f"{GAME[0].upper()}.")
    postman.settle()
    assert f"Your move {GAME[0]} (move 1)" in text_of(postman.last(alice.email, "Re: "))
    postman.reply(postman.last(bob.email, "your move (move 2)"), bob.email, f"{GAME[1]}!? #2")
    postman.settle()
    assert f"Your move {GAME[1]} (move 2)" in text_of(postman.last(bob.email, "Re: "))
    assert moves_of(game.id) == GAME[:2]
    # A reply of marks alone is still no move, and is answered as one.
    postman.reply(postman.last(alice.email, "your move (move 3)"), alice.email, "?")
    postman.settle()
    assert "'?' was not played" in text_of(postman.last(alice.email, "Re: "))
    assert moves_of(game.id) == GAME[:2]


def test_a_challenge_and_moves_by_subject_commands(postman: Postman, players) -> None:
    alice, bob, _ = players
    key = {alice.id: give_mail_key(alice), bob.id: give_mail_key(bob)}
    postman.command(alice.email, f"cambio challenge alice {key[alice.id]} bob size=3 placements=2")
    postman.settle()
    assert "has been sent the challenge" in text_of(postman.last(alice.email, "Re: cambio challenge"))
    db.session.rollback()
    game = db.session.scalars(select(Game)).one()
    assert [s.user_id for s in game.seats] == [alice.id, None] and game.options["size"] == 3

    postman.command(bob.email, f"cambio accept {game.id} bob {key[bob.id]}")
    postman.settle()
    accepted = postman.last(bob.email, f"Re: cambio accept {game.id}")
    assert key[bob.id] not in str(accepted["Subject"]) and "has started" in text_of(accepted)

    for number, move in enumerate(GAME[:4], start=1):
        mover: User = [alice, bob][(number - 1) % 2]
        postman.command(mover.email, f"cambio move {game.id} {mover.handle} {key[mover.id]} {move}#{number}")
        postman.settle()
        assert f"Your move {move}" in text_of(postman.last(mover.email, f"Re: cambio move {game.id}"))
    assert moves_of(game.id) == GAME[:4]

    postman.command(bob.email, f"cambio show {game.id}")
    postman.settle()
    shown = text_of(postman.last(bob.email, f"Re: cambio show {game.id}"))
    assert "move 5: alice to move" in shown and "Push phase" in shown

    # A wrong key is refused and says so; a wrong game name too.
    postman.command(alice.email, f"cambio move {game.id} alice 00000000 c1^")
    postman.command(alice.email, f"truchet move {game.id} alice {key[alice.id]} c1^")
    postman.settle()
    assert "mail key for alice is wrong" in text_of(postman.last(alice.email, "Re: cambio move"))
    assert "is a game of Cambio" in text_of(postman.last(alice.email, "Re: truchet move"))
    assert moves_of(game.id) == GAME[:4]

    postman.command(alice.email, "help")
    postman.command(alice.email, "help truchet")
    postman.command(alice.email, "games bob")
    postman.command(alice.email, f"truchet challenge alice {key[alice.id]} bob size=4")
    postman.settle()
    answers = {str(m["Subject"]): text_of(m) for m in postman.mails(alice.email)}
    assert "cambio move 12 alice MAILKEY a3v#7" in answers["Re: help"]
    assert "Options for 'truchet challenge" in answers["Re: help truchet"]
    # A refused option says why in one sentence, and each option says what it is.
    refused = answers["Re: truchet challenge alice ******** bob size=4"]
    assert "size: The board size must be odd (3, 5, 7 … 11): the setup needs a centre tile.\n" in refused
    assert "  size: Tiles a side: odd, 3 to 11. (default 7)" in refused and ".." not in refused
    assert f"#{game.id} Cambio, seat 2 against alice: alice to move" in text_of(
        postman.last(alice.email, "Re: games bob"))


def started_cambio(postman: Postman, alice: User, bob: User) -> Game:
    """A game of Cambio 3x3 between ``alice`` (to move) and ``bob``, its first move request delivered."""
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    return game


def test_draws_vacation_and_resignation_by_mail(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = started_cambio(postman, alice, bob)
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "draw offer")
    postman.settle()
    offer = postman.last(bob.email, "alice offers a draw")
    assert "draw decline" in text_of(offer)
    # Alice is to move, so bob cannot decline by moving now.
    assert "Making a move declines" not in text_of(offer) and "your next move, when it is" in text_of(offer)
    postman.reply(offer, bob.email, "decline")  # A bare decline answers the draw offer.
    postman.settle()
    assert "Play goes on" in text_of(postman.last(alice.email, "bob declined the draw"))
    postman.reply(offer, bob.email, "draw offer")  # Bob's offer, while it is alice's move.
    postman.settle()
    assert "Making a move declines the offer." in text_of(postman.last(alice.email, "bob offers a draw"))
    postman.reply(request, alice.email, "draw decline")
    postman.settle()

    postman.reply(request, alice.email, "vacation on")
    postman.settle()
    assert "Vacation is on" in text_of(postman.last(alice.email, "Re: "))
    db.session.rollback()
    assert db.session.get(User, alice.id).on_vacation
    postman.command(alice.email, f"vacation alice {give_mail_key(alice)} off")
    postman.settle()
    assert "Welcome back" in text_of(postman.last(alice.email, "Re: vacation alice ********"))

    postman.reply(request, alice.email, "resign")
    postman.settle()
    db.session.rollback()
    assert db.session.get(Game, game.id).result["results"] == ["loss", "win"]
    assert "wins: alice (O) resigned." in text_of(postman.last(bob.email, "game over"))
    postman.reply(request, alice.email, "b3")
    postman.settle()
    assert "is over; no more moves" in text_of(postman.last(alice.email, "Re: "))


def test_words_under_a_resignation_or_a_draw_answer_reach_the_others(postman: Postman, players) -> None:
    # What a player writes under "resign" or a draw command goes to the others, as it does under a move,
    # and into the record: it used to be dropped without a word.
    alice, bob, _ = players
    game = started_cambio(postman, alice, bob)
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "draw offer", "Shall we call it a day?")
    postman.settle()
    assert "Your comment goes to the other players." in text_of(postman.last(alice.email, "Re: "))
    offer = postman.last(bob.email, "alice offers a draw")
    assert "alice says: Shall we call it a day?" in text_of(offer)
    # A comment longer than a comment may be is cut, and the answer says so.
    postman.reply(offer, bob.email, "draw decline", "Not yet!" + " Really." * 1875)
    postman.settle()
    assert "Your comment goes to the other players (its first 2000 characters: it was longer)." in \
        text_of(postman.last(bob.email, "Re: "))
    assert "bob says: Not yet!" in text_of(postman.last(alice.email, "bob declined the draw"))

    postman.reply(request, alice.email, "resign", "Well played, bob.")
    postman.settle()
    assert "Your comment goes to the other players." in text_of(postman.last(alice.email, "Re: "))
    assert "alice says: Well played, bob." in text_of(postman.last(bob.email, "game over"))
    # The resigner is not told their own words back.
    assert "says:" not in text_of(postman.last(alice.email, "game over"))
    db.session.rollback()
    entries = db.session.scalars(select(Move).where(Move.game_id == game.id).order_by(Move.number)).all()
    assert [(m.kind, m.comment) for m in entries] == [
        ("draw-offer", "Shall we call it a day?"), ("draw-decline", ("Not yet!" + " Really." * 1875)[:2000]),
        ("resign", "Well played, bob."),
    ]


def test_words_under_a_subject_command_go_with_it_but_never_the_key(postman: Postman, players) -> None:
    # The body of a subject command is its comment, as under a reply: it used to be dropped unsaid.
    alice, bob, _ = players
    game = started_cambio(postman, alice, bob)
    key = {alice.id: give_mail_key(alice), bob.id: give_mail_key(bob)}
    # A body that repeats the command on its first line: that line is no part of the comment.
    move = f"cambio move {game.id} alice {key[alice.id]} b3#1"
    postman.command(alice.email, move, f"{move}\nGood luck!\n\n-- \nAlice\n")
    postman.settle()
    assert "Your comment goes to the other players." in text_of(postman.last(alice.email, "Re: cambio move"))
    request = text_of(postman.last(bob.email, "your move (move 2)"))
    assert "alice says: Good luck!" in request and key[alice.id] not in request and "Alice" not in request
    body = f"Well played, I give up. (My key: {key[bob.id].lower()}.)\n\nOn Monday, pbem wrote:\n> hi\n"
    postman.command(bob.email, f"cambio resign {game.id} bob {key[bob.id]}", body)
    postman.settle()
    assert "Your comment goes to the other players." in text_of(postman.last(bob.email, "Re: cambio resign"))
    said = "Well played, I give up. (My key: ********.)"
    assert f"bob says: {said}" in text_of(postman.last(alice.email, "game over"))
    db.session.rollback()
    entries = db.session.scalars(select(Move).where(Move.game_id == game.id).order_by(Move.number)).all()
    assert [(m.kind, m.comment) for m in entries] == [("move", "Good luck!"), ("resign", said)]


def test_words_under_an_accepted_draw_reach_the_offerer(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = started_cambio(postman, alice, bob)
    postman.reply(postman.last(alice.email, "your move (move 1)"), alice.email, "draw offer")
    postman.settle()
    postman.reply(postman.last(bob.email, "alice offers a draw"), bob.email, "draw accept", "Fair enough.")
    postman.settle()
    db.session.rollback()
    assert db.session.get(Game, game.id).result["results"] == ["draw", "draw"]
    assert "bob says: Fair enough." in text_of(postman.last(alice.email, "game over"))


def test_a_draw_offer_by_mail_is_refused_where_draws_make_no_sense(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("easyslider", [alice, bob], {"rounds": 1})
    db.session.commit()
    postman.settle()
    request = postman.last(alice.email, "your move")
    postman.reply(request, alice.email, "draw offer")
    postman.settle()
    answer = text_of(postman.last(alice.email, "Re: "))
    assert "There are no draws in Easy Slider: every player plays their own board" in answer
    db.session.rollback()
    assert db.session.get(Game, game.id).draw_offered_by is None
    assert not [m for m in postman.sink.messages(bob.email) if "offers a draw" in str(m["Subject"])]


def test_box_off_mails_offer_no_draw_and_the_answer_writes_the_move_as_the_record_does(
    postman: Postman, players
) -> None:
    alice, bob, _ = players
    game = play.create_game("boxoff", [alice, bob], {}, seed=5)  # a2-b2 is a legal first move.
    db.session.commit()
    postman.settle()
    request = postman.last(alice.email, "your move (move 1)")
    assert "Other answers: resign, show, help." in text_of(request)
    assert "draw offer" not in text_of(request) and "draw offer" not in html_of(request)
    postman.reply(request, alice.email, "B2 a2")
    postman.settle()
    answer = text_of(postman.last(alice.email, "Re: "))
    assert f"Your move a2-b2 (move 1) in Box Off #{game.id} is played." in answer
    assert "Other answers: resign, show, help." in answer
    assert moves_of(game.id) == ["a2-b2"]
