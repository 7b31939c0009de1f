"""Mail that bounces: each mail goes out with its own envelope sender (VERP), and what comes back there is
read as a delivery report about that mail, end to end: the outbox → a real SMTP sink (which records the
envelope) → a real delivery report sent over SMTP to the real listener → processing."""

from __future__ import annotations

import time
from datetime import timedelta

from flask import Flask
from sqlalchemy import func, select

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import InboundMail, OutboxMail, User, set_clock, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play
from pbem.lobby import challenges
from pbem.mailin import process, receive
from pbem.mailout import bouncing, outbox, sendagain, tokens
from pbem.web.pagecache import cache_of
from tests.server.test_mail_play import Postman, postman  # noqa: F401  (the listener fixture)
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient

DIAGNOSTIC = "smtp; 550 5.1.1 <{to}>: Recipient address rejected: User unknown in virtual mailbox table"


def envelope_sender(postman: Postman, to: str) -> str:  # noqa: F811
    """The envelope sender (MAIL FROM) of the newest mail the sink received for ``to``."""
    [*_, kept] = postman.sink.messages(to)
    return str(kept["X-Pbem-Envelope-From"])


def delivery_report(to: str, action: str = "failed", status: str = "5.1.1",
                    diagnostic: str | None = None, message_id: str = "<dsn-1@mx.example.org>") -> bytes:
    """A delivery status notification as Postfix writes one (RFC 3464), about a mail to ``to``."""
    diagnostic = DIAGNOSTIC.format(to=to) if diagnostic is None else diagnostic
    return (
        "From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        "To: whoever@pbem.localhost\r\n"
        "Auto-Submitted: auto-replied\r\n"
        f"Message-ID: {message_id}\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B0UND"\r\n'
        "\r\n"
        "--B0UND\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n\r\n"
        "This is the mail system at host mx.example.org.\r\n\r\n"
        "I'm sorry to have to inform you that your message could not be delivered.\r\n\r\n"
        "--B0UND\r\n"
        "Content-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.org\r\n"
        "Arrival-Date: Mon,  3 Mar 2025 12:00:00 +0000 (UTC)\r\n\r\n"
        f"Final-Recipient: rfc822; {to}\r\n"
        f"Original-Recipient: rfc822;{to}\r\n"
        f"Action: {action}\r\n"
        f"Status: {status}\r\n"
        f"Diagnostic-Code: {diagnostic}\r\n\r\n"
        "--B0UND\r\n"
        "Content-Type: text/rfc822-headers\r\n\r\n"
        "From: pbem <pbem@pbem.localhost>\r\n"
        f"To: {to}\r\n"
        "Subject: [pbem] Cambio #1: your move\r\n\r\n"
        "--B0UND--\r\n"
    ).encode()


def out_of_office(to: str) -> bytes:
    """A vacation responder's answer, as it sends it to the envelope sender."""
    return (
        f"From: {to}\r\nTo: whoever@pbem.localhost\r\nSubject: Out of office: back on Monday\r\n"
        "Auto-Submitted: auto-replied\r\nMessage-ID: <ooo-1@example.org>\r\n\r\n"
        "I am away until Monday and will read your mail then.\r\n"
    ).encode()


def report(postman: Postman, raw: bytes, to: str, mail_from: str = "") -> InboundMail:  # noqa: F811
    """Send ``raw`` over SMTP to ``to`` (from the null sender, as a bounce is), wait until it is processed
    and the outbox delivered; the stored message."""
    postman.send_raw(raw, mail_from, to)
    postman.settle()
    db.session.rollback()
    return db.session.scalars(select(InboundMail).order_by(InboundMail.id.desc()).limit(1)).one()


def queue(to: str, kind: str = "test") -> int:
    """One mail to ``to`` in the outbox; its row id."""
    row_id = outbox.enqueue(to, "[pbem] Test: hello", "The board\n", kind=kind)
    db.session.commit()
    return row_id


def marked(user: User) -> bool:
    """Whether ``user``'s address is marked as bouncing, as the database has it now."""
    db.session.rollback()
    return db.session.get(User, user.id).mail_bouncing_since is not None


