"""Web play in a real headless Chromium: sign up and confirm by mail, challenge, accept, play by clicking
the board, draw by agreement; a solitaire Box Off pair cleared by clicks; a Truchet flip+merge composed
by clicks.  Screenshots of every game's page go to test-artifacts/."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Browser, Page, expect

import games
from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from pbem.lobby import challenges
from pbem.mailout import outbox
from tests.server.test_sweep import text_of as mail_text

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse"


def deliver(server) -> None:
    """Let the outbox send what is due (the scheduler's job in a running server)."""
    with server.app.app_context():
        outbox.deliver_due()


def sign_up(browser: Browser, server, sink, handle: str) -> Page:
    """A new browser that signs up as ``handle`` and follows the confirmation link from the mail."""
    page = browser.new_context().new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{server.url}/signup")
    page.fill("#handle", handle)
    page.fill("#email", f"{handle}@example.org")
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Check your mail")
    deliver(server)
    body = sink.messages(f"{handle}@example.org")[-1].get_payload(decode=True).decode()
    page.goto(re.search(r"(http://\S+/verify/\S+)", body).group(1))
    expect(page.locator("h1")).to_have_text("My games")
    return page


def sign_in(browser: Browser, server, handle: str, *, script: bool = True) -> Page:
    """A new browser signed in as an existing player (with JavaScript off unless ``script``)."""
    page = browser.new_context(java_script_enabled=script).new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{server.url}/login")
    page.fill("#login", handle)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("My games")
    return page


def confirmed_players(server) -> tuple:
    """Alice and bob, with confirmed accounts, made directly (inside the caller's app context)."""
    for handle in ("alice", "bob"):
        accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
    db.session.commit()
    return accounts.find_user("alice"), accounts.find_user("bob")


def legal_moves(page: Page) -> list[str]:
    """The legal moves the page gave its script."""
    return json.loads(page.locator("#legal-moves").text_content())


def click_move(page: Page, move: str, next_status: str) -> None:
    """Click the board target of a one-click move, confirm it, and see the page move on."""
    page.locator(f'#my-board [data-move="{move}"]').first.click()
    expect(page.locator("#proposed-move")).to_have_text(move)
    page.click("#confirm-move")
    expect(page.locator("#status")).to_have_text(next_status)
    expect(page.locator("#moves")).to_contain_text(move)


def test_challenge_play_by_clicking_and_agree_a_draw(browser, server, sink, artifacts) -> None:
    alice = sign_up(browser, server, sink, "alice")
    bob = sign_up(browser, server, sink, "bob")

    alice.goto(f"{server.url}/games/new?game=cambio")
    alice.select_option("#opt-size", "3")
    alice.fill("#seat-1", "bob")
    alice.click("#create")
    expect(alice.locator("#status")).to_have_text("Waiting for players.")
    game_url = alice.url
    deliver(server)
    assert "alice challenges you" in sink.messages("bob@example.org")[-1]["Subject"]

    bob.goto(f"{server.url}/dashboard")
    expect(bob.locator("#challenges")).to_contain_text("from alice")
    bob.click("#challenges button:has-text('Accept')")
    expect(bob.locator("#status")).to_have_text("alice to move.")

    # Placements, then pushes (the arrows on the board's edge), each by a click and a confirmation.
    players = [(alice, "bob to move."), (bob, "alice to move.")]
    alice.goto(game_url)
    for turn in range(6):
        page, after = players[turn % 2]
        if turn:
            page.goto(game_url)  # The other player's page: a fresh look at the position.
        expect(page.locator("#play-button")).to_be_visible()
        click_move(page, legal_moves(page)[0], after)
    alice.screenshot(path=str(artifacts / "cambio.png"), full_page=True)

    # Alice offers a draw; bob accepts.
    alice.goto(game_url)
    alice.click("#offer-draw")
    expect(alice.locator("#notice")).to_have_text("You offered a draw.")
    bob.goto(game_url)
    expect(bob.locator(".draw-offer")).to_have_text("alice offers a draw.")
    bob.click("#accept-draw")
    expect(bob.locator("#status")).to_have_text("Game over: Drawn by agreement.")
    bob.screenshot(path=str(artifacts / "cambio-drawn.png"), full_page=True)


def test_a_stale_page_is_refused_with_a_clear_message(browser, server, sink) -> None:
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3})
        challenges.accept(game.id, bob)
        game_id = game.id
    first = sign_in(browser, server, "alice")
    first.goto(f"{server.url}/games/{game_id}")
    second = first.context.new_page()
    second.goto(f"{server.url}/games/{game_id}")
    click_move(second, "b2", "bob to move.")
    with server.app.app_context():
        play.submit(game_id, accounts.find_user("bob"), "a2", "mail")
    # The first tab still shows move 1: a move typed there is refused, and what was typed stays.
    expect(first.locator("#moves")).to_have_text("No moves yet.")
    first.fill("#move-text", "a2")
    first.click("#play-button")
    expect(first.locator("#move-error")).to_contain_text("the position has changed since")
    expect(first.locator("#move-text")).to_have_value("a2")
    # The refusal comes with the new position, without a reload: both moves listed, the form at move 3,
    # and bob's cube on a2 no longer offered as a target.
    expect(first.locator("#moves")).to_contain_text("b2")
    expect(first.locator("#moves")).to_contain_text("a2")
    expect(first.locator("input[name=expect]")).to_have_value("3")
    expect(first.locator('#my-board [data-move="a2"]')).to_have_count(0)
    click_move(first, "c2", "bob to move.")


