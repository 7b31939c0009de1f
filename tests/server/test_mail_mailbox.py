"""The dev mailbox page: the mail `pbem run` caught, per address, and replies that go through the real
SMTP listener — a game played "by mail" on one machine."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from pbem import create_app
from pbem.core.extensions import db
from pbem.game import play
from pbem.mailin import smtpd
from tests.conftest import free_port
from tests.server.conftest import Sink
from tests.server.test_mail_play import Postman, moves_of


@pytest.fixture
def listener_port() -> int:
    return free_port()


@pytest.fixture
def settings(settings: dict, listener_port: int) -> dict:
    """A development server whose mail listener is on ``listener_port``."""
    return {**settings, "server": {**settings["server"], "development": True},
            "smtpd": {"host": "127.0.0.1", "port": listener_port}}


@pytest.fixture
def sink(app: Flask, sink_port: int) -> Iterator[Sink]:
    """The dev mailbox itself: outbound mail kept in instance/mailbox, as `pbem run` does."""
    s = Sink(Path(app.instance_path) / "mailbox", sink_port)
    s.start()
    yield s
    s.stop()


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink: Sink, listener_port: int) -> Iterator[Postman]:
    listener = smtpd.controller(app, "127.0.0.1", listener_port)
    listener.start()
    yield Postman(sink, listener_port)
    listener.stop()


def test_a_reply_from_the_mailbox_page_is_played(ctx: Flask, postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    client = ctx.test_client()
    index = client.get(f"/mailbox?to={alice.email}")
    assert index.status_code == 200 and f"Cambio #{game.id}: your move (move 1)" in index.text
    [key] = re.findall(r'href="/mailbox/([^"/]+)"', index.text)
    shown = client.get(f"/mailbox/{key}")
    assert "Legal moves: a2, b1, b2, b3, c2" in shown.text and "play+" in shown.text
    token = re.search(r'name="csrf_token" value="([^"]+)"', shown.text)[1]

    empty = client.post(f"/mailbox/{key}/reply", data={"csrf_token": token, "body": "  "},
                        follow_redirects=True)
    assert "Write something to send" in empty.text
    sent = client.post(f"/mailbox/{key}/reply", data={"csrf_token": token, "body": "b3 #1\nHave fun"},
                       follow_redirects=True)
    assert "Sent to play+" in sent.text
    postman.settle()
    assert moves_of(game.id) == ["b3"]
    bobs = client.get(f"/mailbox?to={bob.email}")
    assert f"Cambio #{game.id}: your move (move 2)" in bobs.text
    assert "Re: [pbem] Cambio" in client.get(f"/mailbox?to={alice.email}").text  # The answer.


def test_the_mailbox_is_for_development_only(tmp_path: Path) -> None:
    app = create_app({"server": {"instance_path": str(tmp_path / "instance")},
                      "database": {"url": f"sqlite:///{tmp_path / 'pbem.db'}"}})
    assert app.test_client().get("/mailbox").status_code == 404
