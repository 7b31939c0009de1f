"""A game "by mail" on one machine, in Chromium: reply from the dev mailbox page, then play the next move
with the one-click link from the mail."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import Browser, expect
from sqlalchemy import func, select

from pbem import create_app
from pbem.accounts.accounts import create_user
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail
from pbem.game import play
from pbem.mailin import smtpd
from pbem.mailout import outbox
from tests.conftest import free_port
from tests.e2e.conftest import LiveServer
from tests.server.conftest import Sink


@pytest.fixture
def one_machine(tmp_path: Path) -> Iterator[tuple[Flask, LiveServer]]:
    """What `make run` starts: the web, the mail listener and the dev mailbox, on free ports."""
    web_port, listener_port, mailbox_port = free_port(), free_port(), free_port()
    app = create_app({
        "server": {"instance_path": str(tmp_path / "instance"), "base_url": f"http://127.0.0.1:{web_port}",
                   "development": True},
        "database": {"url": f"sqlite:///{tmp_path / 'pbem.db'}"},
        "mail": {"smtp_port": mailbox_port},
        "smtpd": {"host": "127.0.0.1", "port": listener_port},
    })
    with app.app_context():
        db.create_all()
    mailbox = Sink(Path(app.instance_path) / "mailbox", mailbox_port)
    mailbox.start()
    listener = smtpd.controller(app, "127.0.0.1", listener_port)
    listener.start()
    live = LiveServer(app, web_port)
    yield app, live
    live.stop()
    listener.stop()
    mailbox.stop()
    with app.app_context():
        db.engine.dispose()


def deliver(app: Flask) -> None:
    """What the scheduler does every few seconds: wait for the processor, then send the outbox."""
    with app.app_context():
        deadline = time.monotonic() + 20
        while db.session.scalar(select(func.count(InboundMail.id)).where(
                InboundMail.status.in_(("received", "processing")))):
            assert time.monotonic() < deadline
            db.session.rollback()
            time.sleep(0.05)
        outbox.deliver_due()


def test_a_reply_from_the_mailbox_then_a_one_click_move(one_machine, browser: Browser) -> None:
    app, live = one_machine
    with app.app_context():
        alice = create_user("alice", "alice@example.org", verified=True)
        bob = create_user("bob", "bob@example.org", verified=True)
        db.session.commit()
        game_id = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}).id
        db.session.commit()
    deliver(app)

    page = browser.new_page()
    page.goto(f"{live.url}/mailbox?to=alice@example.org")
    page.get_by_role("link", name=f"[pbem] Cambio #{game_id}: your move (move 1)").click()
    expect(page.get_by_text("Legal moves: a2, b1, b2, b3, c2")).to_be_visible()
    page.get_by_label("Reply as alice@example.org").fill("b3 #1\nGood luck, bob")
    page.get_by_role("button", name="Send reply").click()
    expect(page.get_by_text("Sent to play+")).to_be_visible()
    deliver(app)

    page.goto(f"{live.url}/mailbox?to=bob@example.org")
    page.get_by_role("link", name=f"[pbem] Cambio #{game_id}: your move (move 2)").click()
    body = page.locator("pre").inner_text()
    assert "alice says: Good luck, bob" in body
    one_click = re.search(r"Or play with one click: (\S+)", body)[1]
    page.goto(one_click)
    expect(page.get_by_text("Your move 2. Pick one")).to_be_visible()
    page.get_by_label("a2").check()
    page.get_by_role("button", name="Confirm move").click()
    expect(page.get_by_text("Your move a2 is played.")).to_be_visible()
    page.close()
    with app.app_context():
        assert [m.text for m in db.session.get(Game, game_id).moves] == ["b3", "a2"]
        assert [m.via for m in db.session.get(Game, game_id).moves] == ["mail", "link"]
