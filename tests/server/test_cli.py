"""The `pbem` command as an operator uses it: verify, user add, sweep and outbox (run by Flask's runner
in the test's process), and `pbem run` serving the site (a real process: serving is the point)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

from flask import Flask
from flask.testing import FlaskCliRunner

from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, utcnow
from pbem.game import play, queries, replay
from pbem.mailout import devmail
from tests.conftest import free_port


def test_verify_catches_a_tampered_game(ctx: Flask, runner: FlaskCliRunner, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    for i, text in enumerate(["b3", "a2", "c2"]):
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
    clean = runner.invoke(main, ["verify"])
    assert clean.exit_code == 0, clean.output
    assert "Every game matches its record" in clean.stdout

    # Store a position no recorded move led to: the state after an extra, unrecorded reply.
    tampered = db.session.get(Game, game.id)
    engine = queries.engine_of(tampered)
    honest = replay.final_state(tampered)
    tampered.state = engine.dump(engine.play(honest, 1, engine.moves(honest, 1)[0]))
    db.session.commit()
    caught = runner.invoke(main, ["verify"])
    assert caught.exit_code == 1
    assert f"game #{game.id}: the stored state differs" in caught.stdout


def test_user_add_prints_the_mail_key(runner: FlaskCliRunner) -> None:
    result = runner.invoke(main, ["user", "add", "dora", "dora@example.org"])
    assert result.exit_code == 0, result.output
    assert "Added dora <dora@example.org>. Mail key: " in result.stdout
    again = runner.invoke(main, ["user", "add", "D0RA", "other@example.org"])
    assert again.exit_code != 0 and "too like 'dora'" in again.stderr
    reserved = runner.invoke(main, ["user", "add", "postmaster", "pm@example.org"])
    assert reserved.exit_code != 0 and "'postmaster' is a word the server reads itself" in reserved.stderr


def _two_free_ports() -> int:
    """A free loopback port whose next one is free too (the mail listener's and the dev mailbox's)."""
    while True:
        port = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port


def test_pbem_run_on_its_own_ports_mails_links_to_itself(tmp_path: Path) -> None:
    """What `make run PORT=… MAIL_PORT=…` does for a second server: make its database, start everything
    on those ports, answer HTTP 200, and mail a confirmation link that leads to this server, through the
    dev mailbox on the port after the listener's (no other setting given).  A real process, since a
    server that starts and answers on its ports is what is tested."""
    env = dict(os.environ)
    env.update(
        PBEM_CONFIG=str(Path(__file__).resolve().parents[2] / "config" / "development.toml"),
        PBEM_SERVER_INSTANCE_PATH=str(tmp_path / "instance"),
        PBEM_DATABASE_URL="sqlite:///pbem.db",
    )
    for name in ("PBEM_MAIL_SMTP_PORT", "PBEM_MAIL_SMTP_HOST", "PBEM_SERVER_BASE_URL", "PBEM_MAILBOX_PORT"):
        env.pop(name, None)
    port, mail_port = free_port(), _two_free_ports()
    server = subprocess.Popen([sys.executable, "-m", "pbem", "run", "--upgrade", "--port", str(port),
                               "--mail-port", str(mail_port)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    site = f"http://127.0.0.1:{port}"
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with browser.open(f"{site}/signup", timeout=5) as response:
                    assert response.status == 200
                    form = response.read().decode()
                    break
            except OSError:
                assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
                assert time.monotonic() < deadline, "no answer within 60 seconds"
                time.sleep(0.3)
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        fields = {"csrf_token": token.group(1), "handle": "nora", "email": "nora@example.org",
                  "password": "correct horse battery"}
        with browser.open(f"{site}/signup", urllib.parse.urlencode(fields).encode(), timeout=10) as answer:
            assert answer.status == 200
        mailbox = tmp_path / "instance" / "mailbox"
        while not devmail.messages(mailbox):
            assert time.monotonic() < deadline, "no mail in the dev mailbox within 60 seconds"
            time.sleep(0.3)
        (mail,) = devmail.messages(mailbox)
        text = "".join(part.get_payload(decode=True).decode() for part in mail.walk()
                       if part.get_content_type() == "text/plain")
        link = re.search(r"http://\S+/verify/\S+", text)
        assert link is not None and link.group(0).startswith(f"{site}/verify/"), link
    finally:
        server.terminate()
        server.wait(10)
        if server.stdout:
            server.stdout.close()


def test_mail_written_by_a_sweep_at_a_later_time_goes_out_now(ctx: Flask, runner: FlaskCliRunner, players,
                                                               sink) -> None:
    """`pbem sweep --at` a future time times out absent players; their mails are due at once, so
    `pbem outbox deliver` sends them now rather than when that time comes."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3}, time_control={"kind": "per_move", "days": 1})
    db.session.commit()
    later = (utcnow() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    swept = runner.invoke(main, ["sweep", "--at", later])
    assert swept.exit_code == 0, swept.output
    assert "1 timed out" in swept.stdout
    db.session.rollback()
    assert db.session.get(Game, game.id).status == "abandoned"  # Aborted: nobody had moved.
    assert utcnow() < datetime.fromisoformat(later)  # The clock is the real one again after the sweep.
    delivered = runner.invoke(main, ["outbox", "deliver"])
    assert delivered.exit_code == 0, delivered.output
    assert ", 0 waiting." in delivered.stdout
    for player in (alice, bob):
        assert [m["Subject"] for m in sink.messages(player.email) if "game over" in m["Subject"]]
