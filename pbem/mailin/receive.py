"""The first stage of inbound mail: store the raw message, once.

A message is keyed by its Message-ID and its From address, or by the SHA-256 of its bytes when it has
no Message-ID, so the same message delivered twice (an MTA retrying, a player pressing send twice on the
same draft) is stored once and acted on once, while another sender's message with the same Message-ID
is a message of its own.
"""

from __future__ import annotations

import hashlib
import logging
import re
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, select

from pbem.core import inputs
from pbem.core.database import DirectWrite, insert_with_conflicts
from pbem.core.extensions import db
from pbem.core.models import InboundMail, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.mailin.parse import READING_POLICY

log = logging.getLogger(__name__)

MAX_ID_LENGTH = 255
# The most of a From header read for the key (an address is at most 320 characters).
MAX_FROM = 1000


class MalformedMessage(ValueError):
    """The bytes are not a mail message at all (no headers)."""


# A Message-ID as nearly every mail program writes it: read as it is, it is what the parser would make of
# it, without the parser's cost (about as much as storing the message).
_PLAIN_ID = re.compile(r"<[!-;=?-~]{1,253}>")


# A header line's name and colon, as RFC 5322 allows it.
_HEADER_NAME = re.compile(rb"[!-9;-~]+:")


def _plain_headers(raw: bytes) -> tuple[str, str] | None:
    """The Message-ID and the From header's value read straight from the header lines, or None unless
    they are plain: every line a header or a continuation up to the blank line, the first Message-ID
    written plainly on one line, and the first From on one line (or none).

    Nearly every message is so; reading it this way costs a tenth of what the parser costs, and the
    listener does it while the sending MTA waits.  Anything else is left to the parser.
    """
    position, found, sender, folded_after = 0, None, None, False
    while True:
        end = raw.find(b"\n", position)
        if end < 0:
            return None
        line = raw[position:end].removesuffix(b"\r")
        position = end + 1
        if not line:
            return None if found is None else (found, sender or "")
        if line[:1] in (b" ", b"\t"):
            if folded_after:  # The Message-ID or the From goes on over more than one line.
                return None
            continue
        folded_after = False
        if not _HEADER_NAME.match(line):
            return None
        if found is None and line[:11].lower() == b"message-id:":
            written = line[11:].strip(b" \t").decode("ascii", "replace")
            if not _PLAIN_ID.fullmatch(written):
                return None
            found, folded_after = written, True
        elif sender is None and line[:5].lower() == b"from:":
            sender, folded_after = line[5:MAX_FROM].decode("utf-8", "replace"), True


def _sender_key(from_value: str) -> str:
    """The From header's address as the key's sender: what its last <…> holds (or the whole header), in
    lower case without spaces.  Not a full parse (the processor does that): the same sender's mail must
    give the same key, cheaply, while the sending MTA waits."""
    start = from_value.rfind("<")
    end = from_value.find(">", start + 1)
    address = from_value[start + 1:end] if start >= 0 and end > start else from_value
    return "".join(address.split()).lower()[:MAX_FROM]


def message_key(raw: bytes) -> str:
    """The message's deduplication key: its Message-ID with its From address, or a hash of the bytes.

    The sender is part of it so that a stranger who sends first a message with the Message-ID a player
    will use (one quoted somewhere, or guessed) cannot make the player's own message a duplicate.
    """
    plain = _plain_headers(raw)
    if plain is not None:
        message_id, sender = plain
    else:
        try:
            # Read as the processor reads headers, each cut short: the parser looks at the Content-Type
            # even here, and reading a flood of its parameters is not linear.
            headers = BytesHeaderParser(policy=READING_POLICY).parsebytes(raw)
            written = next((str(v) for k, v in headers.raw_items() if k.lower() == "message-id"), "").strip()
            if _PLAIN_ID.fullmatch(written):
                message_id = written
            else:
                message_id = str(headers.get("Message-ID", "") or "").strip()
            sender = next((str(v) for k, v in headers.raw_items() if k.lower() == "from"), "")[:MAX_FROM]
        except Exception:  # A header the parser cannot read is treated like a missing one.
            message_id, sender = "", ""
    if not message_id:
        return f"<sha256.{hashlib.sha256(raw).hexdigest()}@pbem.invalid>"
    sender = _sender_key(sender)
    key = f"{message_id} {sender}" if sender else message_id
    # A key with a control character in it (an encoded NUL in the Message-ID, say) names nothing: the
    # database would refuse it, on every attempt the sending MTA makes.
    if len(key) <= MAX_ID_LENGTH and inputs.is_clean(key, one_line=True):
        return key
    return f"<sha256.{hashlib.sha256(key.encode('utf-8', 'replace')).hexdigest()}@pbem.invalid>"


