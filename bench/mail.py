"""The mail path: a move by mail, from SMTP in to the move committed and both mails queued, then delivered.

Run: ``.venv/bin/python bench/mail.py`` (SQLite; add ``--pg ADMIN_URL``, or set ``PBEM_TEST_DATABASE_URL``,
for PostgreSQL too: a scratch database is created and dropped).

A real ``pbem smtpd`` process listens on a loopback port; outbound mail goes to a real SMTP sink in a
process of its own.  Two players have many Cambio games going; each move is a reply to a move request
(``play+TOKEN@…``, from the player's registered address) carrying one legal move.  A move counts as done
when its message is marked processed, which happens in the transaction that queued the two answers (the
mover's confirmation and the opponent's move request).  Then ``pbem outbox deliver`` logic sends the
queue to the sink.

Printed per database and number of concurrent senders: moves, messages per second, p50 and p99 latency
from the start of the SMTP conversation to the move committed with both mails queued, the listener's
CPU milliseconds per move (read from /proc), the deliverer's CPU milliseconds per move, and their sum
beside the floor this issue set: Richard's PBeM server, a C++ process per mail, 9-10 ms for the same work.
"""

from __future__ import annotations

import datetime
import os
import random
import smtplib
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

import games
from bench.scratch import ScratchDatabases, arguments, free_port
from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, InboundMail, User
from pbem.game import play
from pbem.mailin import receive
from pbem.mailout import outbox, tokens

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-mail-secret-not-for-any-real-server"
FLOOR_CPU_MS = 10.0  # Richard's PBeM server, per accepted move with both mails delivered.
GAMES = 64



