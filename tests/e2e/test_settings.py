"""Settings in a real browser: choose a time zone and see times in it, move the account to a new mail
address by following the link mailed there."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from pbem import accounts
from pbem.extensions import db
from tests.e2e.test_web_play import PASSWORD, deliver, sign_in

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
