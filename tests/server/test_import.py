"""`pbem export` and `pbem import`: records replayed through the engines, refused with the first bad
move, imported once, and their players as placeholder accounts claimed by confirming an address."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, select

from pbem import create_app
from pbem.archive import records
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, User
from tests.server.archived import finished
from tests.server.webclient import WebClient


def comparable(data: dict) -> dict:
    """A record without what differs between two servers (the game's number)."""
    return {k: v for k, v in data.items() if k != "id"}


def test_export_then_import_into_a_fresh_database_gives_the_same_games(
        ctx: Flask, runner: FlaskCliRunner, players, tmp_path: Path) -> None:
    alice, bob, carol = players
    made = [
        finished("truchet", [alice, bob], seed=2, comment="a long think", at=datetime(2026, 2, 1)),
        finished("carreaux", [bob, carol], end="resign", moves=3, at=datetime(2026, 2, 2)),
        finished("cambio", [carol, alice], end="draw", moves=2, at=datetime(2026, 2, 3)),
        finished("cambio", [alice, carol], end="time", moves=3, at=datetime(2026, 2, 4)),
        finished("easyslider", [alice, bob], seed=6, at=datetime(2026, 2, 5)),
        finished("boxoff", [carol], seed=5, at=datetime(2026, 2, 6)),
    ]
    exported = runner.invoke(main, ["export"])
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [g.id for g in made]
    only = runner.invoke(main, ["export", "--game", "cambio", "--since", "2026-02-04"]).stdout.splitlines()
    assert [json.loads(line)["id"] for line in only] == [made[3].id]
    dump = tmp_path / "games.jsonl"
    dump.write_text(exported.stdout)

    # The other server: a database of its own, its schema made by `pbem db upgrade`.
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    other = create_app({"database": {"url": fresh}, "server": {"instance_path": str(tmp_path / "fresh")}})
    on_other = other.test_cli_runner()
    assert on_other.invoke(main, ["db", "upgrade"]).exit_code == 0
    first = on_other.invoke(main, ["import", str(dump)])
    assert first.exit_code == 0, first.output
    assert "6 game(s) imported, 0 already here, 0 refused." in first.stdout
    again = on_other.invoke(main, ["import", str(dump)])
    assert "0 game(s) imported, 6 already here, 0 refused." in again.stdout

    with other.app_context():
        imported = db.session.scalars(select(Game).order_by(Game.id)).all()
        assert len(imported) == 6
        for line, game in zip(lines, imported, strict=True):
            assert comparable(records.record(game)) == comparable(json.loads(line))
        handles = {u.handle: (u.placeholder, u.verified) for u in db.session.scalars(select(User))}
        assert handles == {h: (True, False) for h in ("alice", "bob", "carol")}
        db.session.remove()
        db.engine.dispose()


def good_record(ctx: Flask, players) -> dict:
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], seed=3)
    return records.record(game)


def test_a_tampered_record_is_refused_naming_the_first_bad_move(ctx: Flask, players) -> None:
    data = good_record(ctx, players)
    count = db.session.scalar(select(func.count(Game.id)))

    def refused(record: dict | str) -> str:
        line = record if isinstance(record, str) else json.dumps(record)
        report = records.import_lines([line])
        assert report.added == 0 and len(report.refused) == 1
        return report.refused[0][1]

    illegal = json.loads(json.dumps(data))
    illegal["moves"][2]["text"] = "a1"
    assert re.match(r"move 3 \('a1' by seat 1\) is illegal: ", refused(illegal)), refused(illegal)
    out_of_turn = json.loads(json.dumps(data))
    out_of_turn["moves"][1]["seat"] = 1
    assert refused(out_of_turn).startswith("move 2 (")
    assert "it is not seat 1's turn" in refused(out_of_turn)
    wrong_result = json.loads(json.dumps(data))
    wrong_result["result"]["results"] = wrong_result["result"]["results"][::-1]
    assert refused(wrong_result).startswith("the moves end in ")
    cut = json.loads(json.dumps(data))
    cut["moves"] = cut["moves"][:-1]
    assert refused(cut) == "the moves do not finish the game, but the record says it is finished"
    longer = json.loads(json.dumps(data))
    longer["moves"].append(longer["moves"][-1] | {"number": len(longer["moves"]) + 1})
    assert "comes after the game ended" in refused(longer)
    assert refused("{not json").startswith("the line is not JSON")
    assert refused(json.dumps(data | {"format": 7})) == \
        "the record's format is 7; this server reads format 1"
    assert "There is no game called 'chess'" in refused(data | {"game": "chess"})
    assert "seat 2's handle" in refused(data | {"players": [{"seat": 1, "handle": "alice"},
                                                            {"seat": 2, "handle": "no one"}]})
    # A new handle becomes a placeholder someone may claim: never one the server reads as "myself".
    assert "seat 2's handle: 'me' is a word the server reads itself" in refused(
        data | {"players": [{"seat": 1, "handle": "alice"}, {"seat": 2, "handle": "Me"}]})
    assert db.session.scalar(select(func.count(Game.id))) == count  # Nothing of any was stored.


