"""The daily digest: one mail a day for players who chose it, listing every game awaiting their move with
its board and reply address, instead of a mail per move."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import parseaddr

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.accounts import vacation
from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User, set_clock
from pbem.game import play, queries
from pbem.mailout import digest, outbox, tokens
from tests.server.test_concurrency import race
from tests.server.test_mail_play import Postman, moves_of, start_postman
from tests.server.test_mail_play import text_of as mail_text
from tests.server.test_sweep import CAMBIO, text_of

DAY0 = datetime(2025, 3, 3)  # digests fall due at 06:00 UTC (scheduler.digest_hour)


@pytest.fixture
def at() -> Iterator:
    """Set the server's clock for the test: ``at(datetime)``."""
    yield set_clock
    set_clock(None)


def digests_to(user: User) -> list[OutboxMail]:
    db.session.rollback()
    query = select(OutboxMail).where(OutboxMail.to_addr == user.email, OutboxMail.kind == "digest")
    return list(db.session.scalars(query.order_by(OutboxMail.id)))


def choose_digest(user: User) -> None:
    user.notify = "digest"
    db.session.commit()


def test_one_digest_a_day_lists_every_game_awaiting_the_move(ctx: Flask, players, at, sink) -> None:
    alice, bob, _ = players
    choose_digest(bob)
    at(DAY0)
    answered = play.create_game("cambio", [alice, bob], CAMBIO)
    db.session.commit()
    play.submit(answered.id, alice, "b3", "web")
    opening = play.create_game("cambio", [bob, alice], CAMBIO)
    waiting = play.create_game("cambio", [alice, bob], CAMBIO)  # Alice's move: not in Bob's digest.
    db.session.commit()
    assert db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == bob.email)).all() == []

    at(DAY0 + timedelta(hours=5, minutes=59))
    assert digest.send_due() == 0
    at(DAY0 + timedelta(hours=6))
    assert digest.send_due() == 1
    assert digest.send_due() == 0  # Once a day.
    at(DAY0 + timedelta(hours=23))
    assert digest.send_due() == 0
    at(DAY0 + timedelta(days=1, hours=6, minutes=10))
    assert digest.send_due() == 1  # The next day, the games still waiting.
    assert len(digests_to(bob)) == 2 and digests_to(alice) == []

    outbox.deliver_due()
    [mail, _] = [m for m in sink.messages(bob.email) if "digest" in m["Subject"]]
    assert mail["Subject"] == "[pbem] daily digest: 2 games awaiting your move"
    assert mail["Reply-To"] is None  # Two games: each has its own reply address in the text.
    body = text_of(mail)
    assert f"Cambio #{answered.id}, move 2, against alice" in body
    assert f"Cambio #{opening.id}, move 1" in body and f"#{waiting.id}" not in body
    assert body.count("Legal moves: ") == 2
    for game, seat in ((answered, 1), (opening, 0)):  # Each board as that player sees it.
        board = queries.engine_of(game).render_text(queries.state_of(game), seat).rstrip()
        assert board in body
    for game, seat in ((answered, 1), (opening, 0)):
        address = tokens.reply_address(game.id, seat, bob)
        assert f"Reply to: {address}" in body
        token = tokens.parse_reply(address.split("+", 1)[1].split("@")[0])
        assert token is not None and tokens.verify_reply(token, bob) and token.game_id == game.id


