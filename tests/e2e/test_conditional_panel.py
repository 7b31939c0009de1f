"""The conditional-moves panel in a real headless Chromium: a line built by clicking the boards of the
positions it reaches, another typed and deleted, the opponent's move answered at once, the
opponent's page never showing the lines, and board clicks picking the move the move composer picks."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.game import play
from tests.e2e.test_board_page import start
from tests.e2e.test_web_play import PASSWORD, click_move, sign_in

pytestmark = pytest.mark.e2e


def test_a_line_built_by_clicking_answers_the_opponent_at_once(browser, server, sink, artifacts) -> None:
    with server.app.app_context():
        for handle in ("alice", "bob"):
            accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
        db.session.commit()
        seated = [accounts.find_user("alice"), accounts.find_user("bob")]
        game = play.create_game("cambio", seated, {"size": 4})
        db.session.commit()
        game_id = game.id
    alice = sign_in(browser, server, "alice")
    alice.goto(f"{server.url}/games/{game_id}")
    expect(alice.locator("#conditionals")).to_contain_text("After your move you can queue")
    click_move(alice, "b4", "bob to move.")

    # Build 'if b1 then c4 then c1 then d2' on the boards of the positions the line reaches.
    alice.click("#build-conditional")
    expect(alice.locator("#builder-prompt")).to_contain_text("If your opponent plays")
    for move, prompt in (("b1", "Your answer"), ("c4", "Then if your opponent plays"), ("c1", "Your answer"),
                         ("d2", "Then if your opponent plays")):
        alice.locator(f'#builder-board [data-move="{move}"]').first.click()
        expect(alice.locator("#builder-prompt")).to_contain_text(prompt)
    expect(alice.locator("#conditional-line")).to_have_value("if b1 then c4 then c1 then d2")
    alice.click("#queue-conditional")
    expect(alice.locator("#conditional-lines")).to_contain_text("if b1 then c4 then c1 then d2")

    # A typed line, refused with the engine's reason, then one queued and deleted.
    alice.fill("#conditional-line", "if b2 then b2")
    alice.click("#queue-conditional")
    expect(alice.locator("#notice")).to_contain_text("b2 already holds")
    alice.fill("#conditional-line", "if b2 then c4")
    alice.click("#queue-conditional")
    expect(alice.locator("#conditional-lines li")).to_have_count(2)
    alice.click('button[aria-label="Delete if b2 then c4"]')
    expect(alice.locator("#conditional-lines li")).to_have_count(1)
    alice.screenshot(path=str(artifacts / "cambio-conditional-panel.png"), full_page=True)

    bob = sign_in(browser, server, "bob")
    bob.goto(f"{server.url}/games/{game_id}")
    expect(bob.locator("#conditionals")).not_to_contain_text("if b1")
    click_move(bob, "b1", "bob to move.")  # Alice's c4 came back at once: bob is to move again.
    expect(bob.locator("#moves")).to_contain_text("c4 (conditional)")
    expect(bob.locator("#notice")).to_contain_text("Answered at once by conditional move: alice c4.")
    assert "if c1 then d2" not in bob.content() and "if b1 then c4" not in bob.content()

    alice.reload()
    expect(alice.locator("#conditional-lines")).to_have_text("if c1 then d2 Delete")


def test_the_panel_picks_the_move_the_composer_picks_for_the_same_clicks(browser, server, sink) -> None:
    # Truchet 5x5, seed 1, after d1<ne b5-b3 b1<ew b3-b5,b6<sw: Dark (alice) clicking the junctions e2
    # then d2 means the one move naming them in that order, ^c3 b1-e2,d2<es (a flip, b1 stepping to e2
    # and merging onto d2).  Ten other moves name both the other way round (b2-d2,e2<ew: e2 the merge
    # target, after one flip or none), so a panel that ignored the click order would list eleven moves
    # instead of taking that one.
    game_id = start(server, "truchet", ("alice", "bob"), {"size": 5}, seed=1)
    with server.app.app_context():
        for handle, move in (("alice", "d1<ne"), ("bob", "b5-b3"), ("alice", "b1<ew")):
            play.submit(game_id, accounts.find_user(handle), move, "web")
    page = sign_in(browser, server, "alice")
    page.goto(f"{server.url}/games/{game_id}")

    # In the panel, on the board of the position the typed line reaches.
    page.fill("#conditional-line", "if b3-b5,b6<sw")
    page.click("#build-conditional")
    expect(page.locator("#builder-prompt")).to_contain_text("Your answer")
    page.locator('#builder-board [data-move="e2"]').click()
    expect(page.locator("#conditional-line")).to_have_value("if b3-b5,b6<sw")
    page.locator('#builder-board [data-move="d2"]').click()
    expect(page.locator("#builder-prompt")).to_contain_text("Then if your opponent plays")
    expect(page.locator("#conditional-line")).to_have_value("if b3-b5,b6<sw then ^c3 b1-e2,d2<es")

    # The move composer, once the position is on the board itself, proposes the same move.
    with server.app.app_context():
        play.submit(game_id, accounts.find_user("bob"), "b3-b5,b6<sw", "web")
    page.goto(f"{server.url}/games/{game_id}")
    page.locator('#my-board [data-move="e2"]').click()
    page.locator('#my-board [data-move="d2"]').click()
    expect(page.locator("#proposed-move")).to_have_text("^c3 b1-e2,d2<es")
