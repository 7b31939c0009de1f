"""A move by mail beside its floor: the same SMTP conversations, statements and mails, sent bare.

Run: ``.venv/bin/python bench/mailfloor.py`` (SQLite; add ``--pg ADMIN_URL``, or set
``PBEM_TEST_DATABASE_URL``, for PostgreSQL too: scratch databases are created and dropped).

Issue #33 asks a move by mail to cost at most 4 ms of CPU, both answers delivered, the database server
counted.  What that figure can be, on a given machine, is bounded below by the work no implementation can
skip; this benchmark measures that floor beside ours, message by message, in one process, as
``bench/movepath.py`` does for the move path alone.

Two identical databases hold ``bench/mail.py``'s players and Cambio games.  For each reply (a legal move
over a quoted line, from the player to the move request's reply address):

- **ours**, on the first database: the reply sent by ``smtplib`` to the listener's own aiosmtpd
  controller and handler (``pbem smtpd``'s, which stores the message), then ``process.process_one`` (the
  processor: the move made, the mover's answer and the opponent's move request queued), then
  ``outbox.deliver_due`` (the deliverer: both mails rendered and sent to a real SMTP sink, a process of
  its own).  Every statement sent to the database is recorded, with the transactions' ends.
- **the floor**, on the second: the same reply sent by ``smtplib`` to an aiosmtpd controller whose
  handler only keeps the message; the message read by the standard library (``email`` parsing it, its
  first text part decoded); the statements ours recorded, replayed bare through the driver in the same
  transactions with the very same values (the store, the claim, the game locked and read, the move's
  writes, both outbox rows with the bodies ours rendered, the outcome, the deliverer's claim and marks);
  then the two mails ours sent, the very same bytes, sent by ``smtplib`` to the same sink over one
  connection.  No engine, no template, no decision: the rows and bytes a mail move must move.

CPU is this process's (``time.process_time``, less the sending side of the incoming SMTP conversation,
which is the player's mail program) plus, on PostgreSQL, the database server's: for ours the backends
serving the first database, sampled from /proc through the round (``bench.mail.ServerCpu``); for the
floor the one backend of its connection (``/proc/PID/schedstat``).  The sink's CPU is neither's.

Printed per database, min/median over the rounds (``--rounds``, 3) of 64 messages: CPU ms a message of
ours and of the floor (and the server's part of each), their ratio, the floor's parts (SMTP in, the
statements with their server's CPU, parsing, SMTP out), the statements a message sends, and the load
average; then what the issue's 4 ms is against this machine's floor.
"""

from __future__ import annotations

import email
import email.policy
import shutil
import smtplib
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from aiosmtpd.controller import Controller

from bench.mail import TARGET_CPU_MS, Bench, ServerCpu, spread
from bench.mailstages import listener_controller, reply
from bench.movepath import COMMIT, ROLLBACK, backend_cpu, recording
from bench.scratch import ScratchDatabases, arguments, free_port, load_average, machine
from pbem.core.extensions import db
from pbem.mailin import process, smtpd
from pbem.mailout import outbox

PARTS = ("smtp in", "statements", "of it server", "parse", "smtp out")
OURS_PARTS = ("smtp in", "process", "deliver", "server")  # (The listener's SMTP in with its store.)


class FloorDatabase:
    """The floor's one connection through the bare driver (psycopg or sqlite3), replaying statements."""

    def __init__(self, url: str, synchronous: str) -> None:
        self.postgresql = url.startswith("postgresql")
        if self.postgresql:
            import psycopg

            self.connection: Any = psycopg.connect(sa.make_url(url).set(drivername="postgresql")
                                                   .render_as_string(hide_password=False))
            self.pid: int | None = self.connection.info.backend_pid
        else:
            # Autocommit in the driver, each transaction begun by hand with the write lock, as the server
            # begins its own (``BEGIN IMMEDIATE``); the same journal and durability as the server's.
            self.connection = sqlite3.connect(str(sa.make_url(url).database), isolation_level=None)
            for pragma in ("journal_mode=WAL", "foreign_keys=ON", f"synchronous={synchronous}",
                           "busy_timeout=5000"):
                self.connection.execute(f"PRAGMA {pragma}")
            self.pid = None
        self._open = False

    def replay(self, sent: list[tuple[str, Any, bool]]) -> None:
        """Send the recorded statements, ending each transaction where ours ended it."""
        connection = self.connection
        for text, parameters, _many in sent:
            if text in (COMMIT, ROLLBACK):
                if self._open and self.postgresql:
                    connection.commit() if text == COMMIT else connection.rollback()
                elif self._open:
                    connection.execute(text)
                self._open = False
                continue
            if not self.postgresql:
                beginning = text.upper().startswith("BEGIN")
                if self._open and beginning:
                    # Ours ended a transaction that only read through the driver (unrecorded) before
                    # it began the write transaction: so does the floor.
                    connection.execute(ROLLBACK)
                elif not self._open and not beginning:
                    connection.execute("BEGIN IMMEDIATE")
            self._open = True
            cursor = connection.execute(text, parameters or ())
            if cursor.description is not None:
                cursor.fetchall()
        if self._open:
            raise RuntimeError("a recorded transaction was left open")

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def parse_bare(raw: bytes) -> str:
    """What the standard library gives as a mail's own text: the message parsed, its first text part
    decoded."""
    message = email.message_from_bytes(raw, policy=email.policy.compat32)
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            payload = cast(bytes, part.get_payload(decode=True))
            return payload.decode(part.get_content_charset() or "utf-8", "replace")
    return ""