def test_a_challenge_declined_on_its_page_with_a_word_to_the_challenger(browser, server, sink) -> None:
    """The game page's Decline sends the form to its own address, with what the player wrote."""
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game_id = challenges.new_game(alice, "truchet", [alice, bob]).id
    bob_page = sign_in(browser, server, "bob")
    bob_page.goto(f"{server.url}/games/{game_id}")
    bob_page.fill("#challenge-comment", "Not this week, sorry.")
    bob_page.click("#decline-challenge")
    expect(bob_page.locator("#notice")).to_have_text("You declined the challenge; the game is called off.")
    deliver(server)
    [answer] = [m for m in sink.messages("alice@example.org") if "bob declined" in m["Subject"]]
    assert "bob says: Not this week, sorry." in mail_text(answer)
    with server.app.app_context():
        assert db.session.get(Game, game_id).status == "abandoned"


def test_a_draw_offer_and_a_resignation_carry_their_comments(browser, server, sink, artifacts) -> None:
    """The game page's comment box goes with the button pressed: alice's draw offer (a browser without
    script, so the form itself posts) and bob's resignation (through the page's script) reach the other
    by mail with what they wrote, and the record shows both."""
    with server.app.app_context():
        alice, bob = confirmed_players(server)
        game_id = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3}).id
        challenges.accept(game_id, bob)
    game_url = f"{server.url}/games/{game_id}"
    alice_page = sign_in(browser, server, "alice", script=False)
    alice_page.goto(game_url)
    alice_page.fill("#action-comment", "Shall we call it a day?")
    alice_page.click("#offer-draw")
    expect(alice_page.locator(".flash.info")).to_have_text("You offered a draw.")
    deliver(server)
    [offer] = [m for m in sink.messages("bob@example.org") if "alice offers a draw" in m["Subject"]]
    assert "alice says: Shall we call it a day?" in mail_text(offer)

    bob_page = sign_in(browser, server, "bob")
    bob_page.goto(game_url)
    bob_page.fill("#action-comment", "No: I resign. Well played!")
    bob_page.screenshot(path=str(artifacts / "cambio-draw-offered.png"), full_page=True)
    asked = []
    bob_page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    bob_page.click("#resign")
    expect(bob_page.locator("#status")).to_have_text("Game over: alice (O) wins: bob (X) resigned.")
    assert asked == ["Resign this game?"]
    expect(bob_page.locator("#moves .comment")).to_have_text(
        ["“Shall we call it a day?”", "“No: I resign. Well played!”"])
    deliver(server)
    [over] = [m for m in sink.messages("alice@example.org") if "game over" in m["Subject"]]
    assert "bob says: No: I resign. Well played!" in mail_text(over)


def test_box_off_alone_clear_a_pair_by_clicking(browser, server, sink, artifacts) -> None:
    try:
        engine = games.get("boxoff")
    except games.UnknownGame:
        pytest.skip("the Box Off engine is not installed yet")
    page = sign_up(browser, server, sink, "carol")
    page.goto(f"{server.url}/games/new?game=boxoff")
    page.select_option("#players", "1")
    page.click("#create")
    expect(page.locator("#play-button")).to_be_visible()
    move = legal_moves(page)[0]
    first, second = move.split("-")
    # Click the pair the other way round from the notation: the page finds the move either way.
    page.locator(f'#my-board [data-move="{second}"]').first.click()
    page.locator(f'#my-board [data-move="{first}"]').first.click()
    expect(page.locator("#proposed-move")).to_have_text(move)
    page.click("#confirm-move")
    expect(page.locator("#moves")).to_contain_text(move)
    assert engine.title in page.title()
    page.screenshot(path=str(artifacts / "boxoff.png"), full_page=True)


