"""Pages kept for visitors (pbem.web.pagecache): a visitor sees every change the moment it is made, the
clocks' words as time passes, and never a page that was someone else's (a player's, or one carrying
another visitor's message)."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask

from pbem import challenges, play, vacation
from pbem.extensions import db
from pbem.models import Game, User, set_clock, utcnow
from pbem.web.pagecache import Page, PageCache, cache_of
from tests.server.test_page_queries import play_moves
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient


def _active_game(alice: User, bob: User, engine: str = "cambio") -> int:
    game_id = challenges.new_game(alice, engine, [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    return game_id


def _page(web: WebClient, path: str) -> str:
    response = web.get(path)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_a_visitor_is_answered_from_the_kept_page_until_the_game_changes(app: Flask, ctx: Flask,
                                                                        players) -> None:
    alice, bob, _ = players
    alice_id = alice.id
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    first = _page(WebClient(app), path)
    assert len(cache_of(app)) == 1
    # Another visitor gets the same bytes.
    assert _page(WebClient(app), path) == first
    play_moves(game_id, 1)
    moved = _page(WebClient(app), path)
    record = db.session.get(Game, game_id).moves
    assert moved != first and f"<code>{record[0].text}</code>" in moved
    # The page's script asks for the changing part: it shows the move too.
    assert f"<code>{record[0].text}</code>" in _page(WebClient(app), f"{path}/live")
    play.resign(game_id, db.session.get(User, alice_id), "web")
    over = _page(WebClient(app), path)
    assert "Game over" in over and "resigned" in over


def test_the_clock_words_a_visitor_sees_follow_the_time(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    now = utcnow()
    try:
        set_clock(now)
        before = _page(WebClient(app), path)
        assert "2 days 23 hours left" in before or "3 days left" in before
        set_clock(now + timedelta(hours=5))
        later = _page(WebClient(app), path)
        assert "2 days 19 hours left" in later or "2 days 18 hours left" in later
        set_clock(now + timedelta(days=2, hours=23, minutes=50))
        assert "minutes left" in _page(WebClient(app), path)
    finally:
        set_clock(None)


def test_a_vacation_shows_on_a_kept_page(app: Flask, ctx: Flask, players) -> None:
    """A player's vacation changes the player and the clocks, not the game: the visitor sees it."""
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    assert "on vacation" not in _page(WebClient(app), path)
    mover = db.session.get(Game, game_id).seats[next(iter(play.seats_to_move(db.session.get(Game, game_id))))]
    vacation.turn_on(db.session.get(User, mover.user_id))
    db.session.remove()
    page = _page(WebClient(app), path)
    assert "on vacation" in page and "the clock is stopped" in page


def test_the_front_page_and_the_archive_show_new_and_finished_games(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    visitor = WebClient(app)
    first = _active_game(alice, bob)
    front = _page(visitor, "/")
    assert f"/games/{first}" in front and _page(visitor, "/") == front
    assert "No finished games" in _page(visitor, "/archive")
    assert "No finished games" in _page(visitor, "/archive?player=bob&game=cambio")
    second = _active_game(alice, carol)
    assert f"/games/{second}" in _page(visitor, "/")
    play.resign(first, bob, "web")
    front = _page(visitor, "/")
    assert "alice vs bob — " in front
    archive = _page(visitor, "/archive")
    assert f'data-game="{first}"' in archive and f'data-game="{second}"' not in archive
    assert f'data-game="{first}"' in _page(visitor, "/archive?player=bob&game=cambio")
    assert "No finished games" in _page(visitor, "/archive?player=carol&game=cambio")
    # A game that starts when its last seat is taken joins the list.
    third = challenges.new_game(carol, "cambio", [carol, bob], seed=4).id
    assert f"/games/{third}" not in _page(visitor, "/")
    challenges.accept(third, bob)
    assert f"/games/{third}" in _page(visitor, "/")


def test_a_players_page_is_never_shown_to_a_visitor_nor_a_visitors_to_a_player(app: Flask, ctx: Flask,
                                                                               players) -> None:
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    mover = alice if 0 in play.seats_to_move(db.session.get(Game, game_id)) else bob
    (web_m,) = signed_in(app, mover)
    assert 'id="my-board"' in _page(web_m, path)
    page = _page(WebClient(app), path)
    assert 'id="my-board"' not in page and "csrf_token" not in page and "Sign out" not in page
    # Kept for visitors now; the player still gets their own page, form and all.
    mine = _page(web_m, path)
    assert 'id="my-board"' in mine and "Sign out" in mine and 'name="csrf_token"' in mine
    for shared in ("/", "/archive"):
        assert "Sign out" not in _page(WebClient(app), shared)
        assert "Sign out" in _page(web_m, shared)


def test_a_message_for_one_visitor_is_shown_to_them_alone(app: Flask, ctx: Flask, players) -> None:
    """A visitor sent to sign in carries a message in their session: their next page shows it, and
    neither is that page kept nor a kept page shown to them instead."""
    _active_game(*players[:2])
    _page(WebClient(app), "/")
    told = WebClient(app)
    assert told.get("/dashboard").status_code == 302
    page = _page(told, "/")
    assert "Sign in to see that page." in page
    assert "Sign in to see that page." not in _page(WebClient(app), "/")


def test_the_kept_pages_stay_within_their_bound() -> None:
    cache = PageCache(max_bytes=10_000)
    for n in range(50):
        cache.put(f"/games/{n}", Page(n, b"x" * 1000, ()))
        assert cache.size <= 10_000
    assert len(cache) == 9
    # The least recently used go first; a page asked for again stays.
    assert cache.get("/games/41", 41) is not None and cache.get("/games/40", 40) is None
    cache.get("/games/42", 42)
    cache.put("/games/50", Page(50, b"x" * 1000, ()))
    assert cache.get("/games/42", 42) is not None and cache.get("/games/43", 43) is None
    # A page kept under another stamp is not given out, and a newer one takes its place.
    assert cache.get("/games/50", 49) is None
    cache.put("/games/50", Page(51, b"y" * 10, ()))
    assert cache.get("/games/50", 51).body == b"y" * 10 and cache.size <= 10_000
