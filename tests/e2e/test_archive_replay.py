"""The archive in a real headless Chromium: open an archived Truchet game and a Carreaux game from the
archive page, replay each to the end with the arrow keys, and open a linked position (``?move=N``)."""

from __future__ import annotations

from datetime import datetime

import pytest
from playwright.sync_api import Browser, Page, expect

import games
from pbem.accounts.accounts import create_user
from pbem.core.extensions import db
from pbem.core.models import Game
from tests.server.archived import finished

pytestmark = pytest.mark.e2e

SAME_BOARD = """([svg, seat]) => {
  const made = document.createElement("div");
  made.innerHTML = svg;
  const shown = document.querySelectorAll("#replay-position svg")[seat];
  return !!shown && made.firstElementChild.outerHTML === shown.outerHTML;
}"""


def expected_boards(game: Game) -> list[str]:
    """The board after each move (0: the start; an action such as a resignation is no move, and the
    replay numbers moves as players count them), rendered here through the engine; the last one drawn
    as over, since the game is (nobody is to move on it, whoever ended the game)."""
    engine = games.get(game.engine)
    state = engine.new(game.players, engine.options.load(game.options), game.seed)
    boards = [engine.render_svg(state, None, targets=False)]
    for move in game.moves:
        if move.kind == "move":
            state = engine.play(state, move.seat, move.text)
            boards.append(engine.render_svg(state, None, targets=False))
    boards[-1] = engine.render_svg(state, None, targets=False, over=True)
    return boards


def shows(page: Page, boards: list[str], at: int) -> None:
    expect(page.locator("#replay-where")).to_have_attribute("data-at", str(at))
    assert page.evaluate(SAME_BOARD, [boards[at], 0]), f"the board after move {at} is not the replayed one"


def test_replay_archived_truchet_and_carreaux_games_with_the_arrow_keys(browser: Browser, server,
                                                                       artifacts) -> None:
    with server.app.app_context():
        alice, bob = (create_user(h, f"{h}@example.org", verified=True) for h in ("alice", "bob"))
        db.session.commit()
        made = {
            "truchet": finished("truchet", [alice, bob], seed=2, comment="a bold start",
                                at=datetime(2026, 3, 2)),
            "carreaux": finished("carreaux", [bob, alice], end="resign", moves=6, at=datetime(2026, 3, 1)),
        }
        cases = {slug: (game.id, expected_boards(game), game.moves[0].comment) for slug, game in made.items()}
    page = browser.new_context().new_page()
    page.set_default_timeout(10_000)
    for slug, (game_id, boards, first_comment) in cases.items():
        last = len(boards) - 1
        page.goto(f"{server.url}/archive?game={slug}")
        row = page.locator(f'tr.archived-game[data-game="{game_id}"]')
        expect(row).to_contain_text(games.get(slug).title)
        row.locator("a.replay").click()
        page.wait_for_url(f"**/games/{game_id}?move=0")
        shows(page, boards, 0)
        for at in range(1, last + 1):
            page.keyboard.press("ArrowRight")
            shows(page, boards, at)
            if at == 1 and first_comment:
                expect(page.locator("#replay-comment")).to_contain_text(first_comment)
        assert page.url.endswith(f"/games/{game_id}?move={last}")
        # The last move, and the resignation after it, stand at the last position.
        expect(page.locator("#moves li.current").first).to_have_attribute("data-move-number", str(last))
        expect(page.locator("#replay-where")).to_contain_text(f"After move {last} of {last}")
        page.keyboard.press("ArrowRight")  # Past the end, nothing changes.
        shows(page, boards, last)
        page.keyboard.press("ArrowLeft")
        shows(page, boards, last - 1)
        page.keyboard.press("Home")
        shows(page, boards, 0)
        page.click("#replay-last")
        shows(page, boards, last)
        page.locator('#moves li[data-move-number="2"] a').click()  # The move list is clickable.
        shows(page, boards, 2)
        page.screenshot(path=str(artifacts / f"replay-{slug}.png"), full_page=True)
        # A linked position opens there, and the keys go on from it.
        middle = last // 2
        page.goto(f"{server.url}/games/{game_id}?move={middle}")
        shows(page, boards, middle)
        page.keyboard.press("ArrowRight")
        shows(page, boards, middle + 1)
        # Keys pressed faster than the positions arrive each count.
        page.keyboard.press("Home")
        shows(page, boards, 0)
        steps = min(4, last)
        for _ in range(steps):
            page.keyboard.press("ArrowRight", delay=0)
        shows(page, boards, steps)
