"""Past one machine, on PostgreSQL: two web servers (gunicorn), two mail listeners and two schedulers,
started from the ExecStart lines of the units in deploy/, share one database.

Every move of several games is raced by players on both web servers, by mail to both listeners and by
API clients on both servers at once (each attempt confirming the move number it saw); meanwhile
deadlines and reminders fall due, so both schedulers sweep the same seats and deliver the same outbox.
Every move is applied once, every reminder and timeout happens once, every mail is sent once, and every
mail in is answered once.
"""

from __future__ import annotations

import email
import http.cookiejar
import json
import re
import smtplib
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import make_msgid
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from sqlalchemy import func, select, text, update

from pbem.accounts import accounts, apitokens
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, Move, OutboxMail, Seat, User, utcnow
from pbem.game import play
from pbem.mailout import tokens
from tests.conftest import free_port
from tests.server.conftest import PG_ADMIN_URL, create_pg_database, drop_pg_database, message_id_of
from tests.server.processes import Processes, environment, exec_start, option, wait_for_port
from tests.server.test_mail_play import GAME

pytestmark = pytest.mark.skipif(
    not PG_ADMIN_URL,
    reason="several processes share one database only on PostgreSQL: set PBEM_TEST_DATABASE_URL",
)

RACED_GAMES = 3
TIMEOUT_GAMES = 3
REMINDED_GAMES = 3
PASSWORD = "correct horse"


@pytest.fixture
def db_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own."""
    url = create_pg_database("pbem_multi")
    yield url
    drop_pg_database(url)


class WebPlayer:
    """A player's browser session on one web server: posts moves as the game page does.

    The session is a signed cookie, so a player signed in on one server is signed in on the other too
    (``jar`` shared): any worker on any host may serve any request."""

    def __init__(self, base: str, user: User, jar: http.cookiejar.CookieJar) -> None:
        self.base, self.handle = base, user.handle
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        self.token = ""

    def csrf(self, path: str) -> str:
        """The form token a page carries."""
        with self.opener.open(self.base + path, timeout=30) as page:
            found = re.search(r'name="csrf_token" value="([^"]+)"', page.read().decode())
        assert found, path
        return found.group(1)

    def sign_in(self) -> None:
        """Sign in with the login form."""
        form = {"login": self.handle, "password": PASSWORD, "csrf_token": self.csrf("/login")}
        data = urllib.parse.urlencode(form).encode()
        with self.opener.open(self.base + "/login", data, timeout=30) as answer:
            assert answer.status == 200 and "/login" not in answer.url, answer.url

    def move(self, game_id: int, move: str, number: int) -> dict[str, Any]:
        """Post a move confirmed for move ``number``; the page's JSON answer."""
        form = {"move": move, "expect": str(number), "csrf_token": self.token}
        request = urllib.request.Request(self.base + f"/games/{game_id}/move",
                                         urllib.parse.urlencode(form).encode(),
                                         headers={"Accept": "application/json"})
        try:
            with self.opener.open(request, timeout=30) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return json.loads(refused.read())


