"""Accounts that are hard to take: single-use confirmation links, sessions that end with the password,
mail keys that are long, hashed, mailed and hard to guess, and accounts never confirmed that expire."""

from __future__ import annotations

import re
import time
from datetime import timedelta

from flask import Flask, current_app
from sqlalchemy import func, select

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import MailKeyFailure, OutboxMail, User, set_clock, utcnow
from pbem.game import play
from pbem.mailout import outbox
from tests.server.conftest import give_mail_key
from tests.server.test_mail_hostile import postman  # noqa: F401  (the listener fixture)
from tests.server.test_mail_play import Postman, moves_of, text_of
from tests.server.test_web_accounts import link_in_mail
from tests.server.webclient import WebClient


def test_a_confirmation_link_works_once_and_mails_the_key(app: Flask, ctx: Flask, sink) -> None:
    web = WebClient(app)
    web.post("/signup", {"handle": "dora", "email": "dora@example.org", "password": "long enough"})
    link = link_in_mail(sink, "dora@example.org", "/verify")
    assert web.get(link).status_code == 302
    # The welcome mail brings the mail key, which is stored only hashed.
    outbox.deliver_due()
    [welcome] = [m for m in sink.messages("dora@example.org") if "mail key" in str(m["Subject"])]
    key = re.search(r"^    ([a-z0-9]{16})$", welcome.get_payload(decode=True).decode(), re.M).group(1)
    dora = db.session.scalar(select(User).where(User.handle == "dora"))
    assert accounts.check_mail_key(dora, key) and key not in dora.mail_key_hash
    # The same link again, from another browser, signs nobody in.
    other = WebClient(app)
    again = other.get(link)
    assert again.status_code == 302 and "/login" in again.headers["Location"]
    assert other.get("/dashboard").status_code == 302  # Sent to sign in.


