"""Watching a game: a player who is not seated follows it by mail, starting and stopping on its page."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User
from pbem.game import play
from pbem.mailout import outbox
from tests.server.test_mail_play import postman  # noqa: F401 (fixture)
from tests.server.test_web_games import signed_in, text_of

CAMBIO = {"size": 3, "placements": 2}


def mails_to(user: User) -> list[OutboxMail]:
    db.session.rollback()
    return list(db.session.scalars(
        select(OutboxMail).where(OutboxMail.to_addr == user.email).order_by(OutboxMail.id)
    ))


def test_a_watcher_gets_each_move_and_the_result(app: Flask, ctx: Flask, players, sink) -> None:
    alice, bob, carol = players
    game = play.create_game("cambio", [alice, bob], CAMBIO)
    db.session.commit()
    (web,) = signed_in(app, carol)
    assert "Watch this game" in text_of(web.get(f"/games/{game.id}"))
    web.post(f"/games/{game.id}/watch")
    assert "Stop watching" in text_of(web.get(f"/games/{game.id}"))

    play.submit(game.id, alice, "b3", "web", comment="a quiet start")
    [notice] = mails_to(carol)
    assert notice.kind == "move-notice" and notice.subject.endswith("alice played b3")
    assert "a quiet start" in notice.body_text and "You are watching this game" in notice.body_text
    assert notice.reply_to is None  # A watcher has nothing to answer with.

    play.resign(game.id, bob, "web")
    assert [m.kind for m in mails_to(carol)] == ["move-notice", "game-over"]
    assert mails_to(carol)[-1].subject.endswith("game over, alice wins")
    assert "alice (O) wins: bob (X) resigned." in mails_to(carol)[-1].body_text
    assert "Your result" not in mails_to(carol)[-1].body_text
    outbox.deliver_due()
    assert len(sink.messages(carol.email)) == 2


def test_stopping_and_who_may_watch(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = play.create_game("cambio", [alice, bob], CAMBIO)
    private = play.create_game("cambio", [alice, bob], CAMBIO, public=False)
    db.session.commit()
    carol_web, alice_web = signed_in(app, carol, alice)
    carol_web.post(f"/games/{game.id}/watch")
    carol_web.post(f"/games/{game.id}/watch", {"stop": "1"})
    play.submit(game.id, alice, "b3", "web")
    assert mails_to(carol) == []
    # A player of the game is not offered to watch it, and is refused if they ask.
    assert "Watch this game" not in text_of(alice_web.get(f"/games/{game.id}"))
    refused = alice_web.post(f"/games/{game.id}/watch", json=True)
    assert refused.status_code == 400 and "you get its mails already" in refused.get_json()["message"]
    # A private game is not even visible to others.
    assert carol_web.post(f"/games/{private.id}/watch").status_code == 404


def test_a_watcher_hears_of_a_loss_on_time(app: Flask, ctx: Flask, players) -> None:
    from datetime import datetime, timedelta

    from pbem.core.models import set_clock
    from pbem.game import watching
    from pbem.schedule import sweep

    alice, bob, carol = players
    start = datetime(2025, 3, 3, 12, 0)
    set_clock(start)
    try:
        game = play.create_game("cambio", [alice, bob], CAMBIO, time_control={"kind": "per_move", "days": 1})
        db.session.commit()
        watching.watch(game, carol)
        set_clock(start + timedelta(days=2))
        assert sweep.sweep().timed_out == 1
    finally:
        set_clock(None)
    [result] = mails_to(carol)
    assert result.kind == "game-over" and result.subject.endswith("game over, bob wins")


def test_watch_and_unwatch_by_mail_and_the_watched_games_on_my_games(app: Flask, ctx: Flask, players,
                                                                     postman) -> None:  # noqa: F811
    from pbem.accounts import vacation
    from tests.server.conftest import give_mail_key
    from tests.server.test_mail_play import text_of as mail_text

    alice, bob, carol = players
    game = play.create_game("cambio", [alice, bob], CAMBIO)
    db.session.commit()
    key = give_mail_key(carol)
    postman.command(carol.email, f"cambio watch {game.id} carol {key}")
    postman.settle()
    assert f"You are watching Cambio #{game.id}" in mail_text(postman.last(carol.email, "Re:"))

    play.submit(game.id, alice, "b3", "web")
    postman.settle()
    notice = mail_text(postman.last(carol.email, "alice played b3"))
    assert f"or by mail: 'cambio unwatch {game.id} HANDLE MAILKEY'" in notice

    vacation.turn_on(bob)
    (web,) = signed_in(app, carol)
    watched = text_of(web.get("/dashboard"))
    watched = watched[watched.index('id="watched"'):]
    assert f"Cambio #{game.id}" in watched and "alice vs bob" in watched and "bob to move" in watched
    assert "bob is on vacation until " in watched and "; clocks stopped" in watched

    postman.command(carol.email, f"cambio unwatch {game.id} carol {key}")
    postman.settle()
    assert f"You no longer watch Cambio #{game.id}" in mail_text(postman.last(carol.email, "Re:"))
    assert 'id="watched"' not in text_of(web.get("/dashboard"))
    before = len(postman.mails(carol.email))
    play.resign(game.id, alice, "web")
    postman.settle()
    assert len(postman.mails(carol.email)) == before  # Not watching: no result either.
    postman.command(carol.email, f"cambio unwatch {game.id} carol {key}")
    postman.settle()
    assert "You were not watching" in mail_text(postman.last(carol.email, "Re:"))


def test_my_games_says_when_an_opponent_is_on_vacation(app: Flask, ctx: Flask, players) -> None:
    from datetime import datetime

    from pbem.accounts import vacation
    from pbem.core.models import set_clock

    alice, bob, _ = players
    set_clock(datetime(2025, 11, 20, 10))
    try:
        game = play.create_game("cambio", [alice, bob], CAMBIO)
        db.session.commit()
        alice.time_zone = "Asia/Tokyo"
        db.session.commit()
        vacation.turn_on(bob)  # 30 days of allowance: back by 20 December at the latest.
        (web,) = signed_in(app, alice)
        page = text_of(web.get("/dashboard"))
        assert f"Cambio #{game.id}" in page and "bob is on vacation until Sat 20 Dec; clocks stopped" in page
    finally:
        set_clock(None)
