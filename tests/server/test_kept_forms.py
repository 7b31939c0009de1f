"""The sign-in, sign-up and reset forms kept for visitors (pbem.web.pagecache, ``forms=True``): served
without being rendered, each visitor's with their own form token, which signs them in and nobody else;
a form shown after a refused POST, or carrying a message, is neither kept nor served kept."""

from __future__ import annotations

import re

from flask import Flask

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import User
from tests.server.test_player_page_cache import _renders
from tests.server.webclient import WebClient

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def _form(web: WebClient, path: str) -> tuple[str, str, bool]:
    """The form at ``path``: its page, its token, and whether it was rendered (False: served kept)."""
    with _renders(web.app) as rendered:
        response = web.get(path)
    assert response.status_code == 200, path
    page = response.get_data(as_text=True)
    match = _TOKEN.search(page)
    assert match is not None, path
    return page, match.group(1), bool(rendered)


def _with_password(app: Flask, user: User, password: str = "correct horse") -> None:
    with app.app_context():
        accounts.set_password(db.session.get(User, user.id), password)
        db.session.commit()


def test_each_visitor_gets_a_kept_form_with_a_token_that_signs_in_only_them(app: Flask, ctx: Flask,
                                                                            players) -> None:
    alice, bob, _carol = players
    _with_password(app, alice)
    _with_password(app, bob)
    for path in ("/login", "/signup", "/reset"):
        _form(WebClient(app), path)  # Rendered and kept, if not yet.
        first, second = WebClient(app), WebClient(app)
        first_page, first_token, first_rendered = _form(first, path)
        second_page, second_token, second_rendered = _form(second, path)
        assert not first_rendered and not second_rendered, path
        assert first_token != second_token, path
        assert first_page.replace(first_token, second_token) == second_page, path
        # A visitor coming back (their session holds a token now) is served kept too, with that token.
        again_page, again_token, again_rendered = _form(first, path)
        assert not again_rendered and again_token == first_token and again_page == first_page, path
    visitor, other = WebClient(app), WebClient(app)
    _page, token, _rendered = _form(visitor, "/login")
    _page, other_token, _rendered = _form(other, "/login")
    # Another session's token is refused, and signs nobody in.
    refused = visitor.post("/login", {"login": "alice", "password": "correct horse",
                                      "csrf_token": other_token}, csrf=False)
    assert refused.status_code == 400
    assert "Sign out" not in visitor.get("/rules").get_data(as_text=True)
    # Each visitor's own kept token signs them in.
    signed = visitor.post("/login", {"login": "alice", "password": "correct horse", "csrf_token": token},
                          csrf=False)
    assert signed.status_code == 302
    assert "alice" in visitor.get("/rules").get_data(as_text=True)
    signed = other.post("/login", {"login": "bob", "password": "correct horse",
                                   "csrf_token": other_token}, csrf=False)
    assert signed.status_code == 302
    rules = other.get("/rules").get_data(as_text=True)
    assert "bob" in rules and "alice" not in rules


def test_a_refused_sign_in_shows_its_error_and_what_was_typed_to_that_visitor_only(app: Flask, ctx: Flask,
                                                                                  players) -> None:
    _with_password(app, players[0])
    _form(WebClient(app), "/login")
    visitor = WebClient(app)
    _page, token, _rendered = _form(visitor, "/login")
    refused = visitor.post("/login", {"login": "alice", "password": "wrong horse", "csrf_token": token},
                           csrf=False)
    assert refused.status_code == 400
    shown = refused.get_data(as_text=True)
    assert 'value="alice"' in shown and 'class="flash error"' in shown
    for web in (WebClient(app), visitor):
        page, _token, rendered = _form(web, "/login")
        assert not rendered
        assert 'value="alice"' not in page and 'class="flash error"' not in page
    # The form the refused answer carried still signs the visitor in.
    retry_token = _TOKEN.search(shown)
    assert retry_token is not None
    signed = visitor.post("/login", {"login": "alice", "password": "correct horse",
                                     "csrf_token": retry_token.group(1)}, csrf=False)
    assert signed.status_code == 302


def test_a_message_is_shown_once_on_a_fresh_form_then_the_kept_one_comes_back(app: Flask, ctx: Flask,
                                                                             players) -> None:
    _form(WebClient(app), "/login")
    visitor = WebClient(app)
    _form(visitor, "/login")
    with visitor.client.session_transaction() as session:
        session["_flashes"] = [("info", "A message for this visitor alone.")]
    page, _token, rendered = _form(visitor, "/login")
    assert rendered and "A message for this visitor alone." in page
    page, _token, rendered = _form(visitor, "/login")
    assert "A message for this visitor alone." not in page


def test_a_signed_in_player_asking_for_the_sign_in_form_is_still_sent_on(app: Flask, ctx: Flask,
                                                                        players) -> None:
    web = WebClient(app)
    web.sign_in(players[0])
    _form(WebClient(app), "/login")
    answer = web.get("/login?next=/rules")
    assert answer.status_code == 302 and answer.headers["Location"].endswith("/rules")
