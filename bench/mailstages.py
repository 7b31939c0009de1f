"""The listener's own CPU for a mailed move, stage by stage, in one process, message by message.

Run: ``.venv/bin/python bench/mailstages.py`` (SQLite; add ``--pg ADMIN_URL`` for PostgreSQL too).

The games and replies of ``bench/mail.py`` (Cambio, each reply a legal move over a quoted line, from the
player's registered address to the move request's reply address), but no processes of their own: the
listener's aiosmtpd controller runs in this process with a handler that only stores (as
``pbem smtpd``'s does before it wakes its processor), and a reply is sent to it by ``smtplib`` from this
process's main thread; then the stored message is processed here by ``process.process_one``, as the
listener's processor thread calls it: at once (``--each``, as the listener does), or once every reply of
the round is stored.  Each stage's CPU is the thread's (``time.thread_time``) around it, summed over the
functions it calls:

- ``smtp``: the SMTP conversation and the hand-off to the store thread, on the listener's side (the
  process's CPU during the send but the sending thread's own and the store's);
- ``store``: ``receive.store_message`` in the executor thread;
- ``process``: ``process_one`` whole, and in it ``parse`` (``parse.read``), ``own words``
  (``quotes.own_words``, with the mails answered if it reads them), ``read reply``
  (``reading.read_reply`` and ``Position.in_game``), ``run`` (``run_reply``: the move path, the
  opponent's move request with it), ``answer`` (the mover's answer composed: ``compose`` of
  ``mail/answer.txt``) and ``enqueue`` (outbox rows written: the answer's, and the move request's,
  which ``run`` counts too);
- ``db server``: on PostgreSQL, the server's CPU for the round (stores and processing), from /proc.

Printed per database, ms of CPU a message, min/median over the rounds (``--rounds``, 3), and with
``--profile N`` the N functions of most own time (cProfile) over processing in the last round.
"""

from __future__ import annotations

import cProfile
import functools
import os
import pstats
import smtplib
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa
from aiosmtpd.controller import Controller

from bench.mail import Bench, ServerCpu
from bench.scratch import ScratchDatabases, arguments, free_port, load_average
from pbem.core.extensions import db
from pbem.core.models import InboundMail
from pbem.mailin import parse as mailparse
from pbem.mailin import process, quotes, reading, smtpd

STAGES = ("smtp", "store", "process", "parse", "own words", "read reply", "run", "answer", "enqueue",
          "db server")


class Stages:
    """CPU seconds spent in each stage, summed over a round."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._depth: dict[str, int] = defaultdict(int)

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        """Count the thread's CPU inside the block to ``stage`` (once, however deeply nested)."""
        self._depth[stage] += 1
        started = time.thread_time()
        try:
            yield
        finally:
            self._depth[stage] -= 1
            if not self._depth[stage]:
                self.seconds[stage] += time.thread_time() - started

    def wrap(self, owner: Any, name: str, stage: str, when: Callable[..., bool] | None = None) -> None:
        """Time every call of ``owner.name`` as ``stage`` (only the calls ``when`` accepts)."""
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if when is not None and not when(*args, **kwargs):
                return original(*args, **kwargs)
            with self.timing(stage):
                return original(*args, **kwargs)

        setattr(owner, name, timed)


def listener_controller(handler: smtpd.StoreHandler, port: int) -> Controller:
    """An aiosmtpd controller on ``port`` serving ``handler`` with the listener's own SMTP server class."""
    controller = Controller(handler, hostname="127.0.0.1", port=port, decode_data=False,
                            server_hostname="example.org")
    controller.factory = lambda: smtpd._SMTPServer(controller.handler, **controller.SMTP_kwargs)  # type: ignore[method-assign]
    return controller


