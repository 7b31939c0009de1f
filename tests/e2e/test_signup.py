"""Signing up in a real browser: the answer does not tell whether an address has an account, and an
address typed with letters beyond plain ASCII is refused however the browser sends it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import User
from tests.e2e.test_web_play import PASSWORD, deliver

pytestmark = pytest.mark.e2e


def sign_up_as(browser: Browser, server, handle: str, email: str) -> Page:
    """A new browser that fills in the sign-up form and sends it."""
    page = browser.new_context().new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{server.url}/signup")
    page.fill("#handle", handle)
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    return page


def test_sign_up_answers_alike_for_a_taken_and_a_free_address(browser: Browser, server, sink,
                                                              artifacts) -> None:
    """A stranger signing up with alice's address sees what anyone signing up sees; alice is told."""
    with server.app.app_context():
        accounts.create_user("alice", "alice@example.org", PASSWORD, verified=True)
        db.session.commit()
    taken = sign_up_as(browser, server, "xavier", "alice@example.org")
    free = sign_up_as(browser, server, "yvonne", "yvonne@example.org")
    for page in (taken, free):
        expect(page.locator("h1")).to_have_text("Check your mail")
    said = [page.locator("main").inner_text() for page in (taken, free)]
    assert said[0].replace("alice@example.org", "ADDRESS") == said[1].replace("yvonne@example.org", "ADDRESS")
    assert "already an account" not in said[0].lower()
    taken.screenshot(path=str(artifacts / "signup-taken-address.png"), full_page=True)

    deliver(server)
    [notice] = sink.messages("alice@example.org")
    assert str(notice["Subject"]) == "[pbem] Someone tried to sign up with your address"
    [confirmation] = sink.messages("yvonne@example.org")
    assert str(confirmation["Subject"]) == "[pbem] Confirm your address"
    with server.app.app_context():
        assert accounts.find_user("xavier") is None


def test_an_address_typed_with_letters_beyond_ascii_is_refused(browser: Browser, server) -> None:
    """Chromium sends a domain typed as "exämple.org" as "xn--exmple-cua.org": refused all the same,
    with the reason, and the form keeps what was sent."""
    page = sign_up_as(browser, server, "quentin", "q@exämple.org")
    expect(page.locator(".error")).to_contain_text("beyond plain ASCII")
    expect(page.locator("h1")).to_have_text("Sign up")
    with server.app.app_context():
        assert db.session.scalar(db.select(db.func.count(User.id))) == 0