def send_timed(port: int, message: Any) -> float:
    """Send a reply by smtplib: the process's CPU meanwhile but this (the sending) thread's own."""
    own, whole = time.thread_time(), time.process_time()
    with smtplib.SMTP("127.0.0.1", port) as client:
        client.send_message(message)
    return (time.process_time() - whole) - (time.thread_time() - own)


def counted(sent: list[tuple[str, Any, bool]]) -> int:
    """How many statements were sent, but the transactions' beginnings and ends."""
    return sum(1 for text, *_ in sent
               if text not in (COMMIT, ROLLBACK) and not text.upper().startswith("BEGIN"))


def run(real_url: str, floor_url: str, label: str, rounds: int, each: bool, tmp: str) -> None:
    """Every round on the pair of databases; prints ours, the floor and their ratio."""
    print(f"{label}: load average {load_average()}", flush=True)
    bench = Bench(real_url, tmp)
    floor = FloorDatabase(floor_url, bench.app.config["PBEM"]["database"]["sqlite_synchronous"].upper())
    stored: list[int] = []
    kept: list[bytes] = []
    delivered: list[tuple[str, str, bytes]] = []

    class Handler(smtpd.StoreHandler):
        def _store(self, raw: bytes, mail_from: str, rcpt_tos: list[str]) -> process.Received:
            received = super()._store(raw, mail_from, rcpt_tos)
            stored.append(received.row_id)
            return received

    class Keep:
        """The floor's handler: the message kept in memory, nothing else."""

        async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:
            kept.append(envelope.original_content or envelope.content)
            return "250 OK"

    ours_port, floor_port = free_port(), free_port()
    listener = listener_controller(Handler(bench.app), ours_port)
    bare = Controller(Keep(), hostname="127.0.0.1", port=floor_port, server_hostname="example.org")
    sending = outbox._Connection.send

    def send_and_keep(self: Any, sender: str, recipient: str, data: bytes) -> str:
        delivered.append((sender, recipient, data))
        return sending(self, sender, recipient, data)

    outbox._Connection.send = send_and_keep  # type: ignore[method-assign]
    bench.start_sink()
    listener.start()
    bare.start()
    server_cpu = ServerCpu(real_url, interval=0.2)
    figures: dict[str, list[float]] = defaultdict(list)
    with bench.app.app_context():
        engine = db.engine

    def deliver_ours(totals: dict[str, float], expected: int) -> list[tuple[str, Any, bool]]:
        """The deliverer sends what is due, as often as it finds some; the statements it sent."""
        with recording(engine, ends=True) as sent:
            cpu = time.process_time()
            with bench.app.app_context():
                while outbox.deliver_due(500) != (0, 0):
                    pass
                db.session.remove()
            totals["ours deliver"] += time.process_time() - cpu
        assert len(delivered) == expected, (len(delivered), expected)
        return sent

    def deliver_floor(totals: dict[str, float], sent: list[tuple[str, Any, bool]]) -> None:
        """The deliverer's statements replayed, and the mails it sent sent again over one connection."""
        cpu, server = time.process_time(), backend_cpu(floor.pid)
        floor.replay(sent)
        server = backend_cpu(floor.pid) - server
        replayed = time.process_time()
        with smtplib.SMTP("127.0.0.1", bench.sink_port) as client:
            for mail_from, recipient, data in delivered:
                client.sendmail(mail_from, [recipient], data)
        totals["statements"] += replayed - cpu + server
        totals["of it server"] += server
        totals["smtp out"] += time.process_time() - replayed
        delivered.clear()

    try:
        for number in range(rounds + 1):  # The first round warms up: imports, caches, prepared statements.
            work = bench.next_moves()
            totals: dict[str, float] = defaultdict(float)
            statements = 0
            server_cpu.start()
            for _game_id, sender, to, move in work:
                message = reply(sender, to, move)
                # Ours: the listener's conversation and store, then the processor.
                with recording(engine, ends=True) as sent:
                    totals["ours smtp in"] += send_timed(ours_port, message)
                    cpu = time.process_time()
                    with bench.app.app_context():
                        (row_id,) = stored
                        process.process_one(row_id)
                        db.session.remove()
                    totals["ours process"] += time.process_time() - cpu
                stored.clear()
                # The floor: the same conversation kept bare, the statements replayed, the message read.
                totals["smtp in"] += send_timed(floor_port, message)
                cpu, server = time.process_time(), backend_cpu(floor.pid)
                floor.replay(sent)
                server = backend_cpu(floor.pid) - server
                replayed = time.process_time()
                (raw,) = kept
                assert move in parse_bare(raw)
                kept.clear()
                totals["statements"] += replayed - cpu + server
                totals["of it server"] += server
                totals["parse"] += time.process_time() - replayed
                statements += counted(sent)
                if each:  # A pass of the deliverer for each move's two mails, as on a quiet server.
                    sent = deliver_ours(totals, 2)
                    deliver_floor(totals, sent)
                    statements += counted(sent)
            if not each:  # One pass for the round, as bench/mail.py delivers.
                sent = deliver_ours(totals, 2 * len(work))
                deliver_floor(totals, sent)
                statements += counted(sent)
            totals["ours server"] = server_cpu.stop()
            totals["ours"] = sum(totals["ours " + part] for part in OURS_PARTS)
            totals["floor"] = sum(totals[part] for part in PARTS if part != "of it server")
            if number:
                for name, seconds in totals.items():
                    figures[name].append(1000 * seconds / len(work))
                figures["statements a message"].append(statements / len(work))
    finally:
        outbox._Connection.send = sending  # type: ignore[method-assign]
        listener.stop()
        bare.stop()
        bench.stop()
        server_cpu.dispose()
        floor.close()
        with bench.app.app_context():
            db.engine.dispose()
    report(label, figures)


