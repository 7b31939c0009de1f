"""A reply read as a person reads it, end to end (issue #27): the real move request from the sink is
answered over SMTP to the real listener, and what counts is what the players see: the move played, the
comment kept, what the opponent is told, and nothing of the mail answered passed on.  (The reading's
units are in test_mail_parse.py; the corpus of mail programs is test_mail_shapes.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from email.message import EmailMessage, Message

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, Move, User
from pbem.game import play
from tests.server.conftest import give_mail_key
from tests.server.test_mail_play import Postman, html_of, moves_of, start_postman, text_of


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


@pytest.fixture
def game(postman: Postman, players) -> tuple[Game, Message]:
    """Cambio 3x3 between alice (O, to move: a2, b1, b2, b3 or c2) and bob, and alice's move request."""
    alice, bob, _ = players
    started = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    request = postman.last(alice.email, "your move")
    assert "Legal moves: a2, b1, b2, b3, c2" in text_of(request)
    return started, request


def _reply(request: Message, sender: User, *, plain: str | None = None, html: str | None = None,
           charset: str = "utf-8", cte: str = "quoted-printable") -> EmailMessage:
    """A reply to ``request`` from ``sender``, with a plain part, an HTML part, or both."""
    msg = EmailMessage()
    msg["From"], msg["To"] = sender.email, str(request["Reply-To"])
    msg["Subject"] = "Re: " + str(request["Subject"])
    msg["In-Reply-To"] = msg["References"] = str(request["Message-ID"])
    if plain is not None:
        msg.set_content(plain, charset=charset, cte=cte)
    if html is not None:
        if plain is None:
            msg.set_content(html, subtype="html", charset=charset, cte=cte)
        else:
            msg.add_alternative(html, subtype="html", charset=charset, cte=cte)
    return msg


def _gmail_above(words: str, request: Message) -> str:
    """``words`` above the request quoted as Gmail quotes it."""
    quoted = "\n".join(f"> {line}" if line else ">" for line in text_of(request).splitlines())
    return f"{words}\n\nOn Wed, Nov 25, 2026 at 4:46 PM pbem <pbem@pbem.localhost> wrote:\n\n{quoted}\n"


def _comment(game_id: int) -> str | None:
    db.session.rollback()
    return db.session.scalars(select(Move.comment).where(Move.game_id == game_id)).one()


def _news_for(postman: Postman, player: User) -> str:
    """What the opponent was told of the move: their move request."""
    return text_of(postman.last(player.email, "your move (move 2)"))


@pytest.mark.parametrize(("words", "comment"), [
    # A move in words: the line stays whole as the comment.
    ("I'll play b3, good game", "I'll play b3, good game"),
    ("My move: b3", "My move: b3"),
    # Decorated: the move's line holds nothing else, so it is no comment.
    ("*b3*", ""),
    ("b3 :)\nGood luck!", "Good luck!"),
    # Full-width, as a Japanese or Chinese keyboard writes it.
    ("ｂ３\nよろしくお願いします", "よろしくお願いします"),
    # A greeting first.
    ("Hi Bob,\n\nb3\n\nCheers, Alice", "Hi Bob,\n\nCheers, Alice"),
])
def test_a_move_is_played_as_a_person_reads_it(postman: Postman, players, game, words: str,
                                               comment: str) -> None:
    alice, bob, _ = players
    started, request = game
    postman.send(_reply(request, alice, plain=_gmail_above(words, request)))
    postman.settle()
    assert moves_of(started.id) == ["b3"], text_of(postman.last(alice.email, "Re: "))
    assert (_comment(started.id) or "") == comment
    news = _news_for(postman, bob)
    assert (f"alice says: {comment}\n" in news) if comment else ("alice says" not in news)


def test_two_moves_are_asked_about_and_nothing_is_played_or_passed_on(
    postman: Postman, players, game
) -> None:
    alice, bob, _ = players
    started, request = game
    before = len(postman.mails(bob.email))
    postman.send(_reply(request, alice, plain=_gmail_above("b3\nSorry, I mean b2", request)))
    postman.settle()
    answer = text_of(postman.last(alice.email, "Re: "))
    assert answer.startswith("Not done: I found two moves in your reply, b3 and b2; nothing was played.")
    assert "Legal moves: a2, b1, b2, b3, c2" in answer  # The position, as under every refused move.
    assert moves_of(started.id) == [] and len(postman.mails(bob.email)) == before
    # The answer to the question is read as any reply.
    postman.send(_reply(postman.last(alice.email, "Re: "), alice, plain="b2\n"))
    postman.settle()
    assert moves_of(started.id) == ["b2"]


