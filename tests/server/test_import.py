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

from flask import Flask
from sqlalchemy import func, select

from pbem import create_app, records
from pbem.extensions import db
from pbem.models import Game, OutboxMail, User
from tests.server.archived import finished
from tests.server.webclient import WebClient


def pbem(database_url: str, instance: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PBEM_DATABASE_URL=database_url, PBEM_SERVER_INSTANCE_PATH=instance)
    return subprocess.run([sys.executable, "-m", "pbem", *args], env=env, capture_output=True, text=True,
                          timeout=120)


def comparable(data: dict) -> dict:
    """A record without what differs between two servers (the game's number)."""
    return {k: v for k, v in data.items() if k != "id"}


def test_export_then_import_into_a_fresh_database_gives_the_same_games(
        ctx: Flask, players, tmp_path: Path) -> None:
    alice, bob, carol = players
    made = [
        finished("truchet", [alice, bob], seed=2, comment="a long think", at=datetime(2026, 2, 1)),
        finished("carreaux", [bob, carol], end="resign", moves=3, at=datetime(2026, 2, 2)),
        finished("cambio", [carol, alice], end="draw", moves=2, at=datetime(2026, 2, 3)),
        finished("cambio", [alice, carol], end="time", moves=1, at=datetime(2026, 2, 4)),
        finished("easyslider", [alice, bob], seed=6, at=datetime(2026, 2, 5)),
        finished("boxoff", [carol], seed=5, at=datetime(2026, 2, 6)),
    ]
    url, instance = ctx.config["SQLALCHEMY_DATABASE_URI"], ctx.instance_path
    exported = pbem(url, instance, "export")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.splitlines()
    assert [json.loads(line)["id"] for line in lines] == [g.id for g in made]
    only = pbem(url, instance, "export", "--game", "cambio", "--since", "2026-02-04").stdout.splitlines()
    assert [json.loads(line)["id"] for line in only] == [made[3].id]
    dump = tmp_path / "games.jsonl"
    dump.write_text(exported.stdout)

    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert pbem(fresh, str(tmp_path / "fresh"), "db", "upgrade").returncode == 0
    first = pbem(fresh, str(tmp_path / "fresh"), "import", str(dump))
    assert first.returncode == 0, first.stderr
    assert "6 game(s) imported, 0 already here, 0 refused." in first.stdout
    again = pbem(fresh, str(tmp_path / "fresh"), "import", str(dump))
    assert "0 game(s) imported, 6 already here, 0 refused." in again.stdout

    other = create_app({"database": {"url": fresh}, "server": {"instance_path": str(tmp_path / "fresh")}})
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
    report = records.import_lines([json.dumps(data), json.dumps(good_record(ctx, players))])
    assert report.added == 1
    assert report.refused == [(1, "move 2 ('timeout' by seat 1) is illegal: You are done with round 1 of 3 "
                                  "(your time ran out); wait for the others to finish it.")]


def test_the_cli_reports_refusals_and_exits_65(ctx: Flask, players, tmp_path: Path) -> None:
    data = good_record(ctx, players)
    bad = json.loads(json.dumps(data))
    bad["moves"][0]["text"] = "z9"
    dump = tmp_path / "mixed.jsonl"
    dump.write_text(json.dumps(bad) + "\n\n" + json.dumps(data) + "\n")
    done = pbem(ctx.config["SQLALCHEMY_DATABASE_URI"], ctx.instance_path, "import", str(dump))
    assert done.returncode == 65
    assert "line 1: refused: move 1 ('z9' by seat 1) is illegal" in done.stderr
    # The good record was exported from this very database, but only imported games carry a digest.
    assert "1 game(s) imported, 0 already here, 1 refused." in done.stdout


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
