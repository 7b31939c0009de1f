"""What the game page shows: no move targets once a game is over, draw offers only where they make sense,
the new position after a stale move, the side each player plays; the rules index and the header."""

from __future__ import annotations

import json
import re

import pytest
from flask import Flask
from sqlalchemy import select

import games
from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail
from pbem.game import play, queries
from pbem.lobby import challenges
from tests.server.test_web_games import signed_in, text_of
from tests.server.webclient import WebClient

TARGET = re.compile(r'data-move="|class="target"')


def two_player_game(slug: str, alice, bob) -> Game:
    game = challenges.new_game(alice, slug, [alice, bob], seed=3)
    challenges.accept(game.id, bob)
    return db.session.get(Game, game.id)


@pytest.mark.parametrize("slug", [e.slug for e in games.all()])
def test_a_finished_game_shows_no_move_targets_to_anyone(app: Flask, ctx: Flask, players, slug: str) -> None:
    alice, bob, carol = players
    game = two_player_game(slug, alice, bob)
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)
    mover = web_a if 0 in queries.seats_to_move(game) else web_b
    assert TARGET.search(mover.get(f"/games/{game.id}").get_data(as_text=True))  # Targets while it runs.
    # Bob resigns: the engine's state still has a player to move, but nobody may move any more.
    assert web_b.post(f"/games/{game.id}/resign").status_code == 303
    assert db.session.get(Game, game.id).status == "finished"
    for viewer in (web_a, web_b, web_c, WebClient(app)):
        for path in (f"/games/{game.id}", f"/games/{game.id}/live"):
            page = viewer.get(path).get_data(as_text=True)
            assert "<svg" in page and not TARGET.search(page), (path, page[:300])
            assert 'id="my-board"' not in page and 'id="legal-moves"' not in page