class ApiPlayer:
    """A program playing for a player through the JSON API with the player's token."""

    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def move(self, game_id: int, move: str, number: int) -> dict[str, Any]:
        """POST a move confirmed for move ``number``; the JSON answer with ``ok`` added."""
        request = urllib.request.Request(
            self.base + f"/api/v1/games/{game_id}/moves",
            json.dumps({"move": move, "expect": number}).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with self.opener().open(request, timeout=30) as answer:
                return {"ok": True, **json.loads(answer.read())}
        except urllib.error.HTTPError as refused:
            return {"ok": False, **json.loads(refused.read())}

    @staticmethod
    def opener() -> urllib.request.OpenerDirector:
        """A plain HTTP opener (no cookies: the token is the credential)."""
        return urllib.request.build_opener()


def mail_move(port: int, user: User, to: str, text: str) -> str:
    """Hand a reply to a listener over LMTP, as Postfix would; its Message-ID."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = user.email, to, "Re: [pbem] your move"
    msg["Message-ID"] = make_msgid(domain="players.example.org")
    msg.set_content(f"{text}\n")
    with smtplib.LMTP("127.0.0.1", port, timeout=30) as client:
        client.send_message(msg)
    return str(msg["Message-ID"])


def later(call: Callable[[], Any]) -> Any:
    """``call()`` a moment after the others start."""
    time.sleep(0.05)
    return call()


def once_played(watcher: sa.Engine, game_id: int, number: int, call: Callable[[], Any]) -> Any:
    """``call()`` once the game has reached move ``number`` (a mail played it), as a player who looks
    late: the move is refused as stale."""
    deadline = time.monotonic() + 30
    with watcher.connect() as conn:
        ply = text("SELECT ply FROM game WHERE id = :id")
        while conn.execute(ply, {"id": game_id}).scalar_one() < number:
            assert time.monotonic() < deadline, f"game {game_id} did not reach move {number}"
            conn.rollback()
            time.sleep(0.05)
    return call()


def at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together; their results (or exceptions)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = calls[i]()
        except Exception as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 40) -> None:
    """Poll ``condition`` (reading the database afresh) until it holds."""
    deadline = time.monotonic() + seconds
    while True:
        db.session.rollback()
        if condition():
            return
        assert time.monotonic() < deadline, f"waited {seconds} s for {what}"
        time.sleep(0.2)


def test_two_of_each_process_apply_every_move_reminder_timeout_and_mail_once(
    app: Flask, ctx: Flask, sink, tmp_path: Path
) -> None:
    began = time.monotonic()
    users = []
    for i in range(2 * (RACED_GAMES + TIMEOUT_GAMES + REMINDED_GAMES)):
        user = accounts.create_user(f"p{i}", f"p{i}@example.org", verified=True)
        if i < 2 * RACED_GAMES:
            accounts.set_password(user, PASSWORD)
        users.append(user)
    db.session.commit()

    def new_games(count: int, offset: int) -> list[int]:
        made = [play.create_game("cambio", [users[offset + 2 * i], users[offset + 2 * i + 1]],
                                 {"size": 3, "placements": 2}) for i in range(count)]
        db.session.commit()
        return [g.id for g in made]

    raced = new_games(RACED_GAMES, 0)
    timed_out = new_games(TIMEOUT_GAMES, 2 * RACED_GAMES)
    reminded = new_games(REMINDED_GAMES, 2 * (RACED_GAMES + TIMEOUT_GAMES))
    # Deadlines already past, and deadlines 11 hours away (the 12-hour reminder is due): both schedulers
    # find them at their first sweep.
    now = utcnow()
    due = now - timedelta(minutes=1)
    for game_ids, deadline in ((timed_out, due), (reminded, now + timedelta(hours=11))):
        db.session.execute(update(Seat).where(Seat.game_id.in_(game_ids), Seat.number == 0)
                           .values(deadline=deadline, next_event_at=due, reminders_sent=0))
    db.session.commit()

    print(f"games made at {time.monotonic() - began:.1f} s")
    procs = Processes(tmp_path)
    watcher = sa.create_engine(app.config["SQLALCHEMY_DATABASE_URI"])
    env = environment(app, PBEM_SCHEDULER_OUTBOX_INTERVAL_SECONDS="1",
                      PBEM_SCHEDULER_SWEEP_INTERVAL_SECONDS="1")
    web_ports, lmtp_ports = [free_port(), free_port()], [free_port(), free_port()]
    try:
        started = []
        for n, port in enumerate(web_ports):
            argv = option(exec_start("pbem-web.service"), "--bind", f"127.0.0.1:{port}")
            argv = option(argv, "--workers", "1")
            started.append((procs.start(f"web{n}", argv, env), port))
        for n, port in enumerate(lmtp_ports):
            argv = option(exec_start("pbem-smtpd.service"), "--port", str(port))
            started.append((procs.start(f"listener{n}", argv, env), port))
        for n in range(2):
            procs.start(f"scheduler{n}", exec_start("pbem-scheduler.service"), env)
        for process, port in started:
            wait_for_port(port, process)
        print(f"started in {time.monotonic() - began:.1f} s")

        bases = [f"http://127.0.0.1:{port}" for port in web_ports]
        web: dict[tuple[int, int], WebPlayer] = {}
        for user in users[: 2 * RACED_GAMES]:
            jar = http.cookiejar.CookieJar()
            for n in range(2):
                web[user.id, n] = WebPlayer(bases[n], user, jar)
        # Each player signs in on one server and plays on both with that session.
        at_once([web[u.id, i % 2].sign_in for i, u in enumerate(users[: 2 * RACED_GAMES])])
        for player in web.values():
            player.token = player.csrf("/settings")
        # Each player's program has an API token and talks to both servers.
        api: dict[tuple[int, int], ApiPlayer] = {}
        for user in users[: 2 * RACED_GAMES]:
            _, token = apitokens.create(db.session.get(User, user.id), "race bot")
            for n in range(2):
                api[user.id, n] = ApiPlayer(bases[n], token)
        print(f"signed in at {time.monotonic() - began:.1f} s")

        # Every move of every raced game: from both web servers and to both listeners at once.  Which
        # channel goes first turns by game and move, so that each wins some races.
        sent_mail: list[str] = []
        for number, move in enumerate(GAME, start=1):
            attempts: list[Callable[[], Any]] = []
            for i, game_id in enumerate(raced):
                game = db.session.get(Game, game_id)
                seat = game.seats[(number - 1) % 2]
                reply_to = tokens.reply_address(game_id, seat.number, seat.user)
                line = f"{move} #{number}"
                webs = [partial(web[seat.user_id, n].move, game_id, move, number) for n in range(2)]
                mails = [partial(mail_move, port, seat.user, reply_to, line) for port in lmtp_ports]
                apis = [partial(api[seat.user_id, n].move, game_id, move, number) for n in range(2)]
                turn = (i + number) % 3
                first, *rest = [(webs, mails, apis)[(turn + k) % 3] for k in range(3)]
                # One channel goes first (both of its servers or listeners at once).  The others follow a
                # moment later, or, after mail going first, once the mail has played (a web or API
                # answer is so quick that a mail would otherwise never win).
                attempts += first
                for calls in rest:
                    attempts += [partial(once_played, watcher, game_id, number, call) if first is mails
                                 else partial(later, call) for call in calls]
            results = at_once(attempts)
            assert not [r for r in results if isinstance(r, Exception)], results
            sent_mail += [r for r in results if isinstance(r, str)]
            for answer in (r for r in results if isinstance(r, dict) and not r["ok"]):
                assert answer["code"] in {"stale", "not-your-turn", "over"}, answer
            assert sum(1 for r in results if isinstance(r, dict) and r["ok"]) <= RACED_GAMES
            wait_until(lambda n=number: all(db.session.get(Game, g).ply == n for g in raced),
                       f"move {number}")
            print(f"move {number} at {time.monotonic() - began:.1f} s")

        # Everything settles: mail in processed, seats swept, the outbox sent.
        def settled() -> bool:
            waiting = db.session.scalar(select(func.count(InboundMail.id))
                                        .where(InboundMail.status.in_(("received", "processing"))))
            due = db.session.scalar(select(func.count(Seat.id)).where(Seat.next_event_at <= utcnow()))
            unsent = db.session.scalar(select(func.count(OutboxMail.id)).where(OutboxMail.sent_at.is_(None)))
            return waiting == 0 and due == 0 and unsent == 0

        wait_until(settled, "mail in, the sweep and the outbox to settle")
        print(f"settled at {time.monotonic() - began:.1f} s")
        time.sleep(2)  # A second delivery, sweep or answer would show up by now.
        db.session.rollback()

        for game_id in raced:
            assert [m.text for m in db.session.scalars(select(Move).where(Move.game_id == game_id)
                                                       .order_by(Move.number))] == GAME
            assert db.session.get(Game, game_id).status == "finished"
        for game_id in timed_out:
            kinds = [m.kind for m in db.session.scalars(select(Move).where(Move.game_id == game_id))]
            # Nobody had moved: the game is aborted, left abandoned and unrated.
            assert kinds == ["timeout"] and db.session.get(Game, game_id).status == "abandoned"
        reminders = Counter(db.session.scalars(select(OutboxMail.game_id)
                                               .where(OutboxMail.kind == "reminder")))
        assert reminders == Counter(reminded)

        # Every mail in was stored once and answered once; every mail out reached the sink once.
        stored = db.session.scalars(select(InboundMail)).all()
        assert sorted(message_id_of(r) for r in stored) == sorted(sent_mail)
        assert {r.status for r in stored} <= {"processed", "rejected"}
        received = [email.message_from_bytes(m.as_bytes(), policy=default_policy) for m in sink.messages()]
        delivered = Counter(str(m["Message-ID"]).strip() for m in received)
        assert set(delivered.values()) == {1}
        assert set(delivered) == set(db.session.scalars(select(OutboxMail.message_id)))
        answers = Counter(str(m["In-Reply-To"]).strip() for m in received
                          if str(m["In-Reply-To"]).strip() in sent_mail)
        assert answers == Counter(sent_mail)
        # Each applied move was applied through one channel; the others were refused.
        vias = Counter(m.via for m in db.session.scalars(select(Move).where(Move.game_id.in_(raced))))
        assert sum(vias.values()) == RACED_GAMES * len(GAME)
        assert set(vias) == {"web", "mail", "api"}, vias
        print("moves applied by channel:", dict(vias))
    except BaseException:
        print(procs.logs())
        raise
    finally:
        procs.stop_all()
        watcher.dispose()
        print(f"stopped at {time.monotonic() - began:.1f} s")
