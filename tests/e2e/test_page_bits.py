"""Small things of the pages in a real Chromium: a rating chart after one game shows its point, a long
move list opens on its latest move, and the record's links come with a game's final move."""

from __future__ import annotations

import random

import pytest
from playwright.sync_api import expect

import games
from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play, queries
from tests.e2e.test_board_page import start
from tests.e2e.test_web_play import sign_in

pytestmark = pytest.mark.e2e


def test_a_rating_chart_after_one_game_shows_its_point(browser, server, sink, artifacts) -> None:
    game_id = start(server, "cambio", ("alice", "bob"), {"size": 4})
    with server.app.app_context():
        play.resign(game_id, accounts.find_user("bob"), "web")
    page = browser.new_context().new_page()
    page.goto(f"{server.url}/players/alice")
    chart = page.locator("#history-cambio svg")
    dot = chart.locator("circle")
    expect(dot).to_be_visible()
    inside = chart.evaluate("""(svg) => { const b = svg.getBoundingClientRect();
        const d = svg.querySelector("circle").getBoundingClientRect();
        return d.width > 0 && d.left >= b.left && d.right <= b.right &&
               d.top >= b.top && d.bottom <= b.bottom; }""")
    assert inside
    expect(page.locator("#history-cambio")).to_contain_text("One rated game so far")
    page.screenshot(path=str(artifacts / "rating-one-game.png"), full_page=True)


def test_a_long_move_list_opens_on_its_latest_move(browser, server, sink) -> None:
    game_id = start(server, "truchet", ("alice", "bob"), {"size": 7}, seed=1)
    pick = random.Random(0)
    engine = games.get("truchet")
    with server.app.app_context():
        users = [accounts.find_user("alice"), accounts.find_user("bob")]
        for _ in range(40):
            game = db.session.get(Game, game_id)
            state = queries.state_of(game)
            seat = min(engine.to_move(state))
            move = pick.choice([m for m in engine.moves(state, seat) if "^" not in m])
            play.submit(game_id, users[seat], move, "web")
            db.session.expire_all()
    page = sign_in(browser, server, "alice")
    page.goto(f"{server.url}/games/{game_id}")
    latest = page.locator("#moves li").last
    expect(latest).to_have_attribute("value", "40")
    shown = page.locator("#moves").evaluate("""(list) => { const b = list.getBoundingClientRect();
        const last = list.lastElementChild.getBoundingClientRect();
        return last.top >= b.top && last.bottom <= b.bottom + 1; }""")
    assert shown


def test_the_record_links_come_with_the_final_move(browser, server, sink) -> None:
    game_id = start(server, "boxoff", ("carol",), {"position": "bb/ww"})
    page = sign_in(browser, server, "carol")
    page.goto(f"{server.url}/games/{game_id}")
    expect(page.locator("#records")).to_have_count(0)  # The record stays hidden while the deal is played.
    for first, second in (("a1", "b1"), ("a2", "b2")):
        page.locator(f'#my-board [data-move="{first}"]').click()
        page.locator(f'#my-board [data-move="{second}"]').click()
        page.click("#confirm-move")
        expect(page.locator("#moves")).to_contain_text(f"{first}-{second}")
    expect(page.locator("#status")).to_contain_text("Game over")
    expect(page.locator("#records")).to_contain_text("The record: text · JSON")
    expect(page.locator("#records a", has_text="text")).to_have_attribute("href", f"/games/{game_id}.txt")
