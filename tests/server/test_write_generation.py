"""The host's write generation (pbem.core.generation): a kept page or API answer is served without a read
of the database while no process of the installation on the host has written, for at most its max age,
and every process's write (a move by mail to the listener, by the web or the API on another web
server) shows on the very next request; without a generation every request reads its stamp."""

from __future__ import annotations

import http.cookiejar
import json
import logging
import time
import urllib.request
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask
from sqlalchemy import select, text, update
from sqlalchemy.orm.exc import StaleDataError

from pbem import create_app
from pbem.accounts import accounts, apitokens
from pbem.core import database, generation
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play
from pbem.mailout import tokens
from tests.conftest import free_port
from tests.server.processes import Processes, environment, exec_start, option, wait_for_port
from tests.server.test_multiprocess import PASSWORD, ApiPlayer, WebPlayer, mail_move
from tests.server.test_page_cache import _active_game
from tests.server.webclient import WebClient

# The max age the servers are given: long enough for a test's few requests to fall inside it.
MAX_AGE = 5.0


def fetch(url: str, opener: urllib.request.OpenerDirector | None = None) -> str:
    """The body of a GET of ``url`` (asserted 200)."""
    with (opener or urllib.request.build_opener()).open(url, timeout=30) as answer:
        assert answer.status == 200, url
        return str(answer.read().decode())


def ply_reaches(url: str, game_id: int, ply: int, seconds: float = 30) -> None:
    """Wait until the game's ply is ``ply``, reading the database on a connection of no pbem process."""
    watcher = sa.create_engine(url)
    deadline = time.monotonic() + seconds
    try:
        with watcher.connect() as conn:
            while conn.execute(select(Game.ply).where(Game.id == game_id)).scalar_one() < ply:
                assert time.monotonic() < deadline, f"game {game_id} did not reach ply {ply}"
                conn.rollback()
                time.sleep(0.05)
    finally:
        watcher.dispose()


