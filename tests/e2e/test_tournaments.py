"""A tournament in a real browser: organised with the form, joined with the button, its page with the
standings and pairings, and its crosstable once its game is over."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Tournament, TournamentGame
from pbem.game import play
from tests.e2e.test_web_play import confirmed_players, sign_in

pytestmark = pytest.mark.e2e


def test_organise_join_and_read_the_standings_and_crosstable(browser: Browser, server, artifacts) -> None:
    with server.app.app_context():
        confirmed_players(server)
    alice = sign_in(browser, server, "alice")
    alice.click("nav >> text=Tournaments")
    alice.click("#organise")
    alice.fill("#name", "Winter cup")
    alice.select_option("#format", "round_robin")
    alice.fill("#max_players", "2")
    alice.select_option("#time", "days:3")
    alice.click("#create")
    expect(alice.locator(".flash.info")).to_contain_text("is open for entries")
    expect(alice.locator("#state")).to_have_text("Taking entries")
    alice.click("#join")
    expect(alice.locator("#standings tr.standing")).to_have_count(1)
    url = alice.url

    bob = sign_in(browser, server, "bob")
    bob.goto(url)
    bob.click("#join")  # The second entry fills it: it starts, and its one game with it.
    expect(bob.locator("#state")).to_have_text("Running")
    expect(bob.locator("#pairings tr.pairing")).to_have_count(1)
    expect(bob.locator("#pairings tr.pairing td").nth(3)).to_have_text("in play")

    with server.app.app_context():
        tournament = db.session.scalar(select(Tournament))
        made = db.session.scalar(select(TournamentGame))
        loser = made.second if made.first.handle == "alice" else made.first
        play.resign(made.game_id, loser, "web")
        tournament_id = tournament.id
    alice.goto(url)
    expect(alice.locator("#state")).to_have_text("Over")
    expect(alice.locator("#standings tr.standing").first.locator("td").nth(1)).to_have_text("alice")
    expect(alice.locator("#standings tr.standing").first.locator("td").nth(2)).to_have_text("1")
    alice.screenshot(path=str(artifacts / "tournament-page.png"), full_page=True)
    alice.click("#crosstable-link")
    rows = alice.locator("#crosstable tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td.cell")).to_have_text("1")
    expect(rows.nth(1).locator("td.cell")).to_have_text("0")
    alice.screenshot(path=str(artifacts / "tournament-crosstable.png"), full_page=True)
    alice.goto(f"{server.url}/archive?tournament={tournament_id}")
    expect(alice.locator("#archive tbody tr")).to_have_count(1)
