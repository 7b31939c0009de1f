"""The final board of a game the server ended (a resignation, a loss on time, a solitaire game
abandoned) names nobody to move and offers no move, wherever a player sees it: the game-over mail, the
answer to the mail that resigned, the text record, the API, the game page and its replay.  The engine's
state still has a player to move in such a game; its rules did not end it."""

from __future__ import annotations

import email
import html
import re
from email.message import Message
from email.policy import default as default_policy

import pytest
from flask import Flask

import games
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from pbem.mailout import outbox
from pbem.mailout.tokens import move_link_token
from tests.games.test_final_board import MOVER
from tests.server.archived import SMALL, finished
from tests.server.test_api import Client, server, tokens  # noqa: F401  (the server and tokens fixtures)
from tests.server.test_mail_play import Postman, postman, text_of  # noqa: F401  (the postman fixture)
from tests.server.webclient import WebClient

TURNS = ("cambio", "carreaux", "truchet")  # Games of turns, which a time-out ends.


def game_over_mails(sink, game: Game) -> list[Message]:
    """The game-over mail each player of ``game`` received through the SMTP sink."""
    outbox.deliver_due()
    found = []
    for seat in game.seats:
        [mail] = [email.message_from_bytes(m.as_bytes(), policy=default_policy)
                  for m in sink.messages(seat.user.email) if "game over" in m["Subject"]]
        found.append(mail)
    return found


def board_lines(game: Game) -> list[str]:
    """The lines of the final board that say nothing of a mover (the board, its legend, the counts), as
    the engine draws the position for a game in progress."""
    engine = games.get(game.engine)
    state = engine.load(game.state)
    drawn = engine.render_text(state, None)
    if "The deal" in drawn:
        # While several play one deal, a spectator sees the deal alone: each board is drawn for its seat.
        drawn = "".join(engine.render_text(state, seat.number) for seat in game.seats)
    assert MOVER.search(drawn), "the final position has a mover in the engine's eyes"
    return [line for line in drawn.splitlines()
            if not MOVER.search(line) and not line.startswith(("Easy Slider - ", "Others: "))]


def assert_final_board(text: str, game: Game) -> None:
    """``text`` holds the final board of ``game`` and nothing that asks anyone to move."""
    lines = text.splitlines()
    for line in board_lines(game):
        assert line in lines, f"{line!r} is missing from:\n{text}"
    assert not MOVER.search(text), text


@pytest.mark.parametrize("slug", sorted(SMALL))
def test_the_game_over_mail_after_a_resignation_shows_the_board_with_nobody_to_move(
        ctx: Flask, players, sink, slug: str) -> None:
    alice, bob, _ = players
    game = finished(slug, [alice, bob], end="resign", moves=2)
    assert game.result["reason"].endswith("resigned")
    for mail in game_over_mails(sink, game):
        assert_final_board(text_of(mail), game)


@pytest.mark.parametrize("slug", TURNS)
def test_the_game_over_mail_after_a_loss_on_time_shows_the_board_with_nobody_to_move(
        ctx: Flask, players, sink, slug: str) -> None:
    alice, bob, _ = players
    game = play.create_game(slug, [alice, bob], SMALL[slug], seed=2)
    db.session.commit()
    engine = games.get(slug)
    for user in (alice, bob):  # Both have moved: running out of time now loses (before, it aborts).
        db.session.rollback()
        running = db.session.get_one(Game, game.id)
        seat = running.seat_of(user).number
        play.submit(game.id, user, engine.moves(engine.load(running.state), seat)[0], "web")
    play.time_out(game.id, 0)
    db.session.rollback()
    game = db.session.get(Game, game.id)
    assert game.status == "finished" and "did not move in time" in game.result["reason"]
    for mail in game_over_mails(sink, game):
        assert_final_board(text_of(mail), game)


def test_an_abandoned_solitaire_game_shows_its_board_with_nothing_to_play(ctx: Flask, players, sink) -> None:
    alice, _, _ = players
    game = play.create_game("boxoff", [alice], {}, seed=2)
    db.session.commit()
    play.time_out(game.id, 0)
    db.session.rollback()
    game = db.session.get(Game, game.id)
    assert game.status == "abandoned"
    [mail] = game_over_mails(sink, game)
    assert_final_board(text_of(mail), game)
    assert "48 tiles left when the game ended" in text_of(mail)


def test_a_move_mailed_after_a_resignation_is_answered_with_the_board_nobody_is_to_move_on(
        postman: Postman, players) -> None:  # noqa: F811
    alice, bob, _ = players
    game = play.create_game("carreaux", [alice, bob], {})
    db.session.commit()
    postman.settle()
    request = postman.last(alice.email, "your move (move 1)")
    postman.reply(request, alice.email, "resign")
    postman.settle()
    postman.reply(request, alice.email, "a5")
    postman.settle()
    db.session.rollback()
    game = db.session.get(Game, game.id)
    answer = text_of(postman.last(alice.email, "Re: "))
    assert "is over; no more moves" in answer and "the final position:" in answer
    assert_final_board(answer, game)


def test_the_text_record_of_a_game_lost_on_time_ends_with_a_board_nobody_is_to_move_on(
        app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("carreaux", [alice, bob], end="time", moves=3)
    text = WebClient(app).get(f"/games/{game.id}.txt").get_data(as_text=True)
    final = text.split("\nFinal board:\n", 1)[1]
    assert_final_board(final, game)


def test_the_api_gives_a_resigned_game_board_with_nobody_to_move(
        server: str, tokens, ctx: Flask, players) -> None:  # noqa: F811
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], end="resign", moves=1)
    for handle in ("alice", "bob"):
        status, data = Client(server, tokens[handle]).call("GET", f"/api/v1/games/{game.id}")
        assert status == 200 and data["status"] == "finished"
        assert_final_board(data["board"], game)


def svg_words(page: str) -> str:
    """The words of a page's boards: their titles and labels, which a screen reader reads out."""
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert svgs, "no board on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", svg)) for svg in svgs)


@pytest.mark.parametrize("slug", TURNS)
def test_the_game_page_and_the_replay_end_on_a_board_nobody_is_to_move_on(
        app: Flask, ctx: Flask, players, slug: str) -> None:
    alice, bob, _ = players
    game = finished(slug, [alice, bob], end="resign", moves=2)
    web = WebClient(app)
    web.sign_in(alice)
    last = len(game.moves)
    for path in (f"/games/{game.id}", f"/games/{game.id}?move={last}", f"/games/{game.id}/replay/{last}"):
        page = web.get(path).get_data(as_text=True)
        words = svg_words(page)
        assert not MOVER.search(words), f"{path}: {words}"
        assert "data-move=" not in page, path
    # A position before the end is a position of the game in progress, with its mover.
    assert MOVER.search(svg_words(web.get(f"/games/{game.id}/replay/1").get_data(as_text=True)))


def test_a_move_link_opened_after_a_resignation_shows_a_board_nobody_is_to_move_on(
        app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    play.resign(game.id, bob, "web")
    # Alice's one-click link from her move request, opened after bob resigned.
    page = WebClient(app).get("/m/" + move_link_token(game.id, 0, alice, 1, "b3"))
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "Confirm" not in text
    words = svg_words(text)
    assert "Cambio 3x3" in words and not MOVER.search(words), words
    assert "data-move=" not in text
