"""Pages kept for signed-in players (pbem.web.pagecache): a player is served their own kept page until
anything it shows changes (the game, their settings, their conditional lines, whether they watch, a
message for them), never anyone else's page, and the forms of a kept page are accepted."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from flask import Flask, template_rendered

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game, User, set_clock
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play, queueing, watching
from pbem.lobby import challenges
from pbem.web.pagecache import FORM_TOKEN
from tests.server.test_page_queries import count
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@contextmanager
def _renders(app: Flask) -> Iterator[list[str]]:
    """The templates rendered while the block runs: none when a page is served as it was kept."""
    rendered: list[str] = []

    def record(sender: Flask, template: object, context: object, **extra: object) -> None:
        rendered.append(getattr(template, "name", ""))

    with template_rendered.connected_to(record, app):
        yield rendered


def _get(web: WebClient, path: str) -> tuple[str, bool]:
    """The page at ``path`` and whether it was rendered for this request (False: served kept)."""
    with _renders(web.app) as rendered:
        response = web.get(path)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    # The stand-in for the form token never leaves the server.
    assert str(FORM_TOKEN) not in page and "pbem-form-token" not in page
    return page, bool(rendered)


def _without_token(page: str) -> str:
    return _TOKEN.sub("", page)


def _fresh(web: WebClient, path: str) -> str:
    """The page at ``path``, which must be rendered now (something it shows changed) and then be
    served kept, alike, to the next request."""
    page, rendered = _get(web, path)
    assert rendered, f"{path} was served from a page kept before the change"
    again, rendered_again = _get(web, path)
    assert not rendered_again, f"{path} was not kept"
    assert _without_token(again) == _without_token(page)
    return page


def _cambio(alice: User, bob: User, public: bool = True) -> int:
    game = play.create_game("cambio", [alice, bob], {"size": 4}, public=public)
    db.session.commit()
    return game.id


def test_a_players_kept_game_page_changes_with_everything_of_theirs_it_shows(app: Flask, ctx: Flask,
                                                                            players) -> None:
    alice, bob, carol = players
    game_id = _cambio(alice, bob)
    path = f"/games/{game_id}"
    web_alice, web_carol = signed_in(app, alice, carol)
    page = _fresh(web_alice, path)
    assert 'id="my-board"' in page and '<span class="who">alice</span>' in page
    assert "After your move you can queue your answers" in page

    # Her own move, played elsewhere (by mail, say): the page shows the opponent's turn, her queue.
    play.submit(game_id, alice, "b4", "web")
    page = _fresh(web_alice, path)
    assert 'id="my-board"' not in page and 'id="no-conditionals"' in page and " UTC)" in page

    # Her conditional lines, queued elsewhere: only her seat's column says so.
    queueing.queue(game_id, alice, ["if b1 then c4"])
    assert "<code>if b1 then c4</code>" in _fresh(web_alice, path)

    # Her time zone, changed in her settings: the opponent's clock is written in it.
    accounts.set_time_zone(alice, "Europe/Paris")
    page = _fresh(web_alice, path)
    assert " CET)" in page or " CEST)" in page

    # A message for her is shown once, on a page that is not kept: here a line refused, which changes
    # nothing else the page shows.
    refused = web_alice.post(f"{path}/conditionals", {"line": "if a1 then c4", "seat": "0"})
    assert refused.status_code == 303
    page, rendered = _get(web_alice, path)
    assert rendered and "a1 is a corner" in page
    again, rendered = _get(web_alice, path)
    assert not rendered and "a1 is a corner" not in again
    queued = web_alice.post(f"{path}/conditionals", {"line": "if c1 then d2", "seat": "0"})
    assert queued.status_code == 303
    page, rendered = _get(web_alice, path)
    assert rendered and "Queued: it is played the moment" in page and "<code>if c1 then d2</code>" in page
    assert "Queued: it is played the moment" not in _fresh(web_alice, path)

    # The opponent moves, and her line answers at once.
    play.submit(game_id, bob, "b1", "web")
    page = _fresh(web_alice, path)
    assert "(conditional)" in page and "<code>if b1 then c4</code>" not in page

    # Whether a reader who does not play watches the game.
    assert 'id="watch"' in _fresh(web_carol, path)
    watching.watch(db.session.get(Game, game_id), carol)
    assert 'id="unwatch"' in _fresh(web_carol, path)
    watching.unwatch(db.session.get(Game, game_id), carol)
    assert 'id="watch"' in _fresh(web_carol, path)

    # The live part of the page, which the page's script asks for, is kept alike.
    live = _fresh(web_alice, f"{path}/live")
    assert 'data-my-turn="no"' in live
    play.submit(game_id, bob, "a2", "web")
    assert 'data-my-turn="yes"' in _fresh(web_alice, f"{path}/live")


def test_the_front_page_and_the_archive_show_a_player_their_results_and_zone(app: Flask, ctx: Flask,
                                                                            players) -> None:
    alice, bob, carol = players
    # Finished half an hour before midnight, UTC: the next day in Auckland.
    set_clock(datetime(2026, 1, 10, 23, 30))
    try:
        game_id = _cambio(alice, bob)
        play.resign(game_id, bob, "web")
    finally:
        set_clock(None)
    web_alice, web_bob = signed_in(app, alice, bob)
    assert "<strong>Your result: won.</strong>" in _fresh(web_alice, "/")
    assert "<strong>Your result: lost.</strong>" in _fresh(web_bob, "/")
    archive = _fresh(web_alice, "/archive")
    assert "<td>2026-01-10</td>" in archive
    accounts.set_time_zone(alice, "Pacific/Auckland")
    assert "<td>2026-01-11</td>" in _fresh(web_alice, "/archive")
    assert "<td>2026-01-10</td>" in _get(web_bob, "/archive")[0]

    # A new game starting changes the lists for every reader.
    second = challenges.new_game(carol, "cambio", [carol, alice], seed=4).id
    challenges.accept(second, alice)
    assert f"/games/{second}" in _fresh(web_alice, "/")


def test_one_player_never_gets_anothers_page(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game_id = _cambio(alice, bob)
    private_id = _cambio(alice, bob, public=False)
    web_alice, web_bob, web_carol = signed_in(app, alice, bob, carol)
    for path in (f"/games/{game_id}", f"/games/{private_id}", "/", "/archive"):
        _fresh(web_alice, path)
        # Each is kept a page of their own, side by side: after bob's first, both are served kept.
        for web, handle, kept in ((web_bob, "bob", False), (web_alice, "alice", True), (web_bob, "bob", True),
                                  (web_alice, "alice", True)):
            page, rendered = _get(web, path)
            assert rendered is not kept
            assert f'<span class="who">{handle}</span>' in page
            assert f'<span class="who">{"bob" if handle == "alice" else "alice"}</span>' not in page
        assert 'id="my-board"' not in _get(web_bob, f"/games/{game_id}")[0]
    assert 'id="my-board"' in _get(web_alice, f"/games/{game_id}")[0]
    # A private game's page, kept for its players, is nobody else's to see.
    assert web_carol.get(f"/games/{private_id}").status_code == 404
    assert WebClient(app).get(f"/games/{private_id}").status_code == 404


def test_a_form_on_a_kept_page_is_accepted_after_the_first_renders_token_expired(app: Flask, ctx: Flask,
                                                                                 players) -> None:
    alice, bob, _ = players
    game_id = _cambio(alice, bob)
    play.submit(game_id, alice, "b4", "web")
    path = f"/games/{game_id}"
    (web_alice,) = signed_in(app, alice)
    # A second browser of hers (signing in through the helper again would give her a new password, which
    # ends her other sessions).
    other_browser = WebClient(app)
    assert other_browser.post("/login", {"login": "alice", "password": "correct horse"}).status_code == 302
    app.config["WTF_CSRF_TIME_LIMIT"] = 2
    try:
        first = _fresh(web_alice, path)
        # Whole seconds count: at least three have passed, more than the limit, whenever in a second
        # the page was first rendered.
        time.sleep(3.1)
        kept, rendered = _get(web_alice, path)
        assert not rendered
        old_token, token = _TOKEN.search(first).group(1), _TOKEN.search(kept).group(1)
        # The token the page was first rendered with has expired: a page still carrying it would fail.
        expired = web_alice.post(f"{path}/conditionals", {"line": "if b1 then c4", "seat": "0",
                                                          "csrf_token": old_token}, json=True)
        assert expired.status_code == 400 and json.loads(expired.data)["code"] == "csrf"
        answer = web_alice.post(f"{path}/conditionals", {"line": "if b1 then c4", "seat": "0",
                                                         "csrf_token": token}, json=True)
        assert answer.status_code == 200 and json.loads(answer.data)["ok"]

        # Another browser of hers is given the kept page with its own session's token.
        _fresh(web_alice, path)
        theirs, rendered = _get(other_browser, path)
        assert not rendered
        token = _TOKEN.search(theirs).group(1)
        refused = web_alice.post(f"{path}/draw", {"answer": "offer", "csrf_token": token}, json=True)
        assert refused.status_code == 400
        offered = other_browser.post(f"{path}/draw", {"answer": "offer", "csrf_token": token}, json=True)
        assert offered.status_code == 200 and json.loads(offered.data)["ok"]
    finally:
        app.config["WTF_CSRF_TIME_LIMIT"] = 3600


def test_a_session_that_has_ended_is_given_no_kept_page(app: Flask, ctx: Flask, players) -> None:
    """A kept page is served without loading the player, but only to a session whose token is still
    theirs: signing out, or every other session ended by a new password, leaves the visitor's page."""
    alice, bob, _ = players
    game_id = _cambio(alice, bob)
    path = f"/games/{game_id}"
    web_alice, web_bob = signed_in(app, alice, bob)
    for web in (web_alice, web_bob):
        for shared in (path, "/", "/archive"):
            _fresh(web, shared)
    web_alice.post("/logout")
    for shared in (path, "/", "/archive"):
        page = web_alice.get(shared).get_data(as_text=True)
        assert "Sign out" not in page and 'id="my-board"' not in page
    with unit_of_work() as uow:
        accounts.end_other_sessions(db.session.get(User, bob.id))
        uow.commit()
    for shared in (path, "/", "/archive"):
        page = web_bob.get(shared).get_data(as_text=True)
        assert "Sign out" not in page and "bob</span>" not in page