def wait_for_port(port: int, seconds: float = 20.0) -> None:
    """Return once something accepts connections on ``port``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Bench:
    """One database with its listener and sink processes."""

    def __init__(self, url: str, tmp: str) -> None:
        self.url = url
        self.sink_port = free_port()
        self.smtp_port = free_port()
        self.settings = {
            "server": {"secret_key": SECRET, "instance_path": tmp},
            "database": {"url": url},
            "mail": {"smtp_port": self.sink_port},
        }
        self.app = create_app(self.settings)
        self.env = dict(os.environ, PBEM_SERVER_SECRET_KEY=SECRET, PBEM_SERVER_INSTANCE_PATH=tmp,
                        PBEM_DATABASE_URL=url, PBEM_MAIL_SMTP_PORT=str(self.sink_port),
                        PBEM_CONFIG=str(ROOT / "config" / "testing.toml"), PYTHONPATH=str(ROOT))
        self.processes: list[subprocess.Popen] = []
        self.rng = random.Random(3)

    def setup(self) -> None:
        """The schema, two players and their games."""
        with self.app.app_context():
            db.create_all()
            alice = User(handle="alice", handle_key="alice", email="alice@example.org")
            bob = User(handle="bob", handle_key="bob", email="bob@example.org")
            alice.verified_at = bob.verified_at = play.utcnow()
            db.session.add_all([alice, bob])
            db.session.flush()
            for seed in range(GAMES):
                play.create_game("cambio", [alice, bob], {"size": 5}, created_by=alice, seed=seed)
            db.session.commit()
            outbox_rows = db.session.execute(sa.text("DELETE FROM outbox_mail")).rowcount
            db.session.commit()
            assert outbox_rows
            db.session.remove()

    def start(self) -> None:
        """Start the sink and the listener."""
        self.processes.append(subprocess.Popen(
            [sys.executable, "-m", "aiosmtpd", "-n", "-c", "aiosmtpd.handlers.Sink",
             "-l", f"127.0.0.1:{self.sink_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.listener = subprocess.Popen(
            [str(Path(sys.executable).parent / "pbem"), "smtpd", "--port", str(self.smtp_port)],
            env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        self.processes.append(self.listener)
        wait_for_port(self.sink_port)
        wait_for_port(self.smtp_port)

    def stop(self) -> None:
        """Stop the processes."""
        for process in self.processes:
            process.terminate()
            process.wait(10)

    def next_moves(self) -> list[tuple[int, str, str, str]]:
        """For every active game: (game id, sender, reply address, a legal move) of the seat to move."""
        found = []
        with self.app.app_context():
            for game in db.session.scalars(sa.select(Game).where(Game.status == "active").order_by(Game.id)):
                engine = games.get(game.engine)
                state = engine.load(game.state)
                (number,) = engine.to_move(state)
                seat = next(s for s in game.seats if s.number == number)
                found.append((game.id, seat.user.email, tokens.reply_address(game.id, number, seat.user),
                              self.rng.choice(engine.moves(state, number))))
            db.session.remove()
        return found

    def send(self, sender: str, to: str, move: str) -> str:
        """Send one reply; returns the key it is stored under."""
        message = EmailMessage()
        message_id = f"<{uuid.uuid4().hex}@example.org>"
        message["From"], message["To"], message["Subject"] = sender, to, "Re: your move"
        message["Message-ID"] = message_id
        message.set_content(f"{move}\n\n> the board as mailed\n")
        with smtplib.SMTP("127.0.0.1", self.smtp_port) as smtp:
            smtp.send_message(message)
        return receive.message_key(bytes(message))  # The row's key: the Message-ID with its sender.

    def wait_processed(self, engine: sa.Engine, message_id: str, seconds: float = 60.0) -> float:
        """Return once the message is marked done: the time (``time.time()``) its outcome was recorded.

        The latency is read from the row's ``processed_at``, not from when this poll saw it, so the poll
        can look every 10 ms: eight senders polling every 2 ms ran thousands of queries a second on the
        same two cores as the server, and the benchmark measured itself."""
        query = sa.select(InboundMail.status, InboundMail.processed_at).where(
            InboundMail.message_id == message_id)
        deadline = time.monotonic() + seconds
        with engine.connect() as conn:
            while time.monotonic() < deadline:
                row = conn.execute(query).first()
                conn.rollback()
                if row is not None and row.status in ("processed", "rejected", "failed", "ignored"):
                    assert row.status == "processed", row.status
                    return row.processed_at.replace(tzinfo=datetime.UTC).timestamp()
                time.sleep(0.01)
        raise RuntimeError(f"{message_id} was not processed")

    def round(self, senders: int) -> tuple[int, float, list[float], float, float]:
        """One move in every active game, from ``senders`` concurrent senders.

        Returns (moves, seconds, latencies, listener CPU seconds, deliverer CPU seconds)."""
        work = self.next_moves()
        latencies: list[float] = []
        lock = threading.Lock()
        poll = sa.create_engine(self.url)

        def sender(share: list[tuple[int, str, str, str]]) -> None:
            for _game_id, sender_address, to, move in share:
                started = time.time()
                message_id = self.send(sender_address, to, move)
                done = self.wait_processed(poll, message_id)
                with lock:
                    latencies.append(done - started)

        cpu_before = cpu_seconds(self.listener.pid)
        started = time.perf_counter()
        threads = [threading.Thread(target=sender, args=(work[i::senders],)) for i in range(senders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        listener_cpu = cpu_seconds(self.listener.pid) - cpu_before
        poll.dispose()
        with self.app.app_context():
            queued = db.session.scalar(sa.select(sa.func.count()).select_from(sa.table("outbox_mail"))
                                       .where(sa.column("sent_at").is_(None)))
            db.session.rollback()
            cpu = time.process_time()
            sent = 0
            while True:
                done, _failed = outbox.deliver_due(500)
                sent += done
                if not done:
                    break
            deliver_cpu = time.process_time() - cpu
            db.session.remove()
        assert sent == queued == 2 * len(work), (sent, queued, len(work))
        return len(work), elapsed, latencies, listener_cpu, deliver_cpu


def run(url: str, label: str, rounds: int) -> None:
    """Every sender count on one fresh database."""
    with tempfile.TemporaryDirectory() as tmp:
        for senders in (1, 8):
            bench = Bench(url if "postgresql" in url else f"sqlite:///{tmp}/s{senders}.db", tmp)
            bench.setup()
            bench.start()
            try:
                bench.round(senders)  # Warm up: imports, caches, connections.
                moves, seconds, latencies, listener, deliverer = 0, 0.0, [], 0.0, 0.0
                for _ in range(rounds):
                    n, s, lat, lc, dc = bench.round(senders)
                    moves, seconds = moves + n, seconds + s
                    listener, deliverer = listener + lc, deliverer + dc
                    latencies += lat
            finally:
                bench.stop()
                if "postgresql" in url:
                    with bench.app.app_context():
                        db.drop_all()
                        db.engine.dispose()
            p99 = statistics.quantiles(latencies, n=100)[-1]
            cpu_ms = 1000 * (listener + deliverer) / moves
            print(f"{label:<11} {senders:>7} {moves:>6} {moves / seconds:>8.1f} "
                  f"{1000 * statistics.median(latencies):>8.1f} {1000 * p99:>8.1f} "
                  f"{1000 * listener / moves:>8.2f} {1000 * deliverer / moves:>8.2f} {cpu_ms:>8.2f} "
                  f"{FLOOR_CPU_MS:>6.1f} {cpu_ms / FLOOR_CPU_MS:>6.2f}x", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="moves per game after the warm-up round")
    args = parser.parse_args()
    print(f"{'database':<11} {'senders':>7} {'moves':>6} {'msg/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
          f"{'listen':>8} {'deliver':>8} {'cpu ms':>8} {'floor':>6} {'ratio':>7}")
    run("sqlite", "sqlite", args.rounds)
    if args.pg:
        with ScratchDatabases(args.pg) as scratch:
            run(scratch.create(), "postgresql", args.rounds)


if __name__ == "__main__":
    main()
