"""A listener killed outright (SIGKILL) with a batch of messages stored, then started again: every
message is answered exactly once and every move is applied once.

Also the pieces on their own: a message left "processing" that did nothing is processed again; one
that had acted is marked "interrupted" and its sender told; `pbem mail process --stuck` lists what needs
an operator.
"""

from __future__ import annotations

import os
import signal
import smtplib
import subprocess
import sys
import threading
import time
from collections import Counter
from email.message import EmailMessage, Message

from flask import Flask, current_app
from flask.testing import FlaskCliRunner
from sqlalchemy import func, select

from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import InboundMail, Move, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play
from pbem.mailin import process
from pbem.mailout import outbox, tokens
from tests.conftest import free_port
from tests.server.test_mail_play import COMMANDS

# Enough messages that the listener is still working through them when it is killed.  The listener
# processes a message as it receives it, before it answers, unless an earlier one of its sender's is
# waiting or in hand: then it only stores it, for its processors.  The batch comes over several
# connections at once, so that alice's moves come while one of hers is in hand, and a backlog builds;
# with a dozen, a fast processor could catch up before the kill.
GAMES = 30
CONNECTIONS = 6


def _listener(port: int) -> subprocess.Popen:
    # A real `pbem smtpd` process: what is tested is a listener killed with SIGKILL mid-way.
    env = dict(os.environ, PBEM_DATABASE_URL=current_app.config["SQLALCHEMY_DATABASE_URI"],
               PBEM_SERVER_INSTANCE_PATH=current_app.instance_path)
    with open(os.path.join(current_app.instance_path, "listener.log"), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "pbem", "smtpd", "--port", str(port)], env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with smtplib.SMTP("127.0.0.1", port, timeout=2) as client:
                client.noop()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise AssertionError("the listener did not start (see listener.log in the instance folder)")


def _settled(timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        db.session.rollback()
        waiting = db.session.scalar(select(func.count(InboundMail.id)).where(
            InboundMail.status.in_(("received", "processing"))))
        if not waiting:
            return
        assert time.monotonic() < deadline, f"{waiting} message(s) still waiting"
        time.sleep(0.1)


def test_a_killed_listener_answers_every_message_once(app: Flask, ctx: Flask, players, sink) -> None:
    alice, bob, _ = players
    games = [play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}) for _ in range(GAMES)]
    db.session.commit()
    outbox.deliver_due()
    batch: list[EmailMessage] = []
    for number, game in enumerate(games):
        msg = EmailMessage()
        msg["From"], msg["Subject"] = alice.email, "Re: go"
        msg["To"] = tokens.reply_address(game.id, 0, alice)
        msg["Message-ID"] = f"<move{number}@example.org>"
        msg.set_content("b3\n")
        batch.append(msg)
        helper = EmailMessage()
        helper["From"], helper["To"], helper["Subject"] = "carol@example.org", COMMANDS, "help cambio"
        helper["Message-ID"] = f"<help{number}@example.org>"
        helper.set_content("\n")
        batch.append(helper)

    port = free_port()
    first = _listener(port)
    try:
        clients = [smtplib.SMTP("127.0.0.1", port, timeout=30) for _ in range(CONNECTIONS)]

        def send(number: int) -> None:
            for msg in batch[number::CONNECTIONS]:
                clients[number].send_message(msg)  # Each is stored (250) before the next is sent.

        sending = [threading.Thread(target=send, args=(number,)) for number in range(CONNECTIONS)]
        for thread in sending:
            thread.start()
        for thread in sending:
            thread.join(60)
        os.kill(first.pid, signal.SIGKILL)  # At once after the last, not after a goodbye.
        for client in clients:
            client.close()
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    db.session.rollback()
    assert db.session.scalar(select(func.count(InboundMail.id))) == len(batch)
    # The kill came while the listener was still working through the batch.
    assert db.session.scalar(select(func.count(InboundMail.id)).where(
        InboundMail.status.in_(("received", "processing")))) > 0

    second = _listener(port)
    try:
        _settled()
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(30)
    outbox.deliver_due()

    answers = Counter(str(m["In-Reply-To"]) for m in sink.messages() if str(m["Subject"]).startswith("Re:"))
    assert {str(m["Message-ID"]): answers[str(m["Message-ID"])] for m in batch} == {
        str(m["Message-ID"]): 1 for m in batch}
    db.session.rollback()
    moves = db.session.execute(select(Move.game_id, func.count(Move.id)).group_by(Move.game_id)).all()
    assert sorted(moves) == [(game.id, 1) for game in games]
    assert set(db.session.scalars(select(InboundMail.status))) <= {"processed", "interrupted"}


def _text(message: Message) -> str:
    part = next(p for p in message.walk() if p.get_content_type() == "text/plain")
    return part.get_payload(decode=True).decode()


def _stuck_row(acted: bool) -> int:
    with unit_of_work() as uow:
        row = InboundMail(
            message_id=f"<stuck-{acted}@example.org>", mail_from="carol@example.org", rcpt_to=COMMANDS,
            raw=(f"From: carol@example.org\r\nTo: {COMMANDS}\r\nSubject: help\r\n"
                 f"Message-ID: <stuck-{acted}@example.org>\r\n\r\nhelp\r\n").encode(),
            status="processing", processed_at=utcnow(), acted_at=utcnow() if acted else None,
        )
        db.session.add(row)
        uow.commit()
    return row.id


def test_messages_left_processing_are_resolved_at_restart(app: Flask, ctx: Flask, runner: FlaskCliRunner,
                                                          sink) -> None:
    idle, acted = _stuck_row(False), _stuck_row(True)
    listed = runner.invoke(main, ["mail", "process", "--stuck"])
    assert listed.exit_code == 0 and "0 message(s) need an operator" in listed.stdout  # Not stuck yet.

    time.sleep(0.01)
    assert process.recover_interrupted(utcnow()) == (1, 1)
    process.process_pending()
    outbox.deliver_due()
    db.session.rollback()
    assert db.session.get(InboundMail, idle).status == "processed"
    assert db.session.get(InboundMail, acted).status == "interrupted"
    answers = [_text(m) for m in sink.messages("carol@example.org")]
    assert len(answers) == 2
    assert any("stopped before it could answer" in a for a in answers)

    listed = runner.invoke(main, ["mail", "process", "--stuck"])
    assert f"#{acted} interrupted" in listed.stdout and "1 message(s) need an operator" in listed.stdout
