"""The exact words of the two mails a move by mail produces: the answer to the mover and the move
request to the opponent, text and HTML, byte for byte.  Rendering them is tuned for speed; what they
say must not move by a character."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail
from pbem.game import clock, play
from pbem.mailout import tokens
from tests.server.test_mail_play import Postman, start_postman


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink, seen from the players' side."""
    yield from start_postman(app, sink)


def _stored(kind: str, to: str) -> OutboxMail:
    """The newest mail of ``kind`` to ``to`` as the outbox holds it: its text and HTML as rendered."""
    return db.session.scalars(
        select(OutboxMail).where(OutboxMail.kind == kind, OutboxMail.to_addr == to)
        .order_by(OutboxMail.id.desc())
    ).first()


# Bob's legal moves after alice's a2, in the engine's order.
LEGAL = ["a3", "a4", "b1", "b2", "b3", "b4", "b5", "c1", "c2", "c3", "c4", "c5", "d1", "d2", "d3", "d4", "d5",
         "e2", "e3", "e4"]

BOARD = """Cambio 5x5

    a b c d e
  +-----------+
5 | . . . . . | 5
4 | . . . . . | 4
3 | . . . . . | 3
2 | X . . . . | 2
1 | . . . . . | 1
  +-----------+
    a b c d e

{legend}
Last move: O placed an X cube on a2.
Placement phase: X (seat 2) to place an O cube.
Placements still to make: O 3, X 4.
"""

LAYOUT = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>pbem</title></head>
<body style="font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; color: #222; max-width: 44em;">
{content}
<p style="color: #777; font-size: 12px;">pbem, the play-by-email server · answer by replying to this mail</p>
</body>
</html>"""

TEXT_LEGEND = "O = seat 1's cubes, X = seat 2's cubes, . = neutral cube"
HTML_LEGEND = "O = seat 1&#39;s cubes, X = seat 2&#39;s cubes, . = neutral cube"


def test_the_answer_and_the_move_request_of_a_mailed_move_word_for_word(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 5}, seed=11)
    db.session.commit()
    postman.settle()
    postman.reply(postman.last(alice.email, "your move (move 1)"), alice.email, "a2 #1",
                  'Good luck <3 & "fun"')
    postman.settle()
    db.session.rollback()
    base = "http://127.0.0.1:5000"
    url = f"{base}/games/{game.id}"
    link = f"{base}/m/{tokens.move_link_token(game.id, 1, bob, 2)}"
    text_board = BOARD.format(legend=TEXT_LEGEND)
    html_board = BOARD.format(legend=HTML_LEGEND)

    answer = _stored("answer", alice.email)
    answer_text = (
        f"Your move a2 (move 1) in Cambio #{game.id} is played. Your comment goes to the other players.\n\n"
        f"Cambio #{game.id}, move 2: bob to move.\n\n{text_board}\nThe game on the web: {url}\n"
    )
    assert answer.body_text == answer_text
    answer_pre = answer_text.replace(TEXT_LEGEND, HTML_LEGEND)
    assert answer.body_html == LAYOUT.format(content=(
        "\n<pre style=\"font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 14px; "
        f"line-height: 1.25; white-space: pre-wrap;\">{answer_pre}</pre>\n"
    ))

    request = _stored("your-move", bob.email)
    # Both clocks: alice's at rest, bob's running to his deadline.
    bob_clock = clock.status(db.session.get_one(Game, game.id).seats[1], "UTC")
    clocks = f"Clocks: alice: 3 days per move, not running; You: {bob_clock}."
    assert request.body_text == (
        'alice played a2.\nalice says: Good luck <3 & "fun"\n\n'
        f"It is your move in Cambio #{game.id} (move 2); you play X. Time left: 2 days 23 hours.\n"
        f"{clocks}\n\n"
        f"{text_board}\n"
        f"Legal moves: {', '.join(LEGAL)}\n\n"
        "To move, reply to this mail with your move on the first line, for example:\n\n    a3 #2\n\n"
        '"#2" is optional: with it the move is played only if the game is still at move 2.\n'
        "Anything you write under the move line goes to the other players as your comment.\n"
        "Other answers: resign, draw offer, show, help.\n"
        'Conditional moves: under your move, add lines like "if c4 then d4" (if your opponent\n'
        'answers c4, d4 is played for you at once); "help" tells more.\n\n'
        f"Or play with one click: {link}\n\n"
        f"The game on the web: {url}\n"
        "Players: seat 1 alice (O), seat 2 bob (X)"
    )
    links = "".join(
        f'\n<a href="{link}?move={move}" style="font-family: monospace; margin-right: .6em;">{move}</a>'
        for move in LEGAL
    )
    assert request.body_html == LAYOUT.format(content=(
        "\n<p>alice played <b>a2</b>.</p>\n"
        "<p>alice says: <i>Good luck &lt;3 &amp; &#34;fun&#34;</i></p>\n\n"
        f"<p>It is your move in Cambio #{game.id} (move 2); you play X. Time left: 2 days 23 hours.</p>\n"
        f"<p>{clocks}</p>\n"
        "<pre style=\"font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 14px; "
        f"line-height: 1.2;\">{html_board}</pre>\n\n\n"
        f"<p>Legal moves (one click each, then confirm):\n{links}\n</p>\n\n"
        f'<p><a href="{link}">Choose your move on the web</a></p>\n'
        "<p>To move by mail, reply with your move on the first line, for example\n"
        "<code>a3 #2</code>. <code>#2</code> is optional: with it the move is\n"
        "played only if the game is still at move 2. Anything you write under the move line goes to the\n"
        "other players as your comment. Other answers: <code>resign</code>, <code>draw offer</code>, "
        "<code>show</code>,\n<code>help</code>.</p>\n"
        "<p>Players: seat 1 alice (O), seat 2 bob (X)\n"
        f'· <a href="{url}">the game on the web</a></p>\n'
    ))
