"""The outbox against a real SMTP server on loopback: delivered, retried while the server is down,
and delivered exactly once when it comes back."""

from __future__ import annotations

import email
import email.policy
from datetime import timedelta

import sqlalchemy as sa
from aiosmtpd.controller import Controller
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import OutboxMail, set_clock, utcnow
from pbem.mailout import devmail, outbox


def queue_one(to: str = "alice@example.org") -> int:
    row_id = outbox.enqueue(to, "[pbem] Test: hello", "The board\n  a b c\n", kind="test")
    db.session.commit()
    return row_id


def test_a_queued_mail_is_delivered_with_its_message_id(ctx: Flask, sink) -> None:
    row_id = queue_one()
    assert outbox.deliver_due() == (1, 0)
    [received] = sink.messages("alice@example.org")
    row = db.session.get(OutboxMail, row_id)
    assert received["Message-ID"] == row.message_id
    assert received["Subject"] == "[pbem] Test: hello"
    assert received["Auto-Submitted"] == "auto-generated"
    assert "The board" in received.get_payload(decode=True).decode()
    assert row.sent_at is not None
    assert outbox.deliver_due() == (0, 0)  # Nothing is sent twice.
    assert len(sink.messages()) == 1


def test_server_down_then_up_delivers_once(ctx: Flask, sink) -> None:
    sink.stop()
    row_id = queue_one()
    try:
        assert outbox.deliver_due() == (0, 1)
        row = db.session.get(OutboxMail, row_id)
        assert row.sent_at is None and row.attempts == 1 and row.last_error
        assert row.next_attempt_at > utcnow()  # Backed off, not dropped.
        assert outbox.deliver_due() == (0, 0)  # Not due again yet.
        sink.start()
        set_clock(utcnow() + timedelta(hours=1))
        assert outbox.deliver_due() == (1, 0)
        assert outbox.deliver_due() == (0, 0)
    finally:
        set_clock(None)
    assert len(sink.messages("alice@example.org")) == 1
    assert db.session.get(OutboxMail, row_id).attempts == 2


def test_a_claimed_mail_is_left_to_its_deliverer(ctx: Flask, sink) -> None:
    row_id = queue_one()
    row = db.session.get(OutboxMail, row_id)
    row.claimed_until = utcnow() + timedelta(minutes=5)  # Another deliverer is sending it.
    db.session.commit()
    assert outbox.deliver_due() == (0, 0)
    # If that deliverer died, the claim lapses and the mail goes out (with the same Message-ID).
    set_clock(utcnow() + timedelta(minutes=6))
    try:
        assert outbox.deliver_due() == (1, 0)
    finally:
        set_clock(None)
    assert sink.messages()[0]["Message-ID"] == row.message_id


def test_mails_of_a_game_thread_together(ctx: Flask, sink, players) -> None:
    from pbem.game import play

    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    play.submit(game.id, alice, "b3", "web")
    outbox.deliver_due()
    mails = sink.messages()
    assert len(mails) == 2
    assert {m["References"] for m in mails} == {f"<game-{game.id}@pbem.localhost>"}
    assert len({m["Message-ID"] for m in mails}) == 2
    assert db.session.scalars(select(OutboxMail).where(OutboxMail.sent_at.is_(None))).all() == []


def test_a_write_by_another_process_while_sending_does_not_stop_the_mail_being_marked_sent(
    app: Flask, ctx: Flask, sink_port: int, tmp_path
) -> None:
    """Another process (the listener, a move) writes while the deliverer talks to the mail server: the
    mail is still marked sent, so it is not sent again when its claim lapses."""
    first, second = queue_one(), queue_one("bob@example.org")
    elsewhere = sa.create_engine(app.config["SQLALCHEMY_DATABASE_URI"])

    class WritingMeanwhile(devmail.MaildirHandler):
        async def handle_DATA(self, server, session, envelope) -> str:
            with elsewhere.begin() as conn:
                conn.execute(sa.text("UPDATE outbox_mail SET subject = subject || '.' WHERE id = :id"),
                             {"id": second})
            return await super().handle_DATA(server, session, envelope)

    server = Controller(WritingMeanwhile(tmp_path / "kept"), hostname="127.0.0.1", port=sink_port)
    server.start()
    try:
        assert outbox.deliver_due() == (2, 0)
        assert outbox.deliver_due() == (0, 0)
    finally:
        server.stop()
        elsewhere.dispose()
    db.session.rollback()
    assert all(db.session.get(OutboxMail, i).sent_at is not None for i in (first, second))
    assert len(devmail.messages(tmp_path / "kept")) == 2


