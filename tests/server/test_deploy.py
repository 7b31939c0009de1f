"""The parts of docs/DEPLOY.md that run on one machine, run as written: the nginx site of deploy/ in
front of gunicorn, on a port other than 443; and the backup and restore of the PostgreSQL database.

(The Postfix parts, LMTP with one listener or two, the pipe and the upgrade, are in test_postfix.py.)
Each test is skipped only when what it runs (nginx, openssl, pg_dump, a PostgreSQL server) is absent.
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from flask import Flask

from pbem.accounts import accounts
from pbem.core.extensions import db
from tests.conftest import ROOT, free_port
from tests.server.conftest import ONE_BACKEND, PG_ADMIN_URL
from tests.server.deploy_doc import deploy_block, substituted
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
@ONE_BACKEND
def test_forms_work_through_nginx_on_a_port_other_than_443(
    app: Flask, ctx: Flask, processes: Processes, tmp_path: Path
) -> None:
    """Behind deploy/nginx.conf on https://127.0.0.1:PORT, with the settings DEPLOY.md gives for a proxy
    (trusted_proxies = 1, secure cookies), a player signs in: the form's post is taken, answered over
    HTTPS only from then on (HSTS).  A post from another site is refused, and the log says why.  The
    API's refusals of an over-long token or query come through as its JSON."""
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
    # A token or a query too long for the API is answered by it, in JSON, through nginx and gunicorn as
    # deployed (their own limits would answer with pages of their own).
    long_token = browser.request("GET", "/api/v1/me/turn",
                                 headers={"Authorization": "Bearer pbem_" + "x" * 10_000})
    assert (long_token.status, json.loads(long_token.text)["code"]) == (431, "header-too-large")
    long_query = browser.request("GET", "/api/v1/games?player=" + "x" * 5_000)
    assert (long_query.status, json.loads(long_query.text)["code"]) == (414, "uri-too-long")

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
                referer: str | None = None, headers: dict[str, str] | None = None) -> Response:
        """One request, with the cookies so far (and ``headers``); the cookies it sets are kept."""
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items()), **(headers or {})}
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


PG_DUMP = shutil.which("pg_dump")
RUNUSER = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


# Stand-ins for what a test machine has no unit of: each `systemctl` line is noted, `pbem` is this
# checkout's command (run as the wrapper would, with the test's settings), `postqueue` is noted.
_PRELUDE = """\
systemctl() { echo "systemctl $*" >> "$DEPLOY_LOG"; }
postqueue() { echo "postqueue $*" >> "$DEPLOY_LOG"; }
pbem() { "$TEST_PYTHON" -m pbem "$@"; }
"""


def tables() -> dict[str, list[tuple]]:
    """Every row of every table of the models, in primary-key order."""
    found = {}
    for table in db.metadata.sorted_tables:
        query = sa.select(table).order_by(*table.primary_key.columns)
        found[table.name] = [tuple(row) for row in db.session.execute(query)]
    db.session.rollback()
    return found


@pytest.mark.skipif(not PG_ADMIN_URL or PG_DUMP is None or RUNUSER is None or not _has_user("postgres"),
                    reason="PostgreSQL on this machine (PBEM_TEST_DATABASE_URL, pg_dump, the postgres user) "
                           "is needed")
