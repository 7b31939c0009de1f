"""Accounts on the web: sign up and confirm by mail, sign in, reset a password, settings."""

from __future__ import annotations

import html
import re

import pytest
from flask import Flask

from pbem.accounts.accounts import check_mail_key
from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User
from pbem.mailout import outbox
from tests.server.webclient import WebClient


def link_in_mail(sink, to: str, path: str) -> str:
    """The path of the last link to ``path`` mailed to ``to``, after the outbox has delivered."""
    outbox.deliver_due()
    body = sink.messages(to)[-1].get_payload(decode=True).decode()
    return re.findall(rf"https?://[^/\s]+({path}/\S+)", body)[-1]


def test_sign_up_confirm_by_mail_then_sign_in(app: Flask, ctx: Flask, sink) -> None:
    web = WebClient(app)
    page = web.post("/signup", {"handle": "dora", "email": "Dora@Example.org", "password": "long enough"})
    assert page.status_code == 200 and "Check your mail" in page.get_data(as_text=True)
    # Unconfirmed, the account cannot sign in yet, and says why.
    refused = web.post("/login", {"login": "dora", "password": "long enough"})
    assert refused.status_code == 400 and "not confirmed" in refused.get_data(as_text=True)

    link = link_in_mail(sink, "dora@example.org", "/verify")
    assert web.get(link).status_code == 302
    assert db.session.scalar(db.select(User).where(User.handle == "dora")).verified
    assert "My games" in web.get("/dashboard").get_data(as_text=True)

    other = WebClient(app)
    assert other.post("/login", {"login": "dora", "password": "wrong password"}).status_code == 400
    assert other.post("/login", {"login": "dora@example.org", "password": "long enough"}).status_code == 302
    # A tampered link is refused with a way on.
    assert "damaged" in web.get(link[:-3] + "xyz").get_data(as_text=True)


