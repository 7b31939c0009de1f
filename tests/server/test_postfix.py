"""The real MTA: Debian's Postfix, configured for a mail domain exactly as docs/DEPLOY.md says, hands mail
to `pbem smtpd --lmtp`; the server's own mail goes out through the same Postfix.

A challenge and a whole short game are played by mail sent into Postfix on port 25.  In the middle the
listener is stopped: Postfix keeps what arrives in its queue and delivers it when the listener is back,
and nothing is lost or done twice.

Postfix runs as a private instance (its own configuration and queue directories, removed afterwards),
so the test changes nothing of the machine's mail system; it needs root (Postfix's master starts as
root) and a free port 25, and is skipped with the reason otherwise.  `.ci/run` installs Postfix.
"""

from __future__ import annotations

import email
import fcntl
import json
import os
import re
import secrets
import shutil
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from email.message import EmailMessage, Message
from email.policy import default as default_policy
from email.utils import make_msgid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask import Flask
from sqlalchemy import select

from pbem import cli
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, OutboxMail, set_clock, utcnow
from tests.conftest import ROOT, free_port
from tests.server.conftest import PG_ADMIN_URL, give_mail_key, message_id_of
from tests.server.deploy_doc import commands, deploy_block, substituted
from tests.server.processes import PBEM, Processes, environment, exec_start, option, wait_for_port
from tests.server.test_mail_play import GAME, moves_of, text_of

DOMAIN = "pbem.test"
COMMANDS = f"pbem@{DOMAIN}"
# Concurrent test runs on one machine take turns: there is one port 25.
LOCK = Path(tempfile.gettempdir()) / "pbem-postfix-test.lock"
POSTFIX = shutil.which("postfix") or "/usr/sbin/postfix"

