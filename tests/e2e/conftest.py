"""Browser fixtures: the app served on a loopback port from a thread, outbound mail caught by a real SMTP
sink, and Debian's Chromium driven by Playwright.  SQLite only (browser tests are slow)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from playwright.sync_api import Browser, sync_playwright
from werkzeug.serving import make_server

from pbem import create_app
from pbem.core.extensions import db
from tests.conftest import ROOT, free_port
from tests.server.conftest import Sink

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the run."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def sink(tmp_path: Path) -> Iterator[Sink]:
    """A real SMTP server on loopback that keeps what the outbox delivers."""
    s = Sink(tmp_path / "sink", free_port())
    s.start()
    yield s
    s.stop()


class LiveServer:
    """The app served over HTTP from a thread."""

    def __init__(self, app: Flask, port: int) -> None:
        self.app, self.port = app, port
        self.server = make_server("127.0.0.1", port, app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.thread.join(10)

    @property
    def url(self) -> str:
        """The site's address."""
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def server(tmp_path: Path, sink: Sink) -> Iterator[LiveServer]:
    """The app on a fresh SQLite database, served on a free port; its mail goes to ``sink``."""
    port = free_port()
    app = create_app({
        "server": {"instance_path": str(tmp_path / "instance"), "base_url": f"http://127.0.0.1:{port}"},
        "database": {"url": f"sqlite:///{tmp_path / 'pbem.db'}"},
        "mail": {"smtp_port": sink.port},
    })
    with app.app_context():
        db.create_all()
    live = LiveServer(app, port)
    yield live
    live.stop()
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