def test_backup_and_restore_as_documented_give_back_every_row(tmp_path: Path) -> None:
    """The backup block of DEPLOY.md makes a dump only postgres can read; the restore block, run after
    a change, gives back every row of every table as it was at the backup, and `pbem verify` agrees."""
    import flask_migrate

    from pbem import create_app
    from tests.server.archived import finished
    from tests.server.conftest import create_pg_database, drop_pg_database

    url = create_pg_database("pbem_backup")
    name = sa.make_url(url).database
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # The database's owner, as DEPLOY.md's createuser makes it.
        if not conn.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = 'pbem'").first():
            conn.exec_driver_sql("CREATE ROLE pbem")
    admin.dispose()
    shared = Path(tempfile.mkdtemp(prefix="pbem-backup-"))
    shared.chmod(0o755)  # postgres makes its directory in here.
    backups = shared / "backups"
    app = create_app({"database": {"url": url}, "server": {"instance_path": str(tmp_path / "instance")}})
    try:
        with app.app_context():
            flask_migrate.upgrade()
            players = [accounts.create_user(h, f"{h}@example.org", verified=True) for h in ("ann", "ben")]
            db.session.commit()
            finished("cambio", players, seed=4)
            finished("truchet", players, end="resign", moves=3)
            before = tables()
            db.engine.dispose()
        env = dict(environment(app), DEPLOY_LOG=str(tmp_path / "deploy.log"), TEST_PYTHON=sys.executable)

        def run(block: str) -> str:
            done = subprocess.run(["sh", "-e", "-c", _PRELUDE + block], env=env, capture_output=True,
                                  text=True, timeout=300)
            assert done.returncode == 0, f"{block}\n{done.stdout}{done.stderr}"
            return done.stdout

        run(substituted(deploy_block("backup-postgresql"), [
            ("/var/backups/pbem", str(backups)), (" pbem'", f" {name}'")]))
        dumps = list(backups.iterdir())
        assert len(dumps) == 1 and dumps[0].name.startswith("pbem-") and dumps[0].suffix == ".dump"
        for path, mode in ((backups, 0o700), (dumps[0], 0o600)):  # Password and key hashes are in it.
            assert stat.S_IMODE(path.stat().st_mode) == mode and path.owner() == "postgres", path

        with app.app_context():  # A player signs up after the backup: the restore forgets them.
            accounts.create_user("cat", "cat@example.org", verified=True)
            db.session.commit()
            assert tables() != before
            db.engine.dispose()
        said = run(substituted(deploy_block("restore-postgresql"), [
            ("dump=/var/backups/pbem/pbem-2025-03-03.dump", f"dump={dumps[0]}"),
            ("dropdb pbem", f"dropdb {name}"), ("--dbname=pbem", f"--dbname={name}"),
            ("createdb --owner pbem pbem", f"createdb --owner pbem {name}"),
        ]))
        assert "The database is up to date." in said and "Every game matches its record." in said
        assert (tmp_path / "deploy.log").read_text().splitlines() == [
            "systemctl stop pbem-scheduler pbem-smtpd pbem-web",
            "systemctl start pbem-web pbem-smtpd pbem-scheduler", "postqueue -f"]
        with app.app_context():
            assert tables() == before
            db.engine.dispose()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        drop_pg_database(url)


SQLITE3 = shutil.which("sqlite3")


@pytest.mark.skipif(SQLITE3 is None or RUNUSER is None, reason="sqlite3 (apt-get install sqlite3) is needed")
def test_the_sqlite_backup_as_documented_copies_every_row_while_the_server_runs(tmp_path: Path) -> None:
    """The SQLite backup block of DEPLOY.md, run as the data's owner while the database is open in WAL
    mode: the copy, readable by that owner alone, holds every row."""
    from pbem import create_app
    from tests.server.archived import finished

    shared = Path(tempfile.mkdtemp(prefix="pbem-sqlite-backup-"))
    shared.chmod(0o755)
    data, backups = shared / "data", shared / "backups"
    data.mkdir()
    app = create_app({"database": {"url": f"sqlite:///{data / 'pbem.db'}"},
                      "server": {"instance_path": str(data)}})
    try:
        with app.app_context():
            db.create_all()
            players = [accounts.create_user(h, f"{h}@example.org", verified=True) for h in ("ann", "ben")]
            db.session.commit()
            finished("cambio", players, seed=4)
            before = tables()  # The server keeps its connection open, in WAL mode, meanwhile.
            for path in [data, *data.iterdir()]:
                shutil.chown(path, "nobody", "nogroup")  # The pbem user's, as /var/lib/pbem is.
            done = subprocess.run(["sh", "-e", "-c", substituted(deploy_block("backup-sqlite"), [
                ("/var/backups/pbem", str(backups)), ("/var/lib/pbem/pbem.db", str(data / "pbem.db")),
                ("-o pbem -g pbem", "-o nobody -g nogroup"), ("runuser -u pbem", "runuser -u nobody"),
            ])], capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            db.engine.dispose()
        copies = list(backups.iterdir())
        assert len(copies) == 1 and stat.S_IMODE(copies[0].stat().st_mode) == 0o600
        assert stat.S_IMODE(backups.stat().st_mode) == 0o700
        copy = create_app({"database": {"url": f"sqlite:///{copies[0]}"},
                           "server": {"instance_path": str(shared / "copy")}})
        with copy.app_context():
            assert tables() == before
            db.engine.dispose()
    finally:
        shutil.rmtree(shared, ignore_errors=True)
