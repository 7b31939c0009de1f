"""A database too busy to answer: the web says so (503, never 500), and the outbox never sends a mail
twice because it could not record that it was sent."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select

from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import OutboxMail
from pbem.mailout import outbox
from tests.server.test_kept_pages import end_every_session
from tests.server.webclient import WebClient


@pytest.fixture
def busy_app(settings: dict, tmp_path: Path):
    """An app on a SQLite file that waits only 100 ms for the write lock, and its database path."""
    path = tmp_path / "busy.db"
    settings["database"] = {"url": f"sqlite:///{path}", "sqlite_busy_timeout_ms": 100}
    settings["mail"]["claim_seconds"] = 1
    app = create_app(settings)
    with app.app_context():
        db.create_all()
        yield app, path
        db.session.remove()
        db.engine.dispose()


def _hold_write_lock(path: Path, until: threading.Event, held: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    held.set()
    until.wait(10)
    conn.execute("COMMIT")
    conn.close()


def test_the_web_answers_503_while_the_database_is_busy(busy_app: tuple[Flask, Path]) -> None:
    app, path = busy_app
    web = WebClient(app)
    token = web.token("/signup")
    release, held = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_write_lock, args=(path, release, held))
    holder.start()
    held.wait(5)
    try:
        page = web.post("/signup", {"handle": "dora", "email": "dora@example.org", "password": "long enough",
                                    "csrf_token": token})
    finally:
        release.set()
        holder.join()
    assert page.status_code == 503
    assert "very busy" in page.get_data(as_text=True)
    # Once the database is free again, the same form goes through.
    again = web.post("/signup", {"handle": "dora", "email": "dora@example.org", "password": "long enough"})
    assert again.status_code == 200


def test_a_sent_mail_is_recorded_even_when_the_database_is_busy(busy_app: tuple[Flask, Path], sink) -> None:
    _app, path = busy_app
    for i in range(3):
        outbox.enqueue(f"p{i}@example.org", f"mail {i}", "hello", kind="test")
    db.session.commit()
    release, held = threading.Event(), threading.Event()

    def block_after_the_first_send() -> None:
        deadline = time.monotonic() + 20
        while not sink.messages() and time.monotonic() < deadline:
            time.sleep(0.005)
        _hold_write_lock(path, release, held)

    holder = threading.Thread(target=block_after_the_first_send)
    holder.start()
    threading.Timer(1.0, release.set).start()  # The database is busy for a second.
    try:
        outbox.deliver_due()  # The first mail goes out; recording it waits out the busy second.
    finally:
        release.set()
        holder.join()
    time.sleep(1.1)  # Any claim left behind has lapsed.
    outbox.deliver_due()
    outbox.deliver_due()
    received = sorted(str(m["Subject"]) for m in sink.messages())
    assert received == ["mail 0", "mail 1", "mail 2"]
    db.session.rollback()
    assert all(row.sent_at is not None for row in db.session.scalars(select(OutboxMail)))


def test_requests_after_the_database_sessions_were_killed_are_served(app: Flask, ctx: Flask, players) -> None:
    """PostgreSQL: after every session of the app's database is ended (a restart, a failover,
    pg_terminate_backend), the next requests are answered as ever, none with a 503 for a dead pooled
    connection."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("pooled connections killed under the app are a PostgreSQL matter")
    web = WebClient(app)
    web.sign_in(players[0])
    pages = ["/", "/dashboard", "/archive", "/players/bob", "/api/v1/players/bob"]
    assert [web.get(page).status_code for page in pages] == [200] * len(pages)
    end_every_session()
    assert [web.get(page).status_code for page in pages * 2] == [200] * len(pages) * 2
