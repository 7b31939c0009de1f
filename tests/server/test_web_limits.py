"""Rate limits on the web forms: password guessing and mail floods are stopped, per client and per name."""

from __future__ import annotations

import http.cookiejar
import logging
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from flask import Flask

from pbem import create_app
from pbem.accounts import accounts
from pbem.core.config import ConfigError
from pbem.core.extensions import db, limiter
from pbem.core.models import OutboxMail
from pbem.web.limits import account_key
from tests.conftest import free_port
from tests.server.processes import Processes, environment, exec_start, option, wait_for_port
from tests.server.webclient import WebClient


def test_password_guessing_is_stopped_per_account(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    web.sign_in(players[0])  # Gives alice the password "correct horse"; then sign out.
    web.post("/logout")
    limit = 10  # [ratelimit] signin_per_account
    for _ in range(limit):
        assert web.post("/login", {"login": "alice", "password": "wrong guess"}).status_code == 400
    refused = web.post("/login", {"login": "alice", "password": "correct horse"})
    assert refused.status_code == 429
    assert "Too many attempts" in refused.get_data(as_text=True)
    # The same account under its address, or other casing, shares the count ...
    assert web.post("/login", {"login": " ALICE ", "password": "correct horse"}).status_code == 429
    # ... while another player signs in as usual.
    assert WebClient(app).sign_in(players[1]).status_code == 302


def test_failed_sign_ins_count_against_the_account_whatever_names_it(app: Flask, ctx: Flask, players) -> None:
    """10 failures an hour per account, whether they name it by its handle, its address or a look-alike
    of either: the 11th is refused, even with the right password."""
    web = WebClient(app)
    web.sign_in(players[0])
    web.post("/logout")
    names = ["alice"] * 4 + ["alice@example.org", " ALICE@Example.ORG "] * 2 + ["a1ice", "AL1CE"]
    for name in names:
        assert web.post("/login", {"login": name, "password": "wrong guess"}).status_code == 400, name
    for name in ("alice@example.org", "alice", "Alice"):
        refused = web.post("/login", {"login": name, "password": "correct horse"})
        assert refused.status_code == 429, name
    assert WebClient(app).sign_in(players[1]).status_code == 302


def test_names_of_no_account_are_limited_alike(app: Flask, ctx: Flask, players) -> None:
    """Probing a name nobody has is limited as an account is (so the limit does not tell which names
    have accounts), its look-alikes and other spellings counting as one."""
    web = WebClient(app)
    for name in ["nobody-here"] * 5 + ["NOBODY-HERE", "n0body-here"] * 2 + ["nobody_here"]:
        assert web.post("/login", {"login": name, "password": "wrong guess"}).status_code == 400, name
    assert web.post("/login", {"login": "nobody-here", "password": "x"}).status_code == 429
    # An unknown address is counted likewise, in any case or width; an account's by its id.
    assert account_key("Ghost@Example.org") == account_key(" ghost@example.org") == account_key(
        "ｇhost@example.org") == "name:ghost@example.org"
    assert account_key("ALICE@example.org") == account_key("a1ice") == f"account:{players[0].id}"


def test_reset_and_confirmation_mails_count_against_the_account_whatever_names_it(
        app: Flask, ctx: Flask, players) -> None:
    """3 mails with a link an hour per account, asked for by handle, address or look-alike, on the
    reset and the confirmation forms together."""
    web = WebClient(app)
    assert web.post("/reset", {"email": "alice"}).status_code == 200
    assert web.post("/reset", {"email": "ALICE@example.org"}).status_code == 200
    assert web.post("/verify", {"email": "alice@example.org"}).status_code == 200
    for name in ("a1ice", "alice@example.org", "alice"):
        assert web.post("/reset", {"email": name}).status_code == 429, name
    assert web.post("/verify", {"email": "Alice@Example.org"}).status_code == 429
    signup = {"handle": "xavier", "email": "alice@example.org", "password": "long enough"}
    assert web.post("/signup", signup).status_code == 429  # A sign-up mails the address too.
    queued = db.session.scalar(db.select(db.func.count(OutboxMail.id)).where(OutboxMail.kind == "reset"))
    assert queued == 2
    assert web.post("/reset", {"email": "bob"}).status_code == 200  # Another account as usual.


def test_successful_sign_ins_do_not_count(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    web.sign_in(players[0])
    for _ in range(12):
        assert web.post("/login", {"login": "alice", "password": "correct horse"}).status_code == 302


def test_reset_mails_to_one_address_are_limited(app: Flask, ctx: Flask, players) -> None:
    web = WebClient(app)
    answers = [web.post("/reset", {"email": "alice@example.org"}).status_code for _ in range(30)]
    assert answers[:3] == [200, 200, 200] and set(answers[3:]) == {429}
    queued = db.session.scalar(db.select(db.func.count(OutboxMail.id)).where(OutboxMail.kind == "reset"))
    assert queued == 3
    # Confirmation mails likewise, counted separately.
    answers = [web.post("/verify", {"email": "dora@example.org"}).status_code for _ in range(5)]
    assert answers == [200, 200, 200, 429, 429]


def test_many_addresses_from_one_client_are_limited(app: Flask, ctx: Flask) -> None:
    web = WebClient(app)
    answers = [web.post("/reset", {"email": f"p{i}@example.org"}).status_code for i in range(25)]
    assert answers.count(200) == 20 and answers[-1] == 429


def test_sign_ups_per_client_are_limited(app: Flask, ctx: Flask) -> None:
    web = WebClient(app)
    answers = [
        web.post("/signup", {"handle": f"p{i}x", "email": f"p{i}@example.org", "password": "long enough"})
        for i in range(12)
    ]
    assert [a.status_code for a in answers[:10]] == [200] * 10
    assert answers[10].status_code == 429 and "Wait a while" in answers[10].get_data(as_text=True)


def test_limits_are_read_from_the_settings(settings: dict, tmp_path) -> None:
    # An app of its own, on a database of its own (the limits do not depend on which).
    settings["database"] = {"url": f"sqlite:///{tmp_path / 'limits.db'}"}
    settings["ratelimit"] = {"signup_per_ip": "1 per hour"}
    app = create_app(settings)
    with app.app_context():
        db.create_all()
        web = WebClient(app)
        form = {"handle": "dora", "email": "dora@example.org", "password": "long enough"}
        assert web.post("/signup", form).status_code == 200
        assert web.post("/signup", dict(form, handle="eve", email="eve@example.org")).status_code == 429
        db.session.remove()
        db.engine.dispose()


def _redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.mark.skipif(not _redis_answers(), reason="no Redis answers on 127.0.0.1:6379 to share limits through")
def test_redis_storage_is_shared_by_workers(settings: dict, tmp_path) -> None:
    """Two apps (two web workers) on one Redis share one count: the limit holds across them."""
    # A prefix of this run's own: the per-address limits count 127.0.0.1, which every run shares.
    settings["ratelimit"] = {"storage_uri": "redis://127.0.0.1:6379", "mail_link_per_address": "2 per hour",
                             "key_prefix": f"pbem-test-{uuid.uuid4().hex}"}
    settings["database"] = {"url": f"sqlite:///{tmp_path / 'limits.db'}"}
    victim = f"{uuid.uuid4().hex}@example.org"
    first = create_app(settings)
    with first.app_context():
        db.create_all()
        assert WebClient(first).post("/reset", {"email": victim}).status_code == 200
        db.session.remove()
        db.engine.dispose()
    second = create_app(settings)
    with second.app_context():
        web = WebClient(second)
        assert web.post("/reset", {"email": victim}).status_code == 200
        assert web.post("/reset", {"email": victim}).status_code == 429
        assert type(limiter.storage).__name__ == "RedisStorage"
        db.session.remove()
        db.engine.dispose()


def test_failed_sign_ins_from_one_client_are_limited_whatever_names_they_give(settings: dict,
                                                                              tmp_path) -> None:
    """`signin_per_ip`: one client guessing many accounts' passwords is stopped, a right password too."""
    settings["database"] = {"url": f"sqlite:///{tmp_path / 'limits.db'}"}
    settings["ratelimit"] = {"signin_per_ip": "3 per minute"}
    app = create_app(settings)
    with app.app_context():
        db.create_all()
        accounts.create_user("erin", "erin@example.org", password="correct horse", verified=True)
        db.session.commit()
        web = WebClient(app)
        answers = [web.post("/login", {"login": name, "password": "wrong"}).status_code
                   for name in ("anna", "bert", "cleo")]
        assert answers == [400, 400, 400]
        assert web.post("/login", {"login": "erin", "password": "correct horse"}).status_code == 429
        db.session.remove()
        db.engine.dispose()


def test_a_misspelt_limit_stops_the_server_at_start(settings: dict) -> None:
    settings["ratelimit"] = {"signin_per_ip": "ten per minute"}
    with pytest.raises(ConfigError, match=r"ratelimit\.signin_per_ip"):
        create_app(settings)


def test_behind_a_reverse_proxy_each_client_has_its_own_count(settings: dict, tmp_path) -> None:
    """With `server.trusted_proxies = 1` the limits count the address nginx forwards, not nginx's own;
    without it a forwarded address is ignored, so a client cannot pick one to escape its limit."""
    settings["ratelimit"] = {"signup_per_ip": "1 per hour"}
    # The proxy's headers are read before any database is; one SQLite file per setting will do.

    def sign_up(web: WebClient, handle: str, client: str) -> int:
        form = {"handle": handle, "email": f"{handle}@example.org", "password": "long enough"}
        return web.post("/signup", form, headers={"X-Forwarded-For": client}).status_code

    for proxies, expected in ((1, [200, 200, 429]), (0, [200, 429, 429])):
        settings["server"]["trusted_proxies"] = proxies
        settings["database"]["url"] = f"sqlite:///{tmp_path / f'proxies{proxies}.db'}"
        app = create_app(settings)
        with app.app_context():
            db.create_all()
            web = WebClient(app)
            answers = [sign_up(web, f"{name}{proxies}", client) for name, client in
                       (("dora", "203.0.113.7"), ("eve", "198.51.100.2"), ("fay", "198.51.100.2"))]
            assert answers == expected, (proxies, answers)
            db.session.remove()
            db.engine.dispose()


def test_several_workers_counting_in_memory_warn_and_are_refused_outside_development(
        settings: dict, caplog: pytest.LogCaptureFixture) -> None:
    """Per-process counts under several workers would let each allow the whole limit: refused unless in
    development, where it is said loudly; one worker, Redis, or limits turned off start as ever."""
    with pytest.raises(ConfigError, match=r"ratelimit\.storage_uri is 'memory://'.*4 worker processes"):
        create_app(settings, workers=4)
    for shared in ({"storage_uri": "redis://127.0.0.1:6379"}, {"enabled": False}):
        create_app(dict(settings, ratelimit=shared), workers=4)
    settings["server"]["development"] = True
    with caplog.at_level(logging.WARNING, logger="pbem.core.config"):
        create_app(settings, workers=2)
    assert "RATE LIMITS DO NOT HOLD" in caplog.text and "2 worker processes" in caplog.text


@pytest.fixture
def processes(tmp_path: Path):
    """The server processes of this test, all stopped at its end."""
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def one_backend(app: Flask) -> None:
    """Skip the PostgreSQL run of a test of the limits' storage, which the database does not change."""
    if app.config["SQLALCHEMY_DATABASE_URI"].startswith("postgresql"):
        pytest.skip("the rate limits' storage is under test, the same on either database")


def gunicorn_argv(port: int, workers: int) -> list[str]:
    """gunicorn as deploy/pbem-web.service starts it, on ``port`` with ``workers`` workers."""
    return option(option(exec_start("pbem-web.service"), "--bind", f"127.0.0.1:{port}"), "--workers",
                  str(workers))


def test_gunicorn_with_several_workers_counting_in_memory_does_not_start(
        app: Flask, processes: Processes) -> None:
    """The unit's gunicorn with two workers and the default `memory://` storage stops at start, saying
    why, instead of serving with limits that do not hold."""
    one_backend(app)
    web = processes.start("gunicorn", gunicorn_argv(free_port(), 2), environment(app))
    deadline = time.monotonic() + 60
    while web.popen.poll() is None:
        assert time.monotonic() < deadline, web.output()
        time.sleep(0.1)
    assert web.popen.returncode != 0
    assert "ratelimit.storage_uri is 'memory://'" in web.output() and "2 worker processes" in web.output()


def failed_sign_in(opener: urllib.request.OpenerDirector, port: int, login: str) -> int:
    """A sign-in with a wrong password, as a browser posts it (the form's token first); the status."""
    # The first request may wait for a worker to finish starting (the port is open before).
    page = opener.open(f"http://127.0.0.1:{port}/login", timeout=60).read().decode()
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrf_token": token, "login": login, "password": "wrong"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/login", form,
                                     headers={"Referer": f"http://127.0.0.1:{port}/login"})
    try:
        return opener.open(request, timeout=60).status
    except urllib.error.HTTPError as answer:
        return answer.code


@pytest.mark.skipif(not _redis_answers(), reason="no Redis answers on 127.0.0.1:6379 to share limits through")
def test_gunicorn_with_several_workers_sharing_redis_holds_the_limit(
        app: Flask, ctx: Flask, processes: Processes) -> None:
    """Two workers counting in one Redis: the 11th failed sign-in for an account is refused, whichever
    worker takes it and whichever name it gives."""
    one_backend(app)
    accounts.create_user("erin", "erin@example.org", password="correct horse battery", verified=True)
    db.session.commit()
    port = free_port()
    env = environment(app, PBEM_RATELIMIT_STORAGE_URI="redis://127.0.0.1:6379",
                      PBEM_RATELIMIT_KEY_PREFIX=f"pbem-test-{uuid.uuid4().hex}")
    web = processes.start("gunicorn", gunicorn_argv(port, 2), env)
    wait_for_port(port, web)
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    answers = [failed_sign_in(opener, port, name) for name in ["erin", "ERIN@example.org", "er1n"] * 3
               + ["erin", "erin@example.org"]]
    assert answers == [400] * 10 + [429], web.output()