def mark(user: User) -> None:
    """Mark ``user``'s address as bouncing, as a conclusive bounce does."""
    with unit_of_work() as uow:
        bouncing.count_bounce(user.email, "5.1.1", "550 5.1.1 User unknown")
        uow.commit()


def outbox_count() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count(OutboxMail.id))) or 0


# Step 2: each mail's own envelope sender, and what comes back to it ---------------------------------


def test_each_mail_goes_out_from_an_envelope_sender_of_its_own(ctx: Flask, sink) -> None:
    first, second = queue("alice@example.org"), queue("bob@example.org")
    assert outbox.deliver_due() == (2, 0)
    [to_alice], [to_bob] = sink.messages("alice@example.org"), sink.messages("bob@example.org")
    senders = [str(m["X-Pbem-Envelope-From"]) for m in (to_alice, to_bob)]
    assert senders[0] != senders[1]
    for sender, row_id in zip(senders, (first, second), strict=True):
        local, _, domain = sender.partition("@")
        assert local.startswith("bounces+") and domain == "pbem.localhost" and len(local) <= 64
        assert tokens.bounced_mail(sender) == row_id
        assert tokens.bounced_mail(sender.upper()) == row_id  # Mail software may fold the case.
    assert str(to_alice["From"]) == "pbem <pbem@pbem.localhost>"  # The From header is as it was.


def test_a_forged_or_tampered_bounce_token_names_no_mail(ctx: Flask, sink) -> None:
    row_id = queue("alice@example.org")
    real = tokens.bounce_address(row_id)
    token = real.split("+", 1)[1].split("@")[0]
    tampered = f"bounces+{token[:-1]}{'a' if token[-1] != 'a' else 'b'}@pbem.localhost"
    assert tokens.bounced_mail(tampered) is None
    assert tokens.bounced_mail("bounces+" + "a" * 5000 + "@pbem.localhost") is None
    assert tokens.bounced_mail(real.replace("pbem.localhost", "elsewhere.example")) is None
    assert tokens.bounced_mail(f"play+{token}@pbem.localhost") is None


def test_a_hard_bounce_is_read_as_one_and_not_answered(postman: Postman, players) -> None:  # noqa: F811
    _alice, bob, _ = players
    queue(bob.email)
    outbox.deliver_due()
    verp = envelope_sender(postman, bob.email)
    before = outbox_count()
    row = report(postman, delivery_report(bob.email), verp)
    assert row.status == "ignored" and row.note.startswith("bounce of outbox #")
    assert "failed 5.1.1" in row.note and "User unknown" in row.note
    assert row.note.endswith("bob's address is marked as bouncing") and row.user_id == bob.id
    assert outbox_count() == before  # Never answered.
    bob = db.session.get(User, bob.id)
    assert bob.mail_bouncing_since is not None
    assert bob.mail_bounce_reason == f"550 5.1.1 <{bob.email}>: Recipient address rejected: User unknown " \
        "in virtual mailbox table"


def test_a_delay_report_is_not_a_bounce(postman: Postman, players) -> None:  # noqa: F811
    _alice, bob, _ = players
    queue(bob.email)
    outbox.deliver_due()
    row = report(postman, delivery_report(bob.email, action="delayed", status="4.4.1",
                                          diagnostic="smtp; 451 4.4.1 try again later"),
                 envelope_sender(postman, bob.email))
    assert row.status == "ignored" and "delayed 4.4.1" in row.note and row.note.endswith("not a bounce")
    assert not marked(bob)


def test_an_out_of_office_reply_to_the_bounce_address_is_not_a_bounce(postman: Postman,  # noqa: F811
                                                                       players) -> None:
    _alice, bob, _ = players
    queue(bob.email)
    outbox.deliver_due()
    before = outbox_count()
    row = report(postman, out_of_office(bob.email), envelope_sender(postman, bob.email), mail_from=bob.email)
    assert row.status == "ignored" and "not a delivery report (Auto-Submitted: auto-replied)" in row.note
    assert outbox_count() == before  # Never answered.
    assert not marked(bob)