class _CountingServer:
    """An SMTP server that keeps which connection each accepted mail came over, and refuses one
    recipient (as a real server refuses an unknown user)."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.accepted: list[tuple[int, list[str]]] = []
        self.connections = 0

    async def handle_RCPT(self, server, session, envelope, address: str, rcpt_options) -> str:
        if address == self.refuse:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        if not hasattr(session, "pbem_number"):  # The first mail of this connection.
            self.connections += 1
            session.pbem_number = self.connections
        self.accepted.append((session.pbem_number, list(envelope.rcpt_tos)))
        return "250 OK"


def test_one_run_sends_over_one_connection_and_a_refusal_loses_nothing(ctx: Flask, sink_port: int) -> None:
    server = _CountingServer(refuse="nobody@example.org")
    controller = Controller(server, hostname="127.0.0.1", port=sink_port)
    controller.start()
    try:
        addresses = ["a@example.org", "b@example.org", "nobody@example.org", "c@example.org", "d@example.org"]
        for address in addresses:
            queue_one(address)
        assert outbox.deliver_due() == (4, 1)
    finally:
        controller.stop()
    delivered = [rcpt[0] for _session, rcpt in server.accepted]
    assert delivered == ["a@example.org", "b@example.org", "c@example.org", "d@example.org"]
    # One connection before the refusal, a fresh one after it: not one per mail.
    assert len({session for session, _rcpt in server.accepted}) == 2
    refused = db.session.scalar(select(OutboxMail).where(OutboxMail.to_addr == "nobody@example.org"))
    assert refused.sent_at is None and refused.attempts == 1 and "No such user" in refused.last_error
    assert refused.failed_at is not None  # A 550 is final: given up, not retried.
    # Those that went are marked sent (together, with the refusal between them): none goes again.
    went = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr != "nobody@example.org")).all()
    assert [(m.sent_at is not None, m.attempts, m.last_error) for m in went] == [(True, 1, None)] * 4
    assert outbox.deliver_due() == (0, 0)


def test_a_mail_reads_as_written_whatever_its_text(ctx: Flask, sink) -> None:
    """Non-ASCII subjects and text, a line break in a subject, a line longer than SMTP allows: the mail
    read back has the same words, its subject on one line, and no line over 998 octets."""
    text = "Your move, Zoë: a3\n" + "é" * 1200 + "\n. a line with a dot\n  indented  \n"
    html = "<p>Your move, Zoë</p>\n<p>" + "x" * 2000 + "</p>\n"
    outbox.enqueue("alice@example.org", "Ré: the game\nof   Zoë " + "long " * 30, text, kind="test",
                   body_html=html, reply_to="play+token@pbem.localhost",
                   headers={"In-Reply-To": "<a@example.org>", "References": "<game-1@x> <a@example.org>"})
    db.session.commit()
    assert outbox.deliver_due() == (1, 0)
    [kept] = sink.messages("alice@example.org")
    raw = kept.as_bytes()
    assert max(len(line) for line in raw.splitlines()) <= 998
    received = email.message_from_bytes(raw, policy=email.policy.default)
    assert received["Subject"] == "Ré: the game of Zoë" + " long" * 30
    assert received["Reply-To"] == "play+token@pbem.localhost"
    assert received["In-Reply-To"] == "<a@example.org>"
    assert received["References"] == "<game-1@x> <a@example.org>"
    assert received["Auto-Submitted"] == "auto-generated"
    assert received.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n") == text
    assert received.get_body(preferencelist=("html",)).get_content().replace("\r\n", "\n") == html
    assert not [part for part in received.walk() if part.defects]


def test_a_long_subject_is_folded_after_its_first_words(ctx: Flask, sink) -> None:
    """Folded, a long subject keeps its first words on the first line (some mail programs show a subject
    folded before its first word with a space in front), and reads back exactly as written."""
    subjects = ["[pbem] Cambio #7: reminder: your move (move 12), 11 hours 24 minutes left",
                "[pbem] Zoë's game #7: réponse: " + "très long " * 12 + "=?utf-8?q?not-encoded?="]
    for n, subject in enumerate(subjects):
        outbox.enqueue(f"p{n}@example.org", subject, "text", kind="test")
    db.session.commit()
    assert outbox.deliver_due() == (2, 0)
    for n, subject in enumerate(subjects):
        [kept] = sink.messages(f"p{n}@example.org")
        raw = kept.as_bytes()
        first = next(line for line in raw.split(b"\n") if line.startswith(b"Subject:"))
        assert first.strip() != b"Subject:" and len(first.rstrip(b"\r")) <= 78
        assert email.message_from_bytes(raw, policy=email.policy.default)["Subject"] == subject


def _later(hours: float) -> None:
    """Move the clock ``hours`` on from now (every retry is due by then)."""
    set_clock(utcnow() + timedelta(hours=hours))


def test_a_recipient_refused_for_good_is_given_up_and_never_tried_again(ctx: Flask, sink) -> None:
    sink.refuse["gone@example.org"] = "550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown"
    row_id = queue_one("gone@example.org")
    kept = queue_one("alice@example.org")
    assert outbox.deliver_due() == (1, 1)
    row = db.session.get(OutboxMail, row_id)
    assert row.sent_at is None and row.failed_at is not None and row.attempts == 1
    assert row.last_error == "refused: 550 5.1.1 <gone@example.org>: Recipient address rejected: User unknown"
    assert outbox.pending_count() == 0
    try:
        _later(3)
        assert outbox.deliver_due() == (0, 0)  # Not claimed again, however late.
    finally:
        set_clock(None)
    db.session.expire_all()
    assert db.session.get(OutboxMail, row_id).attempts == 1
    assert db.session.get(OutboxMail, kept).sent_at is not None


def test_a_mail_refused_for_good_after_its_data_is_given_up(ctx: Flask, sink) -> None:
    sink.refuse_data = "554 5.7.1 Message rejected as spam"
    row_id = queue_one()
    assert outbox.deliver_due() == (0, 1)
    row = db.session.get(OutboxMail, row_id)
    assert row.failed_at is not None and row.last_error == "refused: 554 5.7.1 Message rejected as spam"


def test_an_address_that_cannot_be_encoded_is_given_up_at_once(ctx: Flask, sink) -> None:
    # Written before addresses beyond ASCII were refused: plain SMTP cannot carry it, now or later.
    row_id = queue_one("lee@exämple.org")
    kept = queue_one("alice@example.org")
    assert outbox.deliver_due() == (1, 1)
    row = db.session.get(OutboxMail, row_id)
    assert row.failed_at is not None and "UnicodeEncodeError" in row.last_error
    assert outbox.pending_count() == 0 and db.session.get(OutboxMail, kept).sent_at is not None


def test_a_temporary_refusal_is_retried_then_given_up_after_the_time_limit(ctx: Flask, sink) -> None:
    sink.refuse["full@example.org"] = "452 4.2.2 Mailbox full, try later"
    row_id = queue_one("full@example.org")
    written = utcnow()
    try:
        assert outbox.deliver_due() == (0, 1)
        row = db.session.get(OutboxMail, row_id)
        assert row.failed_at is None and row.next_attempt_at > utcnow()  # Backed off, to be retried.
        assert row.last_error == "452 4.2.2 Mailbox full, try later"
        for hours in (1, 50, 119):  # Still tried within five days of being written.
            set_clock(written + timedelta(hours=hours))
            assert outbox.deliver_due() == (0, 1)
            db.session.expire_all()
            assert db.session.get(OutboxMail, row_id).failed_at is None
        set_clock(written + timedelta(hours=120, minutes=1))
        assert outbox.deliver_due() == (0, 1)
        db.session.expire_all()
        row = db.session.get(OutboxMail, row_id)
        assert row.failed_at is not None and row.attempts == 5
        assert row.last_error == "given up after 120 hours: 452 4.2.2 Mailbox full, try later"
        set_clock(written + timedelta(hours=200))
        assert outbox.deliver_due() == (0, 0)
    finally:
        set_clock(None)


def test_a_server_away_for_longer_than_the_limit_gives_the_mail_up(ctx: Flask, sink) -> None:
    sink.stop()
    row_id = queue_one()
    try:
        _later(121)
        assert outbox.deliver_due() == (0, 1)
    finally:
        set_clock(None)
        sink.start()
    row = db.session.get(OutboxMail, row_id)
    assert row.failed_at is not None and row.last_error.startswith("given up after 120 hours: ")
    assert outbox.deliver_due() == (0, 0) and sink.messages() == []


def test_each_mail_sent_is_logged_with_its_recipient_message_id_and_the_mta_answer(
    ctx: Flask, sink, caplog
) -> None:
    caplog.set_level("INFO", logger="pbem.mailout.outbox")
    row_id = queue_one("dora@example.org")
    sink.refuse["erin@example.org"] = "550 5.1.1 No such user here"
    refused_id = queue_one("erin@example.org")
    assert outbox.deliver_due() == (1, 1)
    sent, refused = db.session.get(OutboxMail, row_id), db.session.get(OutboxMail, refused_id)
    assert (f"sent outbox #{row_id} (test) to dora@example.org, Message-ID {sent.message_id}: 250 "
            in caplog.text)
    assert (f"outbox #{refused_id} (test) to erin@example.org, Message-ID {refused.message_id}, refused: "
            "550 5.1.1 No such user here" in caplog.text)


def test_pbem_mail_test_sends_through_the_outbound_path_and_says_what_the_mta_answered(
    app: Flask, ctx: Flask, sink, monkeypatch
) -> None:
    from click.testing import CliRunner

    from pbem import cli

    monkeypatch.setattr(cli, "_app", lambda: app)
    done = CliRunner().invoke(cli.main, ["mail", "test", "dora@example.org"])
    assert done.exit_code == 0, done.output
    [received] = sink.messages("dora@example.org")
    assert f"Message-ID {received['Message-ID']}. The MTA answered: 250 " in done.output
    assert received["Subject"] == "pbem test mail" and received["Auto-Submitted"] == "auto-generated"
    assert received["X-Pbem-Envelope-From"].startswith("bounces+")  # As every mail: its own VERP sender.
    row = db.session.scalars(select(OutboxMail).where(OutboxMail.kind == "test")).one()
    assert row.sent_at is not None and outbox.deliver_due() == (0, 0)  # Not sent a second time.

    sink.refuse["erin@example.org"] = "550 5.1.1 No such user here"
    refused = CliRunner().invoke(cli.main, ["mail", "test", "erin@example.org"])
    assert refused.exit_code == 1 and "550 5.1.1 No such user here" in refused.output
    sink.stop()  # No MTA at all.
    away = CliRunner().invoke(cli.main, ["mail", "test", "dora@example.org"])
    assert away.exit_code == 1 and "Connection refused" in away.output
    assert "is not a mail address" in CliRunner().invoke(cli.main, ["mail", "test", "nobody"]).output


def test_an_envelope_address_is_written_as_smtplib_writes_it() -> None:
    """MAIL FROM and RCPT TO carry each address as smtplib's own ``sendmail`` would (the deliverer
    writes a plain one without parsing it)."""
    import smtplib

    addresses = [
        "alice@example.org", "bounces+abc123@pbem.localhost", "o'neil.x-y_z+tag@mail.example.co.uk",
        "a!#$%&*/=?^`{|}~@example.org", "x@localhost", "a..b@example.org", ".a@example.org",
        "a.@example.org", "a@b..c", "Alice <alice@example.org>", "<alice@example.org>", "<>", "",
        "alice@example.org (Alice)", '"a b"@example.org', "a@[127.0.0.1]", "alice", "a@b@c",
        "ålice@example.org", " alice@example.org", "alice@example.org\n", "a,b@example.org",
    ]
    for address in addresses:
        assert outbox.smtp_path(address) == smtplib.quoteaddr(address), address
