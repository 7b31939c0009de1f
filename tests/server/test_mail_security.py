"""Who may play by mail, and what is never answered: tokens, senders, duplicates, loops, odd encodings.

Every message goes through the real listener and processor; what the players would notice is checked:
the moves recorded and the mails that arrive.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from email.message import EmailMessage

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, User
from pbem.game import play
from pbem.mailout import tokens
from tests.server.test_mail_play import Postman, moves_of, start_postman, text_of


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


@pytest.fixture
def game(postman: Postman, players) -> Game:
    """Cambio 3x3 between alice (to move) and bob; alice's move request has arrived."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    return game


def reply_mail(sender: str, to: str, body: str, **headers: str) -> EmailMessage:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, to, "Re: [pbem] Cambio: your move"
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(body)
    return msg


def statuses() -> list[str]:
    db.session.rollback()
    return [r.status for r in db.session.scalars(select(InboundMail).order_by(InboundMail.id))]


def answers_to(postman: Postman, address: str) -> list[str]:
    return [text_of(m) for m in postman.mails(address) if str(m["Subject"]).startswith("Re:")]


def test_a_valid_token_from_another_sender_is_refused(postman: Postman, game: Game, players) -> None:
    alice, bob, carol = players
    token_address = tokens.reply_address(game.id, 0, alice)
    postman.send(reply_mail(carol.email, token_address, "b3"))
    postman.send(reply_mail(bob.email, token_address, "b3"))
    postman.settle()
    assert moves_of(game.id) == []
    for intruder in (carol, bob):
        [answer] = answers_to(postman, intruder.email)
        assert "belongs to another player's mail" in answer and alice.email not in answer
    assert answers_to(postman, alice.email) == []


def test_a_reply_from_the_players_former_address_says_the_address_has_changed(
    postman: Postman, game: Game, players
) -> None:
    alice, _, _ = players
    request = postman.last(alice.email, "your move (move 1)")
    db.session.get(User, alice.id).email = "alice.new@example.org"
    db.session.commit()
    postman.reply(request, "alice@example.org", "b3")
    postman.settle()
    assert moves_of(game.id) == []
    # Told to the old address, which may be someone else's now: neither the new address nor the game.
    [answer] = answers_to(postman, "alice@example.org")
    assert "This account's mail address has changed" in answer and "another player" not in answer
    assert "alice.new" not in answer and "Legal moves" not in answer
    assert answers_to(postman, "alice.new@example.org") == []
    # The answer keeps the game mail's subject, so that it threads with the game.
    [refusal] = [m for m in postman.mails("alice@example.org") if str(m["Subject"]).startswith("Re:")]
    assert refusal["Subject"] == f"Re: [pbem] Cambio #{game.id}: your move (move 1)"
    # So does the answer to a reply sent to the commands' address instead.
    postman.command(alice.email.replace("alice@", "alice.new@"), f"Re: [pbem] Cambio #{game.id}: your move")
    postman.settle()
    assert str(postman.last("alice.new@example.org", "Re:")["Subject"]) == \
        f"Re: [pbem] Cambio #{game.id}: your move"
    # A subject kept as written still never carries back what could be a mail key, typed in a command
    # that could not be read.
    postman.command(alice.email, f"Re: [pbem] cambio mvoe {game.id} alice Kq7xw2mz9p4rt8hv b3")
    postman.settle()
    kept = str(postman.last(alice.email, "Re: [pbem] cambio mvoe")["Subject"])
    assert "Kq7xw2mz9p4rt8hv" not in kept and "********" in kept, kept


def _with_payload(token: str, game_id: int | None = None, seat: int | None = None,
                  user_id: int | None = None) -> str:
    """``token`` with its claims changed and its MAC kept, as a forger would try."""
    parsed = tokens.parse_reply(token)
    assert parsed is not None
    payload = tokens._PAYLOAD.pack(
        parsed.game_id if game_id is None else game_id,
        parsed.seat if seat is None else seat,
        parsed.user_id if user_id is None else user_id,
    )
    return base64.b32encode(payload + parsed.mac).decode().rstrip("=").lower()