def store(raw: bytes, mail_from: str = "", rcpt_to: list[str] | None = None) -> tuple[InboundMail, bool]:
    """Store ``raw`` unless it is already stored; returns the row and whether it is new.

    Raises :class:`MalformedMessage` for bytes that have no header block at all.
    """
    row_id, new = store_message(raw, mail_from, rcpt_to)
    row = db.session.get(InboundMail, row_id)
    assert row is not None
    return row, new


# Storing writes through the table, by one INSERT that does nothing for a key already stored: the
# listener stores every message while its sender waits, and an ORM object cost more than the statement.
_TABLE = InboundMail.__table__


@cache
def _insert(dialect: str) -> DirectWrite:
    """The INSERT of a message that does nothing for a stored key, for ``dialect`` (built when first
    asked: each dialect's module is megabytes of a process that runs on the other database), sent as its
    compiled SQL (see DirectWrite: Core's execution of it cost more Python than SQLite's work)."""
    return DirectWrite(insert_with_conflicts(dialect)(_TABLE).on_conflict_do_nothing(
        index_elements=["message_id"]).returning(_TABLE.c.id))


_FIND = select(_TABLE.c.id).where(_TABLE.c.message_id == bindparam("key"))


def store_message(raw: bytes, mail_from: str = "", rcpt_to: list[str] | None = None,
                  writing: AbstractContextManager[Any] | None = None) -> tuple[int, bool]:
    """Store ``raw`` unless it is already stored; returns the row's id and whether it is new.  ``writing``
    (the listener's turn among its writers on SQLite) is held for the write only, not while the message's
    key is read.

    Raises :class:`MalformedMessage` for bytes that have no header block at all.
    """
    message = prepare(raw, mail_from, rcpt_to)
    # The write lock first (BEGIN IMMEDIATE on SQLite), as for every write.
    with writing or nullcontext(), unit_of_work() as uow:
        connection = uow.connection()
        row_id = insert(connection, message)
        if row_id is None:  # Stored before, by this receiver or another one a moment ago.
            row_id = find(connection, message.key)
            uow.rollback()
            log.info("duplicate message %s ignored", message.key)
            return row_id, False
        uow.commit()
    log.info("stored message %s from %s as #%s", message.key, message.mail_from, row_id)
    return row_id, True


@dataclass(frozen=True)
class Message:
    """A message as it is stored: its key (see :func:`message_key`), bytes and envelope."""

    key: str
    raw: bytes
    mail_from: str
    rcpt_to: str  # Every envelope recipient, joined by ", ".

    def values(self) -> dict[str, Any]:
        """The row's columns."""
        return {"message_id": self.key, "raw": self.raw, "mail_from": self.mail_from, "rcpt_to": self.rcpt_to}


def prepare(raw: bytes, mail_from: str = "", rcpt_to: list[str] | None = None) -> Message:
    """``raw`` with its envelope as it is stored.  Raises :class:`MalformedMessage` for bytes that have no
    header block at all."""
    if not raw.strip() or b":" not in raw.split(b"\n", 1)[0]:
        raise MalformedMessage("The message has no headers.")
    # The envelope as the sending MTA gave it may hold what no text stored may carry.
    recipients = [inputs.clean_line(address) for address in rcpt_to or []]
    return Message(message_key(raw), raw, inputs.clean_line(mail_from or ""), ", ".join(recipients))


def insert(connection: Connection, message: Message) -> int | None:
    """Insert ``message`` in the connection's transaction; its row's id, or None when its key is stored
    already."""
    # (The columns' defaults given here: a DirectWrite writes only what it is given.)
    return _insert(connection.dialect.name).run(
        connection, {**message.values(), "received_at": utcnow(), "status": "received"}).scalar()


def find(connection: Connection, key: str) -> int:
    """The id of the message stored under ``key``."""
    return connection.execute(_FIND, {"key": key}).scalar_one()
