"""The analysis board in a real headless Chromium: a line tried by clicking, stepped back and forth,
changed, and queued as conditional moves in one click; a line tried from a replayed position."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from tests.e2e.test_board_page import start
from tests.e2e.test_web_play import sign_in

pytestmark = pytest.mark.e2e


def test_a_tried_line_is_stepped_through_and_queued_as_conditional_moves(browser, server, sink,
                                                                          artifacts) -> None:
    game_id = start(server, "cambio", ("alice", "bob"), {"size": 4})
    with server.app.app_context():
        play.submit(game_id, accounts.find_user("alice"), "b4", "web")
    alice = sign_in(browser, server, "alice")
    alice.goto(f"{server.url}/games/{game_id}")

    alice.click("#analysis-open")
    where = alice.locator("#analysis-where")
    expect(where).to_have_text("From move 1: bob (X) to move.")
    for move, mover in (("b1", "alice (O)"), ("c4", "bob (X)"), ("c1", "alice (O)"), ("d2", "bob (X)")):
        alice.locator(f'#analysis-board [data-move="{move}"]').first.click()
        expect(where).to_contain_text(f"{mover} to move.")
    expect(alice.locator("#analysis-line li")).to_have_text(["b1", "c4", "c1", "d2"])
    expect(alice.locator("#analysis-conditional")).to_have_text(
        "Queue as conditional moves: if b1 then c4 then c1 then d2")

    # Back two moves, forward one, back again; then another answer replaces the rest of the line.
    alice.click("#analysis-back")
    alice.click("#analysis-back")
    expect(where).to_have_text("After b1, c4 (tried from move 1): bob (X) to move.")
    alice.click("#analysis-forward")
    expect(where).to_contain_text("After b1, c4, c1 ")
    expect(alice.locator("#analysis-conditional")).to_have_text("Queue as conditional moves: if b1 then c4")
    alice.click("#analysis-start")
    expect(where).to_have_text("From move 1: bob (X) to move.")
    alice.locator("#analysis-line li button", has_text="c4").click()
    alice.locator('#analysis-board [data-move="c2"]').first.click()
    expect(alice.locator("#analysis-line li")).to_have_text(["b1", "c4", "c2"])
    alice.click("#analysis-back")
    alice.screenshot(path=str(artifacts / "analysis-board.png"), full_page=True)

    alice.click("#analysis-conditional")
    expect(alice.locator("#notice")).to_contain_text("Queued")
    expect(alice.locator("#conditional-lines")).to_contain_text("if b1 then c4")
    with server.app.app_context():
        game = db.session.get(Game, game_id)
        assert len(game.moves) == 1  # Trying moves played none.
        assert game.seats[0].conditionals == [["b1", "c4"]]


def test_a_line_is_tried_from_a_replayed_position_by_a_visitor(browser, server, sink) -> None:
    game_id = start(server, "truchet", ("dora", "eve"), {"size": 3}, seed=1)
    page = browser.new_context().new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{server.url}/games/{game_id}?move=0")
    page.click("#analysis-open")
    expect(page.locator("#analysis-where")).to_have_text("From the start: dora (Dark) to move.")
    targets = page.locator("#analysis-board [data-move]")
    expect(targets.first).to_be_visible()
    expect(page.locator("#analysis-conditional")).to_be_hidden()