def test_forged_tampered_and_revoked_tokens_are_refused(postman: Postman, game: Game, players,
                                                        runner: FlaskCliRunner) -> None:
    alice, bob, _ = players
    other = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    token = tokens.reply_token(game.id, 0, alice)
    flipped = token[:10] + ("a" if token[10] != "a" else "b") + token[11:]
    forged = [
        _with_payload(token, game_id=other.id),  # another game
        _with_payload(token, game_id=other.id + 1000),  # a game there is not (nothing said of it)
        _with_payload(token, seat=1),  # another seat
        _with_payload(token, user_id=bob.id),  # another user
        flipped,  # tampered
    ]
    for bad in forged:
        postman.send(reply_mail(alice.email, f"play+{bad}@pbem.localhost", "b3"))
    # A token the server did sign, but for a seat alice does not hold, plays nothing either.
    postman.send(reply_mail(alice.email, tokens.reply_address(game.id, 1, alice), "b3"))
    postman.settle()
    answers = answers_to(postman, alice.email)
    assert len(answers) == 6
    assert all("not a valid reply address" in a for a in answers[:5]), answers
    assert "It is not your move" in answers[5] or "not playing" in answers[5]
    assert moves_of(game.id) == [] and moves_of(other.id) == []

    # Renewing alice's token secret (the operator's command) revokes every reply address she was sent.
    old_address = tokens.reply_address(game.id, 0, alice)
    renewed = runner.invoke(main, ["user", "renew-tokens", "alice"])
    assert renewed.exit_code == 0 and "revoked" in renewed.stdout
    db.session.rollback()
    user = db.session.get(User, alice.id)
    revoked = reply_mail(alice.email, old_address, "b3")
    revoked.replace_header("Subject", f"Re: [pbem] Cambio #{game.id}: alice challenges you")
    postman.send(revoked)
    postman.settle()
    assert "expired" in answers_to(postman, alice.email)[-1] and moves_of(game.id) == []
    assert postman.last(alice.email, "Re:")["Subject"] == \
        f"Re: [pbem] Cambio #{game.id}: alice challenges you"
    postman.send(reply_mail(alice.email, tokens.reply_address(game.id, 0, user), "b3"))
    postman.settle()
    assert moves_of(game.id) == ["b3"]


def test_the_same_message_delivered_twice_is_applied_and_answered_once(
    postman: Postman, game: Game, players
) -> None:
    alice, _, _ = players
    to = tokens.reply_address(game.id, 0, alice)
    msg = reply_mail(alice.email, to, "b3", Message_ID="<twice@example.org>")
    postman.send(msg)
    postman.send(msg)
    postman.settle()
    assert moves_of(game.id) == ["b3"]
    assert len(answers_to(postman, alice.email)) == 1 and statuses() == ["processed"]


def test_a_strangers_mail_with_a_players_message_id_does_not_shadow_the_players_move(
    postman: Postman, game: Game, players
) -> None:
    """A stranger who sends first a mail bearing the Message-ID the player's move will have (seen in a
    quoted header, or guessed) does not make the player's move a duplicate: each sender's mail counts."""
    alice, _, _ = players
    to = tokens.reply_address(game.id, 0, alice)
    postman.send(reply_mail("mallory@evil.example", "pbem@pbem.localhost", "help",
                            Message_ID="<shadowed@example.org>"))
    postman.send(reply_mail(alice.email, to, "b3", Message_ID="<shadowed@example.org>"))
    postman.send(reply_mail(alice.email, to, "b3", Message_ID="<shadowed@example.org>"))  # Sent again.
    postman.settle()
    assert moves_of(game.id) == ["b3"]
    assert len(answers_to(postman, alice.email)) == 1 and len(statuses()) == 2