def report(label: str, figures: dict[str, list[float]]) -> None:
    """Print one database's figures."""
    ratios = [o / f for o, f in zip(figures["ours"], figures["floor"], strict=True)]
    print(f"{label:<11} {spread(figures['ours'], 3):>13} {spread(figures['ours server'], 3):>13} "
          f"{spread(figures['floor'], 3):>13} {spread(figures['of it server'], 3):>13} "
          f"{spread(ratios, 2):>11}x "
          f"{statistics.median(figures['statements a message']):>6.1f}", flush=True)
    print(f"{label:<11} ours' parts: " + ", ".join(
        f"{part} {spread(figures['ours ' + part], 3)}" for part in OURS_PARTS), flush=True)
    print(f"{label:<11} the floor's parts: " + ", ".join(
        f"{part} {spread(figures[part], 3)}" for part in PARTS), flush=True)
    floor = statistics.median(figures["floor"])
    print(f"{label:<11} the target, {TARGET_CPU_MS} ms, is {TARGET_CPU_MS / floor:.2f}x this machine's floor "
          f"(median); ours is {statistics.median(ratios):.2f}x it (the rounds' median ratio)", flush=True)
    print(f"{label}: load average {load_average()}", flush=True)


def sqlite_case(rounds: int, each: bool) -> None:
    """Both databases as SQLite files, copies of one filled once."""
    with tempfile.TemporaryDirectory() as tmp:
        made = Bench(f"sqlite:///{tmp}/made.db", tmp)
        made.setup()
        with made.app.app_context():
            db.engine.dispose()
        for name in ("real", "floor"):
            shutil.copy(f"{tmp}/made.db", f"{tmp}/{name}.db")
        run(f"sqlite:///{tmp}/real.db", f"sqlite:///{tmp}/floor.db", "sqlite", rounds, each, tmp)


def postgresql_case(admin_url: str, rounds: int, each: bool) -> None:
    """Both databases on PostgreSQL, made from one filled database as a template."""
    with ScratchDatabases(admin_url) as scratch, tempfile.TemporaryDirectory() as tmp:
        made_url = scratch.create()
        made = Bench(made_url, tmp)
        made.setup()
        with made.app.app_context():
            db.engine.dispose()
        run(scratch.create(template=made_url), scratch.create(template=made_url), "postgresql", rounds, each,
            tmp)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of a reply to every game (after one more)")
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--each", action="store_true",
                        help="a pass of the deliverer for each move (else one for each round's moves)")
    args = parser.parse_args()
    print(machine())
    print("CPU ms a move by mail, both answers delivered (this process and the database server's), "
          f"min/median of {args.rounds} rounds")
    print(f"{'database':<11} {'ours':>13} {'of it server':>13} {'floor':>13} {'of it server':>13} "
          f"{'ratio':>12} {'stmts':>6}")
    if not args.no_sqlite:
        sqlite_case(args.rounds, args.each)
    if args.pg:
        postgresql_case(args.pg, args.rounds, args.each)


if __name__ == "__main__":
    main()
