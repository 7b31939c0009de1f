"""/healthz for a load balancer and /metrics for Prometheus, as a web worker answers them."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families

from pbem import create_app
from pbem.core.extensions import db
from pbem.game import play
from pbem.mailin import receive
from tests.server.test_kept_pages import end_every_session, pings
from tests.server.test_mail_security import reply_mail
from tests.server.test_page_queries import statements
from tests.server.webclient import WebClient


def test_healthz_says_whether_the_worker_reaches_the_database(app: Flask, ctx: Flask, tmp_path: Path) -> None:
    answer = WebClient(app).get("/healthz")
    assert (answer.status_code, answer.get_data(as_text=True)) == (200, "ok\n")
    assert "Set-Cookie" not in answer.headers  # A load balancer's check leaves no session behind.
    # A worker whose database cannot be reached (here: a file it may not create) is out of service.
    away = create_app({"database": {"url": f"sqlite:///{tmp_path / 'missing' / 'dir' / 'pbem.db'}"},
                       "server": {"instance_path": str(tmp_path / "away")}})
    down = away.test_client().get("/healthz")
    assert (down.status_code, down.get_data(as_text=True)) == (503, "database unreachable\n")
    off = create_app({"database": {"url": app.config["SQLALCHEMY_DATABASE_URI"]},
                      "server": {"instance_path": str(tmp_path / "off")}, "monitoring": {"healthz": False}})
    assert off.test_client().get("/healthz").status_code == 404
    closed(away, off)


def test_healthz_asks_postgresql_once_and_answers_after_a_restart(
        app: Flask, ctx: Flask, tmp_path: Path) -> None:
    """PostgreSQL: each check is the pool's ping of the connection it takes (nothing else is sent);
    after the server ended every session (a restart, a failover) the next check is 200 on a new
    connection; a server that cannot be reached is 503."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the pool's ping is PostgreSQL's")
    web = WebClient(app)
    assert web.get("/healthz").status_code == 200
    with pings() as sent, statements() as statements_sent:
        answers = [web.get("/healthz").status_code for _ in range(3)]
    assert answers == [200] * 3 and len(sent) == 3 and statements_sent == []
    end_every_session()
    answer = web.get("/healthz")
    assert (answer.status_code, answer.get_data(as_text=True)) == (200, "ok\n")
    away = create_app({"database": {"url": "postgresql+psycopg://postgres@127.0.0.1:1/pbem"},
                       "server": {"instance_path": str(tmp_path / "away")}})
    down = away.test_client().get("/healthz")
    assert (down.status_code, down.get_data(as_text=True)) == (503, "database unreachable\n")
    closed(away)


def closed(*apps: Flask) -> None:
    """Close the connections of apps a test made beside its own."""
    for other in apps:
        with other.app_context():
            db.session.remove()
            db.engine.dispose()


def test_metrics_are_off_unless_turned_on_and_read_the_database(app: Flask, ctx: Flask, players,
                                                                 tmp_path: Path) -> None:
    assert WebClient(app).get("/metrics").status_code == 404
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    play.submit(game.id, alice, "b2", "web")
    receive.store(reply_mail(alice.email, "pbem@pbem.localhost", "games").as_bytes())
    on = create_app({"database": {"url": app.config["SQLALCHEMY_DATABASE_URI"]},
                     "server": {"instance_path": str(tmp_path / "on")}, "monitoring": {"metrics": True}})
    answer = on.test_client().get("/metrics")
    assert answer.status_code == 200 and answer.content_type.startswith("text/plain; version=")
    figures = {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
               for family in text_string_to_metric_families(answer.get_data(as_text=True))
               for sample in family.samples}
    assert figures[("pbem_moves_total", (("via", "web"),))] == 1
    assert figures[("pbem_inbound_mail_total", (("status", "received"),))] == 1
    waiting = figures[("pbem_outbox_mail_total", (("state", "waiting"),))]
    assert waiting >= 2 and figures[("pbem_outbox_mail_total", (("state", "sent"),))] == 0
    assert figures[("pbem_outbox_oldest_waiting_seconds", ())] >= 0
    assert figures[("pbem_problems", ())] == 0
    closed(on)
