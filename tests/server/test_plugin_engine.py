"""A third party's engine, installed through a ``pbem.games`` entry point and written to the protocol
without any optional part (tests/plugin_game.py): the server plays it on the web, by mail and in the
sweep with every optional part's default, and the command line finds it the same way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from flask import Flask

from pbem.archive import records
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, set_clock
from pbem.game import play, results
from pbem.mailout import outbox
from tests import plugin_game
from tests.server.test_sweep import T0, fresh, mails, sweep_at
from tests.server.test_web_games import new_game_form, signed_in, text_of


def pbem(app: Flask, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`pbem ARGS` as a process of its own: the plug-in must be found through its entry point by a fresh
    interpreter, as an operator's `pbem verify` finds it, not through the test's own imports."""
    env = {**os.environ, **(env or {}), "PBEM_DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
           "PBEM_SERVER_INSTANCE_PATH": app.instance_path}
    return subprocess.run([sys.executable, "-m", "pbem", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Take-away, installed as a plug-in; the directory holding its distribution's metadata."""
    plugin_game.install(tmp_path / "site", monkeypatch)
    return tmp_path / "site"


def test_a_plug_in_without_optional_parts_plays_through_the_web(app: Flask, ctx: Flask, players, sink,
                                                                installed: Path) -> None:
    alice, bob, _ = players
    web_a, web_b = signed_in(app, alice, bob)
    assert "Take-away" in text_of(web_a.get("/rules"))
    form = text_of(web_a.get("/games/new?game=takeaway"))
    assert re.search(r'id="opt-pile" name="opt-pile" value="7"\s+min="4" max="30"', form)
    created = web_a.post("/games/new", new_game_form(game="takeaway", **{"opt-pile": "5"}))
    assert created.status_code == 302
    game = db.session.scalars(db.select(Game)).one()
    assert web_b.post(f"/games/{game.id}/accept").status_code == 303

    page = text_of(web_a.get(f"/games/{game.id}"))
    assert "alice to move." in page and 'data-move="take 3"' in page
    assert "still be cleared" not in page  # No hint is offered...
    assert web_a.get(f"/games/{game.id}/hint").status_code == 404  # ...nor given when asked for.
    assert not re.search(r"\((O|X|Red|Blue|Dark|Light)\)", page)  # The seats have no side.
    # The record keeps a move as typed, in lower case with single spaces.
    played = web_a.post(f"/games/{game.id}/move", {"move": "  TAKE   3 ", "expect": "1"}, json=True)
    assert played.json == {"ok": True, "message": "You played take 3.", "move": "take 3"}
    assert web_b.post(f"/games/{game.id}/move", {"move": "take 1", "expect": "2"}).status_code == 303
    assert web_a.post(f"/games/{game.id}/move", {"move": "Take 1", "expect": "3"}).status_code == 303

    over = fresh(game)
    assert [m.text for m in over.moves] == ["take 3", "take 1", "take 1"]
    assert over.status == "finished" and results.sentence(over) == "alice wins by taking the last stone."
    assert "Pile:  (0)" in records.text(over)
    replayed = text_of(web_b.get(f"/games/{game.id}?move=1"))
    assert "<title>2 stones</title>" in replayed and 'data-move="' not in replayed
    outbox.deliver_due()
    [request] = [m for m in sink.messages(bob.email) if "your move" in m["Subject"]]
    assert request["Subject"] == f"[pbem] Take-away #{game.id}: your move (move 2)"
    [result] = [m for m in sink.messages(alice.email) if "game over" in m["Subject"]]
    assert result["Subject"] == f"[pbem] Take-away #{game.id}: game over, you won"


def test_a_plug_in_without_a_time_out_rule_is_ended_by_the_servers_own(app: Flask, ctx: Flask, players,
                                                                       installed: Path) -> None:
    alice, bob, _ = players
    set_clock(T0)
    try:
        game = play.create_game("takeaway", [alice, bob], {}, time_control={"kind": "per_move", "days": 2})
        db.session.commit()
        play.submit(game.id, alice, "take 2", "mail")
        play.submit(game.id, bob, "take 1", "mail")  # Bob has moved: running out of time loses.
        play.submit(game.id, alice, "take 1", "mail")
        assert sweep_at(T0 + timedelta(days=1, hours=12)).reminded == 1
        assert "you forfeit the game: it ends as a loss on time" in mails(bob, "reminder")[0].body_text
        assert sweep_at(T0 + timedelta(days=3)).timed_out == 1
    finally:
        set_clock(None)
    over = fresh(game)
    assert over.status == "finished" and over.ending == "time" and over.result["results"] == ["win", "loss"]
    assert results.sentence(over) == "alice wins on time: bob did not move in time."
    assert [(m.kind, m.text) for m in over.moves] == [
        ("move", "take 2"), ("move", "take 1"), ("move", "take 1"), ("timeout", "timeout")]

    # The command line finds the plug-in through its entry point as the server does: the game replays
    # to its stored state, and its record is exported and imported again as the same game.  One fresh
    # interpreter shows the entry point is found; the export then runs in-process, saving a second one.
    env = {"PYTHONPATH": os.pathsep.join([str(installed), os.environ.get("PYTHONPATH", "")])}
    verified = pbem(app, "verify", env=env)
    assert verified.returncode == 0, verified.stderr
    exported = app.test_cli_runner().invoke(main, ["export"])
    assert exported.exit_code == 0, exported.output
    [line] = exported.stdout.splitlines()
    assert json.loads(line)["moves"][-1]["kind"] == "timeout"
    # Read as another server's game: this server's own export is "already here" (its origin is ours).
    imported, added = records.store(records.check(json.loads(line) | {"origin": "https://elsewhere.example.org"}))
    assert added and imported.id != game.id and imported.state == over.state and imported.ending == "time"
    assert results.sentence(imported) == "alice wins on time: bob did not move in time."