def test_a_bounce_with_a_forged_token_does_nothing(postman: Postman, players) -> None:  # noqa: F811
    _alice, bob, _ = players
    row_id = queue(bob.email)
    outbox.deliver_due()
    token = envelope_sender(postman, bob.email).split("+", 1)[1].split("@")[0]
    forged = f"bounces+{token[:-2]}zz@pbem.localhost" if not token.endswith("zz") else \
        f"bounces+{token[:-2]}aa@pbem.localhost"
    row = report(postman, delivery_report(bob.email), forged)
    assert row.status == "ignored" and "token is not ours" in row.note
    assert str(row_id) not in row.note
    assert not marked(bob)


def test_a_bounce_address_acts_only_while_a_report_on_its_mail_can_come(postman: Postman,  # noqa: F811
                                                                        players) -> None:
    """A bounce address is made for the delivery of one mail: it is believed for the days a report on
    that mail can take (mail.bounce_window_days) after the mail went out, and not before it went out.
    One found later (quoted in a comment, kept in an old mail's headers) stops nobody's mail."""
    _alice, bob, carol = players
    queue(bob.email)
    outbox.deliver_due()
    verp = envelope_sender(postman, bob.email)
    waiting = tokens.bounce_address(queue(carol.email))  # Not sent yet: no report can be about it.
    row = report(postman, delivery_report(carol.email), waiting)
    assert row.status == "ignored" and "never went out" in row.note and not marked(carol)
    try:
        set_clock(utcnow() + timedelta(days=8))
        row = report(postman, delivery_report(bob.email, message_id="<dsn-2@mx.example.org>"), verp)
        assert row.status == "ignored" and "too late" in row.note
        assert not marked(bob)
    finally:
        set_clock(None)
    report(postman, delivery_report(bob.email, message_id="<dsn-3@mx.example.org>"), verp)  # In time.
    assert marked(bob)


def test_one_mails_bounce_address_counts_once_however_often_it_is_reported(postman: Postman,  # noqa: F811
                                                                            players) -> None:
    """A soft permanent failure (a full mailbox) needs two bounces to mark the address: one mail's report
    replayed (or sent twice by an MTA) counts once, while a second mail's report makes two."""
    _alice, bob, _ = players
    full = f"smtp; 552 5.2.2 <{bob.email}>: Mailbox full"
    queue(bob.email)
    outbox.deliver_due()
    first = envelope_sender(postman, bob.email)
    for number in (1, 2, 3):
        row = report(postman, delivery_report(bob.email, status="5.2.2", diagnostic=full,
                                              message_id=f"<replay-{number}@mx.example.org>"), first)
        assert row.status == "ignored"
    assert "counted already" in row.note and not marked(bob)
    assert db.session.get(User, bob.id).mail_bounces == 1
    queue(bob.email)
    outbox.deliver_due()
    second = envelope_sender(postman, bob.email)
    report(postman, delivery_report(bob.email, status="5.2.2", diagnostic=full), second)
    assert marked(bob)


def _folded(value: bytes) -> bytes:
    """``value`` folded into header lines short enough for SMTP (one logical line all the same)."""
    return b"\r\n ".join(value[i:i + 900] for i in range(0, len(value), 900))


def _hostile_reports(to: str) -> dict[str, bytes]:
    """Delivery reports built to be slow to read: huge, nested deep, a header line of 900 kB."""
    good = delivery_report(to)
    head, _, body = good.partition(b"\r\n\r\n")
    nested = b"".join(
        b'Content-Type: multipart/mixed; boundary="n%d"\r\n\r\n--n%d\r\n' % (n, n) for n in range(200)
    )
    many_recipients = b"".join(
        b"Final-Recipient: rfc822; x%d@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\r\n" % n
        for n in range(5000)
    )
    return {
        "a header of 900 kB": head + b"\r\nX-Long: " + _folded(b"a" * 900_000) + b"\r\n\r\n" + body,
        "a Status of 900 kB": good.replace(b"Status: 5.1.1", b"Status: 5." + _folded(b"1." * 450_000)),
        "an Action of 840 kB": good.replace(b"Action: failed", b"Action: " + _folded(b"failed " * 120_000)),
        "nested two hundred deep": head.replace(b"multipart/report", b"multipart/mixed") + b"\r\n\r\n"
        + nested + body,
        "five thousand recipients": good.replace(b"Reporting-MTA: dns; mx.example.org\r\n",
                                                 b"Reporting-MTA: dns; mx.example.org\r\n\r\n"
                                                 + many_recipients),
    }


