"""Limits on mail-key guessing: wrong keys are counted per account and per sender.

Each wrong key is a row of :class:`~pbem.core.models.MailKeyFailure`, written in a transaction of its own so
that it counts even though the command is refused.  Past ``mail_key_failures_per_account`` in the
period, the account's key commands are paused for the period and its owner is told, once; past
``mail_key_failures_per_sender``, that sender's key commands are refused (whoever they name).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from flask import current_app
from limits import parse
from sqlalchemy import func, select

from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import MailKeyFailure, User, utcnow
from pbem.core.site import absolute_url
from pbem.core.unit_of_work import current, unit_of_work
from pbem.game import clock
from pbem.mailout import outbox
from pbem.mailout.compose import compose

log = logging.getLogger(__name__)


def limit(name: str) -> tuple[int, timedelta]:
    """A [ratelimit] setting such as "5 per hour" as (how many, in what period)."""
    item = parse(current_app.config["PBEM"]["ratelimit"][name])
    return item.amount, timedelta(seconds=item.get_expiry())


def _failures(since: datetime, **where: object) -> int:
    query = select(func.count(MailKeyFailure.id)).where(MailKeyFailure.at >= since)
    for column, value in where.items():
        query = query.where(getattr(MailKeyFailure, column) == value)
    return db.session.scalar(query) or 0


def sender_blocked(sender: str) -> bool:
    """Whether ``sender`` has sent too many wrong keys lately to be listened to."""
    amount, period = limit("mail_key_failures_per_sender")
    return _failures(utcnow() - period, sender=sender.lower()) >= amount


def hold_account(user: User) -> None:
    """Make this processor the only one checking a mail key for ``user`` until its transaction ends, and
    read the account's pause as that leaves it.

    Processors work side by side on PostgreSQL: without this, guesses for one account checked at once
    would all find it unpaused, and each would be checked and counted, past the limit, by as many as
    there are processors.  On SQLite the processor's BEGIN IMMEDIATE already makes them take turns.
    """
    uow = current()
    if is_postgresql() and uow is not None and uow.in_transaction:
        db.session.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"mail-key-account:{user.id}"))))
        # What another processor committed while this one waited (a pause) is read again.
        db.session.refresh(user, ["mail_key_paused_until"])


def paused_until(user: User) -> datetime | None:
    """Until when ``user``'s key commands are refused, or None when they are not."""
    until = user.mail_key_paused_until
    return until if until is not None and until > utcnow() else None


def record_failure(user: User, sender: str) -> None:
    """Count a wrong key for ``user`` from ``sender``; at the account's limit pause its key commands
    and mail its owner (once a pause).  Commits in a transaction of its own."""
    amount, period = limit("mail_key_failures_per_account")
    with unit_of_work() as uow:
        sender = sender.lower()[:320]
        if is_postgresql():
            # Processors work side by side: the sender's count is read and written under a lock of its own,
            # as BEGIN IMMEDIATE does on SQLite, so that a burst of guesses is counted exactly.
            db.session.execute(select(func.pg_advisory_xact_lock(func.hashtext(f"mail-key:{sender}"))))
        if sender_blocked(sender):
            # Another processor counted this sender's last allowed guess meanwhile; this one was refused as
            # wrong all the same, and the sender stays blocked for the period.
            uow.rollback()
            return
        # The account's row is locked too (FOR UPDATE on PostgreSQL), so two wrong keys counted at once
        # cannot both find the account unpaused and both tell its owner.
        user = db.session.get_one(User, user.id, with_for_update=True, populate_existing=True)
        now = utcnow()
        db.session.add(MailKeyFailure(user_id=user.id, sender=sender, at=now))
        db.session.flush()
        failures = _failures(now - period, user_id=user.id)
        if failures >= amount and paused_until(user) is None:
            user.mail_key_paused_until = now + period
            outbox.enqueue(
                user,
                outbox.subject("Mail commands for your account are paused"),
                compose(
                    "mail/key_paused.txt", user=user, failures=failures, sender=sender[:200],
                    until=clock.format_time(user.mail_key_paused_until),
                    settings_url=absolute_url("/settings"),
                ),
                kind="key-paused",
            )
            log.warning("mail commands for %s paused after %s wrong keys", user.handle, failures)
        uow.commit()

