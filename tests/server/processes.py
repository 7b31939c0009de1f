"""Running pbem's real processes for the deployment tests: `pbem smtpd`, `pbem scheduler`, gunicorn.

Each process gets the test app's settings through PBEM_* variables, exactly as a systemd unit gives
them, writes its output to a log file under the test's directory (shown when a test fails), and is
stopped with SIGTERM as systemd stops it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from flask import Flask

from tests.conftest import ROOT

PBEM = [sys.executable, "-m", "pbem"]
GUNICORN = [sys.executable, "-m", "gunicorn"]
BIN = Path(sys.executable).parent


def exec_start(unit: str) -> list[str]:
    """The command line of a unit in deploy/, with this environment's executables for /opt/pbem's."""
    text = (ROOT / "deploy" / unit).read_text()
    line = re.search(r"^ExecStart=(.*)$", text, re.M)
    assert line, f"deploy/{unit} has no ExecStart"
    argv = shlex.split(line.group(1))
    argv[0] = str(BIN / Path(argv[0]).name)
    assert Path(argv[0]).exists(), argv
    return argv


def option(argv: list[str], name: str, value: str) -> list[str]:
    """``argv`` with the value of ``name`` replaced."""
    at = argv.index(name)
    return [*argv[: at + 1], value, *argv[at + 2 :]]


def environment(app: Flask, **extra: str) -> dict[str, str]:
    """The environment that makes a pbem process use the test app's database, domain and mail server."""
    settings = app.config["PBEM"]
    env = dict(os.environ)
    env.update(
        PBEM_DATABASE_URL=app.config["SQLALCHEMY_DATABASE_URI"],
        PBEM_SERVER_INSTANCE_PATH=app.instance_path,
        PBEM_SERVER_BASE_URL=settings["server"]["base_url"],
        PBEM_MAIL_DOMAIN=settings["mail"]["domain"],
        PBEM_MAIL_SMTP_HOST=settings["mail"]["smtp_host"],
        PBEM_MAIL_SMTP_PORT=str(settings["mail"]["smtp_port"]),
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def wait_for_port(port: int, process: Process | None = None, seconds: float = 60) -> None:
    """Wait until something accepts connections on the loopback ``port``."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process is not None and process.popen.poll() is not None:
                raise AssertionError(f"{process.name} exited:\n{process.output()}") from None
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing listens on port {port} after {seconds} s") from None
            time.sleep(0.1)


class Process:
    """One server process, its output kept in ``log``."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self._out = self.log.open("ab")
        self.popen = subprocess.Popen(argv, env=env, stdout=self._out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)

    def output(self) -> str:
        """What the process has written so far (all of it, once stopped)."""
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")

    def terminate(self) -> None:
        """SIGTERM, as systemd stops a unit."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)

    def stop(self, seconds: float = 20) -> None:
        """SIGTERM, as systemd stops a unit; SIGKILL if it does not stop in time."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(seconds)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self._out.close()


class Processes:
    """The processes a test started; all stopped at the end, their logs printed if the test failed."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: list[Process] = []

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> Process:
        """Start ``argv`` as a process called ``name``."""
        process = Process(name, argv, env, self.log_dir)
        self.running.append(process)
        return process

    def stop(self, process: Process) -> None:
        """Stop one process."""
        process.stop()
        self.running.remove(process)

    def stop_all(self) -> None:
        """Stop every process still running (all told at once, then each waited for)."""
        for process in self.running:
            process.terminate()
        for process in reversed(self.running):
            process.stop()
        self.running.clear()

    def logs(self) -> str:
        """Every log of this test, for a failure report."""
        return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
                         for path in sorted(self.log_dir.glob("*.log")))