def test_a_kept_page_shows_every_process_write_at_once_and_a_write_around_it_within_the_max_age(
        app: Flask, ctx: Flask, sink, tmp_path: Path) -> None:
    users = [accounts.create_user(h, f"{h}@example.org", verified=True) for h in ("alice", "bob")]
    for user in users:
        accounts.set_password(user, PASSWORD)
    db.session.commit()
    game_id = play.create_game("cambio", users, {"size": 3, "placements": 2}).id
    db.session.commit()
    alice_id, bob_id = (user.id for user in users)
    _, api_token = apitokens.create(db.session.get(User, alice_id), "test")
    url = app.config["SQLALCHEMY_DATABASE_URI"]
    shared = generation.Generation(generation.file_for(app.config["PBEM"]))  # type: ignore[arg-type]

    procs = Processes(tmp_path)
    # No heartbeat while the test runs (its writes would change the generation too: see below).
    env = environment(app, PBEM_PAGES_GENERATION_MAX_AGE_SECONDS=str(MAX_AGE),
                      PBEM_MONITORING_HEARTBEAT_SECONDS="3600")
    web_ports, lmtp_port = [free_port(), free_port()], free_port()
    try:
        started = []
        for n, port in enumerate(web_ports):
            argv = option(exec_start("pbem-web.service"), "--bind", f"127.0.0.1:{port}")
            started.append((procs.start(f"web{n}", option(argv, "--workers", "1"), env), port))
        smtpd = option(exec_start("pbem-smtpd.service"), "--port", str(lmtp_port))
        started.append((procs.start("listener", smtpd, env), lmtp_port))
        for process, port in started:
            wait_for_port(port, process)
        bases = [f"http://127.0.0.1:{port}" for port in web_ports]
        page = f"/games/{game_id}"

        def pages() -> list[str]:
            return [fetch(base + page) for base in bases]

        # The listener's first heartbeat written (the last write of a process but the test's own).
        deadline = time.monotonic() + 30
        while not db.session.scalar(text("SELECT count(*) FROM heartbeat")):
            assert time.monotonic() < deadline, procs.logs()
            db.session.rollback()
            time.sleep(0.1)
        db.session.rollback()

        # A write that no pbem process made (an operator's psql) leaves the generation as it was: each web
        # server serves its kept page unread, and shows the write once the page's max age has run out.
        pages(), pages()
        checked = time.monotonic()
        raw = sa.create_engine(url)
        with raw.begin() as conn:
            conn.execute(update(User).where(User.id == bob_id).values(handle="zed"))
        raw.dispose()
        for _ in range(3):
            assert all("zed" not in shown for shown in pages())
        assert time.monotonic() - checked < MAX_AGE, "too slow to show the page was served unread"
        while not all("zed" in shown for shown in pages()):
            assert time.monotonic() - checked < MAX_AGE + 5, "the write was not shown after the max age"
            time.sleep(0.2)
        assert time.monotonic() - checked >= MAX_AGE * 0.5

        # A move by mail to the listener, another process: both servers show it on their next request.
        assert all("<code>b3</code>" not in shown for shown in pages())
        before = shared.now()
        alice = db.session.get(User, alice_id)
        seat = db.session.get(Game, game_id).seats[0]
        mail_move(lmtp_port, alice, tokens.reply_address(game_id, seat.number, alice), "b3 #1")
        ply_reaches(url, game_id, 1)
        # (The listener changes the generation right after its commit, which the test saw first.)
        deadline = time.monotonic() + 5
        while shared.now() == before:
            assert time.monotonic() < deadline, "the listener's commit did not change the generation"
            time.sleep(0.01)
        assert all("<code>b3</code>" in shown for shown in pages())

        # Read-your-writes across servers: a move posted on one, the page on the other right after.
        jar = http.cookiejar.CookieJar()
        bob_web = [WebPlayer(base, db.session.get(User, bob_id), jar) for base in bases]
        bob_web[0].handle = "bob@example.org"  # (its handle's folded key is still bob's: by address)
        bob_web[0].sign_in()
        bob_web[0].token = bob_web[0].csrf("/settings")
        signed_in = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        assert "<code>a2</code>" not in fetch(bases[1] + page, signed_in)
        assert "<code>a2</code>" not in pages()[1]
        assert bob_web[0].move(game_id, "a2", 2)["ok"]
        assert "<code>a2</code>" in fetch(bases[1] + page, signed_in)
        assert "<code>a2</code>" in pages()[1]

        # A move through the API on one server; the other's kept API answer and page show it at once.
        game_api = f"/api/v1/games/{game_id}"
        bearer = {"Authorization": f"Bearer {api_token}"}

        def api_record(base: str) -> list[str]:
            request = urllib.request.Request(base + game_api, headers=bearer)
            with urllib.request.urlopen(request, timeout=30) as answer:
                return [entry["text"] for entry in json.loads(answer.read())["record"]]

        assert api_record(bases[0]) == api_record(bases[0]) == ["b3", "a2"]
        assert ApiPlayer(bases[1], api_token).move(game_id, "c2", 3)["ok"]
        assert api_record(bases[0]) == ["b3", "a2", "c2"]
        assert "<code>c2</code>" in pages()[0]
    finally:
        procs.stop_all()
        shared.close()