def _newest() -> InboundMail:
    db.session.rollback()
    return db.session.scalars(select(InboundMail).order_by(InboundMail.id.desc()).limit(1)).one()


def test_hostile_delivery_reports_are_read_quickly_and_count_for_nothing(postman: Postman,  # noqa: F811
                                                                        players) -> None:
    _alice, bob, _ = players
    queue(bob.email)
    outbox.deliver_due()
    verp = envelope_sender(postman, bob.email)
    for n, (what, raw) in enumerate(_hostile_reports(bob.email).items()):
        raw = raw.replace(b"<dsn-1@mx.example.org>", b"<hostile-%d@mx.example.org>" % n)
        started = time.process_time()
        postman.send_raw(raw, "", verp)
        postman.settle()
        row = _newest()
        assert row.status == "ignored" and not row.note.startswith("bounce of"), (what, row.note)
        assert time.process_time() - started < 2, what
        assert not marked(bob), what
    # A header line of a megabyte does not pass SMTP (lines end at 1,000 octets), but an MTA's pipe to
    # `pbem ingest` takes it: stored and processed as that command does.
    long_line = delivery_report(bob.email, message_id="<hostile-line@mx.example.org>").replace(
        b"Status: 5.1.1", b"Status: 5.1.1" + b"1" * 1_000_000)
    started = time.process_time()
    receive.store_message(long_line, "", [verp])
    process.process_pending()
    row = _newest()
    assert row.status == "ignored" and not row.note.startswith("bounce of"), row.note
    assert time.process_time() - started < 2
    assert not marked(bob)


# Step 3: the address marked, game mail stopped, the player told --------------------------------------


def test_a_permanent_refusal_of_a_players_address_marks_it(ctx: Flask, sink, players) -> None:
    _alice, bob, _ = players
    sink.refuse[bob.email] = "550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown"
    queue(bob.email)
    assert outbox.deliver_due() == (0, 1)
    assert marked(bob)
    assert db.session.get(User, bob.id).mail_bounce_reason == \
        "550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown"


def test_a_refusal_not_about_the_address_takes_two_within_the_window(ctx: Flask, sink, players) -> None:
    _alice, bob, carol = players
    sink.refuse[bob.email] = "550 5.7.1 Service unavailable; client host blocked"
    sink.refuse[carol.email] = "550 5.2.2 Mailbox full"
    queue(bob.email), queue(carol.email)
    assert outbox.deliver_due() == (0, 2)
    assert not marked(bob) and not marked(carol)
    try:
        set_clock(utcnow() + timedelta(days=8))  # Past the window: counting starts again.
        queue(bob.email)
        assert outbox.deliver_due() == (0, 1)
        assert not marked(bob)
        set_clock(utcnow() + timedelta(days=2))  # A second one within the window marks it.
        queue(bob.email), queue(carol.email)
        assert outbox.deliver_due() == (0, 2)
    finally:
        set_clock(None)
    assert marked(bob) and not marked(carol)  # Carol's first bounce was ten days ago.


def test_a_refused_sender_or_a_refused_mail_counts_against_the_address_only_when_it_says_so(
        ctx: Flask, sink, players) -> None:
    # A refusal of our envelope sender is about us, and one of a mail's content about that mail: neither
    # may mark the player (one relay's mistake would otherwise mark everyone it refused).  A refusal of
    # the data that names the address (5.1.x) counts as a refusal of the address.
    _alice, bob, carol = players
    sink.refuse_sender = "550 5.1.8 Sender address rejected: Domain not found"
    queue(bob.email)
    assert outbox.deliver_due() == (0, 1)
    sink.refuse_sender, sink.refuse_data = None, "554 5.7.1 Message rejected as spam"
    queue(bob.email)
    assert outbox.deliver_due() == (0, 1)
    assert not marked(bob)
    assert db.session.get(User, bob.id).mail_bounces == 0
    sink.refuse_data = "550 5.1.1 No such user here"
    queue(carol.email)
    assert outbox.deliver_due() == (0, 1)
    assert marked(carol)


