"""Conditional moves on the web: the panel on the game page, its forms and the preview that building a
line by clicking reads; only their owner ever sees the lines (page, live fragment, preview, mails)."""

from __future__ import annotations

import json

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail
from pbem.game import play, queueing
from tests.server.test_api import Client, server, tokens  # noqa: F401 (fixtures)
from tests.server.test_web_games import signed_in, text_of
from tests.server.webclient import WebClient


def cambio(alice, bob) -> Game:
    game = play.create_game("cambio", [alice, bob], {"size": 4})
    db.session.commit()
    return game


def test_a_line_queued_and_deleted_on_the_page_is_seen_by_its_owner_only(app: Flask, ctx: Flask,
                                                                          players) -> None:
    alice, bob, carol = players
    game = cambio(alice, bob)
    web_alice, web_bob, web_carol = signed_in(app, alice, bob, carol)
    page = text_of(web_alice.get(f"/games/{game.id}"))
    assert "After your move you can queue your answers" in page and 'id="conditional-form"' not in page
    play.submit(game.id, alice, "b4", "web")

    answer = web_alice.post(f"/games/{game.id}/conditionals",
                            {"line": "if b1 then c4 then c1 then d2", "seat": "0"}, json=True)
    assert answer.status_code == 200 and json.loads(answer.data)["ok"]
    refused = web_alice.post(f"/games/{game.id}/conditionals", {"line": "if a1 then c4", "seat": "0"},
                             json=True)
    assert refused.status_code == 400 and "a1 is a corner" in json.loads(refused.data)["message"]
    web_alice.post(f"/games/{game.id}/conditionals", {"line": "if b2 then c4"})  # Without the script.
    page = text_of(web_alice.get(f"/games/{game.id}"))
    assert "<code>if b1 then c4 then c1 then d2</code>" in page and "<code>if b2 then c4</code>" in page

    for web in (web_bob, web_carol, WebClient(app)):
        for path in (f"/games/{game.id}", f"/games/{game.id}/live"):
            seen = text_of(web.get(path))
            assert "if b1 then c4" not in seen and "if b2 then c4" not in seen
    assert 'id="conditionals"' not in text_of(web_carol.get(f"/games/{game.id}"))  # Not playing.
    assert "None queued" not in text_of(web_bob.get(f"/games/{game.id}"))  # His move: nothing to queue.
    assert web_carol.get(f"/games/{game.id}/conditionals/preview?line=b1").status_code == 403

    web_alice.post(f"/games/{game.id}/conditionals/delete", {"line": "if b2 then c4", "seat": "0"})
    page = text_of(web_alice.get(f"/games/{game.id}"))
    assert "if b2 then c4" not in page and "if b1 then c4 then c1 then d2" in page

    play.submit(game.id, bob, "b1", "web")
    db.session.rollback()
    last = db.session.scalars(select(Move).order_by(Move.number.desc())).first()
    assert (last.text, last.via) == ("c4", "conditional")
    assert "(conditional)" in text_of(web_bob.get(f"/games/{game.id}"))  # Played moves are no secret.
    assert "<code>if c1 then d2</code>" in text_of(web_alice.get(f"/games/{game.id}"))
    assert "if c1 then d2" not in text_of(web_bob.get(f"/games/{game.id}"))
    bobs_mail = " ".join(m.body_text for m in db.session.scalars(
        select(OutboxMail).where(OutboxMail.to_addr == bob.email)))
    assert "if c1 then d2" not in bobs_mail and "if b1 then c4" not in bobs_mail

    web_alice.post(f"/games/{game.id}/conditionals/delete", {"all": "1", "seat": "0"})
    assert "None queued" in text_of(web_alice.get(f"/games/{game.id}"))


def test_the_preview_shows_where_a_line_leads(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    (web,) = signed_in(app, alice)
    start = json.loads(web.get(f"/games/{game.id}/conditionals/preview?line=&seat=0").data)
    assert start["ok"] and start["theirs"] and "b1" in start["moves"] and "b4" not in start["moves"]
    assert 'data-move="b1"' in start["svg"]
    after = json.loads(web.get(f"/games/{game.id}/conditionals/preview?line=if+b1&seat=0").data)
    assert after["line"] == "if b1" and not after["theirs"] and "b1" not in after["moves"]
    wrong = web.get(f"/games/{game.id}/conditionals/preview?line=if+b1+then+b1&seat=0")
    assert wrong.status_code == 400 and "b1 already holds" in json.loads(wrong.data)["message"]


def test_the_api_never_shows_a_players_lines_to_anyone_else(
    server: str, tokens, ctx: Flask, players  # noqa: F811 (the API's fixtures, imported above)
) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4 then c1 then d2"])
    path = f"/api/v1/games/{game.id}"
    for handle in ("bob", "carol"):
        status, seen = Client(server, tokens[handle]).call("GET", path)
        assert status == 200 and "if b1" not in json.dumps(seen) and '"c1", "d2"' not in json.dumps(seen)
    status, answer = Client(server, tokens["bob"]).call("POST", path + "/moves", {"move": "b1", "expect": 2})
    assert status == 201 and [m["text"] for m in answer["game"]["record"]] == ["b4", "b1", "c4"]
    assert "if c1" not in json.dumps(answer) and "then" not in json.dumps(answer)


def test_a_player_manages_their_lines_through_the_api_and_nobody_else_reads_them(
    server: str, tokens, ctx: Flask, players  # noqa: F811 (the API's fixtures, imported above)
) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    path = f"/api/v1/games/{game.id}/conditionals"
    api_alice, api_bob, api_carol = (Client(server, tokens[h]) for h in ("alice", "bob", "carol"))
    status, refused = api_alice.call("POST", path, {"lines": ["if b1 then c4"]})
    assert status == 400 and "It is your move" in refused["error"]  # Nothing to answer yet.
    play.submit(game.id, alice, "b4", "web")

    status, queued = api_alice.call("POST", path, {"lines": ["b1 then c4 then c1 then d2", "if b2 then c4"]})
    assert status == 201 and queued["lines"] == ["if b1 then c4 then c1 then d2", "if b2 then c4"]
    status, refused = api_alice.call("POST", path, {"lines": ["if c1 then c4", "if a1 then c4"]})
    assert status == 400 and "a1 is a corner" in refused["error"]
    assert api_alice.call("GET", path) == (200, queued)  # A refused batch queues none of its lines.
    assert api_bob.call("GET", path) == (200, {"lines": []})  # His own: none; hers are not his to read.
    status, stranger = api_carol.call("GET", path)
    assert status == 403 and stranger["code"] == "not-seated" and "b1" not in json.dumps(stranger)
    status, stranger = api_carol.call("DELETE", path)
    assert status == 403
    status, missing = api_alice.call("DELETE", path + "?line=if+e1")
    assert status == 400 and missing["code"] == "no-line"

    status, left = api_alice.call("DELETE", path + "?line=if+b2")
    assert status == 200 and left["lines"] == ["if b1 then c4 then c1 then d2"]
    status, moved = api_bob.call("POST", f"/api/v1/games/{game.id}/moves", {"move": "b1", "expect": 2})
    assert status == 201 and [m["text"] for m in moved["game"]["record"]] == ["b4", "b1", "c4"]
    assert api_alice.call("GET", path) == (200, {"lines": ["if c1 then d2"]})  # The line moved on.
    status, cleared = api_alice.call("DELETE", path)
    assert status == 200 and cleared["lines"] == []