def test_a_single_game_digest_can_be_answered_directly(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    choose_digest(bob)
    at(DAY0 + timedelta(hours=7))
    game = play.create_game("cambio", [bob, alice], CAMBIO)
    db.session.commit()
    assert digest.send_due() == 1
    [mail] = digests_to(bob)
    assert mail.subject == "[pbem] daily digest: 1 game awaiting your move"
    assert mail.reply_to == tokens.reply_address(game.id, 0, bob)
    assert "Reply to this mail with your move" in mail.body_text


def test_no_digest_without_waiting_games_on_vacation_or_for_per_move_players(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    choose_digest(bob)
    choose_digest(carol)
    at(DAY0 + timedelta(hours=8))
    play.create_game("cambio", [carol, alice], CAMBIO)  # Carol's move, but she is away.
    play.create_game("cambio", [alice, bob], CAMBIO)  # Alice's move; Alice wants a mail per move.
    db.session.commit()
    vacation.turn_on(carol)
    assert digest.send_due() == 0
    assert digests_to(alice) == digests_to(bob) == digests_to(carol) == []


def test_two_schedulers_at_once_send_one_digest(app: Flask, ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    choose_digest(bob)
    at(DAY0 + timedelta(hours=9))
    play.create_game("cambio", [bob, alice], CAMBIO)
    db.session.commit()
    written = race(app, [digest.send_due, digest.send_due])
    assert sorted(written) == [0, 1]
    assert len(digests_to(bob)) == 1


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink, seen from the players' side."""
    yield from start_postman(app, sink)


def test_a_reply_to_a_digest_of_several_games_is_told_where_a_move_goes(
    postman: Postman, players, at
) -> None:
    alice, bob, _ = players
    choose_digest(bob)
    at(DAY0 + timedelta(hours=7))
    both = [play.create_game("cambio", [bob, alice], CAMBIO) for _ in range(2)]
    db.session.commit()
    assert digest.send_due() == 1
    postman.settle()
    [sent] = postman.mails(bob.email)
    assert "a reply to this mail cannot say which game" in mail_text(sent)
    reply = EmailMessage()
    reply["From"], reply["To"] = bob.email, parseaddr(str(sent["From"]))[1]
    reply["Subject"] = f"Re: {sent['Subject']}"
    reply["In-Reply-To"] = str(sent["Message-ID"])
    reply.set_content("b3\n\nOn Mon, pbem wrote:\n> Hello bob\n")
    postman.send(reply)
    postman.settle()
    answer = mail_text(postman.last(bob.email, "Re: "))
    assert "Not done: This is a reply to your daily digest, which lists several games" in answer
    for game in both:
        assert f"Cambio #{game.id}, move 1: write to {tokens.reply_address(game.id, 0, bob)}" in answer
        assert moves_of(game.id) == []


def test_each_player_gets_the_digest_at_their_own_hour_in_their_zone(app: Flask, ctx: Flask, players,
                                                                     at) -> None:
    from pbem.schedule import scheduler
    from tests.server.test_web_games import signed_in
    from tests.server.test_web_games import text_of as page_text

    alice, bob, carol = players
    for user in (bob, carol):
        choose_digest(user)
    at(DAY0 - timedelta(days=1))
    for user in (bob, carol):
        play.create_game("cambio", [user, alice], CAMBIO)
    db.session.commit()
    bob.time_zone = "Asia/Tokyo"  # UTC+9: 08:00 there is 23:00 UTC the day before.
    db.session.commit()
    [web] = signed_in(app, bob)
    saved = web.post("/settings", {"action": "digest-hour", "digest_hour": "8"})
    assert saved.status_code == 302
    assert "Your daily digest goes out at 08:00, Asia/Tokyo time." in page_text(web.get("/settings"))
    assert web.post("/settings", {"action": "digest-hour", "digest_hour": "24"}).status_code == 400

    def run_at(moment: datetime) -> tuple[int, int]:
        """The scheduler's digest job at ``moment``; how many digests bob and carol have had by then."""
        at(moment)
        scheduler.send_digests(app)
        return len(digests_to(bob)), len(digests_to(carol))

    assert run_at(DAY0 - timedelta(hours=1, minutes=1)) == (0, 1)  # 07:59 in Tokyo; 22:59 UTC for carol.
    assert run_at(DAY0 - timedelta(hours=1)) == (1, 1)  # 08:00 in Tokyo.
    assert run_at(DAY0 + timedelta(hours=5, minutes=59)) == (1, 1)
    assert run_at(DAY0 + timedelta(hours=6)) == (1, 2)  # carol keeps the server's 06:00 UTC.
    assert run_at(DAY0 + timedelta(hours=22, minutes=59)) == (1, 2)
    assert run_at(DAY0 + timedelta(hours=23)) == (2, 2)  # The next morning in Tokyo.
    # Back to the server's hour: the next comes at 06:00 UTC, not at once.
    assert web.post("/settings", {"action": "digest-hour", "digest_hour": ""}).status_code == 302
    assert run_at(DAY0 + timedelta(hours=23, minutes=30)) == (2, 2)
    assert run_at(DAY0 + timedelta(days=1, hours=6)) == (3, 3)


def test_the_digest_hour_on_days_the_clocks_change() -> None:
    # Paris springs forward at 01:00 UTC on 30 March 2025 (02:00 local does not exist) and falls back at
    # 01:00 UTC on 26 October (02:00 local comes twice).
    assert digest.due_point(2, "Europe/Paris", datetime(2025, 3, 30, 12)) == datetime(2025, 3, 30, 1)
    assert digest.due_point(2, "Europe/Paris", datetime(2025, 10, 26, 12)) == datetime(2025, 10, 26, 0)
    assert digest.due_point(8, "Europe/Paris", datetime(2025, 10, 26, 6, 59)) == datetime(2025, 10, 25, 6)
