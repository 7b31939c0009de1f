"""The first stage of inbound mail: store the raw message, once.

A message is keyed by its Message-ID, or by the SHA-256 of its bytes when it has none, so the same
message delivered twice (an MTA retrying, a player pressing send twice on the same draft) is stored once
and acted on once.
"""

from __future__ import annotations

import hashlib
import logging
from email.parser import BytesHeaderParser
from email.policy import default as default_policy

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from pbem.database import begin_write
from pbem.extensions import db
from pbem.models import InboundMail

log = logging.getLogger(__name__)

MAX_ID_LENGTH = 255


class MalformedMessage(ValueError):
    """The bytes are not a mail message at all (no headers)."""


def message_key(raw: bytes) -> str:
    """The message's deduplication key: its Message-ID, or a hash of the bytes."""
    try:
        headers = BytesHeaderParser(policy=default_policy).parsebytes(raw)
        message_id = str(headers.get("Message-ID", "") or "").strip()
    except Exception:  # A header the parser cannot read is treated like a missing one.
        message_id = ""
    if message_id and len(message_id) <= MAX_ID_LENGTH:
        return message_id
    return f"<sha256.{hashlib.sha256(raw).hexdigest()}@pbem.invalid>"


def store(raw: bytes, mail_from: str = "", rcpt_to: list[str] | None = None) -> tuple[InboundMail, bool]:
    """Store ``raw`` unless it is already stored; returns the row and whether it is new.

    Raises :class:`MalformedMessage` for bytes that have no header block at all.
    """
    if not raw.strip() or b":" not in raw.split(b"\n", 1)[0]:
        raise MalformedMessage("The message has no headers.")
    key = message_key(raw)
    # Take the write lock before looking (BEGIN IMMEDIATE on SQLite): a read that later turns into a write
    # fails at once, without waiting, when the processor has written in between.
    begin_write()
    existing = db.session.scalar(select(InboundMail).where(InboundMail.message_id == key))
    if existing is not None:
        log.info("duplicate message %s ignored", key)
        return existing, False
    row = InboundMail(
        message_id=key, raw=raw, mail_from=mail_from or "", rcpt_to=", ".join(rcpt_to or [])
    )
    db.session.add(row)
    try:
        db.session.commit()
    except IntegrityError:
        # Another receiver stored the same message a moment ago.
        db.session.rollback()
        existing = db.session.scalar(select(InboundMail).where(InboundMail.message_id == key))
        assert existing is not None
        return existing, False
    log.info("stored message %s from %s as #%s", key, mail_from, row.id)
    return row, True
