"""The computer opponent end to end: a player challenges a bot on the new-game form in a real browser
and by a mail command through the real listener; `pbem bots`, a real process started as its systemd unit
starts it, accepts both challenges and plays both games to the end through the API over HTTP; the
records, the ratings and the mails are checked."""

from __future__ import annotations

import smtplib
import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

from playwright.sync_api import Browser, expect
from sqlalchemy import select

from pbem.accounts import accounts, apitokens, bots
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, Move, Rating
from pbem.game import results
from pbem.mailin import smtpd
from pbem.mailout import outbox
from tests.conftest import free_port
from tests.e2e.test_web_play import PASSWORD, sign_in
from tests.server.conftest import give_mail_key
from tests.server.processes import Processes, environment, exec_start, option
from tests.server.test_api import Client
from tests.server.test_sweep import text_of


def play_out(me: Client, game_id: int, seconds: float = 60) -> dict:
    """Alice's side of a game through the API (her first legal move each turn) until it ends."""
    deadline = time.monotonic() + seconds
    while True:
        game = me.call("GET", f"/api/v1/games/{game_id}")[1]
        if game["status"] not in ("active", "waiting"):
            return game
        if game["your_turn"]:
            me.call("POST", f"/api/v1/games/{game_id}/moves",
                    {"move": game["legal_moves"][0], "expect": game["move_number"]})
        else:
            time.sleep(0.1)
        assert time.monotonic() < deadline, game


def test_a_player_challenges_the_computer_on_the_web_and_by_mail(browser: Browser, server, sink,
                                                                 tmp_path: Path) -> None:
    app = server.app
    with app.app_context():
        alice = accounts.create_user("alice", "alice@example.org", PASSWORD, verified=True)
        db.session.commit()
        key = give_mail_key(alice)
        bot, token = bots.add("easybot", ["cambio"], "easy")
        bot_address, alice_id, bot_id = bot.email, alice.id, bot.id
        mine = Client(server.url, apitokens.create(alice, "test")[1])
    tokens = tmp_path / "bots.tokens"
    tokens.write_text(f"# the bots of this test\n{token} easybot\n")
    listener = smtpd.controller(app, "127.0.0.1", free_port())
    listener.start()
    processes = Processes(tmp_path)
    try:
        argv = option(exec_start("pbem-bots.service"), "--tokens-file", str(tokens))
        env = environment(app, PBEM_CONFIG="config/testing.toml", PBEM_BOTS_POLL_SECONDS="0.2",
                          PBEM_BOTS_SERVER=server.url)
        bots_process = processes.start("pbem-bots", argv, env)

        # By the web: the new-game form's "Play the computer".
        page = sign_in(browser, server, "alice")
        page.goto(f"{server.url}/games/new?game=cambio")
        page.select_option("#opt-size", "3")
        page.select_option("#computer-strength", "easy")
        page.click("#create")
        expect(page.locator("table.seats")).to_contain_text("BOT easybot (challenged)")
        with app.app_context():
            on_the_web = db.session.scalar(select(Game.id).order_by(Game.id.desc()))
        first = play_out(mine, on_the_web)
        page.reload()
        expect(page.locator("table.seats .bot")).to_have_text("BOT")

        # By mail: the pbmserv-style challenge naming the bot.
        mail = EmailMessage()
        mail["From"], mail["To"] = "alice@example.org", "pbem@pbem.localhost"
        mail["Subject"], mail["Message-ID"] = f"cambio challenge alice {key} easybot size=3", make_msgid()
        mail.set_content("\n")
        with smtplib.SMTP("127.0.0.1", listener.port, timeout=10) as client:
            client.send_message(mail)
        deadline = time.monotonic() + 20
        with app.app_context():
            while (by_mail := db.session.scalar(select(Game.id).where(Game.id != on_the_web))) is None:
                db.session.rollback()
                assert time.monotonic() < deadline, db.session.scalars(select(InboundMail.note)).all()
                time.sleep(0.1)
        second = play_out(mine, by_mail)
        assert "played" in bots_process.output() and "accepts game" in bots_process.output()
    finally:
        processes.stop_all()
        listener.stop()

    for game in (first, second):
        seat = game["players"][1]
        assert game["status"] == "finished" and (seat["player"], seat["bot"]) == ("easybot", True)
    with app.app_context():
        for game_id in (on_the_web, by_mail):
            game = db.session.get(Game, game_id)
            assert "BOT easybot" in results.summary(game)
            bot_moves = db.session.scalars(select(Move).where(Move.game_id == game_id, Move.seat == 1)).all()
            assert bot_moves and {move.kind for move in bot_moves} <= {"move", "resign", "draw-offer",
                                                                        "draw-accept"}
        ratings = db.session.scalars(select(Rating).where(Rating.engine == "cambio"))
        rated = {r.user_id: r.games for r in ratings}
        assert rated == {alice_id: 2, bot_id: 2}
        outbox.deliver_due()
    to_alice = [text_of(m) for m in sink.messages(to="alice@example.org")]
    assert sum("BOT easybot" in text for text in to_alice) >= 2  # the two results, naming the bot
    assert not sink.messages(to=bot_address)
