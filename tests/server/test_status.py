"""`pbem status`: what an operator monitors, and the remedies it names clearing what it reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from click.testing import Result
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import func, select, update

from pbem import cli
from pbem.core.extensions import db
from pbem.core.models import InboundMail, OutboxMail, Seat, utcnow
from pbem.game import play
from pbem.mailin import receive
from tests.server.test_mail_security import reply_mail


@pytest.fixture
def pbem(runner: FlaskCliRunner) -> Callable[..., Result]:
    """Run the `pbem` command as an operator would, on the test's app (its database and outbound sink);
    the test's own session then reads afresh, holding nothing the next command must wait for."""

    def run(*args: str) -> Result:
        result = runner.invoke(cli.main, list(args))
        db.session.rollback()
        return result

    return run


def test_status_reports_stuck_mail_an_old_outbox_and_a_late_sweep(pbem, ctx: Flask, sink, players) -> None:
    alice, bob, _ = players
    quiet = pbem("status")
    assert quiet.exit_code == 0, quiet.output
    assert "Inbound mail: 0 waiting; 0 stuck in processing; 0 failed" in quiet.output
    assert "All well." in quiet.output

    # A game whose first reminder has been due for half an hour: no scheduler is sweeping.
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    hour_ago = utcnow() - timedelta(hours=1)
    db.session.execute(update(Seat).where(Seat.game_id == game.id, Seat.number == 0)
                       .values(next_event_at=utcnow() - timedelta(minutes=30)))
    # The game's mails, written an hour ago and never sent: the last try was refused.
    db.session.execute(update(OutboxMail).values(created_at=hour_ago, attempts=2,
                                                 last_error="SMTPRecipientsRefused: 451 try later"))
    db.session.commit()
    unsent = db.session.scalar(select(func.count(OutboxMail.id)))
    # A message stored twenty minutes ago and never processed; one cut short mid-way; one that failed.
    waiting, _ = receive.store(reply_mail(alice.email, "pbem@pbem.localhost", "games").as_bytes())
    stuck, _ = receive.store(reply_mail(bob.email, "pbem@pbem.localhost", "help").as_bytes())
    failed, _ = receive.store(reply_mail(bob.email, "pbem@pbem.localhost", "show").as_bytes())
    db.session.execute(update(InboundMail).where(InboundMail.id == waiting.id)
                       .values(received_at=utcnow() - timedelta(minutes=20)))
    db.session.execute(update(InboundMail).where(InboundMail.id == stuck.id)
                       .values(status="processing", processed_at=hour_ago))
    db.session.execute(update(InboundMail).where(InboundMail.id == failed.id)
                       .values(status="failed", processed_at=hour_ago, note="KeyError: 'x'"))
    db.session.commit()

    report = pbem("status")
    assert report.exit_code == 1, report.output
    out = report.output
    assert (f"Inbound mail: 1 waiting (the oldest 20 minutes old); 1 stuck in processing; 1 failed "
            f"(1 in the last day: #{failed.id})") in out
    assert (f"Outbox: {unsent} waiting, the oldest 1 hour old; {unsent} being retried (last error: "
            "SMTPRecipientsRefused") in out
    assert "Sweep: 1 seat(s) due, the longest due for 30 minutes" in out
    assert "inbound mail has waited 20 minutes to be processed" in out and "`pbem mail process`" in out
    assert f"inbound message(s) #{stuck.id} stopped in the middle of processing" in out
    assert "the oldest unsent mail has waited 1 hour" in out
    assert "a reminder or deadline has been due for 30 minutes" in out and "`pbem sweep`" in out

    figures = json.loads(pbem("status", "--json").output)
    assert figures["inbound_stuck"] == [stuck.id] and figures["outbox_waiting"] == unsent
    assert figures["age_seconds"]["sweep"] >= 1800 and len(figures["problems"]) == 5

    # Looser limits make the same figures no problem (a failed message still is, for a day).
    loose = pbem("status", "--inbound-minutes", "120", "--outbox-minutes", "120", "--sweep-minutes", "60")
    assert loose.exit_code == 1 and loose.output.count("\n- ") == 1
    assert "failed in the last day" in loose.output

    # The remedies the report names clear what it reported.
    assert pbem("mail", "process").exit_code == 0
    assert pbem("sweep").exit_code == 0
    assert pbem("outbox", "deliver").exit_code == 0
    after = pbem("status", "--inbound-minutes", "120").output
    assert "Inbound mail: 0 waiting; 0 stuck in processing; 1 failed" in after
    assert "Sweep: 0 seat(s) due" in after
    assert "Outbox: 0 waiting; 0 being retried" in after and after.count("\n- ") == 1
    assert sink.messages(alice.email), "the mails waiting in the outbox were delivered"
