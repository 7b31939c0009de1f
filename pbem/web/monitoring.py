"""What a load balancer and Prometheus ask a web worker: ``/healthz`` (can this worker reach the
database?) and ``/metrics`` (the figures of ``pbem status`` and counts of moves and mails, in
Prometheus's text format).

The figures are read from the database at each scrape, not counted in the worker: every gunicorn worker
gives the same answer, whichever the scrape reaches, and nothing needs prometheus-client's multiprocess
mode.  Each is switched by ``[monitoring]``: ``healthz`` on by default, ``metrics`` off.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from flask import Blueprint, abort, current_app
from sqlalchemy import func, select
from werkzeug.wrappers import Response

from pbem.core.extensions import db
from pbem.core.models import InboundMail, Move, OutboxMail
from pbem.schedule import status

if TYPE_CHECKING:
    from prometheus_client.core import Metric

bp = Blueprint("monitoring", __name__)


def _enabled(name: str) -> None:
    if not current_app.config["PBEM"]["monitoring"][name]:
        abort(404)


@bp.get("/healthz")
def healthz() -> Response:
    """200 "ok" while this worker can reach the database, 503 otherwise."""
    _enabled("healthz")
    try:
        _database_answers()
    except Exception as exc:
        current_app.logger.warning("healthz: the database cannot be reached: %s", type(exc).__name__)
        return Response("database unreachable\n", 503, mimetype="text/plain")
    return Response("ok\n", 200, mimetype="text/plain")


def _database_answers() -> None:
    """Raise unless the database answers this worker.

    A connection is taken from the pool and given back, past the session: on PostgreSQL the pool pings
    one it holds before handing it out (``pool_pre_ping``, set by :func:`pbem.core.config.flask_config`)
    and makes a new one by connecting, so taking one is the check, one round trip.  Through the session
    a ``SELECT 1`` cost four (the ping, BEGIN, the statement, ROLLBACK), and /healthz 3.3 times bare
    Flask's CPU (bench/web.py).  SQLite's pool holds open connections, asked a statement."""
    engine = db.engine
    connection = engine.raw_connection()
    try:
        if engine.dialect.name != "postgresql":
            connection.cursor().execute("SELECT 1")
    finally:
        connection.close()


@bp.get("/metrics")
def metrics() -> Response:
    """The figures, in Prometheus's text format."""
    _enabled("metrics")
    # Imported here, as in the collector: prometheus-client is a megabyte that a worker whose metrics are
    # off (the default) never needs.
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Figures())
    return Response(generate_latest(registry), 200, content_type=CONTENT_TYPE_LATEST)


class _Figures:
    """A collector reading the figures from the database when scraped."""

    def collect(self) -> Iterator[Metric]:
        """The metrics, as of now."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        moves = CounterMetricFamily("pbem_moves", "Moves played, by how they were made.", labels=["via"])
        for via, count in db.session.execute(
            select(Move.via, func.count(Move.id)).where(Move.kind == "move").group_by(Move.via)
        ):
            moves.add_metric([via], count)
        yield moves
        inbound = CounterMetricFamily("pbem_inbound_mail", "Mails received, by what became of them.",
                                      labels=["status"])
        for state, count in db.session.execute(
            select(InboundMail.status, func.count(InboundMail.id)).group_by(InboundMail.status)
        ):
            inbound.add_metric([state], count)
        yield inbound
        total, sent, given_up = db.session.execute(select(
            func.count(OutboxMail.id), func.count(OutboxMail.sent_at), func.count(OutboxMail.failed_at)
        )).one()
        outbox = CounterMetricFamily("pbem_outbox_mail", "Mails written to the outbox, by state.",
                                     labels=["state"])
        for state, count in (("sent", sent), ("given_up", given_up), ("waiting", total - sent - given_up)):
            outbox.add_metric([state], count)
        yield outbox
        found = status.check()
        for name, help_text, moment in (
            ("pbem_inbound_oldest_waiting_seconds", "Age of the oldest stored mail not yet processed.",
             found.inbound_oldest_waiting),
            ("pbem_outbox_oldest_waiting_seconds", "Age of the oldest mail not yet sent.",
             found.outbox_oldest),
            ("pbem_sweep_lag_seconds", "How long the longest-due reminder or deadline has been due.",
             found.sweep_oldest_due),
        ):
            age = found.age(moment)
            yield GaugeMetricFamily(name, help_text, value=0 if age is None else age.total_seconds())
        yield GaugeMetricFamily("pbem_inbound_failed_last_day", "Inbound mails failed or interrupted in the "
                                "last day.", value=len(found.inbound_failed_recently))
        yield GaugeMetricFamily("pbem_outbox_given_up_last_day", "Mails given up in the last day.",
                                value=found.outbox_given_up)
        beats = GaugeMetricFamily("pbem_heartbeat_age_seconds", "Time since each running listener's and "
                                  "scheduler's last heartbeat.", labels=["kind", "name"])
        for beat in found.processes:
            age = found.age(beat.beat_at)
            if beat.stopped_at is None and age is not None:
                beats.add_metric([beat.kind, beat.name], age.total_seconds())
        yield beats
        yield GaugeMetricFamily("pbem_problems", "Problems `pbem status` reports (the MTA's queue aside).",
                                value=len(found.problems))
        db.session.rollback()
