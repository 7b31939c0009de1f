"""Bot accounts and the bot runner: `pbem bot add`, the API that names bots and gives a seat its position,
polling by ETag, and a game against the computer started on the new-game form and played through the
API by the runner's own client, with the BOT mark, the ratings and no mail to the bot."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from pbem import create_app
from pbem.accounts import apitokens, bots
from pbem.bots import runner as bots_runner
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import ApiToken, Challenge, Game, OutboxMail, Rating, User
from pbem.lobby import challenges
from pbem.mailout import outbox
from tests.server.test_api import Client, server  # noqa: F401 - the live server fixture
from tests.server.test_web_games import new_game_form, signed_in


def test_pbem_bot_add_makes_a_bot_the_api_names_with_a_token_kept_hashed(
        ctx: Flask, runner: FlaskCliRunner, tmp_path: Path) -> None:
    tokens = tmp_path / "bots.tokens"
    made = runner.invoke(main, ["bot", "add", "easybot", "--game", "cambio", "--game", "boxoff",
                                "--strength", "easy", "--tokens-file", str(tokens)])
    assert made.exit_code == 0, made.output
    assert str(tokens) in made.output
    assert stat.S_IMODE(os.stat(tokens).st_mode) == 0o600
    read = bots_runner.read_tokens(tokens)
    assert len(read) == 1
    token = read[0]
    assert token.startswith("pbem_") and token not in made.output  # Only in the file, for `pbem bots`.
    row = db.session.scalar(select(ApiToken))
    assert row.token_hash != token and token not in repr(db.session.execute(select(ApiToken.__table__)).all())
    printed = runner.invoke(main, ["bot", "add", "hardbot", "--game", "truchet", "--strength", "hard"])
    assert printed.exit_code == 0 and "pbem_" in printed.output
    refused = runner.invoke(main, ["bot", "add", "chessbot", "--game", "chess"])
    assert refused.exit_code != 0 and "no game called 'chess'" in refused.output

    client = ctx.test_client()
    me = client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}).json
    assert me["handle"] == "easybot" and me["bot"] == {"games": ["boxoff", "cambio"], "strength": "easy"}
    assert client.get("/api/v1/bots").json["bots"] == [
        {"handle": "easybot", "games": ["boxoff", "cambio"], "strength": "easy"},
        {"handle": "hardbot", "games": ["truchet"], "strength": "hard"}]
    assert client.get("/api/v1/players/hardbot").json["bot"]["strength"] == "hard"
    listed = runner.invoke(main, ["bot", "list"])
    assert "easybot: easy; boxoff, cambio" in listed.output


def test_polling_answers_304_while_nothing_changed(settings: dict, players) -> None:
    alice = players[0]
    bot, token = bots.add("easybot", ["cambio"], "easy")
    limited = create_app({**settings, "ratelimit": {"api_per_token": "20 per minute"}})
    try:
        client = limited.test_client()
        me = {"Authorization": f"Bearer {token}"}
        etags = {}
        for path in ("/api/v1/me/challenges", "/api/v1/me/turn"):
            first = client.get(path, headers=me)
            etag = etags[path] = first.headers["ETag"]
            assert first.status_code == 200 and etag.startswith('W/"')
            # Every look while nothing changed: 304, without a body.
            for _ in range(12):
                again = client.get(path, headers={**me, "If-None-Match": etag})
                assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == etag
        challenged = challenges.new_game(alice, "cambio", [alice, bot], {"size": 3})
        before = etags["/api/v1/me/challenges"]
        news = client.get("/api/v1/me/challenges", headers={**me, "If-None-Match": before})
        assert news.status_code == 200 and news.json["challenges"][0]["game"]["id"] == challenged.id
    finally:
        with limited.app_context():
            db.engine.dispose()


def test_playing_the_computer_from_the_new_game_form(app: Flask, ctx: Flask, server: str,  # noqa: F811
                                                     players, sink) -> None:
    alice = players[0]
    bot, token = bots.add("easybot", ["cambio"], "easy")
    web = signed_in(app, alice)[0]
    form = web.get("/games/new?game=cambio").text
    assert 'name="computer"' in form and '<option value="easy"' in form
    form_fields = {"opt-size": "3", "computer": "easy", "seat-1": "", "rated": "1"}
    made = web.post("/games/new", new_game_form(**form_fields))
    assert made.status_code == 302, made.text
    game = db.session.scalar(select(Game))
    assert game.status == "waiting" and [s.number for s in game.seats] == [0, 1]

    # The runner's own client, over HTTP, as `pbem bots` plays; alice through the API.
    computer = bots_runner.Bot(bots_runner.Client(server, token))
    computer.learn()
    assert computer.answer_challenges(max_games=5) == 1
    me = Client(server, apitokens.create(alice, "test")[1])
    started = time.monotonic()
    while True:
        computer.play_turns()
        state = me.call("GET", f"/api/v1/games/{game.id}")[1]
        if state["status"] != "active":
            break
        if state["your_turn"]:
            assert state["position"] is not None and state["players"][1]["bot"] is True
            me.call("POST", f"/api/v1/games/{game.id}/moves",
                    {"move": state["legal_moves"][0], "expect": state["move_number"]})
        assert time.monotonic() - started < 60
    db.session.rollback()
    game = db.session.get(Game, game.id)
    assert game.status == "finished" and "BOT easybot" in game_words(game)
    assert {r.user_id for r in db.session.scalars(select(Rating).where(Rating.engine == "cambio"))} == {
        alice.id, bot.id}
    outbox.deliver_due()
    assert db.session.scalar(select(OutboxMail).where(OutboxMail.to_addr == bot.email)) is None
    assert not sink.messages(to=bot.email) and sink.messages(to=alice.email)
    page = web.get(f"/games/{game.id}").text
    assert 'class="bot"' in page
    standings = web.get("/standings/cambio").text
    assert "easybot" in standings and "easybot" not in web.get("/standings/cambio?bots=hide").text


def game_words(game: Game) -> str:
    """The result of a finished game in the words pages and mails use."""
    from pbem.game import results

    return results.summary(game)


def test_the_runner_declines_what_it_cannot_play(ctx: Flask, server: str, players) -> None:  # noqa: F811
    alice = players[0]
    _bot, token = bots.add("boxbot", ["boxoff"], "easy")
    computer = bots_runner.Bot(bots_runner.Client(server, token))
    computer.learn()
    game = challenges.new_game(alice, "cambio", [alice, db.session.scalar(select(User).where(
        User.handle == "boxbot"))], {})
    assert computer.answer_challenges(max_games=5) == 1
    db.session.rollback()
    declined = db.session.scalar(select(Challenge).where(Challenge.game_id == game.id))
    assert db.session.get(Game, game.id).status == "abandoned" and declined.status == "declined"