def reply(sender: str, to: str, move: str) -> EmailMessage:
    """The reply ``bench/mail.py`` sends."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = sender, to, "Re: your move"
    message["Message-ID"] = f"<{uuid.uuid4().hex}@example.org>"
    message.set_content(f"{move}\n\n> the board as mailed\n")
    return message


def run(url: str, label: str, rounds: int, profile: int, each: bool) -> None:
    """Every round on one fresh database; prints the stages' figures."""
    print(f"{label}: load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(url if "postgresql" in url else f"sqlite:///{tmp}/stages.db", tmp)
        bench.setup()
        stages = Stages()
        stored: list[int] = []
        store_cpu = [0.0]

        class Handler(smtpd.StoreHandler):
            def _store(self, raw: bytes, mail_from: str, rcpt_tos: list[str]) -> process.Received:
                started = time.thread_time()
                try:
                    received = super()._store(raw, mail_from, rcpt_tos)
                finally:
                    store_cpu[0] += time.thread_time() - started
                stored.append(received.row_id)
                return received

        port = free_port()
        controller = listener_controller(Handler(bench.app), port)
        controller.start()
        stages.wrap(mailparse, "read", "parse")
        stages.wrap(quotes, "own_words", "own words")
        stages.wrap(reading, "read_reply", "read reply")
        stages.wrap(reading.Position, "in_game", "read reply")
        stages.wrap(process, "run_reply", "run")
        stages.wrap(process, "compose", "answer", when=lambda template, **_: template == "mail/answer.txt")
        stages.wrap(process.outbox, "enqueue", "enqueue")
        server_cpu = ServerCpu(bench.url)
        figures: dict[str, list[float]] = defaultdict(list)
        profiler = cProfile.Profile(time.thread_time)
        try:
            for number in range(rounds + 1):  # The first round warms up.
                work = bench.next_moves()
                stages.seconds.clear()
                store_cpu[0] = 0.0
                smtp = 0.0
                server_cpu.start()
                last = number == rounds and profile

                def processing(last: bool = last) -> None:
                    """Process what was stored, one message at a time, as the listener's processor does."""
                    with bench.app.app_context():
                        for row_id in stored:
                            if last:
                                profiler.enable()
                            with stages.timing("process"):
                                # (On PostgreSQL a message's processor goes on with its sender's next ones.)
                                process.process_one(row_id)
                            if last:
                                profiler.disable()
                            db.session.remove()
                    stored.clear()

                for _game_id, sender, to, move in work:
                    message = reply(sender, to, move)
                    own, whole = time.thread_time(), time.process_time()
                    with smtplib.SMTP("127.0.0.1", port) as client:
                        client.send_message(message)
                    smtp += (time.process_time() - whole) - (time.thread_time() - own)
                    if each:
                        processing()
                processing()
                stages.seconds["store"] = store_cpu[0]
                stages.seconds["smtp"] = smtp - store_cpu[0]
                stages.seconds["db server"] = server_cpu.stop()
                with bench.app.app_context():
                    done = db.session.execute(
                        sa.select(InboundMail.status, sa.func.count()).group_by(InboundMail.status))
                    assert dict(done.all()) == {"processed": (number + 1) * len(work)}
                    db.session.remove()
                if number:
                    for stage in STAGES:
                        figures[stage].append(1000 * stages.seconds[stage] / len(work))
        finally:
            controller.stop()
            server_cpu.dispose()
            if "postgresql" in url:
                with bench.app.app_context():
                    db.drop_all()
                    db.engine.dispose()
        print(f"{label}: {len(work)} messages a round, ms of CPU a message (min/median of {rounds} rounds)")
        for stage in STAGES:
            values = figures[stage]
            print(f"  {stage:<11} {min(values):7.3f} {statistics.median(values):7.3f}")
        if profile:
            pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(profile)
    print(f"{label}: load average {load_average()}", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of a reply to every game")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions of most own time")
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--each", action="store_true",
                        help="process each message as soon as it is stored (else a round's after all are)")
    args = parser.parse_args()
    if not args.no_sqlite:
        run("sqlite", "sqlite", args.rounds, args.profile, args.each)
    if args.pg:
        with ScratchDatabases(args.pg) as scratch:
            run(scratch.create(), "postgresql", args.rounds, args.profile, args.each)


if __name__ == "__main__":
    main()