def test_a_kept_page_costs_a_player_the_statements_it_costs_a_visitor(app: Flask, ctx: Flask,
                                                                      players) -> None:
    """The player is not loaded for a kept page: their row is read by the stamp's one statement."""
    alice, bob, _ = players
    game_id = _cambio(alice, bob)
    (web_alice,) = signed_in(app, alice)
    visitor = WebClient(app)
    for path in (f"/games/{game_id}", "/", "/archive"):
        for web in (web_alice, visitor):
            _get(web, path)
            assert not _get(web, path)[1]
        assert count(web_alice, path) == count(visitor, path) <= 2


def test_a_sessions_form_token_is_signed_afresh_after_a_hundredth_of_its_time(app: Flask, ctx: Flask,
                                                                              players) -> None:
    """The form token put into a player's pages is signed again only after a hundredth of the time a
    token is accepted (two seconds of 200 here); meanwhile the session is given the same one, which is
    accepted, and no other session ever is."""
    alice, bob, _ = players
    game_id = _cambio(alice, bob)
    play.submit(game_id, alice, "b4", "web")
    path = f"/games/{game_id}"
    web_alice, web_bob = signed_in(app, alice, bob)

    def token(web: WebClient) -> str:
        return _TOKEN.search(_get(web, path)[0]).group(1)

    app.config["WTF_CSRF_TIME_LIMIT"] = 200
    try:
        first = token(web_alice)
        # A second later a token signed afresh would carry another second.
        time.sleep(1.1)
        assert token(web_alice) == first
        assert token(web_bob) != first
        time.sleep(1.1)
        later = token(web_alice)
        assert later != first
        for given, line in ((first, "if b1 then c4"), (later, "if c1 then d3")):
            answer = web_alice.post(f"{path}/conditionals", {"line": line, "seat": "0", "csrf_token": given},
                                    json=True)
            assert answer.status_code == 200 and json.loads(answer.data)["ok"], answer.data
        refused = web_bob.post(f"{path}/draw", {"answer": "offer", "csrf_token": first}, json=True)
        assert refused.status_code == 400
    finally:
        app.config["WTF_CSRF_TIME_LIMIT"] = 3600
