"""Receiving mail: every message is stored raw first, once, over real SMTP and through `pbem ingest`."""

from __future__ import annotations

import asyncio
import os
import smtplib
import socket
import subprocess
import sys
from collections.abc import Iterator
from email.message import EmailMessage

import pytest
from aiosmtpd.smtp import SMTP
from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import InboundMail
from pbem.mailin import receive, smtpd
from tests.conftest import free_port


def a_mail(message_id: str | None = "<m1@example.org>", body: str = "b3\n") -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = "alice@example.org"
    msg["To"] = "pbem@pbem.localhost"
    msg["Subject"] = "Re: [pbem] Cambio #1: your move"
    if message_id:
        msg["Message-ID"] = message_id
    msg.set_content(body)
    return msg


@pytest.fixture
def listener(app: Flask) -> Iterator[int]:
    port = free_port()
    server = smtpd.controller(app, "127.0.0.1", port)
    server.start()
    yield port
    server.stop()


def send(port: int, msg: EmailMessage) -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as client:
        client.send_message(msg)


def stored() -> list[InboundMail]:
    db.session.rollback()
    return db.session.scalars(select(InboundMail).order_by(InboundMail.id)).all()


def test_a_message_is_stored_raw(ctx: Flask, listener: int) -> None:
    send(listener, a_mail())
    [row] = stored()
    assert row.message_id == "<m1@example.org> alice@example.org"
    assert b"Subject: Re: [pbem] Cambio #1: your move" in row.raw
    assert row.mail_from == "alice@example.org" and "pbem@pbem.localhost" in row.rcpt_to
    # Processing follows at once in the listener's own thread (tests/server/test_mail_*.py).
    assert row.status in {"received", "processing", "rejected"}


def test_the_same_message_twice_is_stored_once(ctx: Flask, listener: int) -> None:
    send(listener, a_mail())
    send(listener, a_mail())
    assert len(stored()) == 1


def test_a_message_without_id_is_keyed_by_its_bytes(ctx: Flask, listener: int) -> None:
    send(listener, a_mail(None, "b3"))
    send(listener, a_mail(None, "b3"))
    send(listener, a_mail(None, "c2"))
    rows = stored()
    assert len(rows) == 2 and all(r.message_id.startswith("<sha256.") for r in rows)


def test_garbage_is_refused_with_a_status_not_a_crash(ctx: Flask, listener: int) -> None:
    with smtplib.SMTP("127.0.0.1", listener, timeout=10) as client:
        client.ehlo()
        client.docmd("MAIL FROM:<x@example.org>")
        client.docmd("RCPT TO:<pbem@pbem.localhost>")
        code, reply = client.data(b"no headers at all, just words\r\n")
    assert code == 554 and b"no headers" in reply
    assert stored() == []


def run_ingest(app: Flask, raw: bytes) -> subprocess.CompletedProcess:
    """`pbem ingest` as an MTA's pipe runs it: a real process, fed the raw bytes on its standard input,
    whose exit code (0, 65 or 75) is what the MTA reads."""
    env = dict(os.environ)
    env["PBEM_DATABASE_URL"] = app.config["SQLALCHEMY_DATABASE_URI"]
    env["PBEM_SERVER_INSTANCE_PATH"] = app.instance_path
    return subprocess.run(
        [sys.executable, "-m", "pbem", "ingest"], input=raw, env=env, capture_output=True, timeout=60
    )


def test_ingest_stores_and_answers_with_exit_codes(ctx: Flask) -> None:
    raw = a_mail("<piped@example.org>").as_bytes()
    assert run_ingest(ctx, raw).returncode == 0
    assert run_ingest(ctx, raw).returncode == 0  # A duplicate is fine, and stored once.
    assert [r.message_id for r in stored()] == ["<piped@example.org> alice@example.org"]
    rejected = run_ingest(ctx, b"\r\n")
    assert rejected.returncode == 65 and b"no headers" in rejected.stderr


def test_ingest_reports_a_temporary_failure_when_the_database_is_away(tmp_path) -> None:
    # A real process, as for run_ingest: exit code 75 is what makes the MTA try again later.  Its
    # database is one that cannot be opened, the same whichever backend the run tests, so it runs once.
    env = dict(os.environ)
    env["PBEM_DATABASE_URL"] = f"sqlite:///{tmp_path}/missing/dir/pbem.db"
    env["PBEM_SERVER_INSTANCE_PATH"] = str(tmp_path / "instance")
    result = subprocess.run(
        [sys.executable, "-m", "pbem", "ingest"], input=a_mail().as_bytes(), env=env,
        capture_output=True, timeout=60,
    )
    assert result.returncode == 75


