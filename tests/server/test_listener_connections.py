"""A burst of mail from many senders at once, on PostgreSQL (issue #33): every message is answered at
once, and the listener keeps its database connections through it.

A real `pbem smtpd` is sent mail by several senders side by side, each on its own connection, while the
server's sessions of the listener are watched.  Two faults showed here: a sender's message turned away
because an earlier one of theirs was in hand held the sender's lock until its transaction ended, so
that the earlier one's own claim, made meanwhile, was turned away too and nobody took the sender's mail
until the processors' next look, 30 s later; and a pool smaller than the listener's threads opened a
connection for each burst and closed it after, each new one planning every statement afresh (8 senders
made 76-88 messages a second, against 147-151 with the pool sized to the threads).
"""

from __future__ import annotations

import smtplib
import threading
import time
from email.message import EmailMessage

import pytest
from flask import Flask, current_app
from sqlalchemy import create_engine

from pbem.core.config import LISTENER_ROLES, listener_store_threads
from tests.conftest import free_port
from tests.server.test_crash_recovery import _listener, _settled
from tests.server.test_mail_play import COMMANDS

SENDERS = 16  # More than the listener has threads, so that all of them are busy at once.
EACH = 6
# Under the processors' look for whatever waits (every 30 s), well over what the burst takes (1-2 s).
PROMPTLY = 20


class _Sessions:
    """The listener's sessions on the database, sampled in a thread: every one seen, and the most at once."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)
        self.seen: set[int] = set()
        self.most_at_once = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch)

    def _watch(self) -> None:
        with self.engine.connect() as connection:
            while not self._done.is_set():
                pids = set(connection.exec_driver_sql(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND starts_with(application_name, 'pbem smtpd')").scalars())
                connection.rollback()
                self.seen |= pids
                self.most_at_once = max(self.most_at_once, len(pids))
                time.sleep(0.005)

    def __enter__(self) -> _Sessions:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(10)
        self.engine.dispose()


def _send_burst(port: int) -> None:
    def send(sender: int) -> None:
        with smtplib.SMTP("127.0.0.1", port, timeout=30) as client:
            for number in range(EACH):  # Each is answered (250) before the next is sent.
                msg = EmailMessage()
                msg["From"], msg["To"], msg["Subject"] = f"p{sender}@example.org", COMMANDS, "help cambio"
                msg["Message-ID"] = f"<burst{sender}.{number}@example.org>"
                msg.set_content("\n")
                client.send_message(msg)

    senders = [threading.Thread(target=send, args=(n,)) for n in range(SENDERS)]
    for thread in senders:
        thread.start()
    for thread in senders:
        thread.join(60)


def test_a_burst_from_many_senders_is_answered_at_once_over_the_listeners_kept_connections(
        app: Flask, ctx: Flask, sink) -> None:
    url = current_app.config["SQLALCHEMY_DATABASE_URI"]
    if not url.startswith("postgresql"):
        pytest.skip("PostgreSQL's processors run side by side; SQLite's one takes the mail in turn")
    assert "pbem smtpd" in LISTENER_ROLES
    settings = current_app.config["PBEM"]
    threads = listener_store_threads(settings) + settings["smtpd"]["workers"]
    port = free_port()
    listener = _listener(port)
    try:
        with _Sessions(url) as sessions:
            _send_burst(port)
            started = time.monotonic()
            _settled(timeout=PROMPTLY)
            settled_in = time.monotonic() - started
    finally:
        listener.terminate()
        listener.wait(30)
    assert settled_in < PROMPTLY
    # The burst kept more connections busy at once than a default pool's five...
    assert sessions.most_at_once > 5, sessions.most_at_once
    # ...and every one stayed open for the next message: none opened for a burst and closed after it.
    assert len(sessions.seen) <= threads + 1, (len(sessions.seen), sessions.most_at_once)
