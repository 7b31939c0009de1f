"""Inbound mail checked by the local MTA (SPF, DKIM, DMARC in its Authentication-Results header): with
`mail.require_dmarc` on, a reply or command whose From domain fails DMARC plays nothing, even with a
valid reply address; only the headers the MTA added under its own name count, never one the mail
brought.  Each mail goes through the real listener and processor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail
from pbem.game import play
from pbem.mailout import tokens
from tests.server.test_mail_play import Postman, moves_of, start_postman, text_of
from tests.server.test_mail_security import reply_mail

OURS = "mta.example.org"
# What the MTA writes on top when it takes a mail in: its verdict, then its own Received line.
TAKEN_IN = f"Received: from mail.example.org by {OURS} with ESMTPS; Mon, 3 Mar 2025 10:00:00 +0000\r\n"
# A hop the mail made before ours (the sender's own server).
EARLIER = "Received: from laptop by mail.example.org with ESMTPSA; Mon, 3 Mar 2025 09:59:58 +0000\r\n"


def results(authserv_id: str, dmarc: str) -> str:
    """An Authentication-Results header as OpenDMARC writes it."""
    return (f"Authentication-Results: {authserv_id}; dkim=none; spf=softfail smtp.mailfrom=example.org; "
            f"dmarc={dmarc} (p=reject dis=none) header.from=example.org\r\n")


@pytest.fixture
def settings(settings: dict) -> dict:
    """The server reads its MTA's verdict (mta.example.org) and refuses mail that fails DMARC."""
    settings["mail"] = {**settings["mail"], "authserv_id": OURS, "require_dmarc": True}
    return settings


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def test_a_forged_from_with_a_leaked_reply_address_plays_nothing(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    leaked = tokens.reply_address(game.id, 0, alice)

    def send(top: str, below: str = "") -> InboundMail:
        """The reply, with ``top`` written by the MTA and ``below`` brought by the mail from its sender's
        server (which the MTA strips when it names the MTA, as DEPLOY.md sets it up; here it is left)."""
        mail = reply_mail(alice.email, leaked, "b3")
        postman.send_raw((top + TAKEN_IN + EARLIER + below).encode() + mail.as_bytes(), alice.email, leaked)
        postman.settle()
        db.session.rollback()
        return db.session.scalars(select(InboundMail).order_by(InboundMail.id.desc())).first()

    # Forged: the MTA found the From domain fails its DMARC policy.  A "pass" the forger wrote below the
    # MTA's own lines, or under another name, counts for nothing.
    forged = send(results(OURS, "fail") + results("evil.example", "pass"), below=results(OURS, "pass"))
    assert moves_of(game.id) == []
    assert forged.status == "rejected" and forged.note.startswith("From domain fails DMARC (dkim=none")
    [told] = [m for m in postman.mails(alice.email) if str(m["Subject"]).startswith("Re:")]
    assert "the mail server that received it found that it fails the DMARC policy of example.org" \
        in text_of(told)
    # A verdict the mail brought itself, with none of the MTA's above it, is not the MTA's.
    brought = send("", below=results(OURS, "pass"))
    assert brought.status == "processed" and "dmarc=" not in brought.note
    assert moves_of(game.id) == ["b3"]


def test_a_mail_that_passes_is_played_and_the_verdict_noted(postman: Postman, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    postman.settle()
    address = tokens.reply_address(game.id, 0, alice)
    mail = reply_mail(alice.email, address, "b3")
    postman.send_raw((results(OURS, "pass") + TAKEN_IN + EARLIER).encode() + mail.as_bytes(), alice.email,
                     address)
    postman.settle()
    assert moves_of(game.id) == ["b3"]
    db.session.rollback()
    row = db.session.scalars(select(InboundMail)).one()
    assert row.status == "processed" and row.note.endswith("[dkim=none spf=softfail dmarc=pass]")
    assert db.session.get(Game, game.id).ply == 1


def test_require_dmarc_without_the_mta_name_stops_the_start(tmp_path) -> None:
    from pbem.core import config
    from pbem.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"mail\.require_dmarc needs mail\.authserv_id"):
        config.load(environ={"PBEM_CONFIG": str(config.CONFIG_DIR / "testing.toml"),
                             "PBEM_MAIL_REQUIRE_DMARC": "true"})


def test_each_mail_gets_its_own_verdict_however_often_the_same_header_comes() -> None:
    """The MTA's verdicts repeat from mail to mail (its DMARC verdict on a domain): each header is read
    once, and each mail still gets the verdict of its own headers, a "pass" below the MTA's lines still
    counting for nothing."""
    from pbem.mailin import authentication, parse

    def verdict_of(top: str, below: str = "") -> str | None:
        mail = "From: alice@example.org\r\nSubject: b3\r\n\r\nb3\r\n"
        raw = (top + TAKEN_IN + EARLIER + below + mail).encode()
        found = authentication.verdict(parse.read(raw), OURS)
        return found.dmarc if found is not None else None

    for _ in range(2):
        assert verdict_of(results(OURS, "pass")) == "pass"
        assert verdict_of(results(OURS, "fail")) == "fail"
        assert verdict_of(results(OURS.upper(), "pass") + results(OURS, "fail")) == "fail"
        assert verdict_of(results("evil.example", "pass")) is None
        assert verdict_of("", below=results(OURS, "pass")) is None
        assert verdict_of(results(OURS, "fail"), below=results(OURS, "pass")) == "fail"
