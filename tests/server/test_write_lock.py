"""Busy database: inbound mail from 50 clients at once, the deliverer running, sign-ups arriving.

Every write transaction takes the write lock first (a unit of work begins it: pbem.core.unit_of_work),
so on SQLite nothing fails with "database is locked": every mail is delivered exactly once, no sign-up
answers 500, and the log never says "locked".
"""

from __future__ import annotations

import logging
import smtplib
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from email.message import EmailMessage

import pytest
from flask import Flask
from sqlalchemy import func, select

from pbem.core.extensions import db
from pbem.core.models import InboundMail, OutboxMail
from pbem.mailin import smtpd
from pbem.mailout import outbox
from tests.conftest import free_port
from tests.server.test_mail_play import COMMANDS
from tests.server.webclient import WebClient

CLIENTS = 50
SIGNUPS = 30


@pytest.fixture
def settings(settings: dict) -> dict:
    """The test's settings with a long wait for SQLite's write lock.

    What this test guards against fails at once, whatever the wait: a transaction that read and then
    tries to write is refused by SQLite straight away.  A wait that merely runs out is another thing:
    with eighty writers on a machine whose cores are busy with other work, a writer was once kept past
    the usual ten seconds, and the listener rightly answered 451 (a sending MTA retries).  A minute keeps
    that out of the test without hiding the failure it is for."""
    return {**settings, "database": {**settings["database"], "sqlite_busy_timeout_ms": 60_000}}


def test_mail_load_with_deliveries_and_sign_ups(app: Flask, ctx: Flask, sink,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    port = free_port()
    listener = smtpd.controller(app, "127.0.0.1", port)
    listener.start()
    stop = threading.Event()

    def deliverer() -> None:
        with app.app_context():
            while not stop.is_set():
                outbox.deliver_due()
                db.session.remove()
                time.sleep(0.05)

    def send(i: int) -> None:
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = f"player{i}@example.org", COMMANDS, "help"
        msg["Message-ID"] = f"<load{i}@example.org>"
        msg.set_content("\n")
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
            client.send_message(msg)

    def sign_up(i: int) -> int:
        # Each sign-up from a client address of its own, as sign-ups from many people would be.
        web = WebClient(app)
        form = {"handle": f"newcomer{i}", "email": f"newcomer{i}@example.org", "password": "long enough"}
        return web.post("/signup", form, environ_base={"REMOTE_ADDR": f"10.0.0.{i + 1}"}).status_code

    delivering = threading.Thread(target=deliverer, daemon=True)
    delivering.start()
    try:
        with ThreadPoolExecutor(CLIENTS + 4) as pool:
            mails = [pool.submit(send, i) for i in range(CLIENTS)]
            signups = [pool.submit(sign_up, i) for i in range(SIGNUPS)]
            statuses = [f.result(timeout=60) for f in signups]
            for f in mails:
                f.result(timeout=60)
        deadline = time.monotonic() + 30
        while True:
            db.session.rollback()
            waiting = db.session.scalar(select(func.count(InboundMail.id)).where(
                InboundMail.status.in_(("received", "processing"))))
            unsent = db.session.scalar(select(func.count(OutboxMail.id)).where(OutboxMail.sent_at.is_(None)))
            if not waiting and not unsent:
                break
            assert time.monotonic() < deadline, (waiting, unsent)
            time.sleep(0.1)
    finally:
        stop.set()
        delivering.join(10)
        listener.stop()

    assert statuses == [200] * SIGNUPS
    received = Counter(str(m["X-Pbem-Envelope-To"]) for m in sink.messages())
    expected = {f"player{i}@example.org" for i in range(CLIENTS)} | {
        f"newcomer{i}@example.org" for i in range(SIGNUPS)}
    assert set(received) == expected
    assert all(count == 1 for count in received.values()), [a for a, n in received.items() if n > 1]
    db.session.rollback()
    assert set(db.session.scalars(select(InboundMail.status))) == {"processed"}
    noise = [r.getMessage() for r in caplog.records if "locked" in r.getMessage().lower()
             or r.levelno >= logging.ERROR]
    assert noise == []
