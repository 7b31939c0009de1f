"""The game page's boards in a real Chromium: no targets once a game is over; Box Off's playable tiles and
partners; Easy Slider's fumble warning, readable picked button and legend; each player's side; Cambio's and
Truchet's coordinates.  Screenshots go to test-artifacts/ (board-*.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play, queries
from pbem.lobby import challenges
from tests.e2e.test_web_play import PASSWORD, sign_in

pytestmark = pytest.mark.e2e

# The bounding boxes of the board's coordinate labels and of its move targets, in page pixels.
BOXES = """
(board) => {
  const box = (el) => { const r = el.getBoundingClientRect();
                        return {x: r.left, y: r.top, w: r.width, h: r.height, text: el.textContent}; };
  return {
    labels: Array.from(board.querySelectorAll("svg > text"))
              .filter((t) => /^[a-z]$|^\\d+$/.test(t.textContent)).map(box),
    targets: Array.from(board.querySelectorAll("[data-move]")).map(box),
  };
}
"""


def overlaps(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and \
        b["y"] < a["y"] + a["h"]


def start(server, slug: str, handles: tuple[str, ...], options: dict | None = None, seed: int = 1) -> int:
    """A game of ``slug`` between existing or new players, started and ready."""
    with server.app.app_context():
        users = []
        for handle in handles:
            user = accounts.find_user(handle) or accounts.create_user(
                handle, f"{handle}@example.org", PASSWORD, verified=True)
            users.append(user)
        db.session.commit()
        game = challenges.new_game(users[0], slug, users, options or {}, seed=seed)
        for user in users[1:]:
            challenges.accept(game.id, user)
        return game.id


def test_a_finished_game_has_no_targets(browser, server, sink, artifacts) -> None:
    game_id = start(server, "truchet", ("dora", "eve"), {"size": 5})
    page = sign_in(browser, server, "dora")
    page.goto(f"{server.url}/games/{game_id}")
    assert page.locator("#my-board [data-move]").count() > 20
    with server.app.app_context():
        play.resign(game_id, accounts.find_user("eve"), "web")
    page.goto(f"{server.url}/games/{game_id}")
    expect(page.locator("#status")).to_contain_text("Game over")
    expect(page.locator(".board svg")).to_be_visible()
    expect(page.locator(".board [data-move]")).to_have_count(0)
    expect(page.locator("#my-board")).to_have_count(0)
    page.screenshot(path=str(artifacts / "board-truchet-finished.png"), full_page=True)


def test_box_off_marks_playable_tiles_then_partners(browser, server, sink, artifacts) -> None:
    # The rule sheet's deal: 8 moves at the start (a2-a3, a3-b3, b1-c1, b2-c2, c1-d1, c2-d2, d3-e3, e1-f1).
    game_id = start(server, "boxoff", ("carol",), {"position": "bbwbbw/byyywb/ywwwyy"})
    page = sign_in(browser, server, "carol")
    page.goto(f"{server.url}/games/{game_id}")
    board = page.locator("#my-board")
    playable = {"a2", "a3", "b3", "b1", "c1", "b2", "c2", "d1", "d2", "d3", "e3", "e1", "f1"}
    assert {board.locator("[data-move]").nth(i).get_attribute("data-move")
            for i in range(board.locator("[data-move]").count())} == playable
    # Before any click the playable tiles are outlined; the others are not, and nothing is faded.
    blue = "rgb(42, 125, 225)"
    assert board.locator('[data-move="b1"]').evaluate("el => getComputedStyle(el).stroke") == blue
    stuck = board.locator("g.tile rect:not([data-move])").first
    assert stuck.evaluate("el => getComputedStyle(el).stroke") != blue
    assert board.locator("g.tile.dim").count() == 0
    page.screenshot(path=str(artifacts / "board-boxoff-playable.png"), full_page=True)

    board.locator('[data-move="c1"]').click()
    # c1 pairs with b1 and d1: those stand out; every other tile fades, playable or not.
    partners = board.locator("[data-move].partner")
    expect(partners).to_have_count(2)
    assert {partners.nth(i).get_attribute("data-move") for i in range(2)} == {"b1", "d1"}
    for cell in ("c1", "b1", "d1"):
        tile = board.locator(f'g.tile:has([data-move="{cell}"])')
        assert tile.evaluate("el => getComputedStyle(el).opacity") == "1"
    faded = board.locator("g.tile.dim")
    expect(faded).to_have_count(18 - 3)
    opacity = "el => getComputedStyle(el).opacity"
    assert board.locator('g.tile:has([data-move="a2"])').evaluate(opacity) == "0.2"
    assert stuck.evaluate("el => getComputedStyle(el.parentNode).opacity") == "0.2"
    page.screenshot(path=str(artifacts / "board-boxoff-partners.png"), full_page=True)
    board.locator('[data-move="d1"]').click()
    expect(page.locator("#proposed-move")).to_have_text("c1-d1")
    page.click("#clear-move")
    expect(board.locator("g.tile.dim")).to_have_count(0)


def test_easy_slider_warns_of_a_fumble_and_explains_its_dots(browser, server, sink, artifacts) -> None:
    # One slide short of solved (e1 up into the hole on e2): the other tiles carry the in-place dot.
    position = "m2m4m5mam3/s2s4s5sas3/c2c4c5cac3/a2a4a5aa../mnsncnana3"
    game_id = start(server, "easyslider", ("fay",), {"pawns": "msca", "coins": "245a3", "position": position,
                                                     "rounds": 1})
    page = sign_in(browser, server, "fay")
    page.goto(f"{server.url}/games/{game_id}")
    board = page.locator("#my-board")
    expect(board.locator("svg")).to_contain_text("a tile already in its place")
    assert board.locator("circle[fill='#3a7d44']").count() >= 15

    board.locator('[data-move="done"]').click()
    expect(page.locator("#proposed-move")).to_have_text("done")
    expect(page.locator("#proposal .warning")).to_contain_text("fumble")
    expect(page.locator("#proposal .warning")).to_contain_text("0 points for this round")
    # The picked button keeps its white label: the orange outline goes round the button only.
    label = board.locator('[data-move="done"] text')
    assert label.evaluate("el => getComputedStyle(el).stroke") == "none"
    assert label.evaluate("el => getComputedStyle(el).fill") == "rgb(255, 255, 255)"
    assert board.locator('[data-move="done"] rect').evaluate("el => getComputedStyle(el).stroke") \
        == "rgb(230, 126, 34)"
    page.screenshot(path=str(artifacts / "board-easyslider-done.png"), full_page=True)
    page.click("#clear-move")

    # Typed and sent with the Play button, done asks first; refusing sends nothing.
    asked: list[str] = []

    def refuse(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", refuse)
    page.fill("#move-text", "done")
    page.click("#play-button")
    expect(page.locator("#move-text")).to_have_value("done")
    assert asked and "fumble" in asked[0]
    with server.app.app_context():
        assert queries.seats_to_move(db.session.get(Game, game_id)) == {0}
    # A real slide goes through without a question.
    board.locator('[data-move="e3"]').click()
    page.click("#confirm-move")
    expect(page.locator("#moves")).to_contain_text("e3")
    assert not [m for m in asked[1:]]


def side_badges(page: Page) -> list[str]:
    return page.locator(".seats .side").all_text_contents()


def test_sides_and_coordinates_of_cambio_and_truchet(browser, server, sink, artifacts) -> None:
    cambio = start(server, "cambio", ("gus", "hal"), {"position": ".x./o.x/.o."})
    truchet = start(server, "truchet", ("gus", "hal"), {"size": 5}, seed=4)
    gus = sign_in(browser, server, "gus")
    hal = sign_in(browser, server, "hal")

    gus.goto(f"{server.url}/games/{cambio}")
    expect(gus.locator("#my-side")).to_have_text("You play O.")
    assert side_badges(gus) == ["O", "X"]
    hal.goto(f"{server.url}/games/{cambio}")
    expect(hal.locator("#my-side")).to_have_text("You play X.")
    # Push phase: the arrows stand outside the coordinates, which sit right against the tray.
    boxes = gus.locator("#my-board").evaluate(BOXES)
    tray = gus.locator("#my-board svg > rect").first.bounding_box()
    top = [b for b in boxes["labels"] if b["y"] < tray["y"]]
    assert top and all(tray["y"] - (b["y"] + b["h"]) < 12 for b in top)
    left = [b for b in boxes["labels"] if b["x"] < tray["x"]]
    assert left and all(tray["x"] - (b["x"] + b["w"]) < 16 for b in left)
    assert boxes["targets"] and not [(label["text"], target) for label in boxes["labels"]
                                     for target in boxes["targets"] if overlaps(label, target)]
    gus.screenshot(path=str(artifacts / "board-cambio-sides.png"), full_page=True)

    gus.goto(f"{server.url}/games/{truchet}")
    expect(gus.locator("#my-side")).to_have_text("You play Dark.")
    assert side_badges(gus) == ["Dark", "Light"]
    boxes = gus.locator("#my-board").evaluate(BOXES)
    # Junctions a-f and 1-6, tiles a-e and 1-5, every one readable and clear of every target.
    assert len(boxes["labels"]) == 2 * 6 + 2 * 5
    sizes = gus.locator("#my-board svg > text").evaluate_all(
        "els => els.map(el => parseFloat(getComputedStyle(el).fontSize))")
    assert min(sizes) >= 14
    assert not [(label["text"], target) for label in boxes["labels"] for target in boxes["targets"]
                if overlaps(label, target)]
    gus.screenshot(path=str(artifacts / "board-truchet-labels.png"), full_page=True)
