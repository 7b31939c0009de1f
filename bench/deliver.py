"""The deliverer's CPU for a mail move's two mails, stage by stage, in one process.

Run: ``.venv/bin/python bench/deliver.py`` (SQLite; add ``--pg ADMIN_URL`` for PostgreSQL too).

The games, listener and sink of ``bench/mail.py``: one real round of replies (a move in each of its 64
games, by mail through ``pbem smtpd``) writes the outbox as a mail move does, the move's confirmation
and the opponent's move request, 128 mails, and they are delivered to the sink.  Then, each round, the
same mails are made due again (unsent, unclaimed, outside the timing) and ``outbox.deliver_due`` sends
them all to the sink in one pass, as ``bench/mail.py`` does after each round (``--per-pass 2``: a pass a
move's two mails, as a deliverer polling a quieter server sends them; each pass's own statements, its
SMTP connection and the last pass that finds nothing counted in).  Each stage's CPU is this thread's
(``time.thread_time``) around it:

- ``deliver``: ``deliver_due`` whole; in it ``claim`` (the due mails taken), ``hold back`` (the look
  for addresses that bounce), ``render`` (the bytes of each mail), ``smtp`` (the SMTP conversation of
  each mail, the connection's opening and closing with it), ``mark`` (the mails marked sent), and
  ``other`` (the rest: the look for the due mails, the loop);
- ``db server``: on PostgreSQL, the server's CPU for the round, from /proc.

Printed per database, ms of CPU a move (two mails), min/median/mean over the rounds (``--rounds``, 10;
the server's CPU is read in ticks of 10 ms, a tenth of a round's: its mean is the figure), and
with ``--profile N`` the N functions of most own time (cProfile) over the last round's delivery.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlalchemy as sa

from bench.mail import Bench, ServerCpu
from bench.mailstages import Stages
from bench.scratch import ScratchDatabases, arguments, load_average
from pbem.core.extensions import db
from pbem.mailout import outbox

STAGES = ("deliver", "claim", "hold back", "render", "smtp", "mark", "other", "db server")
# The deliverer's parts timed, as (owner, attribute, stage); a part a version lacks is left out.
PARTS = ((outbox, "_claim", "claim"), (outbox, "_claim_due", "claim"), (outbox, "_hold_back", "hold back"),
         (outbox, "render", "render"), (outbox._Connection, "send", "smtp"),
         (outbox._Connection, "close", "smtp"), (outbox, "_record", "mark"), (outbox, "_retried", "mark"))


def run(url: str, label: str, rounds: int, profile: int, sort: str = "tottime", per_pass: int = 500) -> None:
    """Every round on one fresh database; prints the stages' figures (and the profile, sorted by ``sort``)."""
    print(f"{label}: load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(url if "postgresql" in url else f"sqlite:///{tmp}/deliver.db", tmp)
        bench.setup()
        bench.start()
        stages = Stages()
        for owner, name, stage in PARTS:
            if hasattr(owner, name):
                stages.wrap(owner, name, stage)
        server_cpu = ServerCpu(bench.url)
        figures: dict[str, list[float]] = defaultdict(list)
        profiler = cProfile.Profile(time.thread_time)
        try:
            moves = bench.round(1)[0]  # The mails of a round of mail moves, delivered once.
            for number in range(rounds + 1):  # The first round warms up.
                with bench.app.app_context():
                    db.session.execute(sa.text(
                        "UPDATE outbox_mail SET sent_at = NULL, claimed_until = NULL, attempts = 0"))
                    db.session.commit()
                    last = number == rounds and profile
                    stages.seconds.clear()
                    server_cpu.start()
                    if last:
                        profiler.enable()
                    sent = failed = 0
                    with stages.timing("deliver"):
                        while True:  # Passes of the deliverer, each taking up to per_pass mails.
                            went, refused = outbox.deliver_due(per_pass)
                            sent, failed = sent + went, failed + refused
                            if not went + refused:
                                break
                    if last:
                        profiler.disable()
                    stages.seconds["db server"] = server_cpu.stop()
                    assert (sent, failed) == (2 * moves, 0), (sent, failed)
                    db.session.remove()
                stages.seconds["other"] = stages.seconds["deliver"] - sum(
                    stages.seconds[stage] for stage in STAGES[1:-2])
                if number:
                    for stage in STAGES:
                        figures[stage].append(1000 * stages.seconds[stage] / moves)
        finally:
            bench.stop()
            server_cpu.dispose()
            if "postgresql" in url:
                with bench.app.app_context():
                    db.drop_all()
                    db.engine.dispose()
        print(f"{label}: {2 * moves} mails a round, ms of CPU a move (two mails; min/median/mean of {rounds} "
              "rounds)")
        for stage in STAGES:
            values = figures[stage]
            print(f"  {stage:<11} {min(values):7.3f} {statistics.median(values):7.3f} "
                  f"{statistics.mean(values):7.3f}")
        if profile:
            pstats.Stats(profiler).sort_stats(sort).print_stats(profile)
    print(f"{label}: load average {load_average()}", flush=True)


def main() -> None:
    """SQLite, and PostgreSQL when given an admin URL."""
    parser = arguments(__doc__)
    parser.add_argument("--rounds", type=int, default=10, help="deliveries of the round's mails")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions of most own time")
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    parser.add_argument("--per-pass", type=int, default=500,
                        help="mails a pass of the deliverer takes (2: one pass a move, as a quiet server's)")
    args = parser.parse_args()
    if not args.no_sqlite:
        run("sqlite", "sqlite", args.rounds, args.profile, per_pass=args.per_pass)
    if args.pg:
        with ScratchDatabases(args.pg) as scratch:
            run(scratch.create(), "postgresql", args.rounds, args.profile, per_pass=args.per_pass)


if __name__ == "__main__":
    main()
