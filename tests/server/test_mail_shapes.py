"""The project's own corpus of replies as real mail programs write them (issue #27).

For each row of ``tests/mailshapes/cases.py`` a real game is started, the server's move request lands
in the real SMTP sink, and a reply is built from that very mail the way the row's mail program builds
one (its MIME shape, charset and transfer encoding, where it puts the words, how it quotes and what
it writes around the quote, in the player's language); it goes over SMTP to the real listener, and the
test asserts what a person reading that reply would expect: the move played, the comment stored with
it exactly, and the opponent's next mail carrying that comment and nothing of the quoted mail.  A reply
naming two moves plays neither, and its answer names both.

One app, listener and sink serve the whole module (per database backend); each row plays a game of
its own between two players of its own.
"""

from __future__ import annotations

import email
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import default as default_policy
from pathlib import Path

import pytest
from flask import Flask
from sqlalchemy import select

import games
from pbem import create_app
from pbem.accounts.accounts import create_user
from pbem.core.extensions import db
from pbem.core.models import Move, User
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play
from pbem.mailin import smtpd
from tests.conftest import free_port
from tests.mailshapes.cases import CASES, Case
from tests.mailshapes.clients import CLIENTS, Reply
from tests.mailshapes.langs import LANGS
from tests.mailshapes.original import Original
from tests.server.conftest import BACKENDS, Sink, create_pg_database, drop_pg_database
from tests.server.test_mail_play import Postman, text_of


class Mailbag:
    """The sink's Maildir, each file read once and filed under its envelope recipient, in the order the
    sink received them (the whole corpus leaves hundreds of mails there: reading them all again for
    every look would cost more than the rest of the test)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: set[str] = set()
        self.by_recipient: dict[str, list[EmailMessage]] = {}

    def to(self, address: str) -> list[EmailMessage]:
        """Every mail the sink kept for ``address``, oldest first."""
        fresh = [f for folder in ("new", "cur") if (self.path / folder).exists()
                 for f in (self.path / folder).iterdir() if f.name not in self.seen]
        for file in sorted(fresh, key=lambda f: (f.stat().st_mtime_ns, f.name)):
            self.seen.add(file.name)
            mail = email.message_from_bytes(file.read_bytes(), policy=default_policy)
            for recipient in str(mail["X-Pbem-Envelope-To"]).split(","):
                self.by_recipient.setdefault(recipient.strip(), []).append(mail)
        return list(self.by_recipient.get(address, []))


@dataclass
class Corpus:
    """The module's server, seen from the players' side."""

    app: Flask
    postman: Postman
    bag: Mailbag


def _serve(backend: str, tmp: Path) -> Iterator[Corpus]:
    """An app on a fresh database of ``backend``, the real listener with its processor, and the sink."""
    url = f"sqlite:///{tmp / 'pbem.db'}" if backend == "sqlite" else create_pg_database("pbem_shapes")
    sink_port, port = free_port(), free_port()
    app = create_app({"server": {"instance_path": str(tmp / "instance")}, "database": {"url": url},
                      "mail": {"smtp_port": sink_port}})
    sink = Sink(tmp / "sink", sink_port)
    with app.app_context():
        db.create_all()
        sink.start()
        listener = smtpd.controller(app, "127.0.0.1", port)
        listener.start()
        try:
            yield Corpus(app, Postman(sink, port), Mailbag(tmp / "sink"))
        finally:
            listener.stop()
            sink.stop()
            db.session.remove()
            db.engine.dispose()
            if backend != "sqlite":
                drop_pg_database(url)


@pytest.fixture(scope="module")
def on_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """The module's server on a SQLite file."""
    yield from _serve("sqlite", tmp_path_factory.mktemp("mailshapes"))


@pytest.fixture(scope="module")
def on_postgresql(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    """The module's server on a PostgreSQL database of its own."""
    yield from _serve("postgresql", tmp_path_factory.mktemp("mailshapes-pg"))


_numbers = itertools.count(1)
# Commands a row may expect instead of a move: the record holds them as they are named here.
COMMANDS = frozenset({"resign"})


def _players(case: Case) -> tuple[User, User]:
    """Two new players for the row's game (so that each row reads only its own mail)."""
    n = next(_numbers)
    # The listener and the outbox write meanwhile: start afresh and take the write lock first (a unit of
    # work), as the server's own writers do (on SQLite a write after a stale read is refused at once).
    with unit_of_work() as uow:
        first = create_user(f"alice{n}", f"alice{n}.{case.lang}@example.org", verified=True)
        second = create_user(f"bob{n}", f"bob{n}.{case.lang}@example.org", verified=True)
        uow.commit()
    return first, second


def _record(game_id: int) -> list[Move]:
    db.session.rollback()
    return list(db.session.scalars(select(Move).where(Move.game_id == game_id).order_by(Move.number)))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w<>^-]+", text.lower()))


# On PostgreSQL the first row of each mail program: every builder's mail is read there too, at a
# third of the cost of the whole corpus.
FIRST_OF_EACH = [case for case in CASES if next(c for c in CASES if c.client == case.client) is case]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_reply_as_a_mail_program_writes_it(on_sqlite: Corpus, case: Case) -> None:
    check_reply(on_sqlite, case)


