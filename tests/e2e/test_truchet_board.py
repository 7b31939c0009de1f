"""Truchet's board in a real Chromium: its legend fits every board size at its own font size, and merges
are made by clicking their source stacks and their target, in either order."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.test_board_page import start
from tests.e2e.test_web_play import sign_in

pytestmark = pytest.mark.e2e

# The board's box, its drawing scale (page pixels per unit of its viewBox) and its legend lines' boxes.
LEGEND = """
(svg) => {
  const box = (el) => { const r = el.getBoundingClientRect();
                        return {x: r.left, y: r.top, w: r.width, h: r.height}; };
  return {
    board: box(svg),
    scale: svg.getBoundingClientRect().width / svg.viewBox.baseVal.width,
    legend: Array.from(svg.querySelectorAll("text")).filter((t) => t.textContent.includes("below and right")
              || t.textContent.includes("above and left")).map((t) => ({...box(t), text: t.textContent})),
  };
}
"""


@pytest.mark.parametrize("size", [3, 5, 7, 11])
def test_the_legend_fits_every_board_at_its_own_size(browser, server, sink, artifacts, size) -> None:
    game_id = start(server, "truchet", ("dora", "eve"), {"size": size})
    page = browser.new_context().new_page()
    page.goto(f"{server.url}/games/{game_id}")
    seen = page.locator(".board svg").first.evaluate(LEGEND)
    assert seen["scale"] <= 1.0  # Never drawn larger than itself: the words stay at font size 14.
    words = " ".join(line["text"] for line in seen["legend"])
    assert words.replace(" · ", " ") == "Junctions: a1 above and left tiles: a1 below and right"
    board = seen["board"]
    for line in seen["legend"]:
        assert board["x"] <= line["x"] and line["x"] + line["w"] <= board["x"] + board["w"], line
        assert line["h"] < 24
    if size == 3:
        page.screenshot(path=str(artifacts / "board-truchet-3x3.png"), full_page=True)


def test_a_merge_is_made_by_clicking_its_sources_and_target_in_either_order(browser, server, sink) -> None:
    # 5x5, seed 1: Dark's stacks on a1, c1 and e1 cannot step anywhere; they only merge (b1<ew: a1 and
    # c1 onto b1), and c2<es merges d2 and c1 onto c2.
    game_id = start(server, "truchet", ("alice", "bob"), {"size": 5}, seed=1)
    page = sign_in(browser, server, "alice")
    page.goto(f"{server.url}/games/{game_id}")
    board = page.locator("#my-board")
    for clicks, move in ((("a1", "c1", "b1"), "b1<ew"), (("b1", "c1", "a1"), "b1<ew"),
                         (("c2", "d2", "c1"), "c2<es"), (("d2", "c1", "c2"), "c2<es")):
        for junction in clicks:
            board.locator(f'[data-move="{junction}"]').click()
        expect(page.locator("#proposed-move")).to_have_text(move)
        page.click("#clear-move")
    # On the analysis board too, where the moves the clicks fit are listed, the merge itself first.
    page.click("#analysis-open")
    for junction in ("b1", "a1", "c1"):
        page.locator(f'#analysis-board [data-move="{junction}"]').click()
    page.locator("#analysis-moves button").first.click()
    expect(page.locator("#analysis-line li")).to_have_text(["b1<ew"])

    for junction in ("a1", "c1", "b1"):
        board.locator(f'[data-move="{junction}"]').click()
    page.click("#confirm-move")
    expect(page.locator("#moves")).to_contain_text("b1<ew")