def test_german_outlook_keeps_only_the_players_line_not_the_request_under_its_header_block(
    postman: Postman, players, game
) -> None:
    """The leak of issue #27: Outlook pastes the mail answered, unquoted, under "Von: / Gesendet: / An: /
    Betreff:"; the comment is the player's line, and nothing of the request (its one-click link, its
    reply address) reaches bob or the record."""
    alice, bob, _ = players
    started, request = game
    pasted = (
        "b3\n\nViel Glück – gutes Spiel!\n\n \n\nVon: pbem <pbem@pbem.localhost> \n"
        "Gesendet: Mittwoch, 25. November 2026 17:46\nAn: alice@example.org\n"
        f"Betreff: {request['Subject']}\n\n \n\n{text_of(request)}\n"
    )
    html = ("<html><body><div class=WordSection1><p class=MsoNormal>b3<o:p></o:p></p><p class=MsoNormal>"
            "Viel Glück – gutes Spiel!<o:p></o:p></p><div style='border:none;border-top:solid #E1E1E1 1.0pt;"
            "padding:3.0pt 0cm 0cm 0cm'><p class=MsoNormal><b>Von:</b> pbem &lt;pbem@pbem.localhost&gt; <br>"
            "<b>Gesendet:</b> Mittwoch, 25. November 2026 17:46<br><b>An:</b> alice@example.org</p></div>"
            f"{html_of(request)}</div></body></html>")
    postman.send(_reply(request, alice, plain=pasted, html=html, charset="windows-1252"))
    postman.settle()
    assert moves_of(started.id) == ["b3"]
    assert _comment(started.id) == "Viel Glück – gutes Spiel!"
    news = _news_for(postman, bob)
    assert "alice says: Viel Glück – gutes Spiel!\n" in news
    link = next(line for line in text_of(request).splitlines() if "/m/" in line).split()[-1]
    assert link not in news and str(request["Reply-To"]) not in news and "Gesendet" not in news


def test_outlook_for_android_pastes_the_request_with_no_header_at_all(
    postman: Postman, players, game
) -> None:
    """Only what the server sent tells the request apart from the player's words here."""
    alice, _, _ = players
    started, request = game
    pasted = f"b3\nBis morgen.\n\nOutlook für Android herunterladen<https://aka.ms/x>\n\n{text_of(request)}"
    postman.send(_reply(request, alice, plain=pasted, cte="base64"))
    postman.settle()
    assert moves_of(started.id) == ["b3"]
    assert _comment(started.id) == "Bis morgen."


def test_gmail_html_only_written_under_the_quote(postman: Postman, players, game) -> None:
    alice, bob, _ = players
    started, request = game
    html = ('<div dir="ltr"><div class="gmail_extra"><div class="gmail_quote">On Wed, Nov 25, 2026 at 4:46 '
            'PM, pbem <span dir="ltr">&lt;<a href="mailto:pbem@pbem.localhost">pbem@pbem.localhost</a>&gt;'
            '</span> wrote:<br>\n<blockquote class="gmail_quote" style="margin:0 0 0 .8ex;border-left:1px '
            f'#ccc solid;padding-left:1ex">{html_of(request)}</blockquote></div><br></div><div>b3</div>'
            '<div>Good luck!</div></div>')
    postman.send(_reply(request, alice, html=html))
    postman.settle()
    assert moves_of(started.id) == ["b3"], text_of(postman.last(alice.email, "Re: "))
    assert _comment(started.id) == "Good luck!"
    assert "alice says: Good luck!\n" in _news_for(postman, bob)


def test_a_german_gmail_attribution_wrapped_over_two_lines_is_not_read_as_the_move(
    postman: Postman, players, game
) -> None:
    alice, _, _ = players
    started, request = game
    quoted = "\n".join(f"> {line}" if line else ">" for line in text_of(request).splitlines())
    below = (f"pbem <pbem@pbem.localhost> schrieb am Mi., 25.\nNov. 2026 um 17:46 Uhr:\n\n{quoted}\n\n"
             "b3\nViel Glück!\n")
    postman.send(_reply(request, alice, plain=below))
    postman.settle()
    assert moves_of(started.id) == ["b3"]
    assert _comment(started.id) == "Viel Glück!"


def test_a_command_is_never_read_in_a_sentence(postman: Postman, players, game) -> None:
    """"Resign now? Never." resigns nothing: a command is only ever a line of its own."""
    alice, _, _ = players
    started, request = game
    postman.send(_reply(request, alice, plain=_gmail_above("Resign now? Never.\nStill thinking.", request)))
    postman.settle()
    db.session.rollback()
    assert db.session.get(Game, started.id).status == "active" and moves_of(started.id) == []
    assert "I found no command in your reply" in text_of(postman.last(alice.email, "Re: "))


def test_a_subject_commands_comment_is_read_as_a_replys(postman: Postman, players, game) -> None:
    """The body under a pbmserv-style command is its comment: the player's own words, read the same way
    (here over a mail pasted under German Outlook's header block)."""
    alice, bob, _ = players
    started, _ = game
    body = ("Gutes Spiel!\n\nVon: pbem <pbem@pbem.localhost>\nGesendet: Mittwoch, 25. November 2026 17:46\n"
            "An: alice@example.org\nBetreff: Re: cambio show\n\nCambio #1 is in play.\nOr play with one "
            "click: http://127.0.0.1:5000/m/TOKEN\n")
    postman.command(alice.email, f"cambio move {started.id} alice {give_mail_key(alice)} b3", body)
    postman.settle()
    assert moves_of(started.id) == ["b3"]
    assert _comment(started.id) == "Gutes Spiel!"
    assert "alice says: Gutes Spiel!\n" in _news_for(postman, bob)