def test_a_temporary_refusal_counts_for_nothing(ctx: Flask, sink, players) -> None:
    _alice, bob, _ = players
    queue(bob.email)
    sink.refuse[bob.email] = "450 4.2.1 Mailbox busy"
    assert outbox.deliver_due() == (0, 1)
    assert not marked(bob)


def test_a_bounce_of_an_address_the_player_has_left_counts_for_nothing(postman: Postman,  # noqa: F811
                                                                     players) -> None:
    _alice, bob, _ = players
    old = bob.email
    queue(old)
    outbox.deliver_due()
    verp = envelope_sender(postman, old)
    with unit_of_work() as uow:
        db.session.get(User, bob.id).email = "bob.new@example.org"
        uow.commit()
    row = report(postman, delivery_report(old), verp)
    assert row.note.startswith("bounce of") and row.note.endswith("no player has that address now")
    assert not marked(bob)


def test_while_marked_game_mail_is_given_up_and_account_mail_still_goes(ctx: Flask, sink, players) -> None:
    alice, bob, _ = players
    game_id = challenges.new_game(alice, "cambio", [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    outbox.deliver_due()
    mark(bob)
    before = len(sink.messages(bob.email))
    play.submit(game_id, db.session.get(User, alice.id), "b3", "web")  # Bob's move request.
    accounts.request_reset(bob.email)
    db.session.commit()
    outbox.deliver_due()
    got = sink.messages(bob.email)[before:]
    assert [str(m["Subject"]) for m in got] == ["[pbem] Reset your password"]
    db.session.rollback()
    held = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == bob.email,
                                                       OutboxMail.sent_at.is_(None))).all()
    assert [m.kind for m in held] != [] and all(m.failed_at is not None for m in held)
    assert {m.last_error for m in held} == {bouncing.HELD_BACK}
    assert sink.messages(alice.email), "mail to the other player goes as ever"
    assert outbox.deliver_due() == (0, 0)  # Given up, not retried.


