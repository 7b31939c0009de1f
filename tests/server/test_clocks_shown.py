"""Both clocks, always: the waiting player's bank (or time per move) is shown beside the mover's running
clock on the game page, in the move request and the move notice, and in the API."""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import Flask

from pbem.api import present
from pbem.core.extensions import db
from pbem.core.models import Game, set_clock
from pbem.game import play, watching
from pbem.mailout import outbox
from pbem.present import gameview
from tests.server.test_sweep import CAMBIO, text_of

T0 = datetime(2025, 3, 3, 12, 0)  # a Monday


def test_a_bank_clock_shows_both_banks_on_the_page_in_every_mail_and_in_the_api(
    ctx: Flask, players, sink
) -> None:
    alice, bob, carol = players
    set_clock(T0)
    try:
        game = play.create_game("cambio", [alice, bob], CAMBIO, time_control={
            "kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14})
        db.session.commit()
        watching.watch(game, carol)
        set_clock(T0 + timedelta(days=2))
        play.submit(game.id, alice, "b3", "mail")  # 5 days left + 1: alice's bank holds 6 days.
        outbox.deliver_due()
        db.session.rollback()
        game = db.session.get_one(Game, game.id)

        bob_running = "7 days left (until Wed 12 Mar 2025 12:00 UTC)"
        alice_resting = "6 days in the bank, not running"
        request = text_of(sink.messages(bob.email)[-1])
        assert f"Clocks: alice: {alice_resting}; You: {bob_running}." in request
        notice = text_of(sink.messages(carol.email)[-1])
        assert f"Clocks: alice: {alice_resting}; bob: {bob_running}." in notice

        for viewer in (alice, bob, None):
            view = gameview.build(game, viewer)
            assert [s.clock for s in view.seats] == [alice_resting, bob_running]
        with ctx.test_request_context():
            seats = present.summary(game, alice)["players"]
        assert [(s["clock"], s["deadline"], s["bank_seconds"]) for s in seats] == [
            (alice_resting, None, 6 * 86400.0), (bob_running, T0 + timedelta(days=9), 7 * 86400.0)]
    finally:
        set_clock(None)


def test_days_per_move_shows_the_waiting_players_time_per_move(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], CAMBIO, time_control={"kind": "per_move", "days": 3})
    db.session.commit()
    view = gameview.build(game, bob)
    assert view.seats[0].clock.endswith("left (until " + view.seats[0].clock.split("(until ")[1])
    assert view.seats[1].clock == "3 days per move, not running"