def test_mail_from_an_address_beyond_plain_ascii_is_refused_unanswered(postman: Postman, players) -> None:
    """No account may have such an address (sign-up and a change of address refuse it), so a command
    from one is refused, with a note, and not answered, however the address is written."""
    from tests.server.test_web_accounts import INTERNATIONAL

    for number, address in enumerate(INTERNATIONAL):
        raw = (f"From: {address}\r\nTo: pbem@pbem.localhost\r\nSubject: help\r\n"
               f"Message-ID: <intl-{number}@example.org>\r\nMIME-Version: 1.0\r\n"
               "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nhelp\r\n")
        postman.send_raw(raw.encode(), "sender@example.org", "pbem@pbem.localhost")
    postman.command(players[0].email, "help")
    postman.settle()
    db.session.rollback()
    rows = db.session.scalars(select(InboundMail).order_by(InboundMail.id)).all()
    assert [r.status for r in rows] == ["rejected"] * len(INTERNATIONAL) + ["processed"]
    assert all("beyond plain ASCII" in r.note for r in rows[:-1])
    assert [m["X-Pbem-Envelope-To"] for m in postman.sink.messages()] == [players[0].email]


def test_automatic_mail_and_our_own_mail_are_recorded_and_never_answered(
    postman: Postman, game: Game, players
) -> None:
    alice, _, _ = players
    to = tokens.reply_address(game.id, 0, alice)
    postman.send(reply_mail(alice.email, to, "I am away until Monday.", Auto_Submitted="auto-replied"))
    postman.send(reply_mail(alice.email, to, "b3", Precedence="bulk"))
    out_of_office = reply_mail(alice.email, to, "b3")
    out_of_office.replace_header("Subject", "Out of Office: [pbem] Cambio")
    postman.send(out_of_office)
    postman.send(reply_mail("MAILER-DAEMON@mx.example.org", to, "b3"))
    postman.send(reply_mail(alice.email, to, "b3"), mail_from="", to=to)  # the null sender of a bounce
    postman.send(reply_mail("pbem@pbem.localhost", to, "b3"))  # our own mail coming back
    postman.send(reply_mail("pbem@pbem.localhost", "pbem@pbem.localhost", "help"))
    postman.settle()
    assert statuses() == ["ignored"] * 7
    assert moves_of(game.id) == []
    assert answers_to(postman, alice.email) == [] and postman.mails("pbem@pbem.localhost") == []
    db.session.rollback()
    notes = [r.note for r in db.session.scalars(select(InboundMail).order_by(InboundMail.id))]
    assert "Auto-Submitted" in notes[0] and "null sender" in notes[4] and "own address" in notes[5]


def _raw_reply(alice: User, to: str, content_type: str, encoding: str, body: bytes) -> bytes:
    head = (
        f"From: Alice <{alice.email}>\r\nTo: {to}\r\nSubject: Re: [pbem] Cambio\r\n"
        f"MIME-Version: 1.0\r\nContent-Type: {content_type}\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
    )
    return head.encode() + body


