"""Private notes: each player of a game keeps a note on it, on the web and through the API; nobody else
reads it by any way (pages, the API, mails, records, feeds, exports); it stays after the game ends."""

from __future__ import annotations

from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import MAX_NOTE, OutboxMail
from pbem.game import play, watching
from pbem.lobby import challenges
from tests.server.test_api import Client, server, tokens  # noqa: F401 (fixtures)
from tests.server.test_web_games import signed_in, text_of
from tests.server.webclient import WebClient

ALICE_SAYS = "Plan: take the b-file early; bob over-extends on the right"
BOB_SAYS = "She always answers b3 with c3"


def test_notes_are_their_writers_alone_by_every_way(
        app: Flask, ctx: Flask, players, server, tokens, runner: FlaskCliRunner) -> None:  # noqa: F811
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3, "placements": 2})
    challenges.accept(game.id, bob)
    watching.watch(game, carol)
    web_alice, web_bob, web_carol = signed_in(app, alice, bob, carol)
    page = f"/games/{game.id}"
    assert 'id="note-text"' in text_of(web_alice.get(page))  # Kept (page cache) before the note is written.

    saved = web_alice.post(f"{page}/note", {"note": ALICE_SAYS})
    assert saved.status_code == 303
    mine = text_of(web_alice.get(page))
    assert "Your note is saved; only you can read it." in mine and ALICE_SAYS in mine
    assert ALICE_SAYS in text_of(web_alice.get(page))  # And again, from the kept page.
    api_bob, api_carol = Client(server, tokens["bob"]), Client(server, tokens["carol"])
    kept = api_bob.call("PUT", f"/api/v1/games/{game.id}/note", {"note": BOB_SAYS})
    assert kept == (200, {"note": BOB_SAYS})
    assert api_bob.call("GET", f"/api/v1/games/{game.id}/note") == (200, {"note": BOB_SAYS})
    status, refused = api_carol.call("GET", f"/api/v1/games/{game.id}/note")
    assert status == 403 and refused["code"] == "not-seated"

    # Too long: refused, nothing changed, and what was written stays in the box.
    too_long = web_alice.post(f"{page}/note", {"note": "x" * (MAX_NOTE + 1)})
    assert too_long.status_code == 400 and "The note is too long" in text_of(too_long)
    assert "x" * (MAX_NOTE + 1) in text_of(too_long)
    assert ALICE_SAYS in text_of(web_alice.get(page))

    play.submit(game.id, alice, "b1", "web")
    play.submit(game.id, bob, "b2", "mail")
    play.resign(game.id, alice, "web", "Good game")

    bobs_page = text_of(web_bob.get(page))
    assert BOB_SAYS in bobs_page and ALICE_SAYS not in bobs_page  # Kept after the end; each their own.
    assert ALICE_SAYS in text_of(web_alice.get(page))
    seen_by_others = [
        text_of(web_carol.get(page)), text_of(WebClient(app).get(page)),
        text_of(web_bob.get(f"{page}.json")), text_of(web_bob.get(f"{page}.txt")),
        text_of(WebClient(app).get("/archive.atom")), text_of(web_carol.get("/dashboard")),
        str(api_carol.call("GET", f"/api/v1/games/{game.id}")[1]),
        str(api_bob.call("GET", f"/api/v1/games/{game.id}")[1]),
        runner.invoke(main, ["export"]).stdout,
        *(m.body_text + (m.body_html or "") for m in db.session.scalars(select(OutboxMail))),
    ]
    for text in seen_by_others:
        assert ALICE_SAYS not in text
    assert 'id="note-text"' not in seen_by_others[0]  # A watcher keeps no notes.
    assert all(BOB_SAYS not in text for i, text in enumerate(seen_by_others) if i != 7)

    assert web_alice.post(f"{page}/note", {"note": "  "}).status_code == 303
    assert "Your note is deleted." in text_of(web_alice.get(page))
