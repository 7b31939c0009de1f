"""What players of the second round looked for, seen in a real browser: both clocks (the waiting
player's bank too), moves numbered as the form numbers them (a draw offer is no move), the rating change
of a finished game, and the notice that a comment in Easy Slider reaches the others only at the end."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from tests.e2e.test_web_play import click_move, confirmed_players, sign_in

pytestmark = pytest.mark.e2e

BANK = {"kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14}


def test_both_clocks_move_numbers_and_the_rating_change_on_the_game_page(browser: Browser, server,
                                                                        artifacts) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}, time_control=BANK)
        db.session.commit()
        game_id = game.id
        play.submit(game_id, alice, "b3", "web")
        play.offer_draw(game_id, bob, "web")
        play.decline_draw(game_id, alice, "web")
    bob_page = sign_in(browser, server, "bob")
    bob_page.goto(f"{server.url}/games/{game_id}")
    # Both clocks: bob's running, alice's bank at rest.
    clocks = bob_page.locator("table.seats tr.seat td:last-child")
    expect(clocks.nth(0)).to_contain_text("in the bank, not running")
    expect(clocks.nth(1)).to_contain_text("left (until")
    # The form's "move 2" is the move list's 2: the draw offer and its answer are no moves.
    expect(bob_page.locator(".move-form")).to_contain_text("(move 2)")
    click_move(bob_page, "a2", "alice to move.")
    numbered = bob_page.locator("#moves li:not(.action)")
    expect(numbered.last).to_have_attribute("value", "2")
    expect(numbered.last).to_contain_text("a2")
    expect(bob_page.locator("#moves li.action")).to_have_count(2)
    bob_page.screenshot(path=str(artifacts / "clocks-and-numbers.png"), full_page=True)

    with server.app.app_context():
        players = [accounts.find_user("alice"), accounts.find_user("bob")]
        for number, move in enumerate(["c2", "b1", "c1^", "c3<"]):  # X (bob) wins with rank 3.
            play.submit(game_id, players[number % 2], move, "web")
    bob_page.goto(f"{server.url}/games/{game_id}")
    expect(bob_page.locator("#replay-where")).to_contain_text("After move 6 of 6")
    changes = bob_page.locator(".rating-change")
    expect(changes).to_have_count(2)
    expect(changes.nth(0)).to_contain_text("rating 1500 → ")
    expect(changes.nth(0)).to_contain_text("(−")
    expect(changes.nth(1)).to_contain_text("(+")
    bob_page.screenshot(path=str(artifacts / "rating-change.png"), full_page=True)


def test_the_easy_slider_comment_box_says_when_the_others_see_it(browser: Browser, server) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game = play.create_game("easyslider", [alice, bob], {"rounds": 1})
        db.session.commit()
        game_id = game.id
        duel = play.create_game("cambio", [alice, bob], {"size": 3})
        db.session.commit()
        duel_id = duel.id
        assert db.session.get(Game, game_id).status == "active"
    page = sign_in(browser, server, "alice")
    page.goto(f"{server.url}/games/{game_id}")
    expect(page.locator("#comment-hint")).to_contain_text(
        "your moves and comments are shown to the others when the game ends")
    page.goto(f"{server.url}/games/{duel_id}")
    expect(page.locator("#comment-hint")).to_have_text("(optional, shown with the move)")
