"""The analysis board's reads: a tried line from any position of a game's record, answered from the
engine without changing the game; bounded; refused where it would show what the viewer may not see."""

from __future__ import annotations

import json

from flask import Flask

import games
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import analysis, play
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient


def tried(web: WebClient, game_id: int, *moves: str, **params: str) -> tuple[int, dict]:
    query = "&".join([*(f"move={m}" for m in moves), *(f"{k}={v}" for k, v in params.items())])
    answer = web.get(f"/games/{game_id}/analysis?{query}", headers={"Accept": "application/json"})
    return answer.status_code, json.loads(answer.data)


def test_a_line_is_tried_from_any_position_and_the_game_is_left_as_it_was(app: Flask, ctx: Flask,
                                                                          players) -> None:
    alice, bob, _carol = players
    game = play.create_game("cambio", [alice, bob], {"size": 4})
    db.session.commit()
    for user, move in ((alice, "b4"), (bob, "b1"), (alice, "c4")):
        play.submit(game.id, user, move, "web")
    version = game.version
    visitor = WebClient(app)

    status, answer = tried(visitor, game.id, "B2", "c1")
    assert status == 200 and answer["ok"]
    assert answer["at"] == answer["last"] == 3 and answer["line"] == ["b2", "c1"]
    assert answer["words"] == "bob (X) to move." and answer["mover"] == 1
    assert answer["moves"] and 'data-move="' in answer["svg"]

    status, answer = tried(visitor, game.id, "b4", at="0")  # From the start of the record.
    assert status == 200 and answer["at"] == 0 and answer["words"] == "bob (X) to move."

    status, answer = tried(visitor, game.id, "b2", "b2")
    assert status == 400 and "is not legal after b2: b2 already holds" in answer["message"]
    status, answer = tried(visitor, game.id, *(["b2"] * (analysis.MAX_LINE + 1)))
    assert status == 400 and f"at most {analysis.MAX_LINE} moves" in answer["message"]

    db.session.expire_all()
    game = db.session.get(Game, game.id)
    assert game.version == version and len(game.moves) == 3  # Nothing played.


def test_the_boards_of_a_running_easy_slider_stay_hidden_until_the_end(app: Flask, ctx: Flask,
                                                                       players) -> None:
    alice, bob, carol = players
    game = play.create_game("easyslider", [alice, bob], {"rounds": 1})
    db.session.commit()
    play.submit(game.id, bob, "d1", "web")
    web_alice, web_carol = signed_in(app, alice, carol)
    for web in (web_alice, web_carol, WebClient(app)):
        status, answer = tried(web, game.id, seat="1")
        assert status == 403 and "opens when it is over" in answer["message"] and "svg" not in answer
        assert 'id="analysis-open"' not in web.get(f"/games/{game.id}").get_data(as_text=True)

    play.resign(game.id, alice, "web")
    status, answer = tried(web_carol, game.id, "d2", seat="1", at="1")
    assert status == 200 and answer["line"] == ["d2"] and "Seat 2" not in answer["words"]
    assert 'id="analysis-open"' in web_carol.get(f"/games/{game.id}").get_data(as_text=True)


def test_a_private_game_is_not_analysed_by_strangers(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = play.create_game("truchet", [alice, bob], {"size": 3}, public=False)
    db.session.commit()
    (web_carol,) = signed_in(app, carol)
    assert web_carol.get(f"/games/{game.id}/analysis").status_code == 404


def test_tries_are_limited_per_reader(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    game = play.create_game("cambio", [alice, bob], {"size": 3})
    db.session.commit()
    app.config["PBEM"]["ratelimit"]["analysis_per_reader"] = "3 per minute"
    visitor, (web_alice,) = WebClient(app), signed_in(app, alice)
    assert [tried(visitor, game.id, "b3")[0] for _ in range(4)] == [200, 200, 200, 429]
    assert tried(web_alice, game.id, "b3")[0] == 200  # Counted per signed-in player, else per address.


def test_every_game_can_be_analysed_once_the_viewer_may_see_it_all(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    visitor = WebClient(app)
    for slug in ("boxoff", "cambio", "carreaux", "easyslider", "truchet"):
        game = play.create_game(slug, [alice, bob], {})
        db.session.commit()
        engine = games.get(slug)
        if not engine.open_information:
            play.resign(game.id, alice, "web")
        status, start = tried(visitor, game.id, seat="1")
        assert status == 200 and start["moves"], slug
        status, after = tried(visitor, game.id, start["moves"][0], seat="1")
        assert status == 200 and after["line"] == start["moves"][:1], slug  # Listed moves are canonical.