def test_the_hooks_change_the_generation_after_each_commit_that_wrote_and_only_then(
        app: Flask, ctx: Flask, players) -> None:
    shared = database.generation_of(app)
    assert shared is not None
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    seat = (Seat.game_id == game_id, Seat.number == 0)
    now = shared.now()
    db.session.execute(select(Seat.deadline).where(*seat)).all()
    db.session.commit()
    assert shared.now() == now
    db.session.execute(update(Seat).where(*seat).values(reminders_sent=1))
    assert shared.now() == now, "changed before the commit"
    db.session.rollback()
    assert shared.now() == now, "changed by a rollback"
    db.session.execute(update(Seat).where(*seat).values(reminders_sent=2))
    db.session.commit()
    assert shared.now() != now
    # A statement sent as text, and one on a connection in autocommit (committed by itself).
    now = shared.now()
    db.session.connection().exec_driver_sql("UPDATE seat SET reminders_sent = 3 WHERE game_id = ?"
                                            if db.engine.dialect.name == "sqlite" else
                                            "UPDATE seat SET reminders_sent = 3 WHERE game_id = %s",
                                            (game_id,))
    assert shared.now() == now
    db.session.commit()
    assert shared.now() != now
    # A write that failed, in a transaction its caller commits all the same.
    now = shared.now()
    with db.engine.connect() as conn:
        with pytest.raises(sa.exc.IntegrityError):
            conn.execute(update(Seat).where(*seat).values(game_id=game_id + 1000))
        conn.commit()
    assert shared.now() != now
    # Outside a transaction (SQLite's statements outside BEGIN, PostgreSQL's AUTOCOMMIT).
    now = shared.now()
    outside = ({database.ONE_STATEMENT: True} if db.engine.dialect.name == "sqlite"
               else {"isolation_level": "AUTOCOMMIT"})
    with db.engine.connect() as conn:
        conn.execution_options(**outside).execute(update(Seat).where(*seat).values(reminders_sent=4))
        assert shared.now() != now
    db.session.rollback()
    assert db.session.scalar(select(Seat.reminders_sent).where(*seat)) == 4
    assert not generation.writes("SELECT 1") and not generation.writes("(SELECT 1) UNION (SELECT 2)")
    assert generation.writes("WITH x AS (SELECT 1) DELETE FROM seat") and generation.writes("VACUUM")


def test_without_a_generation_every_kept_page_reads_its_stamp(
        app: Flask, ctx: Flask, players, settings: dict, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """A generation file that cannot be made (here its directory is missing) is logged, and the pages
    are kept as without it: a write around pbem shows on the next request; as with it turned off."""
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    bob_id = bob.id
    path = f"/games/{game_id}"
    missing = tmp_path / "no such directory" / "generation"
    with caplog.at_level(logging.WARNING, logger="pbem.core.generation"):
        broken = create_app({**settings, "pages": {"generation_file": str(missing)}})
    assert "cannot be used" in caplog.text and str(missing) in caplog.text
    off = create_app({**settings, "pages": {"write_generation": False}})
    raw = sa.create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    try:
        for handle, served in (("zed", broken), ("yan", off)):
            with served.app_context():
                assert database.generation_of(served) is None
            web = WebClient(served)
            web.get(path), web.get(path)
            with raw.begin() as conn:
                conn.execute(update(User).where(User.id == bob_id).values(handle=handle))
            assert handle in web.get(path).get_data(as_text=True)
    finally:
        raw.dispose()
        for served in (broken, off):
            with served.app_context():
                db.engine.dispose()


def test_a_direct_write_that_failed_is_raised_as_the_engine_raises_it_and_marks_its_transaction(
        app: Flask, ctx: Flask, players) -> None:
    """A write sent on the driver's cursor (DirectWrite, as the move path sends its writes) that fails
    raises SQLAlchemy's class of the driver's error, and its transaction, committed all the same by its
    caller, changes the generation; one that changed rows is seen by the unit of work's row check."""
    shared = database.generation_of(app)
    assert shared is not None
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    moved = database.DirectWrite(update(Seat.__table__).where(
        Seat.__table__.c.game_id == sa.bindparam("seat_game")))
    now = shared.now()
    with unit_of_work() as uow:
        with pytest.raises(sa.exc.IntegrityError):
            uow.write(moved, {"game_id": game_id + 1000, "seat_game": game_id})
        uow.commit()
    assert shared.now() != now
    with unit_of_work() as uow:
        with pytest.raises(StaleDataError):  # Two seats changed, one expected.
            uow.write(moved, {"game_id": game_id, "seat_game": game_id}, rows=1)
        with pytest.raises(StaleDataError), uow.batched():  # The same as one executemany.
            uow.write(moved, {"game_id": game_id, "seat_game": game_id}, rows=1)
        uow.write(moved, {"game_id": game_id, "seat_game": game_id}, rows=2)
        uow.commit()
