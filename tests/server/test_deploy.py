"""The parts of docs/DEPLOY.md that run on one machine, run as written: the nginx site of deploy/ in
front of gunicorn, on a port other than 443; and the backup and restore of the PostgreSQL database.

(The Postfix parts, LMTP with one listener or two, the pipe and the upgrade, are in test_postfix.py.)
Each test is skipped only when what it runs (nginx, openssl, pg_dump, a PostgreSQL server) is absent.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import ssl
import stat
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from pbem import accounts
from pbem.extensions import db
from tests.conftest import ROOT, free_port
from tests.server.conftest import PG_ADMIN_URL
from tests.server.processes import Processes, environment, exec_start, option, wait_for_port

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
OPENSSL = shutil.which("openssl")


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    """The server processes of this test, all stopped at its end (their logs shown if it failed)."""
    running = Processes(tmp_path)
    try:
        yield running
    finally:
        running.stop_all()


def tls_site(port: int, upstream: int, tmp_path: Path) -> str:
    """deploy/nginx.conf on a loopback port other than 443, with TLS (a certificate made for the test),
    in front of the gunicorn on ``upstream``; every change checked to have been made."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)], check=True,
                   capture_output=True, timeout=60)
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    for pattern, replacement in [
        (r"server 127\.0\.0\.1:8000;", f"server 127.0.0.1:{upstream};"),
        (r"listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        (r"listen 80;", f"listen 127.0.0.1:{free_port()};"),
        (r"listen \[::\]:(443 ssl|80);\n", ""),
        (r"ssl_certificate\s+/etc/letsencrypt/live/pbem\.example\.org/fullchain\.pem;",
         f"ssl_certificate {cert};"),
        (r"ssl_certificate_key\s+/etc/letsencrypt/live/pbem\.example\.org/privkey\.pem;",
         f"ssl_certificate_key {key};"),
        (r"access_log /var/log/nginx/pbem\.access\.log pbem;", f"access_log {tmp_path}/access.log pbem;"),
        (r"alias /opt/pbem/pbem/static/;", f"alias {ROOT}/pbem/static/;"),
    ]:
        site, made = re.subn(pattern, replacement, site)
        assert made, f"deploy/nginx.conf has no {pattern}"
    return site


@pytest.mark.skipif(NGINX is None or OPENSSL is None, reason="nginx or openssl is not installed")
def test_forms_work_through_nginx_on_a_port_other_than_443(
    app: Flask, ctx: Flask, processes: Processes, tmp_path: Path
) -> None:
    """Behind deploy/nginx.conf on https://127.0.0.1:PORT, with the settings DEPLOY.md gives for a proxy
    (trusted_proxies = 1, secure cookies), a player signs in: the form's post is taken, answered over
    HTTPS only from then on (HSTS).  A post from another site is refused, and the log says why."""
    accounts.create_user("erin", "erin@example.org", password="correct horse battery", verified=True)
    db.session.commit()
    upstream, port = free_port(), free_port()
    env = environment(app, PBEM_SERVER_TRUSTED_PROXIES="1", PBEM_SERVER_SECURE_COOKIES="true",
                      PBEM_SERVER_BASE_URL=f"https://127.0.0.1:{port}")
    web = processes.start("gunicorn", option(option(exec_start("pbem-web.service"), "--bind",
                                                    f"127.0.0.1:{upstream}"), "--workers", "1"), env)
    conf = tmp_path / "nginx.conf"
    temp = "".join(f"{name}_temp_path {tmp_path / name};\n"
                   for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf.write_text(
        f"daemon off;\nuser root;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n{temp}access_log {tmp_path}/other.log;\n{tls_site(port, upstream, tmp_path)}\n}}\n"
    )
    command = [NGINX, "-c", str(conf), "-p", str(tmp_path)]
    checked = subprocess.run([*command, "-t"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    nginx = processes.start("nginx", command, env)
    wait_for_port(upstream, web)
    wait_for_port(port, nginx)

    browser = Browser(port)
    page = browser.request("GET", "/login")
    assert page.status == 200 and page.getheader("Strict-Transport-Security") == "max-age=31536000"
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    signed_in = browser.request("POST", "/login", {"csrf_token": token, "login": "erin",
                                                   "password": "correct horse battery"})
    assert signed_in.status == 302, signed_in.text
    assert "Sign out" in browser.request("GET", "/").text

    forged = browser.request("POST", "/login", {"csrf_token": token, "login": "erin", "password": "x"},
                             referer="https://elsewhere.example/")
    assert forged.status == 400 and "Form refused" in forged.text
    deadline = time.monotonic() + 20
    while "form refused: The referrer does not match the host." not in web.output():
        assert time.monotonic() < deadline, web.output()
        time.sleep(0.1)


class Response:
    """An answer: status, headers, text."""

    def __init__(self, answer: http.client.HTTPResponse) -> None:
        self.status, self.text = answer.status, answer.read().decode("utf-8", "replace")
        self.getheader = answer.getheader


class Browser:
    """What a browser does here: HTTPS to 127.0.0.1:PORT (the test's certificate trusted), cookies kept,
    and a Referer of the page a form was on."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}
        self.context = ssl.create_default_context()
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE

    def request(self, method: str, path: str, form: dict[str, str] | None = None,
                referer: str | None = None) -> Response:
        """One request, with the cookies so far; the cookies it sets are kept."""
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["Referer"] = referer or f"https://127.0.0.1:{self.port}{path}"
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        for value in answer.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name] = rest.split(";", 1)[0]
        response = Response(answer)
        connection.close()
        return response
