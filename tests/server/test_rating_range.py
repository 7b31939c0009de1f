"""Ratings in the lobby and open seats bounded by rating: the creator's rating in each open game, the
range on the new-game form and in the lobby, and a seat out of range refused with the reason on the web,
by mail and through the API (and taken when in range)."""

from __future__ import annotations

from flask import Flask

from pbem.core.extensions import db
from pbem.core.models import Game, Rating, User, utcnow
from pbem.lobby import challenges
from tests.server.conftest import give_mail_key
from tests.server.test_api import Client, server, tokens  # noqa: F401 (fixtures)
from tests.server.test_mail_play import Postman, postman, text_of  # noqa: F401 (fixture)
from tests.server.test_web_games import new_game_form, signed_in
from tests.server.test_web_games import text_of as page_text


def rate(user: User, engine: str, rating: float) -> None:
    """Give ``user`` a settled rating in ``engine`` (not provisional: many games, lately)."""
    db.session.add(Rating(user_id=user.id, engine=engine, rating=rating, deviation=60.0, games=30,
                          last_game_at=utcnow()))
    db.session.commit()


def test_a_rating_range_on_the_web_form_and_in_the_lobby(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    rate(alice, "cambio", 1712.4)
    rate(bob, "cambio", 1320)
    web_alice, web_bob, web_carol = signed_in(app, alice, bob, carol)

    refused = web_alice.post("/games/new", new_game_form(**{"seat-1": "", "min_rating": "1800",
                                                             "max_rating": "1400"}))
    assert refused.status_code == 400 and "The lowest rating (1800) is above the highest (1400)." in \
        page_text(refused)
    assert 'value="1800"' in page_text(refused)  # What was written is kept.
    refused = web_alice.post("/games/new", new_game_form(min_rating="1400"))
    assert refused.status_code == 400 and "this game has none" in page_text(refused)  # No open seat.

    created = web_alice.post("/games/new", new_game_form(**{"seat-1": "", "min_rating": "1500",
                                                             "max_rating": "1900"}))
    assert created.status_code == 302
    game = db.session.query(Game).order_by(Game.id.desc()).first()
    assert (game.min_rating, game.max_rating) == (1500, 1900)
    lobby = page_text(web_carol.get("/lobby"))
    row = lobby[lobby.index(f'id="open-{game.id}"'):]
    assert ">alice</a> <span class=\"rating\">1712</span>" in row and "1500\u20131900" in row

    # bob (1320) is refused with the reason; carol, unrated (1500), takes the seat.
    answer = web_bob.post(f"/games/{game.id}/take", json=True)
    assert answer.status_code == 403 and answer.json["code"] == "out-of-range"
    assert answer.json["message"] == (f"Game #{game.id} is open to players rated 1500\u20131900 in Cambio; "
                                      "your Cambio rating is 1320.")
    assert web_carol.post(f"/games/{game.id}/take", json=True).json["ok"] is True
    assert db.session.get(Game, game.id).status == "active"


def test_a_seat_out_of_range_is_refused_by_mail_and_through_the_api(
        app: Flask, ctx: Flask, players, server, tokens, postman: Postman) -> None:  # noqa: F811
    alice, bob, _carol = players
    rate(bob, "cambio", 1320)
    api_alice, api_bob = Client(server, tokens["alice"]), Client(server, tokens["bob"])
    status, made = api_alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", None],
                                                           "max_rating": 1300})
    assert status == 201 and (made["min_rating"], made["max_rating"]) == (None, 1300)
    status, lobby = api_bob.call("GET", "/api/v1/lobby")
    assert status == 200
    [entry] = [e for e in lobby["games"] if e["game"]["id"] == made["id"]]
    assert (entry["creator"], entry["creator_rating"], entry["rating_range"]) == \
        ("alice", "1500?", "up to 1300")

    status, refused = api_bob.call("POST", f"/api/v1/games/{made['id']}/take")
    assert status == 403 and refused["code"] == "out-of-range" and "your Cambio rating is 1320" in \
        refused["error"]
    postman.command(bob.email, f"cambio join {made['id']} bob {give_mail_key(bob)}")
    postman.settle()
    answer = text_of(postman.last(bob.email, "Re:"))
    assert f"Game #{made['id']} is open to players rated up to 1300 in Cambio; your Cambio rating is 1320." \
        in answer
    assert db.session.get(Game, made["id"]).status == "waiting"

    # In range: a game open to 1300 and more is joined by mail, and starts.
    game = challenges.new_game(alice, "cambio", [alice, None], min_rating=1300)
    postman.command(bob.email, f"cambio join {game.id} bob {give_mail_key(bob)}")
    postman.settle()
    assert f"You took a seat: Cambio #{game.id} has started" in text_of(postman.last(bob.email, "Re:"))
    assert db.session.get(Game, game.id).status == "active"