@pytest.mark.skipif("postgresql" not in BACKENDS, reason="PBEM_TEST_DATABASE_URL is not set")
@pytest.mark.parametrize("case", FIRST_OF_EACH, ids=[case.id for case in FIRST_OF_EACH])
def test_a_reply_as_a_mail_program_writes_it_on_postgresql(on_postgresql: Corpus, case: Case) -> None:
    check_reply(on_postgresql, case)


def check_reply(corpus: Corpus, case: Case) -> None:
    """Answer a real move request as ``case`` says, over SMTP, and check what the server made of it."""
    postman, bag = corpus.postman, corpus.bag
    alice, bob = _players(case)
    with unit_of_work() as uow:
        game = play.create_game(case.game, [alice, bob], case.options, seed=case.seed)
        uow.commit()
    mover, other = alice, bob
    if case.first is not None:
        play.submit(game.id, alice, case.first[0], "web", comment=case.first[1])
        mover, other = bob, alice
    postman.settle()
    requests = [m for m in bag.to(mover.email) if "your move" in str(m["Subject"])]
    assert requests, f"no move request reached {mover.email}"
    original = Original.read(requests[-1])
    expected = [case.move] if case.move and case.move not in COMMANDS else list(case.refused)
    legal = original.legal_moves()
    assert not legal or all(move in legal for move in expected), f"not legal here: {legal}"

    reply = Reply(original, LANGS[case.lang], case.words, case.posting, mover.email, mover.handle.title(),
                  case.charset, case.cte, case.threaded, case.attach)
    raw = CLIENTS[case.client].build(reply)
    others_before = len(bag.to(other.email))
    postman.send_raw(raw, mover.email, original.reply_to)
    postman.settle()

    record = _record(game.id)
    played = [m for m in record if m.user_id == mover.id]
    # Every answer says "Re:", whatever prefix the reply had.
    answer = [m for m in bag.to(mover.email) if str(m["Subject"]).lower().startswith("re:")]
    said = text_of(answer[-1]).strip() if answer else "(no answer)"
    first_words = said.split("\n\n")[0]
    news = bag.to(other.email)[others_before:]
    if case.refused:
        assert played == [], f"played {[m.text for m in played]}; the answer said: {first_words}"
        message = said.split(f"\n{game_title(case)} #{game.id}")[0]
        assert said.startswith("Not done") and _words(message) >= set(case.refused), said
        assert news == [], "a refused reply still told the opponent something"
        return
    assert [m.text for m in played] == [case.move], f"the answer said: {first_words}"
    assert (played[0].comment or "") == case.comment
    if games.get(case.game).simultaneous and case.move not in COMMANDS:
        return  # Each plays their own board: a move is news to nobody, and its comment waits in the record.
    assert news, "the opponent heard nothing of the move"
    told = text_of(news[-1])
    if case.comment:
        assert f"{mover.handle} says: {case.comment}\n" in told
    else:
        assert f"{mover.handle} says:" not in told
    # Nothing of the mail answered reaches the opponent: not its link, its address, its opening line.
    assert original.link() not in told and original.reply_to not in told
    assert original.lines()[0] not in told


def game_title(case: Case) -> str:
    """The game's title as the answers write it."""
    return games.get(case.game).title


# The programs whose replies carry Outlook's header block, and those that add a phone or app footer.
HEADER_BLOCKS = {"outlook", "outlook-2010-html", "outlook-web", "outlook-web-html", "outlook-ios",
                 "outlook-android", "windows-mail", "windows-live-mail"}
FOOTERS = {"ios-mail", "ios-mail-wrapped", "outlook-ios", "outlook-android", "outlook-android-bare",
           "yahoo-android", "windows-mail", "samsung"}


def test_the_corpus_covers_what_issue_27_asks() -> None:
    """The corpus keeps the breadth the issue asks of it: rows, programs, languages, postings, shapes,
    encodings, header blocks and footers in several languages, HTML quote containers, hard moves."""
    langs = {case.lang.split("-")[0] for case in CASES}
    assert len(CASES) >= 60 and len({case.client for case in CASES}) >= 25 and len(langs) >= 15
    assert {case.posting for case in CASES} == {"top", "bottom", "inline"}
    assert {CLIENTS[case.client].shape for case in CASES} == {"plain", "html", "multipart"}
    assert {"quoted-printable", "base64", "7bit", "8bit"} <= {case.cte for case in CASES}
    charsets = {case.charset for case in CASES}
    assert {"windows-1252", "iso-2022-jp", "big5", "iso-8859-1", "koi8-r", "utf-8"} <= charsets
    assert len({case.lang for case in CASES if case.client in HEADER_BLOCKS}) >= 6
    assert len({case.lang for case in CASES if case.client in FOOTERS}) >= 8
    assert {"gmail-html", "yahoo-android", "outlook-web-html", "thunderbird-html", "zoho"} <= {
        case.client for case in CASES if CLIENTS[case.client].shape == "html"}
    words = "\n".join(case.words for case in CASES)
    assert all(move in words for move in ("*b3*", "b3 :)", "ｂ３", "Hi Bob,\n\nb3"))
    assert sum(1 for case in CASES if case.refused) >= 2 and any(case.attach for case in CASES)