@pytest.mark.parametrize(("headers", "key"), [
    (b"From: a@example.org\r\nMessage-ID: <m1@example.org>\r\nSubject: x\r\n",
     "<m1@example.org> a@example.org"),
    (b"From: a@example.org\nmessage-id:<m1@example.org>\n",
     "<m1@example.org> a@example.org"),  # As some write it.
    # The sender is the From address, however the header writes it, folded or not.
    (b"From: Alice <A@Example.org>\r\nMessage-ID: <m1@example.org>\r\n", "<m1@example.org> a@example.org"),
    (b"From: =?utf-8?q?Al=C3=AFce?=\r\n <a@example.org>\r\nMessage-ID: <m1@example.org>\r\n",
     "<m1@example.org> a@example.org"),
    (b"Message-ID: <m1@example.org>\r\nFrom: b@example.org\r\nFrom: a@example.org\r\n",
     "<m1@example.org> b@example.org"),
    (b"Message-ID: <m1@example.org>\r\nMessage-ID: <m2@example.org>\r\n", "<m1@example.org>"),  # The first.
    (b"Subject: a long\r\n subject\r\nMessage-ID: <m1@example.org>\r\n", "<m1@example.org>"),
    (b"Message-ID:\r\n <m1@example.org>\r\n", "<m1@example.org>"),  # Folded: the parser unfolds it.
    # A line that is no header: the parser reads the body from there.
    (b"From: a@example.org\r\nnot a header line\r\nMessage-ID: <m1@example.org>\r\n", None),
    (b"Message-ID: <m1@example.org> (a comment)\r\n", "<m1@example.org> (a comment)"),
    (b"From: a@example.org\r\n", None),
])
def test_a_message_is_keyed_by_its_first_message_id_as_the_parser_reads_it(headers: bytes,
                                                                         key: str | None) -> None:
    """The Message-ID read from the header lines as they stand is the one the email parser reads, and
    what is not plain is left to the parser; without one, the key is the bytes' hash."""
    raw = headers + b"\r\nb3\r\n"
    found = receive.message_key(raw)
    assert found == key if key is not None else found.startswith("<sha256.")


def test_the_listener_reads_envelope_addresses_as_aiosmtpd_does() -> None:
    """The listener reads a plain address of MAIL FROM or RCPT TO itself, and leaves anything else to
    aiosmtpd's parser: either way the address and the parameters after it are what the parser makes of
    them, and what it refuses is refused."""
    loop = asyncio.new_event_loop()
    try:
        ours = smtpd._SMTPServer(smtpd.StoreHandler(None), hostname="x", loop=loop, enable_SMTPUTF8=True)
        theirs = SMTP(smtpd.StoreHandler(None), hostname="x", loop=loop, enable_SMTPUTF8=True)
    finally:
        loop.close()
    assert ours._smtp_methods.keys() == theirs._smtp_methods.keys()
    assert ours._auth_methods.keys() == theirs._auth_methods.keys()
    written = [
        "<alice@example.org>", "<play+3.0.Ab-_x@pbem.localhost> SIZE=1234 BODY=8BITMIME", "<>", "<a..b@x>",
        "<.a@x>", "<a@x.>", '<"a b"@x>', "<a@[192.0.2.1]>", " <a@x>", "<a@x>x", "<a@x> ", "<a@x>  SIZE=1",
        "<a@x>\tSIZE=1 ", "<a@x> (c) SIZE=1", "<a@x> SIZE=1 (c)", "<a@x> \r", "<a(c)@x>", "<@relay:a@x>",
        "<a@x", "a@x", "<a@x@y>", "<ü@x>", "<a@ü.x>", "<a@-x>", "<a@x..y>", "<a@.x>", "<a b@x>", "",
    ]
    assert [ours._getaddr(arg) for arg in written] == [theirs._getaddr(arg) for arg in written]


def _conversation(port: int, commands: list[bytes]) -> bytes:
    """What a server answers to ``commands``, sent one at a time, each answer read to its last line."""
    answers = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        reader = conn.makefile("rb")
        for command in [b"", *commands]:
            if command:
                conn.sendall(command + b"\r\n")
            while (line := reader.readline())[3:4] == b"-":
                answers += line
            answers += line
    return answers


def test_the_listener_answers_as_aiosmtpd_does(ctx: Flask, listener: int) -> None:
    """The listener writes the lines of a reply together (EHLO's, HELP's), and finds its handler's hooks
    from a shorter list: the answers are aiosmtpd's own, byte for byte, and a message is stored."""
    from aiosmtpd.controller import Controller

    port = free_port()
    handler = smtpd.StoreHandler(ctx)
    theirs = Controller(handler, hostname="127.0.0.1", port=port, decode_data=False,
                        data_size_limit=ctx.config["PBEM"]["smtpd"]["max_message_bytes"],
                        server_hostname=ctx.config["PBEM"]["mail"]["domain"])
    theirs.start()
    try:
        commands = [b"EHLO client.example", b"HELP", b"NOOP", b"MAIL FROM:<alice@example.org>",
                    b"RCPT TO:<pbem@pbem.localhost>", b"RSET", b"HELO client.example", b"QUIT"]
        assert _conversation(listener, commands) == _conversation(port, commands)
        assert b"250-SIZE" in _conversation(listener, commands[:1])
    finally:
        theirs.stop()
    loop = asyncio.new_event_loop()
    try:
        ours = smtpd._SMTPServer(handler, hostname="x", loop=loop)
    finally:
        loop.close()
    assert ours._handle_hooks == {"DATA": handler.handle_DATA}
    send(listener, a_mail())
    assert [row.message_id for row in stored()] == ["<m1@example.org> alice@example.org"]
