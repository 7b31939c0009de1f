"""Text from outside with a NUL or another control character in it, by every channel of the web and the
API: cleaned (forms, query parameters) or refused with a clear answer (JSON bodies, parts of a path),
never a 500, never stored; and the API's small 500s and loose types (a body nested 2,000 deep, the last
day there is as a filter, a move number of 1.5)."""

from __future__ import annotations

import json

import pytest
from flask import Flask
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from pbem.core import inputs
from pbem.core.extensions import db
from pbem.core.models import ApiToken, Move, User
from pbem.game import play
from tests.server.test_api import Client, server, tokens  # noqa: F401  (fixtures)
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient

NUL = "a\x00b\x07c\x85"


def test_clean_keeps_tabs_and_line_breaks_and_drops_the_rest() -> None:
    assert inputs.clean("a\tb\r\nc\x00\x0b\x1b\x7f\x85\ud800d") == "a\tb\r\ncd"
    assert inputs.clean_line("Re:\r\n help\x00") == "Re:  help"
    assert inputs.is_clean("a\nb") and not inputs.is_clean("a\nb", one_line=True)
    with pytest.raises(inputs.TooDeep):
        inputs.check_json(json.loads("[" * 9 + "]" * 9))
    with pytest.raises(inputs.BadInput, match=r"moves\.1\.text"):
        inputs.check_json({"moves": [{"text": "b3"}, {"text": "b\x002"}]})


