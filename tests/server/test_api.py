"""The JSON API over HTTP against a real server on a loopback port: a whole game between two programs,
refusals as JSON errors, tokens, rate limits, and the example bot."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from werkzeug.serving import make_server

from pbem import create_app
from pbem.accounts import apitokens
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import ApiToken, Game, User
from pbem.mailout import outbox
from tests.conftest import ROOT
from tests.server.test_sweep import text_of
from tests.server.test_web_games import signed_in


class Client:
    """An API client as a program would be one: HTTP to the server, a Bearer token, JSON."""

    def __init__(self, base: str, token: str | None) -> None:
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: object = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, dict]:
        """The status and the JSON answer of one call."""
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self.token is not None:
            sent["Authorization"] = f"Bearer {self.token}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, method=method, data=data, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                assert answer.headers["Content-Type"] == "application/json"
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as refused:
            assert refused.headers["Content-Type"] == "application/json", refused.read()
            self.last_headers = refused.headers
            return refused.code, json.load(refused)


@pytest.fixture
def server(app: Flask) -> Iterator[str]:
    """The app served over HTTP on a loopback port, in a thread; yields its base URL."""
    httpd = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    thread.join()
    httpd.server_close()


@pytest.fixture
def tokens(ctx: Flask, players) -> dict[str, str]:
    """An API token for each player."""
    return {user.handle: apitokens.create(user, "test")[1] for user in players}


def test_a_whole_game_of_cambio_between_two_api_clients(server: str, tokens, ctx: Flask) -> None:
    alice, bob = Client(server, tokens["alice"]), Client(server, tokens["bob"])
    status, game = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"]})
    assert status == 201 and game["status"] == "waiting" and game["rated"] is True
    assert [s["challenged"] for s in game["players"]] == [None, "bob"]
    status, waiting = bob.call("GET", "/api/v1/me/challenges")
    assert [(c["game"]["id"], c["challenger"]) for c in waiting["challenges"]] == [(game["id"], "alice")]
    status, game = bob.call("POST", f"/api/v1/games/{game['id']}/accept")
    # Seats are numbered from 1, as on the web and in the JSON record.
    assert status == 200 and game["status"] == "active" and game["your_seat"] == 2
    assert [s["seat"] for s in game["players"]] == [1, 2]
    # Both clocks are shown: the mover's running, the waiting player's at rest.
    assert [s["clock"].endswith("per move, not running") for s in game["players"]] == [False, True]
    path = f"/api/v1/games/{game['id']}"

    # Refusals, each a JSON error that changes nothing.
    assert bob.call("POST", path + "/moves", {"move": "b3", "expect": 1})[0] == 409  # Not bob's turn.
    status, error = alice.call("POST", path + "/moves", {"move": "z9", "expect": 1})
    assert status == 400 and error["code"] == "illegal" and "z9" in error["error"]
    assert "b3" in error["legal_moves"] and len(error["legal_moves"]) == 21
    status, error = alice.call("POST", path + "/moves", {"move": "b3", "expect": 7})
    assert status == 409 and error["code"] == "stale" and "move 7" in error["error"]
    status, error = alice.call("POST", path + "/moves", {"move": "", "expect": 1})
    assert status == 422 and error["code"] == "invalid" and "move" in error["fields"]

    # Both programs play random legal moves until the game ends, each when /me/turn says so.
    rng = random.Random(7)
    clients = {"alice": alice, "bob": bob}
    moves = 0
    while True:
        status, game = alice.call("GET", path)
        if game["status"] != "active":
            break
        movers = [s["player"] for s in game["players"] if s["to_move"]]
        client = clients[movers[0]]
        turn = client.call("GET", "/api/v1/me/turn")[1]["games"]
        assert [g["id"] for g in turn] == [game["id"]]
        mine = client.call("GET", path)[1]
        assert mine["your_turn"] and mine["board"] and mine["move_number"] == moves + 1
        sent = {"move": rng.choice(mine["legal_moves"]), "expect": mine["move_number"], "comment": "api"}
        status, answer = client.call("POST", path + "/moves", sent)
        assert status == 201, answer
        if moves == 0:  # The same request again is told that move 1 is in, not that it is not its turn.
            status, again = client.call("POST", path + "/moves", sent)
            assert status == 409 and again["code"] == "stale" and "already played as move 1" in again["error"]
            # Listed among bob's games in play (found from his unfinished seats), not among his finished.
            playing = alice.call("GET", "/api/v1/games?status=active&player=bob")[1]["games"]
            assert [g["id"] for g in playing] == [game["id"]]
            assert alice.call("GET", "/api/v1/games?status=finished&player=bob")[1]["games"] == []
        assert answer["move"]["number"] == moves + 1 and answer["game"]["your_turn"] is False
        moves += 1
        assert moves < 500
    assert game["status"] == "finished" and game["result"]["reason"]
    assert game["result"]["words"].startswith(("alice", "bob", "Drawn", "drawn"))
    assert len(game["record"]) == moves and {m["comment"] for m in game["record"]} == {"api"}
    assert {(m["via"], m["conditional"]) for m in game["record"]} == {("api", False)}
    assert [m["seat"] for m in game["record"][:2]] == [1, 2]
    assert game["legal_moves"] is None and game["your_turn"] is False
    assert alice.call("POST", path + "/moves", {"move": "b3"})[1]["code"] == "over"
    # The ratings moved by the result, and are provisional after one game.
    winner = "alice" if game["result"]["results"][0] == "win" else "bob"
    status, player = bob.call("GET", f"/api/v1/players/{winner}")
    (rating,) = player["ratings"]
    assert rating["rating"] > 1500 and rating["deviation"] < 350 and rating["provisional"]
    assert rating["display"] == f"{round(rating['rating'])}?" and rating["games"] == 1
    assert player["record"] == [{"game": "cambio", "wins": 1, "draws": 0, "losses": 0}]
    assert alice.call("GET", "/api/v1/games?status=active&player=bob")[1]["games"] == []
    finished = alice.call("GET", "/api/v1/games?status=finished&player=bob&game=cambio")[1]
    assert [g["id"] for g in finished["games"]] == [game["id"]] and finished["next"] is None
    # The archive's filters: by result, against an opponent, and by moves.
    loser = "bob" if winner == "alice" else "alice"
    path = f"/api/v1/games?player={winner}&opponent={loser}&result=win&min_moves={moves}"
    assert [g["id"] for g in alice.call("GET", path)[1]["games"]] == [game["id"]]
    assert alice.call("GET", f"/api/v1/games?player={winner}&result=loss")[1]["games"] == []
    status, error = alice.call("GET", "/api/v1/games?status=active&result=win")
    assert status == 422 and "result" in error["fields"]


def test_tokens_wrong_missing_and_revoked_are_refused(app: Flask, server: str, tokens, ctx: Flask,
                                                      players) -> None:
    alice = players[0]
    nobody = Client(server, None)
    status, error = nobody.call("GET", "/api/v1/me/turn")
    assert status == 401 and error["code"] == "unauthorized" and "Bearer" in error["error"]
    assert nobody.last_headers["WWW-Authenticate"] == "Bearer"
    for wrong in ("pbem_" + "x" * 43, tokens["alice"] + "x", "x" * 5000):
        status, error = Client(server, wrong).call("GET", "/api/v1/me/turn")
        assert (status, error["code"]) == (401, "bad-token")
    assert Client(server, tokens["alice"]).call("GET", "/api/v1/me/turn")[0] == 200
    # Only the token's hash is kept.
    row = db.session.scalar(db.select(ApiToken).where(ApiToken.user_id == alice.id))
    assert tokens["alice"] not in (row.token_hash, row.prefix) and row.last_used_at is not None

    # Settings: a new token is shown once; revoking one refuses it from the next call on.
    (web,) = signed_in(app, alice)
    page = web.post("/settings", {"action": "token-new", "name": "my bot"}).get_data(as_text=True)
    new_token = page.split('id="new-token">')[1].split("<")[0]
    assert new_token.startswith("pbem_") and "Copy it now" in page
    again = web.get("/settings").get_data(as_text=True)
    assert new_token not in again and new_token[:12] + "…" in again and "my bot" in again
    assert Client(server, new_token).call("GET", "/api/v1/me/turn")[0] == 200
    token_id = db.session.scalar(db.select(ApiToken.id).where(ApiToken.name == "my bot"))
    revoked = web.post("/settings", {"action": "token-revoke", "token": str(token_id)}, follow_redirects=True)
    assert "is revoked" in revoked.get_data(as_text=True)
    status, error = Client(server, new_token).call("GET", "/api/v1/me/turn")
    assert (status, error["code"]) == (401, "bad-token")
    assert Client(server, tokens["alice"]).call("GET", "/api/v1/me/turn")[0] == 200  # The other still works.
    # Someone else's token cannot be revoked by id, and the form still needs its CSRF token.
    bob_token = db.session.scalar(db.select(ApiToken.id).where(ApiToken.user_id == players[1].id))
    assert web.post("/settings", {"action": "token-revoke", "token": str(bob_token)}).status_code == 400
    assert web.post("/settings", {"action": "token-new", "name": "x"}, csrf=False).status_code == 400
    # A signed-in browser session is not an API token.
    assert web.get("/api/v1/me/turn").status_code == 401


def test_pbem_user_token_prints_a_working_token(ctx: Flask, runner: FlaskCliRunner, players,
                                                server: str) -> None:
    made = runner.invoke(main, ["user", "token", "bob", "--name", "tournament"])
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    status, turn = Client(server, token).call("GET", "/api/v1/me/turn")
    assert status == 200 and turn == {"games": []}
    assert "no player called" in runner.invoke(main, ["user", "token", "zed"]).stderr


def test_bad_requests_get_json_errors(server: str, tokens, ctx: Flask) -> None:
    alice = Client(server, tokens["alice"])
    cases = [
        (("POST", "/api/v1/games"), {"raw": b"{not json"}, 400, "bad-json"),
        (("POST", "/api/v1/games"), {"body": [1, 2]}, 422, "invalid"),
        (("POST", "/api/v1/games"), {"body": {"game": "chess", "seats": ["me", None]}}, 422, "invalid"),
        (("POST", "/api/v1/games"), {"body": {"game": "cambio", "seats": ["me", "zed"]}}, 422, "invalid"),
        (("POST", "/api/v1/games"), {"body": {"game": "cambio", "seats": ["bob", "carol"]}}, 400,
         "creator-not-seated"),
        (("POST", "/api/v1/games"), {"body": {"game": "cambio", "seats": ["me", "bob"],
                                              "options": {"size": 99}}}, 422, "invalid"),
        (("POST", "/api/v1/games"), {"body": {"game": "cambio", "seats": ["me", "bob"], "extra": 1}}, 422,
         "invalid"),
        (("POST", "/api/v1/games"), {"raw": b"{" + b" " * 70000 + b"}"}, 413, "too-large"),
        (("GET", "/api/v1/games/999"), {}, 404, "no-game"),
        (("GET", "/api/v1/games/99999999999999999999"), {}, 404, "not-found"),
        (("GET", "/api/v1/games?limit=1000"), {}, 422, "invalid"),
        (("GET", "/api/v1/games?player=zed"), {}, 422, "invalid"),
        (("GET", "/api/v1/players/zed"), {}, 404, "no-player"),
        (("GET", "/api/v1/nowhere"), {}, 404, "not-found"),
        (("DELETE", "/api/v1/games"), {}, 405, "method-not-allowed"),
        (("POST", "/api/v1/games/999/draw"), {"body": {"action": "maybe"}}, 422, "invalid"),
    ]
    for (method, path), kwargs, status, code in cases:
        got, error = alice.call(method, path, **kwargs)
        assert (got, error["code"]) == (status, code), (method, path, error)
        assert error["error"]
    assert db.session.scalar(db.select(db.func.count(Game.id))) == 0


def test_public_games_and_players_are_read_without_a_token(server: str, tokens, ctx: Flask, players) -> None:
    alice, bob, visitor = Client(server, tokens["alice"]), Client(server, tokens["bob"]), Client(server, None)
    _, public = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"]})
    bob.call("POST", f"/api/v1/games/{public['id']}/accept")
    assert alice.call("POST", f"/api/v1/games/{public['id']}/moves", {"move": "b3", "expect": 1})[0] == 201
    _, private = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"],
                                                         "public": False})
    bob.call("POST", f"/api/v1/games/{private['id']}/accept")

    # A public game reads as its page does for a visitor: the board and the record, no seat, no moves.
    status, game = visitor.call("GET", f"/api/v1/games/{public['id']}")
    assert status == 200 and game["board"] and [m["text"] for m in game["record"]] == ["b3"]
    assert game["your_seat"] is None and game["your_turn"] is False and game["legal_moves"] is None
    # A private game is not there for anyone without a token, nor listed.
    status, error = visitor.call("GET", f"/api/v1/games/{private['id']}")
    assert (status, error["code"]) == (404, "no-game")
    assert [g["id"] for g in visitor.call("GET", "/api/v1/games")[1]["games"]] == [public["id"]]
    assert {g["id"] for g in alice.call("GET", "/api/v1/games")[1]["games"]} == {public["id"], private["id"]}
    # Clocks in words give the deadline in the caller's zone, as the pages do (UTC for a visitor).
    db.session.get(User, players[1].id).time_zone = "America/New_York"
    db.session.commit()
    [to_move] = [s for s in bob.call("GET", f"/api/v1/games/{public['id']}")[1]["players"] if s["to_move"]]
    assert to_move["clock"].endswith(("EST)", "EDT)")), to_move["clock"]
    assert game["players"][1]["clock"].endswith("UTC)"), game["players"]
    status, player = visitor.call("GET", "/api/v1/players/alice")
    assert status == 200 and player["handle"] == "alice"
    # Playing, and reading what is a player's own, still need a token; a wrong one is refused even where
    # none is needed, so that a program whose token stopped working is told.
    status, error = visitor.call("POST", f"/api/v1/games/{public['id']}/moves", {"move": "c3", "expect": 2})
    assert (status, error["code"]) == (401, "unauthorized")
    assert visitor.call("GET", "/api/v1/me/turn")[0] == 401
    status, error = Client(server, "pbem_" + "x" * 43).call("GET", f"/api/v1/games/{public['id']}")
    assert (status, error["code"]) == (401, "bad-token")
    assert [m["text"] for m in bob.call("GET", f"/api/v1/games/{public['id']}")[1]["record"]] == ["b3"]


def test_private_games_and_actions_through_the_api(server: str, tokens, ctx: Flask, sink) -> None:
    alice, bob, carol = (Client(server, tokens[h]) for h in ("alice", "bob", "carol"))
    status, game = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"],
                                                        "public": False, "rated": False, "time": "days:1"})
    path = f"/api/v1/games/{game['id']}"
    assert status == 201 and game["rated"] is False and "1 day" in game["time_control"]
    assert carol.call("GET", path)[0] == 404  # A private game is not carol's to see…
    assert carol.call("GET", "/api/v1/games")[1]["games"] == []  # …nor to list.
    assert carol.call("POST", path + "/accept")[0] == 404
    status, error = bob.call("POST", path + "/decline", {"comment": "x" * 2001})
    assert status == 422 and "comment" in error["fields"]
    assert bob.call("POST", path + "/decline", {"comment": "Not today."})[1]["status"] == "abandoned"
    outbox.deliver_due()
    assert "bob says: Not today." in text_of(sink.messages("alice@example.org")[-1])
    assert bob.call("POST", path + "/accept")[1]["code"] == "not-waiting"
    _, game = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"]})
    path = f"/api/v1/games/{game['id']}"
    bob.call("POST", path + "/accept")
    assert carol.call("POST", path + "/resign")[0] == 403
    status, game = alice.call("POST", path + "/draw", {"action": "offer"})
    assert status == 200 and game["draw_offered_by"] == 1
    assert bob.call("POST", path + "/draw", {"action": "decline", "comment": "Play on!"})[1][
        "draw_offered_by"] is None
    alice.call("POST", path + "/draw", {"action": "offer"})
    assert bob.call("POST", path + "/draw", {"action": "accept", "comment": "Fair."})[1]["result"][
        "results"] == ["draw", "draw"]
    outbox.deliver_due()
    to_alice = [text_of(m) for m in sink.messages("alice@example.org")]
    assert any("bob says: Play on!" in text for text in to_alice)
    assert "bob says: Fair." in to_alice[-1]
    record = alice.call("GET", path)[1]["record"]
    assert [entry["comment"] for entry in record][-4:] == [None, "Play on!", None, "Fair."]
    _, game = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"]})
    bob.call("POST", f"/api/v1/games/{game['id']}/accept")
    # The comment is optional: a resignation may come with no body at all.
    status, game = bob.call("POST", f"/api/v1/games/{game['id']}/resign")
    assert status == 200 and game["result"]["results"] == ["win", "loss"]
    listed = alice.call("GET", "/api/v1/games?limit=1")[1]
    assert [g["id"] for g in listed["games"]] == [game["id"]] and listed["next"] == game["id"]
    rest = alice.call("GET", f"/api/v1/games?limit=5&after={listed['next']}")[1]
    assert len(rest["games"]) == 2 and rest["next"] is None
    # The public archive pages the same way: newest finish first.
    archive = alice.call("GET", "/api/v1/games?status=finished&limit=1")[1]
    assert [g["id"] for g in archive["games"]] == [game["id"]]
    older = alice.call("GET", f"/api/v1/games?status=finished&limit=1&after={archive['next']}")[1]
    assert older["games"][0]["result"]["results"] == ["draw", "draw"] and older["next"] is None


def test_each_token_has_its_own_rate_limit(settings: dict, players) -> None:
    limited = create_app({**settings, "ratelimit": {"api_per_token": "3 per minute"}})
    with limited.app_context():
        db.create_all()
        tokens = [apitokens.create(user, "t")[1] for user in db.session.scalars(db.select(User))]
    client = limited.test_client()
    first = {"Authorization": f"Bearer {tokens[0]}"}
    assert [client.get("/api/v1/me/turn", headers=first).status_code for _ in range(3)] == [200] * 3
    refused = client.get("/api/v1/me/turn", headers=first)
    assert refused.status_code == 429 and refused.json["code"] == "rate-limited"
    assert int(refused.headers["Retry-After"]) > 0
    assert client.get("/api/v1/me/turn", headers={"Authorization": f"Bearer {tokens[1]}"}).status_code == 200
    with limited.app_context():
        db.engine.dispose()


def test_the_example_bot_plays_a_whole_game(server: str, tokens, ctx: Flask) -> None:
    """examples/random_bot.py, as a user runs it, accepts alice's challenge and plays to the end."""
    alice = Client(server, tokens["alice"])
    bot = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "random_bot.py"), "--server", server, "--interval", "0.05"],
        env={"PBEM_TOKEN": tokens["bob"], "PATH": "/usr/bin:/bin"}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        _, game = alice.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", "bob"],
                                                       "options": {"size": 3, "placements": 2}})
        path = f"/api/v1/games/{game['id']}"
        rng = random.Random(3)
        for _ in range(2000):
            game = alice.call("GET", path)[1]
            if game["status"] == "finished":
                break
            if game["your_turn"]:
                alice.call("POST", path + "/moves", {"move": rng.choice(game["legal_moves"]),
                                                     "expect": game["move_number"]})
            else:
                threading.Event().wait(0.02)
        assert game["status"] == "finished"
        assert any(m["player"] == "bob" and m["kind"] == "move" for m in game["record"])
    finally:
        bot.terminate()
        output = bot.communicate(timeout=10)[0]
    assert f"game {game['id']}: played" in output


def test_the_api_page_is_linked_from_every_page(app: Flask, ctx: Flask) -> None:
    client = app.test_client()
    # A game number past what the database holds is simply not found, on the web too.
    assert client.get("/games/99999999999999999999").status_code == 404
    assert 'href="/api/"' in client.get("/").get_data(as_text=True)
    page = client.get("/api/").get_data(as_text=True)
    assert "POST /api/v1/games/{game_id}/moves" in page and "Authorization: Bearer" in page
    assert 'id="schema-Game"' in page and "legal_moves" in page