def test_sign_up_refusals_keep_what_was_typed(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    cases = [
        ({"handle": "two words", "email": "x@example.org", "password": "long enough"}, "without spaces"),
        ({"handle": "ALlCE", "email": "x@example.org", "password": "long enough"}, "too like 'alice'"),
        # The same handle but for case is simply taken; only a look-alike is "too like".
        ({"handle": "Bob", "email": "x@example.org", "password": "long enough"}, "handle 'bob' is taken."),
        ({"handle": "xavier", "email": "not-an-address", "password": "long enough"}, "not a mail address"),
        # The server does not speak SMTPUTF8, so mail to this address would never go.
        ({"handle": "xavier", "email": "lee@exämple.org", "password": "long enough"}, "beyond plain ASCII"),
        ({"handle": "xavier", "email": "x@example.org", "password": "short"}, "at least 8"),
        # Words the new-game form reads itself ("me" is whoever fills it in), in any case or look-alike.
        ({"handle": "Me", "email": "x@example.org", "password": "long enough"},
         "'me' is a word the server reads itself; choose another handle"),
        ({"handle": "r00t", "email": "x@example.org", "password": "long enough"}, "'root' is a word"),
    ]
    for form, message in cases:
        page = web.post("/signup", form)
        text = html.unescape(page.get_data(as_text=True))
        assert page.status_code == 400 and message in text, (form, text)
        assert f'value="{form["email"]}"' in text  # Nothing typed is lost.
    assert db.session.scalar(db.select(db.func.count(User.id))) == 3


def content_of(page) -> str:
    """What a page says, without its form token (which differs on every page)."""
    text = page.get_data(as_text=True)
    return re.sub(r'name="csrf_token" value="[^"]+"', "", text.split("<main", 1)[1].split("</main>", 1)[0])


def test_sign_up_with_a_taken_address_answers_as_a_free_one_and_tells_its_owner(
        app: Flask, ctx: Flask, players, sink) -> None:
    """The sign-up form does not tell whether an address has an account (as the reset form does not):
    the answer is the same page, nothing is made, and the address's owner is mailed that someone tried,
    with a working link to reset the password."""
    web = WebClient(app)
    taken = web.post("/signup", {"handle": "xavier", "email": " ALICE@example.org",
                                 "password": "long enough"})
    free = web.post("/signup", {"handle": "yvonne", "email": "yvonne@example.org", "password": "long enough"})
    assert taken.status_code == free.status_code == 200
    assert content_of(taken).replace("alice@example.org", "X") == content_of(free).replace(
        "yvonne@example.org", "X")
    assert "There is already an account" not in content_of(taken)
    assert db.session.scalar(db.select(User).where(User.handle == "xavier")) is None
    outbox.deliver_due()
    [notice] = sink.messages("alice@example.org")
    assert str(notice["Subject"]) == "[pbem] Someone tried to sign up with your address"
    body = notice.get_payload(decode=True).decode()
    assert "your account, alice" in body and "/login" in body and "long enough" not in body
    link = link_in_mail(sink, "alice@example.org", "/reset")
    assert web.post(link, {"password": "new password"}).status_code == 302
    assert WebClient(app).post("/login", {"login": "alice", "password": "new password"}).status_code == 302
    # A taken handle is still said: handles are public.
    again = web.post("/signup", {"handle": "Alice", "email": "new@example.org", "password": "long enough"})
    assert again.status_code == 400
    assert "handle 'alice' is taken" in html.unescape(again.get_data(as_text=True))


INTERNATIONAL = ["lee@exämple.org", "q@exämple.org", "q@xn--exmple-cua.org", "q@mail.XN--EXMPLE-CUA.org",
                 "zoë@example.org", "ü@例え.jp", "user@xn--r8jz45g.jp"]


def test_every_address_beyond_plain_ascii_is_refused_however_it_is_written(
        app: Flask, ctx: Flask, players) -> None:
    """The README says such addresses are refused: with their own letters, or in the xn-- form a browser
    sends for a domain typed with them, at sign-up and on a change of address alike."""
    from pbem.accounts import accounts

    accounts.set_password(players[0], "correct horse")
    db.session.commit()
    web = WebClient(app)
    for address in INTERNATIONAL:
        page = web.post("/signup", {"handle": "xavier", "email": address, "password": "long enough"})
        assert page.status_code == 400 and "beyond plain ASCII" in page.get_data(as_text=True), address
        with pytest.raises(accounts.AccountError, match="beyond plain ASCII"):
            accounts.request_email_change(db.session.get(User, players[0].id), address, "correct horse")
    assert db.session.scalar(db.select(db.func.count(User.id))) == 3
    # A domain merely containing the letters is plain ASCII.
    assert web.post("/signup", {"handle": "xavier", "email": "x@axn--b.example.org",
                                "password": "long enough"}).status_code == 200


def test_password_reset_by_mail_works_once(app: Flask, ctx: Flask, players, sink) -> None:
    alice = players[0]
    web = WebClient(app)
    web.sign_in(alice, "old password")
    web.post("/reset", {"email": "alice@example.org"})
    web.post("/reset", {"email": "nobody@example.org"})  # Same answer, no mail: strangers learn nothing.
    link = link_in_mail(sink, "alice@example.org", "/reset")
    assert len(sink.messages()) == 1
    # A handle does as well as the address (as signing in takes either), and says no more.
    assert "handle or mail address" in web.get("/reset").get_data(as_text=True)
    by_handle = web.post("/reset", {"email": " Alice "}).get_data(as_text=True)
    assert "If there is an account for" in by_handle
    assert "If there is an account for" in web.post("/reset", {"email": "zed"}).get_data(as_text=True)
    assert link_in_mail(sink, "alice@example.org", "/reset") and len(sink.messages()) == 2
    assert web.post(link, {"password": "short"}).status_code == 400
    assert web.post(link, {"password": "new password"}).status_code == 302
    again = web.post(link, {"password": "third password"})
    assert again.status_code == 400 and "already been used" in again.get_data(as_text=True)
    fresh = WebClient(app)
    assert fresh.post("/login", {"login": "alice", "password": "old password"}).status_code == 400
    assert fresh.post("/login", {"login": "alice", "password": "new password"}).status_code == 302


def test_settings_notification_and_mail_key(app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    web = WebClient(app)
    web.sign_in(alice)
    old_key = alice.mail_key_hash
    assert web.post("/settings", {"action": "notify", "notify": "digest"}).status_code == 302
    assert web.post("/settings", {"action": "notify", "notify": "never"}).status_code == 400
    page = web.post("/settings", {"action": "mail-key"}).get_data(as_text=True)
    key = re.search(r'id="mail-key">([a-z0-9]+)<', page).group(1)
    db.session.expire_all()
    alice = db.session.get(User, alice.id)
    assert alice.notify == "digest" and alice.mail_key_hash != old_key and check_mail_key(alice, key)
    # Shown once: the page does not show it again.
    assert key not in web.get("/settings").get_data(as_text=True)
    wrong = web.post("/settings", {"action": "password", "current": "nope", "password": "another one"})
    assert wrong.status_code == 400 and "not right" in wrong.get_data(as_text=True)


def test_vacation_from_the_settings_page(app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    web = WebClient(app)
    web.sign_in(alice)
    assert "30 days left this year" in web.get("/settings").get_data(as_text=True)
    page = web.post("/settings", {"action": "vacation-on"}, follow_redirects=True).get_data(as_text=True)
    assert "Vacation is on" in page and "I am back" in page
    assert db.session.get(User, alice.id).on_vacation
    assert "on vacation" in web.get("/players/alice").get_data(as_text=True)
    page = web.post("/settings", {"action": "vacation-off"}, follow_redirects=True).get_data(as_text=True)
    assert "Welcome back" in page and not db.session.get(User, alice.id).on_vacation


def test_signing_in_goes_only_to_pages_of_this_site(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    from pbem.accounts import accounts

    accounts.set_password(players[0], "correct horse")
    db.session.commit()
    form = {"login": "alice", "password": "correct horse"}
    # A browser would go to evil.example from each of these (it reads "\\" as "/" and drops tabs and
    # line breaks from a link).
    for elsewhere in ("//evil.example/x", "/\\evil.example/x", "/%5Cevil.example", "/%09/evil.example",
                      "/%0A/evil.example", "https://evil.example/x"):
        assert web.post(f"/login?next={elsewhere}", form).headers["Location"] == "/dashboard", elsewhere
    assert web.post("/login?next=/lobby", form).headers["Location"] == "/lobby"
    assert web.post("/login?next=/games/3%3Fmove%3D1", form).headers["Location"] == "/games/3?move=1"
    # Signed in already, the sign-in page leads on instead of asking again, to this site only.
    assert web.get("/login?next=/lobby").headers["Location"] == "/lobby"
    assert web.get("/login?next=//evil.example/x").headers["Location"] == "/dashboard"


def test_revoking_reply_addresses_from_the_settings_page(app: Flask, ctx: Flask, players) -> None:
    from pbem.mailout import tokens

    alice = players[0]
    mailed = tokens.parse_reply(tokens.reply_token(7, 0, alice))
    assert mailed is not None and tokens.verify_reply(mailed, alice)
    web = WebClient(app)
    web.sign_in(alice)
    page = web.post("/settings", {"action": "renew-tokens"}, follow_redirects=True).get_data(as_text=True)
    assert "no longer work" in html.unescape(page)
    alice = db.session.get(User, alice.id)
    assert not tokens.verify_reply(mailed, alice)
    assert tokens.verify_reply(tokens.parse_reply(tokens.reply_token(7, 0, alice)), alice)


def test_revoked_reply_addresses_come_back_new_for_each_game_awaiting_the_move(app: Flask, ctx: Flask,
                                                                               players) -> None:
    """The move request a player has is refused once they revoke their reply addresses, so each game
    awaiting their move sends a new one, with a reply address that works; games awaiting the other
    player's move send nothing."""
    from pbem.mailout import tokens
    from tests.server.test_web_games import start_cambio

    alice, bob, _ = players
    mine, theirs = start_cambio(alice, bob), start_cambio(bob, alice)  # Seat 1 moves: alice, then bob.
    requests = db.select(OutboxMail).where(OutboxMail.user_id == alice.id, OutboxMail.kind == "your-move")
    before = {m.id for m in db.session.scalars(requests)}
    web = WebClient(app)
    web.sign_in(alice)
    page = html.unescape(web.post("/settings", {"action": "renew-tokens"}, follow_redirects=True)
                         .get_data(as_text=True))
    assert "The move request for 1 game awaiting your move was sent again." in page
    db.session.rollback()
    [again] = [m for m in db.session.scalars(requests) if m.id not in before]
    assert again.game_id == mine.id and again.game_id != theirs.id
    token = tokens.parse_reply(again.reply_to.split("+", 1)[1].split("@", 1)[0])
    assert token is not None and tokens.verify_reply(token, db.session.get(User, alice.id))