def test_forms_and_paths_with_control_characters_get_no_server_error(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    visitor = WebClient(app)
    for path, form in [
        ("/login", {"login": "ali\x00ce", "password": NUL}),
        ("/signup", {"handle": "dave\x00", "email": "dave\x00@example.org", "password": "long enough\x00"}),
        ("/reset", {"email": "alice@example.org\x00"}),
        ("/verify", {"email": "alice\x00@example.org"}),
    ]:
        assert visitor.post(path, form).status_code < 500, path
    for path in ["/players/x%00y", "/players/x%00y.atom", "/standings/x%00y", "/verify/x%00y",
                 "/reset/x%00y", "/rules/x%00y"]:
        assert visitor.get(path).status_code == 404, path
    assert visitor.get("/archive?player=al%00ice&to=9999-12-31").status_code == 200
    assert visitor.get("/archive.atom?to=9999-12-31").status_code == 200
    # Signed in: a token's name, a new address, a move's comment.
    [web] = signed_in(app, alice)
    assert web.post("/settings", {"action": "token-new", "name": "bot\x00one"}).status_code == 200
    assert web.post("/settings/email", {"email": "new\x00@example.org", "password": "correct horse"}) \
        .status_code < 500
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    moved = web.post(f"/games/{game.id}/move",
                     {"move": "b3\x00", "expect": "1", "comment": "hi\x00\x0b there"})
    assert moved.status_code == 303
    assert [(m.text, m.comment) for m in db.session.scalars(select(Move))] == [("b3", "hi there")]
    assert db.session.scalars(select(ApiToken.name)).all() == ["botone"]
    # The sign-up went in as what could be typed: the NUL was dropped, nothing else.
    assert db.session.scalar(select(User.email).where(User.handle == "dave")) == "dave@example.org"


def test_json_bodies_with_control_characters_are_refused(server: str, tokens, ctx: Flask, players) -> None:  # noqa: F811
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    api = Client(server, tokens["alice"])
    path = f"/api/v1/games/{game.id}"
    for call, body in [("/moves", {"move": "b3", "expect": 1, "comment": NUL}),
                       ("/moves", {"move": "b3\x00", "expect": 1}),
                       ("/draw", {"action": "offer", "comment": "draw?\x00"}),
                       ("/resign", {"comment": "bye\x00"})]:
        status, error = api.call("POST", path + call, body)
        assert (status, error["code"]) == (422, "invalid"), (call, error)
        assert "control character" in error["error"]
    # A lone surrogate, as JSON may write it, is refused the same way.
    status, error = api.call("POST", path + "/moves", raw=b'{"move": "b3", "comment": "\\ud800"}')
    assert (status, error["code"], list(error["fields"])) == (422, "invalid", ["comment"])
    status, error = api.call("GET", "/api/v1/players/x%00y")
    assert (status, error["code"]) == (404, "not-found")
    db.session.rollback()
    assert db.session.scalars(select(Move)).all() == []


def test_small_server_errors_and_loose_types_of_the_api(server: str, tokens, ctx: Flask, players) -> None:  # noqa: F811
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    api = Client(server, tokens["alice"])
    moves = f"/api/v1/games/{game.id}/moves"
    for raw in (b"[" * 2000 + b"]" * 2000, b'{"move": ' + b"{" * 2000 + b"}" * 2000 + b"}",
                b'{"move": "b3", "options": ' + b'{"a": ' * 20 + b"1" + b"}" * 20 + b"}"):
        status, error = api.call("POST", moves, raw=raw)
        assert (status, error["code"]) == (400, "bad-json")
    for loose in ({"expect": 1.5}, {"expect": "1"}, {"expect": True}, {"seat": 0.0}):
        status, error = api.call("POST", moves, {"move": "b3", **loose})
        assert (status, error["code"]) == (422, "invalid"), loose
    status, error = api.call("POST", "/api/v1/games", {"game": "cambio", "seats": ["me", None], "public": 1})
    assert (status, list(error["fields"])) == (422, ["public"])
    for query in ("to=9999-12-31", "from=0001-01-01&to=9999-12-31", "status=finished&to=9999-12-31"):
        status, listed = api.call("GET", f"/api/v1/games?{query}")
        assert status == 200 and listed["games"] == [], query
    db.session.rollback()
    assert db.session.scalars(select(Move)).all() == []
    assert api.call("POST", moves, {"move": "b3", "expect": 1})[0] == 201


# Hostile JSON for the API's bodies: any shape, the fields' names with values of every type, text with
# any character (control characters and lone surrogates included), numbers past any column's range.
_HOSTILE = st.sampled_from(["b3\x00", "hi\x00", "\ud800", "\x1b[31m", "a\x85b", 1.5, 2**63, -(2**70), True])
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**80, max_value=2**80), st.floats(),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=12),
    st.sampled_from(["b3", "offer", "accept", "decline", "cambio", "me", "bob", "if b1 then c4", "days:3"]),
)
# Each call's fields (the path after the game's, "" for a new game).
_FIELDS = {
    "/moves": ["move", "expect", "comment", "seat"], "/draw": ["action", "comment"], "/resign": ["comment"],
    "/accept": ["comment"], "/decline": ["comment"], "/conditionals": ["lines", "seat"],
    "": ["game", "options", "seats", "time", "weekend_pause", "public", "rated"],
}
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=16)
_CALLS = st.sampled_from(sorted(_FIELDS)).flatmap(lambda call: st.tuples(
    st.just(call), st.one_of(*[st.fixed_dictionaries({}, optional=dict.fromkeys(
        _FIELDS[call], st.one_of(_HOSTILE, _LEAVES, _VALUES)))] * 3, _VALUES)))


def test_the_api_bodies_fuzzed_never_give_a_server_error(app: Flask, ctx: Flask, players, tokens) -> None:  # noqa: F811
    alice, bob, _ = players
    client = app.test_client()
    headers = {"Authorization": f"Bearer {tokens['alice']}", "Content-Type": "application/json"}
    app.config["PBEM"]["ratelimit"]["api_per_token"] = "100000 per minute"

    @given(sent=_CALLS)
    @settings(max_examples=60, deadline=None, derandomize=True, database=None)
    def post(sent: tuple[str, object]) -> None:
        call, body = sent
        # A game of its own for each body, so that one which ends a game does not shield the rest.
        game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
        db.session.commit()
        path = f"/api/v1/games/{game.id}{call}" if call else "/api/v1/games"
        answer = client.post(path, data=json.dumps(body), headers=headers)
        assert answer.status_code < 500 and answer.is_json, (path, body, answer.get_data(as_text=True))

    post()
