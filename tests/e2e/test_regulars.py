"""What regulars of lichess and Dragon Go Server look for, in a real browser: ratings and rating ranges in
the lobby, the player directory and the standings in the navigation, watched games and opponents'
vacations on My games, the hour of the daily digest, and private notes on the game page."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import Browser, expect

from pbem.accounts import accounts, vacation
from pbem.core.extensions import db
from pbem.core.models import Rating, User, set_clock, utcnow
from pbem.game import play, watching
from pbem.lobby import challenges
from pbem.schedule import scheduler
from tests.e2e.test_web_play import PASSWORD, confirmed_players, deliver, sign_in

pytestmark = pytest.mark.e2e

CAMBIO = {"size": 3, "placements": 2}


def give_rating(user: User, rating: float) -> None:
    """A settled Cambio rating for ``user``."""
    db.session.add(Rating(user_id=user.id, engine="cambio", rating=rating, deviation=60.0, games=20,
                          last_game_at=utcnow()))
    db.session.commit()


def test_the_lobby_shows_ratings_and_refuses_a_seat_out_of_range(browser: Browser, server, artifacts) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        give_rating(alice, 1688)
        give_rating(bob, 1320)
    page = sign_in(browser, server, "alice")
    page.click("text=New game")
    page.select_option("#time", "days:3")
    page.fill("#seat-1", "")
    page.fill("#min_rating", "1500")
    page.fill("#max_rating", "1900")
    page.click("#create")
    expect(page.locator(".flash.info")).to_have_text(
        "The game is created; it starts when every seat is taken.")

    other = sign_in(browser, server, "bob")
    other.click("nav >> text=Lobby")
    row = other.locator("tr.open-game").first
    expect(row.locator(".creator")).to_have_text("alice 1688")
    expect(row.locator(".range")).to_have_text("1500\u20131900")
    other.screenshot(path=str(artifacts / "lobby-ratings.png"), full_page=True)
    row.locator("text=Take a seat").click()
    expect(other.locator(".flash.error").first).to_contain_text(
        "is open to players rated 1500\u20131900 in Cambio; your Cambio rating is 1320.")


def test_the_player_directory_and_the_standings_are_in_the_navigation(browser: Browser, server) -> None:
    with server.app.app_context():
        alice, _bob = confirmed_players(server)
        for handle in ("albert", "alma", "zoe"):
            accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
        db.session.commit()
        give_rating(alice, 1640)
    page = browser.new_page()
    page.goto(server.url)
    page.click("nav >> text=Players")
    expect(page.locator("#directory .player")).to_have_count(5)
    page.fill("#q", "AL")
    page.click("#search")
    expect(page.locator("#directory .player a")).to_have_text(["albert", "alice", "alma"])
    expect(page.locator("#directory .player").nth(1)).to_contain_text("Cambio 1640")
    page.fill("#q", "q")
    page.click("#search")
    expect(page.locator("#no-players")).to_have_text("No player's handle begins with q.")
    page.click("nav >> text=Standings")
    expect(page.locator("h1")).to_have_text("Standings")
    expect(page.locator("#standings-cambio li")).to_contain_text(["alice 1640"])
    page.locator("#standings-cambio h2 a").click()
    expect(page.locator("h1")).to_have_text("Cambio standings")
    page.close()


def test_my_games_lists_watched_games_and_says_who_is_on_vacation(browser: Browser, server,
                                                                   artifacts) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        carol = accounts.create_user("carol", "carol@example.org", PASSWORD, verified=True)
        db.session.commit()
        mine = play.create_game("cambio", [alice, bob], CAMBIO).id
        theirs = play.create_game("cambio", [bob, carol], CAMBIO)
        db.session.commit()
        watching.watch(theirs, alice)
        theirs = theirs.id
        vacation.turn_on(bob)
        until = vacation.ends_at(bob)
    page = sign_in(browser, server, "alice")
    day = f"{until:%a} {until.day} {until:%b}"
    expect(page.locator("#my-move")).to_contain_text(f"Cambio #{mine}")
    expect(page.locator("#my-move")).to_contain_text(f"bob is on vacation until {day}; clocks stopped")
    watched = page.locator("#watched .watched-game")
    expect(watched).to_have_count(1)
    expect(watched).to_contain_text(f"Cambio #{theirs}")
    expect(watched).to_contain_text("bob vs carol")
    expect(watched).to_contain_text("bob to move")
    page.screenshot(path=str(artifacts / "my-games-watched.png"), full_page=True)
    watched.locator("text=Stop watching").click()
    expect(page.locator(".flash.info")).to_have_text("You no longer watch this game.")
    page.click("nav >> text=My games")
    expect(page.locator("#watched")).to_have_count(0)


def test_the_digest_comes_at_the_hour_chosen_in_settings(browser: Browser, server, sink) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        alice.notify, alice.time_zone = "digest", "America/New_York"
        db.session.commit()
        play.create_game("cambio", [alice, bob], CAMBIO)
        db.session.commit()
    page = sign_in(browser, server, "alice")
    page.click("nav >> text=Settings")
    expect(page.locator("#digest-when")).to_contain_text("the server's usual hour, 06:00 UTC")
    page.select_option("#digest-hour", "19")
    page.click("#save-digest-hour")
    expect(page.locator(".flash.info")).to_have_text(
        "Your daily digest goes out at 19:00, America/New_York time.")
    expect(page.locator("#digest-hour")).to_have_value("19")

    # 19:00 in New York in winter is 00:00 UTC: the scheduler's job sends it then, not at 06:00 UTC.
    evening = datetime(2025, 12, 2, 0, 0)
    try:
        for moment, expected in ((evening - timedelta(hours=18), 0), (evening - timedelta(minutes=1), 0),
                                 (evening, 1), (evening + timedelta(hours=6), 1)):
            set_clock(moment)
            scheduler.send_digests(server.app)
            deliver(server)
            digests = [m for m in sink.messages("alice@example.org") if "daily digest" in m["Subject"]]
            assert len(digests) == expected, moment
    finally:
        set_clock(None)


def test_private_notes_on_the_game_page_are_the_writers_alone(browser: Browser, server) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game_id = challenges.new_game(alice, "cambio", [alice, bob], CAMBIO).id
        challenges.accept(game_id, bob)
    note = "bob likes the centre; keep b1 for later"
    page = sign_in(browser, server, "alice")
    page.goto(f"{server.url}/games/{game_id}")
    page.fill("#note-text", note)
    page.click("#save-note")
    expect(page.locator(".flash.info")).to_have_text("Your note is saved; only you can read it.")
    page.reload()
    expect(page.locator("#note-text")).to_have_value(note)

    other = sign_in(browser, server, "bob")
    other.goto(f"{server.url}/games/{game_id}")
    expect(other.locator("#note-text")).to_have_value("")
    assert note not in other.content()
    visitor = browser.new_page()
    visitor.goto(f"{server.url}/games/{game_id}")
    expect(visitor.locator("#note-text")).to_have_count(0)
    assert not re.search("keep b1", visitor.content())
    visitor.close()