pytestmark = [
    pytest.mark.skipif(not Path(POSTFIX).exists(),
                       reason="Postfix is not installed (`.ci/run` installs Debian's postfix package)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="Postfix's master process must be started as root"),
]


class Postfix:
    """A private Postfix instance: configuration and queue under ``root``, listening on 127.0.0.1:25."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.etc = root / "etc"

    def run(self, *argv: str) -> str:
        """Run a Postfix command for this instance; its output."""
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}\n{self.log()}"
        return done.stdout

    def configure(self, listener_port: int, relay_port: int) -> None:
        """The test's instance, then the lines of docs/DEPLOY.md for the mail domain and the listener."""
        for sub in ("etc", "spool", "data"):
            (self.root / sub).mkdir()
        shutil.chown(self.root / "data", "postfix")
        shutil.copy("/etc/postfix/master.cf", self.etc / "master.cf")
        # What makes this a private instance on loopback; and retry timers of seconds, not minutes, so
        # that a message deferred while the listener is down comes through quickly.
        (self.etc / "main.cf").write_text(f"""\
compatibility_level = 3.6
queue_directory = {self.root}/spool
data_directory = {self.root}/data
maillog_file = {self.root}/maillog
maillog_file_prefixes = {self.root}
mail_owner = postfix
setgid_group = postdrop
myhostname = mta.{DOMAIN}
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
alias_maps =
alias_database =
relayhost = [127.0.0.1]:{relay_port}
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
""")
        self.run("postconf", "-c", str(self.etc), "-F", "*/*/chroot = n")

        self.main_cf(deploy_block("postfix-main.cf"))
        (self.etc / "transport").write_text(self.ours(deploy_block("postfix-transport"), listener_port))
        self.run("postmap", "-c", str(self.etc), str(self.etc / "transport"))

    def main_cf(self, block: str) -> None:
        """Add the lines of a main.cf block of docs/DEPLOY.md to this instance's main.cf."""
        lines = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
        self.run("postconf", "-c", str(self.etc), "-e", *(self.ours(line) for line in lines))

    def env(self) -> dict[str, str]:
        """The environment in which Postfix's commands (postqueue, postmap, postfix) mean this instance."""
        return dict(os.environ, MAIL_CONFIG=str(self.etc))

    def ours(self, text: str, *ports: int) -> str:
        """A block of docs/DEPLOY.md for this instance: its domain, its configuration directory, and the
        listeners' ports 2525, 2526 as ``ports``."""
        text = text.replace("pbem.example.org", DOMAIN).replace("/etc/postfix", str(self.etc))
        for documented, port in zip((2525, 2526), ports, strict=False):
            text = text.replace(f"127.0.0.1:{documented}", f"127.0.0.1:{port}")
        return text

    def reload_as_documented(self) -> None:
        """The `postmap` and `postfix reload` block of docs/DEPLOY.md, for this instance."""
        for command in commands(self.ours(deploy_block("postfix-reload"))):
            self.run_documented(command)

    def run_documented(self, command: list[str]) -> str:
        """One command of docs/DEPLOY.md, run for this instance (MAIL_CONFIG names it); its output."""
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=self.env(),
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{' '.join(command)}: {done.stdout}{done.stderr}\n{self.log()}"
        return done.stdout

    def start(self) -> None:
        """Start the instance and wait for its SMTP service on port 25."""
        self.run(POSTFIX, "-c", str(self.etc), "start")
        wait_for_port(25, seconds=30)

    def stop(self) -> None:
        """Stop the instance (its queue is thrown away with the directory)."""
        subprocess.run([POSTFIX, "-c", str(self.etc), "stop"], capture_output=True, timeout=60,
                       stdin=subprocess.DEVNULL)

    def flush(self) -> None:
        """`postqueue -f`: try every deferred message now."""
        self.run("postqueue", "-c", str(self.etc), "-f")

    def queue(self) -> list[dict]:
        """The messages in the queue (`postqueue -j`)."""
        return [json.loads(line) for line in self.run("postqueue", "-c", str(self.etc), "-j").splitlines()]

    def log(self) -> str:
        """The instance's mail log."""
        path = self.root / "maillog"
        return path.read_text(errors="replace")[-6000:] if path.exists() else ""


def port_25_free() -> bool:
    """Whether nothing listens on 127.0.0.1:25."""
    try:
        with socket.create_connection(("127.0.0.1", 25), timeout=1):
            return False
    except OSError:
        return True


@pytest.fixture
def db_url(tmp_path: Path) -> Iterator[str]:
    """One database: PostgreSQL when the run has one (as a deployment would), else a SQLite file."""
    if PG_ADMIN_URL:
        from tests.server.conftest import create_pg_database, drop_pg_database

        url = create_pg_database("pbem_postfix")
        yield url
        drop_pg_database(url)
    else:
        yield f"sqlite:///{tmp_path / 'pbem.db'}"


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> dict:
    """The server's settings for this mail domain, sending its own mail through Postfix on port 25."""
    return {
        "server": {"instance_path": str(tmp_path / "instance")},
        "database": {"url": db_url},
        "mail": {"domain": DOMAIN, "smtp_host": "127.0.0.1", "smtp_port": 25},
    }


@pytest.fixture
def postfix(sink) -> Iterator[Postfix]:
    """A private Postfix on port 25 relaying outbound mail to the sink (the players' mail servers)."""
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not port_25_free():
            pytest.skip("port 25 is taken by another mail server on this machine")
        root = Path(tempfile.mkdtemp(prefix="pbem-postfix-"))
        root.chmod(0o755)  # Postfix's daemons run as the postfix user and must reach their queue.
        mta = Postfix(root)
        mta.listener_port = free_port()
        try:
            mta.configure(mta.listener_port, sink.port)
            mta.start()
            yield mta
        finally:
            mta.stop()
            shutil.rmtree(root, ignore_errors=True)


class Players:
    """The players' side: mail sent into Postfix on port 25, mail read from the sink."""

    def __init__(self, sink) -> None:
        self.sink = sink
        self.sent: list[str] = []

    def send(self, msg: EmailMessage, to: list[str] | None = None) -> str:
        """Hand ``msg`` to Postfix over SMTP on port 25; its Message-ID."""
        if "Message-ID" not in msg:
            msg["Message-ID"] = make_msgid(domain="players.example.org")
        with smtplib.SMTP("127.0.0.1", 25, timeout=20) as client:
            client.send_message(msg, to_addrs=to)
        self.sent.append(str(msg["Message-ID"]))
        return str(msg["Message-ID"])

    def command(self, sender: str, subject: str) -> str:
        """A pbmserv-style command to the server's address."""
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = sender, COMMANDS, subject
        msg.set_content("\n")
        return self.send(msg)

    def reply(self, original: Message, sender: str, first_line: str, cc: str | None = None) -> EmailMessage:
        """A reply to ``original``'s Reply-To, quoting it (not yet sent)."""
        msg = EmailMessage()
        msg["From"], msg["To"] = sender, str(original["Reply-To"])
        if cc:
            msg["Cc"] = cc
        msg["Subject"] = "Re: " + str(original["Subject"])
        msg["In-Reply-To"] = str(original["Message-ID"])
        msg["Message-ID"] = make_msgid(domain="players.example.org")
        quoted = "\n".join("> " + line for line in text_of(original).splitlines())
        msg.set_content(f"{first_line}\n\nOn Mon, 3 Mar 2025, pbem <{COMMANDS}> wrote:\n{quoted}\n")
        return msg

    def mails(self, to: str | None = None) -> list[Message]:
        """What the players' mail servers received, oldest first."""
        return [email.message_from_bytes(m.as_bytes(), policy=default_policy) for m in self.sink.messages(to)]

    def wait_for(self, to: str, match: Callable[[Message], bool], what: str, seconds: float = 30) -> Message:
        """The first mail to ``to`` that ``match`` accepts, waiting for it to arrive."""
        deadline = time.monotonic() + seconds
        while True:
            found = [m for m in self.mails(to) if match(m)]
            if found:
                return found[-1]
            assert time.monotonic() < deadline, (
                f"no {what} for {to} within {seconds} s; got {[str(m['Subject']) for m in self.mails(to)]}"
            )
            time.sleep(0.1)

    def answer_to(self, to: str, message_id: str) -> Message:
        """The server's answer to the message ``message_id``."""
        return self.wait_for(to, lambda m: str(m["In-Reply-To"]) == message_id, f"answer to {message_id}")

    def request(self, to: str, number: int) -> Message:
        """The move request for move ``number``."""
        return self.wait_for(to, lambda m: f"your move (move {number})" in str(m["Subject"])
                             and not str(m["Subject"]).startswith("Re:"), f"request for move {number}")


def test_a_game_by_mail_through_postfix_survives_a_listener_restart(
    app: Flask, ctx: Flask, sink, postfix: Postfix, players, tmp_path: Path
) -> None:
    alice, bob, _ = players
    procs = Processes(tmp_path)
    env = environment(app, PBEM_SCHEDULER_OUTBOX_INTERVAL_SECONDS="1")
    listen = [*PBEM, "smtpd", "--lmtp", "--port", str(postfix.listener_port)]
    try:
        listener = procs.start("listener", listen, env)
        procs.start("scheduler", [*PBEM, "scheduler"], env)
        wait_for_port(postfix.listener_port, listener)
        post = Players(sink)

        challenge_id = post.command(alice.email, f"cambio challenge alice {give_mail_key(alice)} bob size=3 "
                                    "placements=2")
        assert "has been sent the challenge" in text_of(post.answer_to(alice.email, challenge_id))
        challenge = post.wait_for(bob.email, lambda m: "challenges you" in str(m["Subject"]), "challenge")
        assert str(challenge["Reply-To"]).endswith(f"@{DOMAIN}")
        accept = post.reply(challenge, bob.email, "accept")
        post.send(accept)
        assert "has started" in text_of(post.answer_to(bob.email, str(accept["Message-ID"])))
        db.session.rollback()
        game_id = db.session.scalars(select(Game.id)).one()

        movers = [alice, bob]
        for number, move in enumerate(GAME, start=1):
            mover = movers[(number - 1) % 2]
            request = post.request(mover.email, number)
            # Reply-all: to the game's reply address and, in copy, the server's command address, which
            # Postfix hands to the listener as one message with two recipients.
            cc = COMMANDS if number == 1 else None
            reply = post.reply(request, mover.email, f"{move} #{number}", cc=cc)
            if number == 3:
                # The listener stops; the move, the same mail sent twice, and a command wait in Postfix.
                procs.stop(listener)
                post.send(reply)
                post.send(reply)
                show_id = post.command(bob.email, f"cambio show {game_id}")
                deferred = wait_until(lambda: len([m for m in postfix.queue() if any(
                    r.get("delay_reason") for r in m["recipients"])]) == 3, "Postfix to defer the three")
                assert deferred and moves_of(game_id) == GAME[:2]
                listener = procs.start("listener-again", listen, env)
                wait_for_port(postfix.listener_port, listener)
                postfix.flush()
                assert f"Cambio #{game_id} is in play" in text_of(post.answer_to(bob.email, show_id))
            else:
                post.send(reply)
            answer = post.answer_to(mover.email, str(reply["Message-ID"]))
            assert f"Your move {move} (move {number})" in text_of(answer)
            assert moves_of(game_id) == GAME[:number]
        for player in (alice, bob):
            post.wait_for(player.email, lambda m: "game over" in str(m["Subject"]), "result")

        # Everything settles: Postfix's queue empty, every mail in sent and answered once, every mail
        # out delivered once.
        wait_until(lambda: not postfix.queue() and not unsent(),
                   lambda: f"Postfix's queue {postfix.queue()} and the outbox {unsent()} to empty")
        db.session.rollback()
        assert moves_of(game_id) == GAME
        assert db.session.get(Game, game_id).status == "finished"
        stored = db.session.scalars(select(InboundMail)).all()
        assert sorted(message_id_of(r) for r in stored) == sorted(set(post.sent))
        assert {r.status for r in stored} == {"processed"}
        delivered = Counter(str(m["Message-ID"]) for m in post.mails())
        assert set(delivered.values()) == {1}
        assert set(delivered) == set(db.session.scalars(select(OutboxMail.message_id)))
        answers = Counter(str(m["In-Reply-To"]) for m in post.mails() if str(m["Subject"]).startswith("Re:"))
        assert all(answers[message_id] == 1 for message_id in set(post.sent)), answers
    except BaseException:
        print(procs.logs())
        print(postfix.log())
        raise
    finally:
        procs.stop_all()


def unsent() -> list[tuple]:
    """Mails still in the outbox: kind, recipient, next attempt."""
    db.session.rollback()
    query = (select(OutboxMail.kind, OutboxMail.to_addr, OutboxMail.next_attempt_at)
             .where(OutboxMail.sent_at.is_(None)))
    return [tuple(row) for row in db.session.execute(query)]


def wait_until(condition: Callable[[], bool], what: str | Callable[[], str], seconds: float = 30) -> bool:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, (
            f"waited {seconds} s for {what if isinstance(what, str) else what()}"
        )
        time.sleep(0.2)
    return True


def status_report(app: Flask, postfix: Postfix, monkeypatch: pytest.MonkeyPatch,
                  later: timedelta = timedelta(0)) -> Result:
    """`pbem status` run on this host, where this Postfix is the local MTA, as if ``later`` had passed."""
    monkeypatch.setattr(cli, "_app", lambda: app)
    monkeypatch.setenv("MAIL_CONFIG", str(postfix.etc))
    set_clock(utcnow() + later if later else None)
    try:
        return CliRunner().invoke(cli.main, ["status"])
    finally:
        set_clock(None)
        db.session.rollback()


def test_two_listeners_fail_over_and_status_sees_the_mail_waiting_when_both_are_down(
    app: Flask, ctx: Flask, sink, postfix: Postfix, players, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two-listener transport line of DEPLOY.md, with the first listener down, the second, then none:
    each mail reaches the one that answers; with none, the mail waits in Postfix and `pbem status` goes
    red naming it, until a listener is back and `postqueue -f` delivers it."""
    alice = players[0]
    first, second = postfix.listener_port, free_port()
    (postfix.etc / "transport").write_text(postfix.ours(deploy_block("postfix-transport-two"), first, second))
    # And the line that strips a verdict naming this MTA from a mail that brings one (its name here is
    # mta.pbem.test).
    (postfix.etc / "header_checks").write_text(substituted(deploy_block("postfix-header-checks"),
                                                           [("mta\\.example\\.org", "mta\\.pbem\\.test")]))
    postfix.main_cf(f"header_checks = regexp:{postfix.etc}/header_checks")
    postfix.reload_as_documented()
    procs = Processes(tmp_path)
    env = environment(app, PBEM_SCHEDULER_OUTBOX_INTERVAL_SECONDS="1", PBEM_MONITORING_HEARTBEAT_SECONDS="1")
    smtpd = exec_start("pbem-smtpd.service")
    post = Players(sink)
    try:
        procs.start("scheduler", [*PBEM, "scheduler"], env)
        # Only the second listener runs: the first refuses the connection, and Postfix goes on to it.
        two = procs.start("listener-2", option(smtpd, "--port", str(second)), env)
        wait_for_port(second, two)
        forged = EmailMessage()
        forged["From"], forged["To"], forged["Subject"] = alice.email, COMMANDS, "help"
        forged["Authentication-Results"] = "mta.pbem.test; dmarc=pass header.from=example.org"
        forged["Authentication-Results"] = "elsewhere.example; dmarc=pass header.from=example.org"
        forged.set_content("\n")
        asked = post.send(forged)
        assert "commands" in text_of(post.answer_to(alice.email, asked)).lower()
        db.session.rollback()
        stored = db.session.scalars(select(InboundMail)).one().raw
        assert b"Authentication-Results: mta.pbem.test" not in stored
        assert b"Authentication-Results: elsewhere.example" in stored
        # Then only the first.
        one = procs.start("listener-1", option(smtpd, "--port", str(first)), env)
        wait_for_port(first, one)
        procs.stop(two)
        asked = post.command(alice.email, "games")
        post.answer_to(alice.email, asked)
        assert "fatal" not in postfix.log()
        db.session.rollback()
        assert {r.status for r in db.session.scalars(select(InboundMail))} == {"processed"}

        # Both down: a move waits in Postfix's queue, where the database cannot see it.
        procs.stop(one)
        waiting = post.command(alice.email, "games")
        wait_until(lambda: any(r.get("delay_reason") for m in postfix.queue() for r in m["recipients"]),
                   "Postfix to defer the mail")
        report = status_report(app, postfix, monkeypatch, later=timedelta(minutes=15))
        assert report.exit_code == 1, report.output
        assert "MTA queue: 1 mail(s) for us, the oldest 15 minutes old (connect to 127.0.0.1" in report.output
        assert "1 mail(s) for us have waited up to 15 minutes in the MTA's queue" in report.output
        assert "no listener is running (the last stopped 15 minutes ago)" in report.output

        # A listener back, and `postqueue -f`: the mail is delivered and answered, and all is well.
        again = procs.start("listener-2-again", option(smtpd, "--port", str(second)), env)
        wait_for_port(second, again)
        postfix.run_documented(["postqueue", "-f"])
        post.answer_to(alice.email, waiting)
        wait_until(lambda: not postfix.queue() and not unsent(), "the queues to empty")
        well = status_report(app, postfix, monkeypatch)
        assert well.exit_code == 0 and "MTA queue: 0 mail(s) for us" in well.output, well.output
    except BaseException:
        print(procs.logs())
        print(postfix.log())
        raise
    finally:
        procs.stop_all()


# The machine's own Python, which any user may run (the pipe's user runs pbem with it).
SYSTEM_PYTHON = "/usr/bin/python3"


def site_packages() -> str:
    """Where this test run's packages are installed."""
    return next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix))