def test_a_timeout_the_game_cannot_take_is_refused_and_the_other_records_still_import(ctx: Flask,
                                                                                     players) -> None:
    """A timeout entry is judged by the game as the sweep's was (Easy Slider scores an absent player):
    one for a seat already out of the round refuses that record, naming the entry, and nothing else."""
    data = {"format": 1, "game": "easyslider", "options": {}, "seed": 4,
            "players": [{"seat": 1, "handle": "alice"}, {"seat": 2, "handle": "bob"}],
            "moves": [{"number": n, "seat": 1, "kind": "timeout", "text": "timeout"} for n in (1, 2)],
            "result": {"results": ["loss", "win"]}}
    elsewhere = good_record(ctx, players) | {"origin": "https://elsewhere.example.org"}  # Not one of ours.
    report = records.import_lines([json.dumps(data), json.dumps(elsewhere)])
    assert report.added == 1
    assert report.refused == [(1, "move 2 ('timeout' by seat 1) is illegal: You are done with round 1 of 3 "
                                  "(your time ran out); wait for the others to finish it.")]


def test_the_cli_reports_refusals_and_exits_65(ctx: Flask, runner: FlaskCliRunner, players,
                                               tmp_path: Path) -> None:
    data = good_record(ctx, players)
    bad = json.loads(json.dumps(data))
    bad["moves"][0]["text"] = "z9"
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(json.dumps(bad) + "\n\n" + json.dumps(data) + "\n")
    done = runner.invoke(main, ["import", str(dump)])
    assert done.exit_code == 65
    assert "line 1: refused: move 1 ('z9' by seat 1) is illegal" in done.stderr
    # The good record was exported from this very database: its game is already here.
    assert "0 game(s) imported, 1 already here, 1 refused." in done.stdout


def test_a_placeholder_is_claimed_only_by_confirming_the_address(app: Flask, ctx: Flask, players) -> None:
    seats = [{"seat": 1, "handle": "zoe"}, {"seat": 2, "handle": "bob"}]
    data = good_record(ctx, players) | {"players": seats}
    assert records.import_lines([json.dumps(data)]).added == 1
    zoe = db.session.scalar(select(User).where(User.handle == "zoe"))
    assert zoe.placeholder and not zoe.verified and zoe.email.endswith(".invalid")
    # Her page lists her imported game meanwhile.
    web = WebClient(app)
    assert web.get("/players/zoe").status_code == 200

    def sign_up(email: str, password: str) -> str:
        page = web.post("/signup", {"handle": "zoe", "email": email, "password": password})
        assert page.status_code == 200 and email in page.get_data(as_text=True)
        mail = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == email)).all()[-1]
        return re.search(r"/verify/\S+", mail.body_text).group(0)

    first_link = sign_up("zoe@example.org", "first password")
    second_link = sign_up("mallory@example.org", "second password")
    db.session.expire_all()
    zoe = db.session.get(User, zoe.id)
    assert zoe.placeholder and zoe.email.endswith(".invalid")  # Nothing is claimed by signing up.
    login = web.post("/login", {"login": "zoe", "password": "second password"})
    assert login.status_code == 400  # No signing in before the address is confirmed.
    stale = web.get(first_link)
    assert stale.status_code == 400 and "A later sign-up for this handle" in stale.get_data(as_text=True)
    assert web.get(second_link).status_code == 302
    db.session.expire_all()
    zoe = db.session.get(User, zoe.id)
    assert not zoe.placeholder and zoe.verified and zoe.email == "mallory@example.org"
    imported = db.session.scalar(select(Game.id).where(Game.import_key.is_not(None)))
    assert [s.game_id for s in zoe.seats] == [imported]
    assert "claimed already" in web.get(first_link).get_data(as_text=True)


