"""The pages read what they show in a fixed number of statements, however long the record or however
many players and games: a page that read each player or move on its own would slow down as games grow."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask
from sqlalchemy import event

from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play, queries, replay
from pbem.lobby import challenges
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient


@contextmanager
def statements() -> Iterator[list[str]]:
    """The SQL statements the database is sent while the block runs."""
    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        sent.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def count(client: WebClient, path: str) -> int:
    """How many statements answering ``path`` takes (the page answered 200)."""
    with statements() as sent:
        assert client.get(path).status_code == 200
    return len(sent)


def play_moves(game_id: int, moves: int, seed: int = 1) -> None:
    """``moves`` random legal moves through the move path, fewer if the game ends first."""
    rng = random.Random(seed)
    for _ in range(moves):
        game = db.session.get(Game, game_id)
        if game.status != "active":
            return
        engine = queries.engine_of(game)
        state = queries.state_of(game)
        (seat,) = sorted(engine.to_move(state))[:1]
        user = game.seats[seat].user
        move = rng.choice(engine.moves(state, seat))
        db.session.rollback()
        play.submit(game_id, user, move, "web")
        db.session.remove()


def test_the_game_page_reads_as_much_for_a_long_record_as_for_a_short_one(app: Flask, ctx: Flask,
                                                                        players) -> None:
    alice, bob, carol = players
    game_id = challenges.new_game(alice, "truchet", [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    web_a, web_c = signed_in(app, alice, carol)
    visitor = WebClient(app)
    play_moves(game_id, 1)
    pages = [(web, f"/games/{game_id}{suffix}") for web in (web_a, web_c, visitor)
             for suffix in ("", "/live", "?move=1")]
    short = [count(web, path) for web, path in pages]
    play_moves(game_id, 12, seed=2)
    assert db.session.get(Game, game_id).ply >= 10
    assert [count(web, path) for web, path in pages] == short
    # A visitor's page is read in two statements (the game with its seats and their players, its record)
    # and the transaction's start.
    assert count(visitor, f"/games/{game_id}") <= 3


def test_the_game_page_reads_as_much_for_three_players_as_for_two(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    two = challenges.new_game(alice, "boxoff", [alice, bob], seed=3)
    challenges.accept(two.id, bob)
    three = challenges.new_game(alice, "boxoff", [alice, bob, carol], seed=3)
    challenges.accept(three.id, bob)
    challenges.accept(three.id, carol)
    (web_a,) = signed_in(app, alice)
    visitor = WebClient(app)
    for web in (web_a, visitor):
        assert count(web, f"/games/{two.id}") == count(web, f"/games/{three.id}")


def test_the_front_page_reads_as_much_for_many_games_as_for_one(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    visitor = WebClient(app)

    def new_game(opponent, seed: int) -> int:
        game = challenges.new_game(alice, "cambio", [alice, opponent], seed=seed)
        challenges.accept(game.id, opponent)
        return game.id

    first = new_game(bob, 1)
    play.resign(new_game(carol, 2), alice, "web")
    few = count(visitor, "/")
    for seed in range(3, 9):
        game_id = new_game(bob if seed % 2 else carol, seed)
        if seed % 3 == 0:
            play.resign(game_id, alice, "web")
    # Both counts are of a page rendered afresh: the lists changed since the visitor's last look.
    assert count(visitor, "/") == few
    page = visitor.get("/").get_data(as_text=True)
    assert page.count("/games/") >= 8 and f"/games/{first}" in page


def test_a_board_drawn_once_still_shows_each_viewer_their_own_targets(app: Flask, ctx: Flask,
                                                                     players) -> None:
    """A position drawn once is kept for the next page that shows it: the player to move still gets
    their targets, the others the same position without any, and a move shows the new position."""
    alice, bob, carol = players
    game_id = challenges.new_game(alice, "cambio", [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    to_move = queries.seats_to_move(db.session.get(Game, game_id))
    mover, waiting = (alice, bob) if 0 in to_move else (bob, alice)
    web_m, web_w, web_c = signed_in(app, mover, waiting, carol)
    path = f"/games/{game_id}"
    for _ in range(2):
        assert 'id="my-board"' in web_m.get(path).get_data(as_text=True)
        for web in (web_w, web_c, WebClient(app)):
            page = web.get(path).get_data(as_text=True)
            assert "<svg" in page and 'id="my-board"' not in page
    before = web_c.get(path).get_data(as_text=True)
    play_moves(game_id, 1)
    after = web_c.get(path).get_data(as_text=True)
    assert after.count("<svg") == before.count("<svg") and after != before
    assert 'id="my-board"' in web_w.get(path).get_data(as_text=True)


def test_the_replay_shows_each_position_once_drawn_as_the_engine_draws_it(app: Flask, ctx: Flask,
                                                                        players) -> None:
    """Stepping through a finished game shows a new board at each entry, the same one when asked again,
    and each the board the engine draws for that position."""
    alice, bob, _ = players
    game_id = challenges.new_game(alice, "cambio", [alice, bob], seed=5).id
    challenges.accept(game_id, bob)
    play_moves(game_id, 4)
    play.resign(game_id, db.session.get(Game, game_id).seats[0].user, "web")
    visitor = WebClient(app)
    svg = re.compile(r"<svg.*?</svg>", re.S)
    game = db.session.get(Game, game_id)
    engine = queries.engine_of(game)
    states = replay.states(game)
    # Positions are numbered by moves: the fourth move's position is the end, after the resignation.
    at_move = [*states[:4], states[-1]]
    seen = []
    for at in range(len(at_move)):
        board = svg.search(visitor.get(f"/games/{game_id}?move={at}").get_data(as_text=True)).group(0)
        # The last board of the game, which the server ended, is drawn as over: nobody is to move on it.
        assert board == str(engine.render_svg(at_move[at], None, targets=False, over=at == len(at_move) - 1))
        assert svg.search(visitor.get(f"/games/{game_id}?move={at}").get_data(as_text=True)).group(0) == board
        seen.append(board)
    assert len(set(seen[:5])) == 5  # Four placements: five different boards.