def test_a_password_change_ends_every_other_session(app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    laptop, phone = WebClient(app), WebClient(app)
    laptop.sign_in(alice)
    phone.post("/login", {"login": "alice", "password": "correct horse", "remember": "1"})
    assert phone.get("/dashboard").status_code == 200
    changed = laptop.post("/settings", {"action": "password", "current": "correct horse",
                                        "password": "a new secret"})
    assert changed.status_code == 302
    assert laptop.get("/dashboard").status_code == 200  # This session goes on.
    assert phone.get("/dashboard").status_code == 302  # The other, remembered or not, is signed out.


def test_a_password_reset_ends_every_session(app: Flask, ctx: Flask, players, sink) -> None:
    alice = players[0]
    thief = WebClient(app)
    thief.sign_in(alice)
    owner = WebClient(app)
    owner.post("/reset", {"email": alice.email})
    link = link_in_mail(sink, alice.email, "/reset")
    assert owner.post(link, {"password": "mine again"}).status_code == 302
    assert thief.get("/dashboard").status_code == 302
    # The address is told, with the way back in but neither the password nor any link that acts.
    outbox.deliver_due()
    notice = sink.messages(alice.email)[-1]
    body = notice.get_payload(decode=True).decode()
    assert "password was changed" in str(notice["Subject"]) and body.rstrip().endswith(":5000/reset")
    assert "mine again" not in body and link not in body and "/reset/" not in body


def test_a_new_mail_key_is_shown_once_and_mailed(app: Flask, ctx: Flask, players, sink) -> None:
    alice = players[0]
    old = give_mail_key(alice)
    web = WebClient(app)
    web.sign_in(alice)
    page = web.post("/settings", {"action": "mail-key"}).get_data(as_text=True)
    key = re.search(r'id="mail-key">([a-z0-9]+)<', page).group(1)
    assert len(key) == 16 and key != old
    db.session.expire_all()
    alice = db.session.get(User, alice.id)
    assert accounts.check_mail_key(alice, key.upper()) and not accounts.check_mail_key(alice, old)
    outbox.deliver_due()
    [mailed] = [m for m in sink.messages(alice.email) if "new mail key" in str(m["Subject"])]
    assert key in mailed.get_payload(decode=True).decode()
    assert key not in web.get("/settings").get_data(as_text=True)


def test_mail_key_guessing_is_stopped_and_the_owner_told_once(postman: Postman, players) -> None:  # noqa: F811
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    key = give_mail_key(alice)
    # mallory forges alice's address and tries keys: after 5 wrong ones the account's key commands pause.
    for guess in range(8):
        postman.command(alice.email, f"cambio move {game.id} alice guess{guess:011d} b3")
    postman.settle()
    postman.command(alice.email, f"cambio move {game.id} alice {key} b3")
    postman.settle()
    assert moves_of(game.id) == []  # Even the right key is refused while paused.
    told = [m for m in postman.mails(alice.email) if "paused" in str(m["Subject"])]
    assert len(told) == 1 and "wrong mail keys" in text_of(told[0])
    answers = [text_of(m) for m in postman.mails(alice.email) if str(m["Subject"]).startswith("Re:")]
    # Five wrong keys pause the account, exactly five even with the listener's workers checking guesses
    # side by side: the others are told of the pause, not whether their key was right.
    wrong = sum("is wrong" in a for a in answers)
    assert wrong == 5 and "paused until" in answers[-1]
    # The refusal says where the key really is (the help, too).
    assert "mailed to you when you confirmed your address" in answers[0]
    assert db.session.scalar(select(func.count(MailKeyFailure.id))) == wrong
    # A new key ends the pause.
    accounts.regenerate_mail_key(db.session.get(User, alice.id))
    new_key = give_mail_key(alice)
    postman.command(alice.email, f"cambio move {game.id} alice {new_key} b3")
    postman.settle()
    assert moves_of(game.id) == ["b3"]


def test_one_sender_guessing_many_accounts_is_refused(postman: Postman, players) -> None:  # noqa: F811
    alice, bob, carol = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    for i in range(12):
        handle = ["alice", "bob", "carol"][i % 3]
        postman.command("mallory@example.org", f"cambio resign {game.id} {handle} wrong{i:011d}")
    postman.settle()
    key = give_mail_key(carol)
    postman.command("mallory@example.org", f"cambio show {game.id} carol {key}")
    postman.settle()
    answers = [text_of(m) for m in postman.mails("mallory@example.org")]
    # Ten wrong keys from one sender, then its key commands are refused, whoever they name (even with
    # the right key); and the answers to a stranger's refused commands stop at the limit (10 an hour).
    # On PostgreSQL several processors work at once, so which ten refusals are answered is not fixed: a
    # guess refused for the sender's limit may be answered before a wrong key checked just before it.
    blocked = "Too many mail commands with wrong mail keys have come from your address"
    assert len(answers) == 10 and all("is wrong" in a or blocked in a for a in answers), answers
    # A refusal for the limit can overtake only a guess being checked at the same moment, by another
    # processor.
    processors = current_app.config["PBEM"]["smtpd"]["workers"]
    assert sum("is wrong" in a for a in answers) >= 10 - (processors - 1)
    db.session.rollback()
    assert 10 <= db.session.scalar(select(func.count(MailKeyFailure.id))) <= 12
    assert db.session.scalar(select(func.count(OutboxMail.id)).where(
        OutboxMail.to_addr == "mallory@example.org")) == 10


def test_refusals_to_one_address_are_limited(postman: Postman) -> None:  # noqa: F811
    for i in range(15):
        postman.command("victim@example.org", f"nonsense {i}")
    postman.settle()
    assert len(postman.mails("victim@example.org")) == 10


def test_unconfirmed_accounts_expire_after_their_link(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    web.post("/signup", {"handle": "dora", "email": "dora@example.org", "password": "long enough"})
    web.post("/signup", {"handle": "eve", "email": "eve@example.org", "password": "long enough"})
    try:
        set_clock(utcnow() + timedelta(days=6))
        web.post("/verify", {"email": "eve@example.org"})  # A new link for eve, good for 7 more days.
        set_clock(utcnow() + timedelta(days=2))
        assert accounts.expire_unconfirmed() == 1
        handles = set(db.session.scalars(select(User.handle)))
        assert handles == {"alice", "bob", "carol", "eve"}
        # dora's handle and address are free again.
        assert WebClient(app).post("/signup", {"handle": "dora", "email": "dora@example.org",
                                               "password": "long enough"}).status_code == 200
    finally:
        set_clock(None)


def test_sign_in_cookies_are_lax_and_secure_when_asked(settings: dict, tmp_path) -> None:
    from pbem import create_app

    settings["server"]["secure_cookies"] = True
    settings["database"] = {"url": f"sqlite:///{tmp_path / 'cookies.db'}"}  # An app of its own.
    app = create_app(settings)
    with app.app_context():
        db.create_all()
        user = accounts.create_user("alice", "alice@example.org", "correct horse", verified=True)
        db.session.commit()
        web = WebClient(app)
        response = web.post("/login", {"login": "alice", "password": "correct horse", "remember": "1"})
        cookies = response.headers.getlist("Set-Cookie")
        assert cookies and all("SameSite=Lax" in c and "Secure" in c and "HttpOnly" in c for c in cookies)
        assert user.id
        db.session.remove()
        db.engine.dispose()


def test_a_failed_sign_in_takes_as_long_for_a_name_with_no_account(app: Flask, ctx: Flask, players) -> None:
    """The password is checked (slowly, on purpose) whether or not the name is an account's, so the time
    of the answer does not tell strangers which handles and addresses have accounts."""
    accounts.set_password(players[0], "correct horse")
    db.session.commit()

    def fastest(login: str) -> float:
        times = []
        for _ in range(2):
            started = time.perf_counter()
            try:
                accounts.authenticate(login, "wrong guess")
            except accounts.AccountError:
                times.append(time.perf_counter() - started)
        return min(times)

    fastest("nobody")  # The stand-in hash is made once, at the first such check.
    known = fastest("alice")
    for login in ("nobody@example.org", "bob"):  # bob has no password
        assert fastest(login) > known / 3, login
