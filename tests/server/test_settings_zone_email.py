"""A player's time zone (times on pages and in mails shown in it, UTC by default) and a change of mail
address, confirmed from the new address while the old one keeps working until then."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User, set_clock
from pbem.game import play
from pbem.schedule import sweep
from tests.server.test_results import text
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient

WINTER = datetime(2025, 1, 6, 9, 0)  # A Monday; Paris is UTC+1 (CET).


def mails_to(address: str, kind: str) -> list[OutboxMail]:
    db.session.rollback()
    query = select(OutboxMail).where(OutboxMail.to_addr == address, OutboxMail.kind == kind)
    return list(db.session.scalars(query.order_by(OutboxMail.id)))


def test_times_are_shown_in_the_players_time_zone(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    web_a, web_b = signed_in(app, alice, bob)
    assert 'selected>UTC</option>' in web_a.get("/settings").get_data(as_text=True)
    refused = web_a.post("/settings", {"action": "time-zone", "time_zone": "Mars/Olympus_Mons"})
    assert refused.status_code == 400 and "'Mars/Olympus_Mons' is not a time zone" in text(refused)
    saved = web_a.post("/settings", {"action": "time-zone", "time_zone": "Europe/Paris"},
                       follow_redirects=True)
    assert "Times are shown in Europe/Paris now." in text(saved)
    assert 'selected>Europe/Paris</option>' in saved.get_data(as_text=True)

    set_clock(WINTER)
    try:
        game = play.create_game("cambio", [bob, alice], {"size": 3},
                                time_control={"kind": "per_move", "days": 3})
        db.session.commit()
        play.submit(game.id, bob, "b3", "web")  # Alice's three days run to Thursday 09:00 UTC.
        assert "(until Thu 9 Jan 2025 10:00 CET)" in text(web_a.get(f"/games/{game.id}"))
        assert "(until Thu 9 Jan 2025 09:00 UTC)" in text(web_b.get(f"/games/{game.id}"))
        set_clock(WINTER + timedelta(days=1, hours=12))  # Alice's 48-hour reminder point.
        assert sweep.sweep().reminded == 1
    finally:
        set_clock(None)
    [reminder] = mails_to(alice.email, "reminder")
    assert "If you have not moved by Thu 9 Jan 2025 10:00 CET," in reminder.body_text

    # Dates too: a player who joined late on 6 January (UTC) joined on the 7th in Paris.
    dora = accounts.create_user("dora", "dora@example.org", verified=True)
    dora.created_at = datetime(2025, 1, 6, 23, 30)
    db.session.commit()
    assert "Playing since 2025-01-07." in text(web_a.get("/players/dora"))
    assert "Playing since 2025-01-06." in text(web_b.get("/players/dora"))


def test_the_address_changes_once_confirmed_from_the_new_address(app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    (web,) = signed_in(app, alice)
    wrong = web.post("/settings/email", {"email": "alice@new.example", "password": "not it"})
    assert wrong.status_code == 400 and "Your password is not right" in text(wrong)
    taken = web.post("/settings/email", {"email": "BOB@example.org", "password": "correct horse"})
    assert taken.status_code == 400 and "There is already an account for bob@example.org." in text(taken)
    # Not through the page, whose requests are limited: this server cannot mail such an address.
    with pytest.raises(accounts.AccountError, match="beyond plain ASCII"):
        accounts.request_email_change(db.session.get(User, alice.id), "alice@exämple.org", "correct horse")
    assert mails_to("alice@new.example", "email-change") == []

    asked = web.post("/settings/email", {"email": " Alice@New.Example ", "password": "correct horse"},
                     follow_redirects=True)
    assert "A confirmation link has gone to alice@new.example." in text(asked)
    assert "A change to alice@new.example waits for you" in text(asked)
    [confirm] = mails_to("alice@new.example", "email-change")
    [notice] = mails_to("alice@example.org", "email-change-notice")
    assert "alice@new.example" in notice.body_text and "/settings/email/" not in notice.body_text
    # Until the link is followed, the account and its mail stay at the old address.
    assert db.session.get(User, alice.id).email == "alice@example.org"
    assert accounts.authenticate("alice@example.org", "correct horse").id == alice.id

    link = re.search(r"http://\S+(/settings/email/\S+)", confirm.body_text).group(1)
    moved = web.get(link, follow_redirects=True)
    assert "Your mail address is now alice@new.example." in text(moved)
    user = db.session.get(User, alice.id)
    assert (user.email, user.pending_email) == ("alice@new.example", None)
    assert accounts.authenticate("alice@new.example", "correct horse").id == alice.id
    again = web.get(link)
    assert again.status_code == 400 and "This link is no longer good" in text(again)
    assert web.get(link[:-3] + "abc").status_code == 400


def test_a_later_request_replaces_the_earlier_link_and_requests_are_limited(
        app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    (web,) = signed_in(app, alice)
    for address in ("one@new.example", "two@new.example", "three@new.example"):
        assert web.post("/settings/email", {"email": address, "password": "correct horse"}).status_code == 302
    assert web.post("/settings/email", {"email": "four@new.example", "password": "correct horse"}
                    ).status_code == 429
    assert mails_to("four@new.example", "email-change") == []
    [first] = mails_to("one@new.example", "email-change")
    stale = web.get(re.search(r"http://\S+(/settings/email/\S+)", first.body_text).group(1))
    assert stale.status_code == 400 and db.session.get(User, alice.id).email == "alice@example.org"
    [last] = mails_to("three@new.example", "email-change")
    web.get(re.search(r"http://\S+(/settings/email/\S+)", last.body_text).group(1))
    assert db.session.get(User, alice.id).email == "three@new.example"


def test_a_pending_change_can_be_stopped_and_the_old_address_hears_of_the_move(
        app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    (web,) = signed_in(app, alice)

    def ask(address: str, password: str = "correct horse") -> str:
        web.post("/settings/email", {"email": address, "password": password})
        return re.search(r"http://\S+(/settings/email/\S+)", mails_to(address, "email-change")[-1].body_text
                         ).group(1)

    # Cancelled from the settings page: the link no longer moves the account.
    link = ask("one@new.example")
    [notice] = mails_to("alice@example.org", "email-change-notice")
    assert "changing it\nalso cancels this change of address" in notice.body_text
    assert 'id="cancel-email-change"' in web.get("/settings").get_data(as_text=True)
    cancelled = web.post("/settings", {"action": "email-cancel"}, follow_redirects=True)
    assert "The change to one@new.example is cancelled" in text(cancelled)
    assert 'id="cancel-email-change"' not in cancelled.get_data(as_text=True)
    assert WebClient(app).get(link).status_code == 400

    # Changing the password, as the notice advises, voids the link too, even from a signed-out browser.
    link = ask("two@new.example")
    assert web.post("/settings", {"action": "password", "current": "correct horse",
                                  "password": "a new secret"}).status_code == 302
    assert WebClient(app).get(link).status_code == 400
    assert db.session.get(User, alice.id).email == "alice@example.org"
    [told] = mails_to("alice@example.org", "password-changed")
    assert "password of your pbem account was changed on" in told.body_text
    assert "t***@new.example that was waiting is cancelled" in told.body_text
    assert "a new secret" not in told.body_text and told.body_text.rstrip().endswith(":5000/reset")

    # A move that goes through is told to the old address, without handing out the new one.
    link = ask("three@new.example", "a new secret")
    assert WebClient(app).get(link).status_code == 302
    [told] = mails_to("alice@example.org", "email-changed")
    assert "was changed on" in told.body_text and "t***@new.example" in told.body_text
    assert "three@new.example" not in told.body_text and "/settings/email/" not in told.body_text