def test_the_player_sees_the_notice_and_can_say_the_address_works_again(app: Flask, ctx: Flask, sink,
                                                                      players) -> None:
    alice, bob, _ = players
    game_id = challenges.new_game(alice, "cambio", [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    [web] = signed_in(app, bob)
    game_page = f"/games/{game_id}"
    assert "mail-bouncing" not in web.get(game_page).get_data(as_text=True)
    assert len(cache_of(app)) >= 1  # Bob's game page is kept for him.
    mark(bob)
    for path in ("/dashboard", game_page, "/"):
        page = web.get(path).get_data(as_text=True)
        assert 'id="mail-bouncing"' in page and "Your clocks keep running" in page, path
    settings = web.get("/settings").get_data(as_text=True)
    assert 'id="bouncing-details"' in settings and "550 5.1.1 User unknown" in settings
    assert "bob@example.org" in settings and 'id="mail-works"' in settings
    assert 'id="mail-bouncing"' not in WebClient(app).get(game_page).get_data(as_text=True)  # Visitors.

    refused = web.post("/settings", {"action": "mail-works"}, csrf=False)
    assert refused.status_code == 400 and marked(bob)  # Not without the form's token.
    answer = web.post("/settings", {"action": "mail-works"})
    assert answer.status_code == 302 and not marked(bob)
    for path in ("/dashboard", game_page, "/"):
        assert 'id="mail-bouncing"' not in web.get(path).get_data(as_text=True), path
    before = len(sink.messages(bob.email))
    play.submit(game_id, db.session.get(User, alice.id), "b3", "web")
    outbox.deliver_due()
    assert len(sink.messages(bob.email)) > before  # Game mail goes again.


def test_confirming_a_new_address_takes_the_mark_off(app: Flask, ctx: Flask, sink, players) -> None:
    alice, bob, _ = players
    game_id = started(alice, bob)
    play.submit(game_id, db.session.get(User, alice.id), "b3", "web")
    mark(bob)
    outbox.deliver_due()  # Bob's move request is held back.
    accounts.set_password(db.session.get(User, bob.id), "correct horse")
    db.session.commit()
    accounts.request_email_change(db.session.get(User, bob.id), "bob.new@example.org", "correct horse")
    outbox.deliver_due()
    [link_mail] = sink.messages("bob.new@example.org")
    body = link_mail.get_payload(decode=True).decode()
    token = body.split("/settings/email/", 1)[1].split()[0]
    assert accounts.confirm_email_change(token)[1] == 1
    assert not marked(bob)
    outbox.deliver_due()
    assert [str(m["Subject"]) for m in sink.messages("bob.new@example.org")[1:]] == \
        [f"[pbem] Cambio #{game_id}: your move (move 2)"]  # Sent again, to the new address.


# Step 4: what the player missed that still matters, sent again when the mark comes off --------------


def started(first: User, second: User) -> int:
    """A game of Cambio between ``first`` (to move) and ``second``, started; its id."""
    game_id = challenges.new_game(first, "cambio", [first, second], seed=3).id
    challenges.accept(game_id, second)
    return game_id


def subjects(sink, to: str, since: int) -> list[str]:
    """The subjects of the mails the sink received for ``to`` after its first ``since`` ones, sorted."""
    return sorted(str(m["Subject"]) for m in sink.messages(to)[since:])


def test_when_the_mark_comes_off_each_game_awaiting_the_players_move_asks_again(ctx: Flask, sink,
                                                                               players) -> None:
    alice, bob, carol = players
    accounts.set_notify(db.session.get(User, carol.id), "digest")
    missed, waiting = started(alice, bob), started(alice, bob)
    started(alice, bob)  # A game awaiting alice's move: nothing of it is bob's to get again.
    carols = started(alice, carol)
    play.submit(missed, db.session.get(User, alice.id), "b3", "web")
    outbox.deliver_due()
    before = outbox_count()
    assert sendagain.address_works_again(bob) == 0 and outbox_count() == before  # Nothing was marked.

    mark(bob), mark(carol)  # As a delivery report on bob's request in `missed` would.
    for game_id in (waiting, carols):
        play.submit(game_id, db.session.get(User, alice.id), "b3", "web")
    seen = len(sink.messages(bob.email))
    # Bob's request in `waiting` is still in the outbox, and goes once the mark is off.  Carol's digest
    # lists her game.
    assert sendagain.address_works_again(bob) == 1
    assert sendagain.address_works_again(carol) == 0
    outbox.deliver_due()
    assert subjects(sink, bob.email, seen) == sorted(
        f"[pbem] Cambio #{game_id}: your move (move 2)" for game_id in (missed, waiting)
    )
    assert not marked(bob) and not marked(carol)


def test_game_mail_is_held_back_however_its_address_is_written(ctx: Flask, sink, players) -> None:
    """The address a mail was written to is matched to the player's in any case, and beyond ASCII too
    (where the database's own lowercasing may differ from the one the players' addresses were stored by)."""
    alice, bob, _ = players
    with unit_of_work() as uow:
        db.session.get(User, alice.id).email = "ålice@example.org"
        uow.commit()
    mark(alice)
    mark(bob)
    for to in ("Bob@Example.ORG", "ÅLICE@example.org", "carol@example.org"):
        outbox.enqueue(to, "[pbem] Your move", "The board\n", kind="move")
    db.session.commit()
    assert outbox.deliver_due() == (1, 2)
    assert [m["To"] for m in sink.messages()] == ["carol@example.org"]
    db.session.rollback()
    given_up = select(OutboxMail.last_error).where(OutboxMail.failed_at.is_not(None))
    assert db.session.scalars(given_up).all() == [bouncing.HELD_BACK] * 2
