"""Links that carry a secret (confirmation, reset, one-click move) never reach a log or a Referer.

The web servers are real: gunicorn started with the command line of ``deploy/pbem-web.service`` (whose
access log is on), and the development server ``pbem web``.  The links are real ones, taken from the
mails the server wrote; each is opened with another secret link as its Referer, as a browser would
send it from the mail's web view.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask

from pbem.accounts import accounts
from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User
from pbem.game import play
from pbem.web import secretlinks
from tests.conftest import ROOT, free_port
from tests.server.conftest import ONE_BACKEND
from tests.server.processes import PBEM, Process, Processes, environment, exec_start, option, wait_for_port
from tests.server.webclient import WebClient


def _link_in_mail(kind: str, path: str) -> str:
    """The path and secret of the ``path`` link in the newest ``kind`` mail of the outbox."""
    mail = db.session.query(OutboxMail).filter_by(kind=kind).order_by(OutboxMail.id.desc()).first()
    assert mail is not None, f"no {kind} mail"
    found = re.search(rf"{re.escape(path)}[^\s?\"<]+", mail.body_text)
    assert found, f"no {path} link in the {kind} mail"
    return found.group(0)


def secret_links(players: tuple[User, User, User]) -> dict[str, str]:
    """One real link of each kind that carries a secret, as the server mailed it."""
    alice, bob, _ = players
    accounts.sign_up("dora", "dora@example.org", "correct horse battery")
    db.session.commit()
    accounts.request_reset(alice.email)
    db.session.commit()
    play.create_game("cambio", [alice, bob])
    db.session.commit()
    return {
        "verify": _link_in_mail("verify", "/verify/"),
        "reset": _link_in_mail("reset", "/reset/"),
        "move": _link_in_mail("your-move", "/m/"),
    }


def _open_each(port: int, links: dict[str, str]) -> None:
    """Open every link (the move link with the reset link as its Referer), and a page that has none."""
    base = f"http://127.0.0.1:{port}"
    referer = {"move": base + links["reset"]}
    for name, path in links.items():
        request = urllib.request.Request(base + path, headers={"Referer": referer.get(name, base + "/")})
        try:
            urllib.request.urlopen(request, timeout=30).read()
        except urllib.error.HTTPError as answer:  # A refusal is logged as well; the log is what counts.
            answer.read()
    urllib.request.urlopen(base + "/rules", timeout=30).read()


def _secrets(links: dict[str, str]) -> list[str]:
    return [path.rsplit("/", 1)[1] for path in links.values()]


def assert_logged_without_secrets(log: str, links: dict[str, str]) -> None:
    """Each link was logged, and none with its secret."""
    for secret in _secrets(links):
        assert secret not in log
    for path in ("/m/", "/verify/", "/reset/"):
        assert f"GET {path}[redacted] HTTP/1.1" in log


def start_gunicorn(processes: Processes, app: Flask, port: int) -> Process:
    """gunicorn as deploy/pbem-web.service starts it (access log on), with one worker on ``port``."""
    argv = option(option(exec_start("pbem-web.service"), "--bind", f"127.0.0.1:{port}"), "--workers", "1")
    return processes.start("gunicorn", argv, environment(app))


def _wait_for_log(process: Process, text: str, seconds: float = 20) -> str:
    """What ``process`` has logged, once ``text`` is among it."""
    deadline = time.monotonic() + seconds
    while text not in process.output():
        assert time.monotonic() < deadline, f"{text!r} never logged:\n{process.output()}"
        time.sleep(0.1)
    return process.output()


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """The server processes of this test, all stopped at its end."""
    running = Processes(tmp_path)
    yield running
    running.stop_all()


@ONE_BACKEND
def test_gunicorn_as_deployed_logs_secret_links_without_their_secret(
    app: Flask, ctx: Flask, players, processes: Processes
) -> None:
    links = secret_links(players)
    port = free_port()
    web = start_gunicorn(processes, app, port)
    wait_for_port(port, web)
    _open_each(port, links)
    assert_logged_without_secrets(_wait_for_log(web, "GET /rules"), links)


NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")


def nginx_site(port: int, upstream: int, tmp_path: Path) -> str:
    """deploy/nginx.conf as a test can run it: on loopback ports, without TLS, logging under ``tmp_path``,
    in front of the gunicorn on ``upstream``.  Every change is checked to have been made, so that the
    test fails rather than test something else when the file changes shape."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    changes = [
        (r"server 127\.0\.0\.1:8000;", f"server 127.0.0.1:{upstream};"),
        (r"listen 443 ssl;", f"listen 127.0.0.1:{port};"),
        (r"listen 80;", f"listen 127.0.0.1:{free_port()};"),
        (r"listen \[::\]:(443 ssl|80);\n", ""),
        (r"ssl_certificate(_key)? [^;]+;\n", ""),
        (r"access_log /var/log/nginx/pbem\.access\.log pbem;", f"access_log {tmp_path}/access.log pbem;"),
        (r"alias /opt/pbem/pbem/static/;", f"alias {ROOT}/pbem/static/;"),
    ]
    for pattern, replacement in changes:
        site, made = re.subn(pattern, replacement, site)
        assert made, f"deploy/nginx.conf has no {pattern}"
    return site


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")
@ONE_BACKEND
def test_nginx_as_deployed_logs_secret_links_without_their_secret(
    app: Flask, ctx: Flask, players, processes: Processes, tmp_path: Path
) -> None:
    links = secret_links(players)
    upstream, port = free_port(), free_port()
    web = start_gunicorn(processes, app, upstream)
    conf = tmp_path / "nginx.conf"
    temp = {name: tmp_path / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
    conf.write_text(
        f"daemon off;\nuser root;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        "http {\n" + "".join(f"{name}_temp_path {path};\n" for name, path in temp.items())
        + f"access_log {tmp_path}/other.log;\n{nginx_site(port, upstream, tmp_path)}\n}}\n"
    )
    command = [NGINX, "-c", str(conf), "-p", str(tmp_path)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    nginx = processes.start("nginx", command, environment(app))
    wait_for_port(upstream, web)
    wait_for_port(port, nginx)
    _open_each(port, links)
    deadline = time.monotonic() + 20
    while "GET /rules" not in (log := (tmp_path / "access.log").read_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.1)
    assert_logged_without_secrets(log, links)
    assert f'"http://127.0.0.1:{port}/reset/[redacted]"' in log  # The move link's Referer.


@ONE_BACKEND
def test_the_development_server_logs_secret_links_without_their_secret(
    app: Flask, ctx: Flask, players, processes: Processes
) -> None:
    links = secret_links(players)
    port = free_port()
    web = processes.start("pbem-web", [*PBEM, "web", "--host", "127.0.0.1", "--port", str(port)],
                          environment(app))
    wait_for_port(port, web)
    _open_each(port, links)
    assert_logged_without_secrets(_wait_for_log(web, "GET /rules"), links)


def test_a_secret_links_page_tells_the_browser_to_send_no_referrer(app: Flask, ctx: Flask, players) -> None:
    links = secret_links(players)
    web = WebClient(app)
    page = web.get(links["move"])
    assert page.status_code == 200 and page.headers["Referrer-Policy"] == "no-referrer"
    # Other pages keep the browser's default: a game page's address is no secret.
    assert "Referrer-Policy" not in web.get("/rules").headers


def test_a_failing_request_is_logged_by_flask_without_the_secret(app: Flask, ctx: Flask, players,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    links = secret_links(players)
    app.logger.error(f"Exception on {links['move']} [GET]")  # As Flask logs a request that raised.
    assert "/m/[redacted] [GET]" in caplog.text and _secrets(links)[2] not in caplog.text


def test_redacting_a_hostile_log_line_takes_linear_time(app: Flask) -> None:
    started = time.process_time()
    redacted = secretlinks.redact("/m/" * 300_000 + "/verify/" + "x" * 1_000_000)
    assert time.process_time() - started < 1.0
    assert redacted.endswith("/verify/[redacted]")