def test_truchet_flip_and_merge_composed_by_clicks(browser, server, sink, artifacts) -> None:
    with server.app.app_context():
        for handle in ("dora", "eve"):
            accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
        db.session.commit()
        dora, eve = accounts.find_user("dora"), accounts.find_user("eve")
        game = challenges.new_game(dora, "truchet", [dora, eve], {"size": 5}, seed=1)
        challenges.accept(game.id, eve)
        game_id = game.id
    page = sign_in(browser, server, "dora")
    page.goto(f"{server.url}/games/{game_id}")
    move = next(m for m in legal_moves(page) if m.startswith("^") and "<" in m)
    flip, merge = move.split(" ")
    target = re.match(r"[a-z]+\d+", merge).group(0)
    page.locator(f'#my-board [data-move="{flip}"]').click()
    expect(page.locator("#proposal")).to_contain_text(f"Selected {flip}")
    page.locator(f'#my-board [data-move="{target}"]').click()
    expect(page.locator("#proposed-move")).to_have_text(move)
    page.click("#confirm-move")
    expect(page.locator("#status")).to_have_text("eve to move.")
    expect(page.locator("#moves")).to_contain_text(move)
    page.screenshot(path=str(artifacts / "truchet.png"), full_page=True)


def test_truchet_steps_are_proposed_picked_and_played_from_the_move_box(browser, server, sink,
                                                                       artifacts) -> None:
    """A plain step whose longer and flip versions fit the same clicks is proposed all the same; too many
    moves fitting are said so, never a list with nothing to pick; a move picked from the choices asks
    for confirmation; and a proposed move fills the Move box, so the Play button under it plays it."""
    with server.app.app_context():
        for handle in ("dora", "eve"):
            accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
        db.session.commit()
        dora, eve = accounts.find_user("dora"), accounts.find_user("eve")
        game_id = challenges.new_game(dora, "truchet", [dora, eve], {"size": 5}, seed=1).id
        challenges.accept(game_id, eve)
    page = sign_in(browser, server, "dora")
    page.goto(f"{server.url}/games/{game_id}")
    board, proposal = page.locator("#my-board"), page.locator("#proposal")
    board.locator('[data-move="b2"]').click()
    expect(proposal).to_contain_text("Selected b2: 138 moves fit; click on to narrow them, or type the move.")
    expect(proposal).not_to_contain_text("pick one")
    # b2-c3 is a whole move, though 29 others (b2-c3,c2<ne, ^a3 b2-c3, ...) contain the same clicks.
    board.locator('[data-move="c3"]').click()
    expect(page.locator("#proposed-move")).to_have_text("b2-c3")
    expect(page.locator("#more-moves")).to_have_text("Or click on: 29 other moves fit these clicks.")
    expect(page.locator("#move-text")).to_have_value("b2-c3")
    page.click("#clear-move")
    expect(page.locator("#move-text")).to_have_value("")

    board.locator('[data-move="b2"]').click()
    board.locator('[data-move="c5"]').click()
    expect(page.locator("#proposed-move")).to_have_text("b2-c5")
    choices = proposal.locator(".candidates button")
    expect(choices).to_have_text(["^a3 b2-c5", "^b3 b2-c5", "^d3 b2-c5", "^e3 b2-c5"])
    proposal.get_by_role("button", name="^d3 b2-c5", exact=True).click()
    # Picked, not played: the page asks first, and the Move box shows the notation.
    expect(page.locator("#proposed-move")).to_have_text("^d3 b2-c5")
    expect(page.locator("#confirm-move")).to_be_visible()
    expect(page.locator("#move-text")).to_have_value("^d3 b2-c5")
    expect(page.locator("#moves")).to_have_text("No moves yet.")
    page.screenshot(path=str(artifacts / "truchet-picked.png"), full_page=True)
    page.click("#play-button")
    expect(page.locator("#status")).to_have_text("eve to move.")
    expect(page.locator("#moves")).to_contain_text("^d3 b2-c5")


def test_every_game_page_renders(browser, server, sink, artifacts) -> None:
    """A game of each engine, seen by its first player: the board is there with clickable targets."""
    with server.app.app_context():
        for handle in ("fay", "gus"):
            accounts.create_user(handle, f"{handle}@example.org", PASSWORD, verified=True)
        db.session.commit()
        fay, gus = accounts.find_user("fay"), accounts.find_user("gus")
        ids = {}
        for engine in games.all():
            seats = [fay, gus] if 2 in engine.players else [fay]
            game = challenges.new_game(fay, engine.slug, seats, seed=7)
            if len(seats) > 1:
                challenges.accept(game.id, gus)
            ids[engine.slug] = game.id
    page = sign_in(browser, server, "fay")
    for slug, game_id in ids.items():
        page.goto(f"{server.url}/games/{game_id}")
        expect(page.locator("#my-board svg")).to_be_visible()
        assert page.locator("#my-board [data-move]").count() > 0
        page.screenshot(path=str(artifacts / f"page-{slug}.png"), full_page=True)