def test_draw_offers_only_between_two_players_on_one_board(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    web_a, web_b = signed_in(app, alice, bob)
    slider = two_player_game("easyslider", alice, bob)
    boxoff = challenges.new_game(alice, "boxoff", [alice, bob, carol], seed=3)
    challenges.accept(boxoff.id, bob)
    challenges.accept(boxoff.id, carol)
    for game, words in ((slider, "There are no draws in Easy Slider: every player plays their own board"),
                        (boxoff, "There are no draws in Box Off")):
        page = text_of(web_a.get(f"/games/{game.id}"))
        assert 'id="resign"' in page and "Offer a draw" not in page
        refused = web_a.post(f"/games/{game.id}/draw", {"answer": "offer"}, json=True)
        assert refused.status_code == 400 and refused.json["code"] == "no-draws"
        assert words in refused.json["message"]
        accept = web_b.post(f"/games/{game.id}/draw", {"answer": "accept"}, json=True)
        assert accept.json["code"] == "no-draws"
        assert db.session.get(Game, game.id).draw_offered_by is None
    # The rule sits in the help of the games it concerns.
    for slug in ("boxoff", "easyslider"):
        assert "There are no draw offers" in games.get(slug).help
    cambio = two_player_game("cambio", alice, bob)
    assert "Offer a draw" in text_of(web_a.get(f"/games/{cambio.id}"))


def test_a_stale_move_without_script_shows_the_new_position(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = two_player_game("cambio", alice, bob)
    web_a, web_b = signed_in(app, alice, bob)
    web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"})
    web_b.post(f"/games/{game.id}/move", {"move": "a2", "expect": "2"})
    stale = web_a.post(f"/games/{game.id}/move", {"move": "c2", "expect": "1"})
    page = text_of(stale)
    assert stale.status_code == 409 and "is at move 3" in page
    # The page answering the refusal is the new position: bob's reply listed, the form at move 3.
    assert re.search(r'name="expect" value="3"', page)
    assert re.search(r"bob</span>: <code>a2</code>", page)


@pytest.mark.parametrize(("slug", "sides"), [("cambio", ("O", "X")), ("carreaux", ("Red", "Blue")),
                                             ("truchet", ("Dark", "Light"))])
def test_each_player_is_told_their_side(app: Flask, ctx: Flask, players, slug: str, sides) -> None:
    alice, bob, _ = players
    game = two_player_game(slug, alice, bob)
    web_a, web_b = signed_in(app, alice, bob)
    for web, mine in ((web_a, sides[0]), (web_b, sides[1])):
        page = text_of(web.get(f"/games/{game.id}"))
        assert re.search(rf'id="my-side">You play <span class="side side-{mine.lower()}">{mine}</span>', page)
        # Next to each name in the players' table.
        for handle, side in (("alice", sides[0]), ("bob", sides[1])):
            badge = rf'title="{handle} plays {side}">{side}</span>\s*<a href="/players/{handle}"'
            assert re.search(badge, page)
    visitor = text_of(WebClient(app).get(f"/games/{game.id}"))
    assert "You play" not in visitor and f"alice plays {sides[0]}" in visitor
    # The mail asking for a move says it too.
    [request] = [m for m in db.session.scalars(db.select(OutboxMail).where(OutboxMail.kind == "your-move"))
                 if m.to_addr == alice.email]
    assert f"(move 1); you play {sides[0]}." in request.body_text
    assert f"Players: seat 1 alice ({sides[0]}), seat 2 bob ({sides[1]})" in request.body_text
    assert f"you play {sides[0]}" in request.body_html


def test_games_without_sides_name_none(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = two_player_game("easyslider", alice, bob)
    (web_a,) = signed_in(app, alice)
    page = text_of(web_a.get(f"/games/{game.id}"))
    assert "You play" not in page and 'class="side ' not in page


def test_rules_index_favicon_and_header(app: Flask, ctx: Flask, settings) -> None:
    visitor = WebClient(app)
    index = text_of(visitor.get("/rules"))
    for engine in games.all():
        row = re.search(rf'<tr id="rules-{engine.slug}">(.*?)</tr>', index, re.S)
        assert row, engine.slug
        assert f'href="/rules/{engine.slug}">{engine.title}</a>' in row.group(1)
        assert play.count_words(engine.players) in row.group(1) and engine.summary in row.group(1)
    assert "1 to 8 players" in index and "2 players" in index
    assert "<h1>Cambio</h1>" in text_of(visitor.get("/rules/cambio"))
    assert visitor.get("/rules/chess").status_code == 404
    home = text_of(visitor.get("/"))
    assert '<a href="/rules">Rules</a>' in home
    assert 'rel="icon" href="/static/favicon.svg"' in home
    icon = visitor.get("/favicon.ico")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml" and b"<svg" in icon.data
    icon.close()
    # The dev mailbox is linked only on a development server.
    assert "Dev mailbox" not in home
    dev = create_app({**settings, "server": {**settings["server"], "development": True}})
    page = text_of(WebClient(dev).get("/rules"))
    assert re.search(r'<a href="/mailbox" class="dev" id="dev-mailbox"[^>]*>Dev mailbox</a>', page)
    with dev.app_context():
        db.engine.dispose()


def test_the_legal_moves_offered_are_always_the_positions_own(app: Flask, ctx: Flask, players) -> None:
    # Legal moves are listed once per position and kept; the page must never offer a position's list in
    # another: after each move, the player to move is offered exactly what the engine allows now.
    alice, bob, _ = players
    game = two_player_game("truchet", alice, bob)
    engine = games.get("truchet")
    web = dict(zip((alice.id, bob.id), signed_in(app, alice, bob), strict=True))
    for _ in range(4):
        db.session.expire_all()
        game = db.session.get(Game, game.id)
        state = engine.load(game.state)
        (seat,) = engine.to_move(state)
        mover = game.seats[seat].user
        page = text_of(web[mover.id].get(f"/games/{game.id}"))
        offered = re.search(r'<script type="application/json" id="legal-moves">(.*?)</script>', page, re.S)
        assert offered is not None
        assert json.loads(offered.group(1)) == engine.moves(state, seat)
        play.submit(game.id, mover, engine.moves(state, seat)[0], "web")


def legal_list(page: str) -> re.Match[str] | None:
    """The game page's list of legal moves: whether it is open, its summary and the moves."""
    return re.search(r'<details class="legal-list" id="legal-list"( open)?>\s*'
                     r'<summary id="legal-count">([^<]*)</summary>\s*<p><code>([^<]*)</code>', page)


def test_the_legal_moves_are_listed_without_script_and_after_a_refusal(app: Flask, ctx: Flask,
                                                                       players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3})
    challenges.accept(game.id, bob)
    legal = games.get("cambio").moves(queries.state_of(db.session.get(Game, game.id)), 0)
    (web_a,) = signed_in(app, alice)
    listed = legal_list(text_of(web_a.get(f"/games/{game.id}")))
    assert listed is not None and not listed.group(1)  # Closed, a click away.
    assert listed.group(2) == f"{len(legal)} legal moves" and listed.group(3).split(", ") == legal
    # A move refused comes back with the list open, as the mail lists the moves.
    refused = web_a.post(f"/games/{game.id}/move", {"move": "a1", "expect": "1"})
    page = text_of(refused)
    assert refused.status_code == 400 and "corner" in page
    listed = legal_list(page)
    assert listed is not None and listed.group(1) == " open" and listed.group(3).split(", ") == legal
    # Past a hundred moves the page gives their number only (a Truchet of 5 tiles a side has more).
    truchet = two_player_game("truchet", alice, bob)
    mover = web_a if 0 in queries.seats_to_move(truchet) else signed_in(app, bob)[0]
    page = text_of(mover.get(f"/games/{truchet.id}"))
    count = len(json.loads(re.search(r'id="legal-moves">(.*?)</script>', page, re.S).group(1)))
    assert count > 100 and legal_list(page) is None
    assert f"{count} legal moves: too many to list here" in page


def test_the_cambio_placement_phase_is_explained_to_the_player_to_move(app: Flask, ctx: Flask,
                                                                     players) -> None:
    alice, bob, _ = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3, "placements": 2})
    challenges.accept(game.id, bob)
    web_a, web_b = signed_in(app, alice, bob)
    note = "Placement phase: O (seat 1) to place an X cube. Placements still to make: O 2, X 2."
    assert re.search(f'id="turn-note">{re.escape(note)}<', text_of(web_a.get(f"/games/{game.id}")))
    assert 'id="turn-note"' not in text_of(web_b.get(f"/games/{game.id}"))  # Not bob's turn.
    web_a.post(f"/games/{game.id}/move", {"move": "b1", "expect": "1"})
    note = "Placement phase: X (seat 2) to place an O cube. Placements still to make: O 1, X 2."
    assert re.search(f'id="turn-note">{re.escape(note)}<', text_of(web_b.get(f"/games/{game.id}")))
    # The move-request mail says it once: under the text board, which words it already.
    request = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == bob.email,
                                                          OutboxMail.kind == "your-move")
                                 .order_by(OutboxMail.id.desc())).first()
    assert request.body_text.count("Placement phase:") == 1