def test_an_imported_comment_keeps_no_link_or_address_of_ours(ctx: Flask, players) -> None:
    """A record exported before comments were guarded (or made by hand) may carry a one-click link or a
    reply address in a comment: imported, it is public, so they are blanked as a comment played here
    would have them."""
    data = good_record(ctx, players) | {"origin": "https://elsewhere.example.org"}  # Not one of ours.
    token = "eyJnIjoxLCJzIjowLCJ1IjoxLCJuIjozfQ.GRGnhyGq-K9-QvIP5KI-8J5RlIc"
    data["moves"][0]["comment"] = (f"good luck\n> Or play with one click: http://127.0.0.1:5000/m/{token}\n"
                                   "> Reply to: play+aaaaaaiaaaaaaai7ixvddseka4kpugq@pbem.localhost")
    report = records.import_lines([json.dumps(data)])
    assert report.added == 1, report.refused
    db.session.rollback()
    imported = db.session.scalars(select(Game).order_by(Game.id.desc())).first()
    assert imported.moves[0].comment == ("good luck\n> Or play with one click: [link removed]\n"
                                         "> Reply to: [address removed]")


def test_importing_this_servers_own_export_adds_nothing_and_says_already_here(
        ctx: Flask, players, tmp_path: Path) -> None:
    """A server's own export read back (by mistake, or to check it) duplicates no game: every record
    names this server as its origin, so each is "already here", and the standings stay as they were."""
    alice, bob, carol = players
    made = [finished("cambio", [alice, bob], seed=3, at=datetime(2026, 2, 1)),
            finished("truchet", [bob, carol], end="resign", moves=3, at=datetime(2026, 2, 2)),
            finished("boxoff", [carol], seed=5, at=datetime(2026, 2, 3))]
    # A move an answer of the player's queued lines played keeps saying so in the record.
    db.session.execute(sa.update(Move).where(Move.game_id == made[0].id, Move.number == 2)
                       .values(via="conditional"))
    db.session.commit()
    url, instance = ctx.config["SQLALCHEMY_DATABASE_URI"], ctx.instance_path
    here_runner = ctx.test_cli_runner()
    exported = here_runner.invoke(main, ["export"])
    assert exported.exit_code == 0, exported.output
    first = json.loads(exported.stdout.splitlines()[0])
    assert first["origin"] == "http://127.0.0.1:5000" and first["id"] == made[0].id
    assert first["moves"][1]["via"] == "conditional"
    standings = WebClient(ctx).get("/players/alice").get_data(as_text=True)
    (tmp_path / "ours.jsonl").write_text(exported.stdout)

    # A relative path is read from where the command was started: a process of its own shows that.
    here = dict(os.environ, PBEM_CONFIG=str(Path(os.environ["PBEM_CONFIG"]).resolve()))
    again = subprocess.run([sys.executable, "-m", "pbem", "import", "ours.jsonl"], cwd=tmp_path,
                           env=dict(here, PBEM_DATABASE_URL=url, PBEM_SERVER_INSTANCE_PATH=instance),
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "0 game(s) imported, 3 already here, 0 refused." in again.stdout
    db.session.rollback()
    assert db.session.scalar(select(func.count(Game.id))) == 3
    assert WebClient(ctx).get("/players/alice").get_data(as_text=True) == standings

    # Imported elsewhere and exported from there, the games still name this server and their numbers
    # here: read back here, they are still already here; and a second import there adds nothing.
    elsewhere = create_app({"database": {"url": f"sqlite:///{tmp_path / 'fresh.db'}"},
                            "server": {"instance_path": str(tmp_path / "fresh"),
                                       "base_url": "https://other.example.org"}})
    with elsewhere.app_context():
        db.create_all()
    there = elsewhere.test_cli_runner()
    imported = there.invoke(main, ["import", str(tmp_path / "ours.jsonl")])
    assert "3 game(s) imported, 0 already here" in imported.stdout, imported.output
    back = there.invoke(main, ["export"])
    assert [json.loads(line)["origin"] for line in back.stdout.splitlines()] == ["http://127.0.0.1:5000"] * 3
    (tmp_path / "back.jsonl").write_text(back.stdout)
    home = here_runner.invoke(main, ["import", str(tmp_path / "back.jsonl")])
    assert "0 game(s) imported, 3 already here, 0 refused." in home.stdout, home.output
    with elsewhere.app_context():
        db.session.remove()
        db.engine.dispose()