def test_encodings_html_only_and_broken_mime_are_read(postman: Postman, game: Game, players) -> None:
    alice, bob, _ = players
    alice_to = tokens.reply_address(game.id, 0, alice)
    bob_to = tokens.reply_address(game.id, 1, bob)

    # Quoted-printable, with a non-ASCII comment.
    qp = _raw_reply(alice, alice_to, "text/plain; charset=utf-8", "quoted-printable",
                    b"b3 #1\r\nF=C3=BCr dich, Bj=C3=B6rn =E2=99=9F\r\n\r\n> It is your move\r\n")
    postman.send_raw(qp, alice.email, alice_to)
    postman.settle()
    assert moves_of(game.id) == ["b3"]
    assert "Für dich, Björn ♟" in text_of(postman.last(bob.email, "your move (move 2)"))

    # HTML only (as some webmail sends), the quote in a blockquote, base64-encoded.
    html = (
        "<html><body><div dir='ltr'>a2&nbsp;#2<br>nice one</div><div class='gmail_quote'>"
        "On Mon, alice wrote:<blockquote>It is your move (move 2)<br>Legal moves: a2</blockquote></div>"
        "</body></html>"
    )
    encoded = base64.encodebytes(html.encode()).replace(b"\n", b"\r\n")
    html_only = _raw_reply(bob, bob_to, "text/html; charset=utf-8", "base64", encoded)
    postman.send_raw(html_only, bob.email, bob_to)
    postman.settle()
    assert moves_of(game.id) == ["b3", "a2"]

    # Latin-1 text, base64, in a multipart whose closing boundary is missing.
    latin = base64.b64encode("c2 #3\nà bientôt\n".encode("latin-1"))
    broken = (
        b'--xyz\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: base64\r\n\r\n'
        + latin + b"\r\n"
    )
    raw = _raw_reply(alice, alice_to, 'multipart/alternative; boundary="xyz"', "7bit", broken)
    postman.send_raw(raw, alice.email, alice_to)
    postman.settle()
    assert moves_of(game.id) == ["b3", "a2", "c2"]
    assert "à bientôt" in text_of(postman.last(bob.email, "your move (move 4)"))

    # Garbage where the text should be: answered with a clear error, nothing lost or played.
    junk = _raw_reply(bob, bob_to, "multipart/mixed", "7bit", b"\x00\xff\xfe no boundary at all")
    postman.send_raw(junk, bob.email, bob_to)
    postman.settle()
    assert "found no command in your reply" in answers_to(postman, bob.email)[-1]
    assert moves_of(game.id) == ["b3", "a2", "c2"] and statuses()[-1] == "rejected"

    # An empty plain part beside the HTML one the move was written in: the HTML is read.
    alternative = (
        b'--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n \r\n\r\n'
        b'--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<div>b1 #4</div><blockquote>Your move'
        b'</blockquote>\r\n--alt--\r\n'
    )
    raw = _raw_reply(bob, bob_to, 'multipart/alternative; boundary="alt"', "7bit", alternative)
    postman.send_raw(raw, bob.email, bob_to)
    postman.settle()
    assert moves_of(game.id) == ["b3", "a2", "c2", "b1"], answers_to(postman, bob.email)[-1]


def test_a_signature_a_byte_order_mark_and_a_long_line_are_read_as_a_player_means(
    postman: Postman, game: Game, players
) -> None:
    alice, _, _ = players
    alice_to = tokens.reply_address(game.id, 0, alice)
    # Only a signature: no command, said as for an empty reply, rather than the name read as a move.
    signature = "-- \nAlice Example\nExample Ltd.\n\nSent from my iPhone\n"
    postman.send(reply_mail(alice.email, alice_to, signature))
    postman.settle()
    assert "found no command in your reply" in answers_to(postman, alice.email)[-1]
    # A first line of 5,000 characters is quoted back cut short; an invisible character in a move is
    # shown as a mark, never as a Python escape.
    postman.send(reply_mail(alice.email, alice_to, "x" * 5000))
    postman.send(reply_mail(alice.email, alice_to, "b\u200b3"))
    postman.settle()
    long, invisible = answers_to(postman, alice.email)[-2:]
    assert f"'{'x' * 200}…' was not played" in long and "x" * 201 not in long
    assert "'b\ufffd3' was not played" in invisible and "\\u" not in invisible
    # A byte-order mark (and a zero-width space) before the move is no part of it.
    bom = _raw_reply(alice, alice_to, "text/plain; charset=utf-8", "8bit",
                     "\ufeff \u200bb3 #1\u2060\r\n\r\n> It is your move\r\n".encode())
    postman.send_raw(bom, alice.email, alice_to)
    postman.settle()
    assert moves_of(game.id) == ["b3"], answers_to(postman, alice.email)[-1]
