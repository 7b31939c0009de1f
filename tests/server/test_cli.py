"""The `pbem` command as an operator uses it: verify, user add, and `pbem run` serving the site."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

from flask import Flask

from pbem import play, replay
from pbem.extensions import db
from pbem.models import Game, utcnow
from tests.conftest import free_port


def pbem(app: Flask, *args: str, timeout: int = 60, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env or {})}
    env["PBEM_DATABASE_URL"] = app.config["SQLALCHEMY_DATABASE_URI"]
    env["PBEM_SERVER_INSTANCE_PATH"] = app.instance_path
    return subprocess.run(
        [sys.executable, "-m", "pbem", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_verify_catches_a_tampered_game(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    for i, text in enumerate(["b3", "a2", "c2"]):
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
    clean = pbem(ctx, "verify")
    assert clean.returncode == 0, clean.stderr
    assert "Every game matches its record" in clean.stdout

    # Store a position no recorded move led to: the state after an extra, unrecorded reply.
    tampered = db.session.get(Game, game.id)
    engine = play.engine_of(tampered)
    honest = replay.final_state(tampered)
    tampered.state = engine.dump(engine.play(honest, 1, engine.moves(honest, 1)[0]))
    db.session.commit()
    caught = pbem(ctx, "verify")
    assert caught.returncode == 1
    assert f"game #{game.id}: the stored state differs" in caught.stdout


def test_user_add_prints_the_mail_key(ctx: Flask) -> None:
    result = pbem(ctx, "user", "add", "dora", "dora@example.org")
    assert result.returncode == 0, result.stderr
    assert "Added dora <dora@example.org>. Mail key: " in result.stdout
    again = pbem(ctx, "user", "add", "D0RA", "other@example.org")
    assert again.returncode != 0 and "too like 'dora'" in again.stderr
    reserved = pbem(ctx, "user", "add", "postmaster", "pm@example.org")
    assert reserved.returncode != 0 and "'postmaster' is a word the server reads itself" in reserved.stderr


def test_pbem_run_serves_the_front_page(tmp_path: Path) -> None:
    """What `make run` does, on free ports: upgrade the database, start everything, answer HTTP 200."""
    env = dict(os.environ)
    env.update(
        PBEM_CONFIG=str(Path(__file__).resolve().parents[2] / "config" / "development.toml"),
        PBEM_SERVER_INSTANCE_PATH=str(tmp_path / "instance"),
        PBEM_DATABASE_URL="sqlite:///pbem.db",
        PBEM_SMTPD_PORT=str(free_port()),
        PBEM_MAILBOX_PORT=str(free_port()),
    )
    env["PBEM_MAIL_SMTP_PORT"] = env["PBEM_MAILBOX_PORT"]
    upgrade = subprocess.run([sys.executable, "-m", "pbem", "db", "upgrade"], env=env, capture_output=True,
                             text=True, timeout=120)
    assert upgrade.returncode == 0, upgrade.stderr
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "pbem", "run", "--port", str(port)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    assert response.status == 200
                    assert "Cambio" in response.read().decode()
                    break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
                assert time.monotonic() < deadline, "no answer within 60 seconds"
                time.sleep(0.3)
        assert (tmp_path / "instance" / "pbem.db").exists()
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout:
            server.stdout.close()


def test_mail_written_by_a_sweep_at_a_later_time_goes_out_now(ctx: Flask, players, sink) -> None:
    """`pbem sweep --at` a future time times out absent players; their mails are due at once, so
    `pbem outbox deliver` sends them now rather than when that time comes."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3}, time_control={"kind": "per_move", "days": 1})
    db.session.commit()
    later = (utcnow() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    swept = pbem(ctx, "sweep", "--at", later)
    assert swept.returncode == 0, swept.stderr
    assert "1 timed out" in swept.stdout
    db.session.rollback()
    assert db.session.get(Game, game.id).status == "finished"
    delivered = pbem(ctx, "outbox", "deliver", env={"PBEM_MAIL_SMTP_PORT": str(sink.port)})
    assert delivered.returncode == 0, delivered.stderr
    assert ", 0 waiting." in delivered.stdout
    for player in (alice, bob):
        assert [m["Subject"] for m in sink.messages(player.email) if "game over" in m["Subject"]]
