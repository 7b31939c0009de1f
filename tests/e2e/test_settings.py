"""Settings in a real browser: choose a time zone and see times in it, move the account to a new mail
address by following the link mailed there, and come back from an address that bounced."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.game import play
from pbem.lobby import challenges
from tests.e2e.test_web_play import PASSWORD, confirmed_players, deliver, sign_in

pytestmark = pytest.mark.e2e


def test_time_zone_and_a_new_mail_address(browser: Browser, server, sink, artifacts) -> None:
    with server.app.app_context():
        accounts.create_user("alice", "alice@example.org", PASSWORD, verified=True)
        db.session.commit()
    page = sign_in(browser, server, "alice")
    page.click("text=Settings")
    expect(page.locator("#local-now")).to_contain_text("UTC")
    page.select_option("#time-zone", "Asia/Tokyo")
    page.click("#save-time-zone")
    expect(page.locator(".flash")).to_have_text("Times are shown in Asia/Tokyo now.")
    expect(page.locator("#local-now")).to_contain_text("JST")

    page.fill("#new-email", "alice@elsewhere.example")
    page.fill("#email-password", PASSWORD)
    page.click("#change-email")
    expect(page.locator(".flash")).to_contain_text("A confirmation link has gone to alice@elsewhere.example.")
    expect(page.locator("#current-email")).to_have_text("alice@example.org")
    expect(page.locator("#pending-email")).to_contain_text("alice@elsewhere.example")
    page.screenshot(path=str(artifacts / "settings.png"), full_page=True)

    deliver(server)
    [mail] = sink.messages("alice@elsewhere.example")
    body = mail.get_payload(decode=True).decode()
    page.goto(re.search(r"(http://\S+/settings/email/\S+)", body).group(1))
    expect(page.locator(".flash")).to_have_text("Your mail address is now alice@elsewhere.example.")
    expect(page.locator("#current-email")).to_have_text("alice@elsewhere.example")
    expect(page.locator("#pending-email")).to_have_count(0)


REFUSAL = "550 5.1.1 <bob@example.org>: Recipient address rejected: User unknown in virtual mailbox table"


def test_an_address_that_bounced_works_again_and_the_move_request_comes(browser: Browser, server, sink,
                                                                        artifacts) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game_id = challenges.new_game(alice, "cambio", [alice, bob], seed=3).id
        challenges.accept(game_id, bob)
        deliver(server)
        # Bob's mail server refuses his address for good: the move request alice's move writes is
        # refused at sending time, and that marks the address.
        sink.refuse[bob.email] = REFUSAL
        play.submit(game_id, alice, "b3", "web")
    deliver(server)
    del sink.refuse["bob@example.org"]
    request = f"[pbem] Cambio #{game_id}: your move (move 2)"
    assert request not in [str(m["Subject"]) for m in sink.messages("bob@example.org")]

    page = sign_in(browser, server, "bob")
    expect(page.locator("#mail-bouncing")).to_contain_text("stopped sending you game mail")
    page.click("#mail-bouncing a")
    expect(page.locator("#bounce-reason")).to_have_text(REFUSAL)
    page.screenshot(path=str(artifacts / "settings-bouncing.png"), full_page=True)
    page.click("#mail-works")
    expect(page.locator(".flash.info")).to_have_text("Game mail goes to bob@example.org again. The move "
                                                     "request for 1 game awaiting your move was sent again.")
    expect(page.locator("#mail-bouncing")).to_have_count(0)
    expect(page.locator("#bouncing-details")).to_have_count(0)
    page.goto(f"{server.url}/games/{game_id}")
    expect(page.locator("#mail-bouncing")).to_have_count(0)

    deliver(server)
    assert [str(m["Subject"]) for m in sink.messages("bob@example.org")][-1:] == [request]
