"""`pbem status`: what an operator monitors, and the remedies it names clearing what it reports."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
import sqlalchemy as sa
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


def test_status_sees_a_listener_and_a_scheduler_that_died_hang_or_stopped(
    pbem, app: Flask, ctx: Flask, tmp_path
) -> None:
    """Each listener and scheduler writes a heartbeat: one killed is silent past the limit, one stopped
    by SIGTERM says so, and with none left running the report names what waits and how to start it."""
    import signal

    from pbem.core.models import Heartbeat, set_clock
    from tests.conftest import free_port
    from tests.server.processes import PBEM, Processes, environment, exec_start, option, wait_for_port

    procs = Processes(tmp_path)
    env = environment(app, PBEM_MONITORING_HEARTBEAT_SECONDS="1")
    port = free_port()
    try:
        smtpd = option(exec_start("pbem-smtpd.service"), "--port", str(port))
        listener = procs.start("listener", smtpd, env)
        scheduler = procs.start("scheduler", [*PBEM, "scheduler"], env)
        wait_for_port(port, listener)

        def beats() -> dict[str, Heartbeat]:
            db.session.rollback()
            return {row.kind: row for row in db.session.scalars(select(Heartbeat))}

        deadline = time.monotonic() + 30
        while len(beats()) < 2:
            assert time.monotonic() < deadline, procs.logs()
            time.sleep(0.2)
        report = pbem("status", "--no-mta-queue")
        assert report.exit_code == 0, report.output
        if db.engine.dialect.name == "postgresql":  # Each connection says whose it is.
            names = set(db.session.scalars(sa.text(
                "SELECT application_name FROM pg_stat_activity WHERE datname = current_database()")))
            db.session.rollback()
            host = socket.gethostname()
            assert f"pbem smtpd {host} pid {listener.popen.pid}" in names, names
            assert f"pbem scheduler {host} pid {scheduler.popen.pid}" in names, names
        host = socket.gethostname()
        assert f"Listener {host} LMTP 127.0.0.1:{port}: pid {listener.popen.pid}" in report.output
        assert f"Scheduler {host} scheduler: pid {scheduler.popen.pid}" in report.output

        # The listener is killed (no chance to say so), the scheduler stopped as systemd stops it.
        listener.popen.send_signal(signal.SIGKILL)
        procs.stop(scheduler)
        assert "scheduler 'scheduler' stopped" in scheduler.output()
        assert beats()["scheduler"].stopped_at is not None
        set_clock(utcnow() + timedelta(minutes=5))
        try:
            late = pbem("status", "--no-mta-queue")
        finally:
            set_clock(None)
        assert late.exit_code == 1, late.output
        assert f"listener {socket.gethostname()} LMTP 127.0.0.1:{port} (pid {listener.popen.pid}) has been " \
               "silent for 5 minutes: it died or hangs" in late.output
        assert "no scheduler is running (the last stopped 5 minutes ago): no mail goes out" in late.output
        assert "`systemctl start pbem-scheduler`" in late.output
        # A listener stopped by SIGTERM says it stopped, and why.
        again = procs.start("listener-again", smtpd, env)
        wait_for_port(port, again)
        deadline = time.monotonic() + 30
        while "listening for LMTP" not in again.output():
            assert time.monotonic() < deadline, again.output()
            time.sleep(0.1)
        procs.stop(again)
        assert "SIGTERM: no longer listening" in again.output() and "listener stopped" in again.output()
        stopped = pbem("status", "--no-mta-queue")
        assert "no listener is running" in stopped.output and stopped.exit_code == 1
    except BaseException:
        print(procs.logs())
        raise
    finally:
        procs.stop_all()