@pytest.mark.skipif(not PG_ADMIN_URL, reason="the pipe runs as another user, who reaches the database "
                    "over the network: PostgreSQL (PBEM_TEST_DATABASE_URL) is needed")
@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists() or subprocess.run(
    [SYSTEM_PYTHON, "-c", f"import sys; sys.exit(sys.version_info[:2] != {tuple(sys.version_info[:2])})"],
    check=False).returncode != 0, reason=f"{SYSTEM_PYTHON} is not the tests' Python {sys.version_info[:2]}")
@pytest.mark.skipif(not shutil.which("runuser") or subprocess.run(
    ["runuser", "-u", "nobody", "--", "test", "-r", str(ROOT / "pbem" / "__init__.py")], check=False,
    capture_output=True).returncode != 0, reason="the pipe's user (nobody) cannot read this checkout")
def test_the_pipe_as_documented_waits_for_a_missing_setting_and_never_bounces(
    app: Flask, ctx: Flask, sink, postfix: Postfix, players, tmp_path: Path
) -> None:
    """Postfix's pipe to `pbem ingest` through the wrapper, with the settings in pbem.env as DEPLOY.md
    says: while the secret key is still the example's placeholder the mail waits in Postfix's queue (exit
    75, deferred) and nothing bounces to the player; once the key is set, `postqueue -f` brings it in,
    stored with its envelope, and it is answered."""
    alice = players[0]
    shared = Path(tempfile.mkdtemp(prefix="pbem-pipe-"))  # Where the pipe's user may read and write.
    try:
        shared.chmod(0o755)
        (shared / "instance").mkdir()
        shutil.chown(shared / "instance", "nobody")
        site = shared / "pbem.toml"
        site.write_text(f'[server]\nbase_url = "http://127.0.0.1:5000"\ninstance_path = "{shared}/instance"\n'
                        f'[mail]\ndomain = "{DOMAIN}"\nsmtp_host = "127.0.0.1"\nsmtp_port = 25\n')
        settings = shared / "pbem.env"
        settings.write_text(substituted((ROOT / "deploy" / "pbem.env.example").read_text(), [
            ("PBEM_CONFIG=/etc/pbem/pbem.toml", f"PBEM_CONFIG={site}"),
            ("PBEM_DATABASE_URL=postgresql+psycopg://pbem:change-me@db.internal/pbem",
             f"PBEM_DATABASE_URL={app.config['SQLALCHEMY_DATABASE_URI']}"),
        ]) + f"PYTHONPATH={ROOT}:{site_packages()}\n")
        shutil.chown(settings, group="nogroup")
        settings.chmod(0o640)  # root:pbem, 0640, as DEPLOY.md installs it.
        # /opt/pbem/.venv/bin/pbem: this test's code, run by the machine's Python with the test's packages
        # (the test's own Python may live where the pipe's user cannot run it, such as under /root).
        launcher = shared / "launch"
        launcher.write_text(f"#!/bin/sh\nexec {SYSTEM_PYTHON} -m pbem \"$@\"\n")
        launcher.chmod(0o755)
        wrapper = shared / "pbem"
        wrapper.write_text(substituted((ROOT / "deploy" / "pbem.sh").read_text(), [
            ("PBEM_USER=pbem", "PBEM_USER=nobody"), ("PBEM_ENV=/etc/pbem/pbem.env", f"PBEM_ENV={settings}"),
            ("PBEM_HOME=/var/lib/pbem", f"PBEM_HOME={shared}"), ("PBEM_BIN=/opt/pbem/.venv/bin/pbem",
                                                               f"PBEM_BIN={launcher}"),
        ]))
        wrapper.chmod(0o755)
        master = substituted(deploy_block("postfix-pipe-master.cf"),
                             [("user=pbem", "user=nobody"), ("/usr/local/bin/pbem", str(wrapper))])
        with (postfix.etc / "master.cf").open("a") as f:
            f.write(master)
        postfix.main_cf(deploy_block("postfix-pipe-main.cf"))
        (postfix.etc / "transport").write_text(postfix.ours(deploy_block("postfix-pipe-transport")))
        postfix.reload_as_documented()

        post = Players(sink)
        asked = post.command(alice.email, "help")
        wait_until(lambda: any("the settings cannot be read" in str(r.get("delay_reason"))
                               for m in postfix.queue() for r in m["recipients"]),
                   lambda: f"Postfix to defer the mail: {postfix.queue()}\n{postfix.log()}")
        assert "status=bounced" not in postfix.log() and not post.mails(alice.email)
        db.session.rollback()
        assert not db.session.scalars(select(InboundMail)).all()

        # The operator sets the key (as the example file asks) and lets Postfix try again.
        placeholder = re.search(r"^PBEM_SERVER_SECRET_KEY=change-me.*$", settings.read_text(), re.M).group(0)
        key = f"PBEM_SERVER_SECRET_KEY={secrets.token_hex(32)}"
        settings.write_text(settings.read_text().replace(placeholder, key))
        postfix.run_documented(["postqueue", "-f"])
        wait_until(lambda: not postfix.queue(), lambda: f"the mail to go in\n{postfix.log()}")
        db.session.rollback()
        stored = db.session.scalars(select(InboundMail)).one()
        assert (message_id_of(stored), stored.mail_from, stored.rcpt_to) == (asked, alice.email, COMMANDS)
        assert stored.status == "processed", stored.note
        outbox = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == alice.email)).one()
        assert outbox.headers["In-Reply-To"] == asked

        # The same wrapper, run by root, reads a relative path where it was started; from a directory the
        # pbem user may not read (the test's own, 0700) it says where it runs instead.
        (shared / "records.jsonl").write_text("\n")
        done = subprocess.run([str(wrapper), "import", "records.jsonl"], cwd=shared, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and "0 game(s) imported, 0 already here, 0 refused." in done.stdout, done
        denied = subprocess.run([str(wrapper), "status", "--no-mta-queue"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120)
        assert f"nobody may not read {tmp_path}, so this runs in {shared}" in denied.stderr, denied
    except BaseException:
        print(postfix.log())
        raise
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_the_upgrade_as_documented_loses_no_mail_that_arrives_meanwhile(
    app: Flask, ctx: Flask, sink, postfix: Postfix, players, tmp_path: Path
) -> None:
    """The upgrade block of DEPLOY.md, run line by line (systemctl as the units would start and stop the
    processes), with Postfix's own retry timers (minutes, not the seconds of the other tests): a mail
    sent while the listener is stopped waits in Postfix, and the block's `postqueue -f` brings it in at
    once; `pbem status` at its end finds all well."""
    import flask_migrate

    alice = players[0]
    with app.app_context():
        flask_migrate.stamp()  # The test's tables are the newest schema: `pbem db upgrade` has none to add.
    postfix.main_cf("minimal_backoff_time = 300s\nmaximal_backoff_time = 4000s\nqueue_run_delay = 300s\n")
    postfix.run_documented(["postfix", "reload"])
    procs = Processes(tmp_path)
    env = environment(app, PBEM_SCHEDULER_OUTBOX_INTERVAL_SECONDS="1", MAIL_CONFIG=str(postfix.etc))
    units = {
        "pbem-smtpd": option(exec_start("pbem-smtpd.service"), "--port", str(postfix.listener_port)),
        "pbem-scheduler": exec_start("pbem-scheduler.service"),
    }
    running: dict[str, object] = {}
    post = Players(sink)
    ran: list[str] = []
    try:
        for unit, argv in units.items():
            running[unit] = procs.start(unit, argv, env)
        wait_for_port(postfix.listener_port, running["pbem-smtpd"])
        post.answer_to(alice.email, post.command(alice.email, "help"))
        meanwhile = None
        for command in commands(deploy_block("upgrade")):
            ran.append(" ".join(command))
            if command[:2] in (["cd", "/opt/pbem"], ["git", "pull"]) or command[1:3] == ["install", "-e"]:
                continue  # The new code: it is the code under test already.
            if command[:2] == ["systemctl", "stop"]:
                for unit in command[2:]:
                    procs.stop(running.pop(unit))
                meanwhile = post.command(alice.email, "games")  # A player's mail, while the listener is down.
                wait_until(lambda: any(r.get("delay_reason") for m in postfix.queue()
                                       for r in m["recipients"]), "Postfix to defer the mail sent meanwhile")
            elif command[:2] == ["systemctl", "start"]:
                for unit in command[2:]:
                    running[unit] = procs.start(unit, units[unit], env)
                wait_for_port(postfix.listener_port, running["pbem-smtpd"])
            elif command[:2] == ["systemctl", "reload"]:
                assert command[2:] == ["pbem-web"]  # No web server in this test.
            elif command[0] == "pbem":
                done = subprocess.run([*PBEM, *command[1:]], env=env, capture_output=True, text=True,
                                      timeout=120)
                assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
                if command[1] == "status":
                    assert "All well." in done.stdout and "MTA queue:" in done.stdout
            else:
                assert command == ["postqueue", "-f"], command
                postfix.run_documented(command)
                flushed_at = time.monotonic()
        assert meanwhile is not None and ran.index("postqueue -f") < ran.index("pbem status")
        # Not the minutes of Postfix's backoff: the flush brought it in.
        post.answer_to(alice.email, meanwhile)
        assert time.monotonic() - flushed_at < 60
        db.session.rollback()
        assert {r.status for r in db.session.scalars(select(InboundMail))} == {"processed"}
        assert len(post.mails(alice.email)) == 2
    except BaseException:
        print(procs.logs())
        print(postfix.log())
        raise
    finally:
        procs.stop_all()
