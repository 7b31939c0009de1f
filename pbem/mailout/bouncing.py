"""Players whose mail bounces: marking their address, holding back game mail to it, and clearing it.

A mail to a player's current address that is refused for good (by the MTA the outbox hands it to) or
reported back as failed for good (a delivery report to its envelope sender) counts as a hard bounce of
that address.  Mail to an address the player no longer has counts for nothing: the player moved on.

Why the threshold is what it is: a status 5.1.x says the address itself is wrong (no such user, no such
domain), which no retry changes, so one is conclusive.  Any other permanent failure (5.2.x a full or
disabled mailbox, 5.7.x a spam filter's refusal of one mail) may pass or be about that mail alone, and
stopping a player's mail for one would be harsher than the fault; ``mail.bounces_to_stop`` of them
(2) within ``mail.bounce_window_days`` (7: a report on a mail can come five days after it was sent)
mark the address.

While an address is marked, the outbox gives up every mail to it except the account's own
(:data:`ACCOUNT_KINDS`), which are how the player gets back in.  Their clocks keep running: a stopped
mail is no excuse at a deadline, and the web says so.

When the mark comes off (the player says the address works again, or confirms a new one), what they
missed that still matters is written again: a move request for each game awaiting their move, the one
the move path writes.  The rest is stale (a notice of a move, a reminder, a request for a position that
has passed) and is not sent again; a digest player's next digest lists their games anyway.  Taking the
mark off writes mail, so it lives above the mails, in :mod:`pbem.mailout.sendagain`; this module, which
the outbox reads, writes none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import timedelta

from flask import current_app
from sqlalchemy import ColumnElement, exists, func, select, update

from pbem.core.extensions import db
from pbem.core.models import OutboxMail, User, utcnow
from pbem.core.unit_of_work import unit_of_work

log = logging.getLogger(__name__)

# The mails that still go to a bouncing address: confirming an address, resetting a password, the mail
# key, an address change and its notices, the notices that the password was changed and that the mail
# key is paused, and that someone tried to sign up with the address.  They are what a
# player needs to put things right, and each is sent only when asked for (or for the account's safety).
ACCOUNT_KINDS = frozenset({
    "verify", "reset", "mail-key", "email-change", "email-change-notice", "email-changed", "key-paused",
    "password-changed", "signup-taken",
})

# The longest remote answer kept, from a refusal or a delivery report (the player reads it).
MAX_DIAGNOSTIC = 200

# What the outbox writes on a game mail it did not send to a bouncing address.
HELD_BACK = ("not sent: mail to this address bounces, so game mail to it is stopped until the player "
             "changes it or says it works again")


def enhanced_status(text: str) -> str:
    """The enhanced status code (RFC 3463) that ``text`` begins with, e.g. "5.1.1" of "5.1.1 (bad
    mailbox)" or of "5.1.1 <bob@x>: User unknown"; '' when it begins with none."""
    code = text[:16].split(" ", 1)[0].strip()
    parts = code.split(".")
    if len(parts) != 3 or parts[0] not in ("2", "4", "5"):
        return ""
    if not all(part.isdigit() and part.isascii() and len(part) <= 3 for part in parts[1:]):
        return ""
    return code


def conclusive(status: str) -> bool:
    """Whether a permanent failure with this status (e.g. "5.1.1") shows the address itself is wrong."""
    return status.startswith("5.1.")


def _player_at(address: str) -> User | None:
    """The player whose current address is ``address`` (any case; addresses are stored lowercased, so
    the unique index finds it)."""
    return db.session.scalar(select(User).where(User.email == address.strip().lower()))


def out_of_time(sent: OutboxMail) -> str | None:
    """Why a delivery report on ``sent`` cannot be about it (None when it can): the mail never went out,
    or it went out longer ago than ``mail.bounce_window_days``, longer than any MTA keeps retrying.

    A bounce address acts for the delivery of its one mail, and no longer: one that turns up later
    (kept in an old mail's headers, quoted somewhere) must not stop a player's mail."""
    if sent.sent_at is None:
        return "the mail never went out"
    window = timedelta(days=current_app.config["PBEM"]["mail"]["bounce_window_days"])
    if utcnow() - sent.sent_at > window:
        return f"the mail went out {(utcnow() - sent.sent_at).days} days ago, too late for a report on it"
    return None


def first_report(sent: OutboxMail) -> bool:
    """Mark ``sent`` as bounced, in the caller's write transaction; whether this is the first report on
    it that counts.  One mail's bounce address, written to again (a replayed report, or an MTA sending
    its report twice), must not count that one failure twice and so mark the address."""
    claimed = db.session.execute(
        update(OutboxMail).where(OutboxMail.id == sent.id, OutboxMail.bounced_at.is_(None))
        .values(bounced_at=utcnow())
    )
    return bool(getattr(claimed, "rowcount", 0))


def count_bounce(address: str, status: str, words: str) -> User | None:
    """Count a hard bounce of a mail to ``address`` with ``status`` and the remote server's ``words``,
    in the caller's write transaction (the caller commits); the player whose current address it is, or
    None when nobody's is.  Marks the address as bouncing when this bounce makes it so."""
    user = _player_at(address)
    if user is None or user.mail_bouncing_since is not None:
        return user
    settings = current_app.config["PBEM"]["mail"]
    now = utcnow()
    window = timedelta(days=settings["bounce_window_days"])
    if user.mail_bounced_at is None or now - user.mail_bounced_at > window:
        user.mail_bounces, user.mail_bounced_at = 0, now
    user.mail_bounces += 1
    user.mail_bounce_reason = " ".join(words.split())[:MAX_DIAGNOSTIC] or status or "(no reason given)"
    if conclusive(status) or user.mail_bounces >= settings["bounces_to_stop"]:
        user.mail_bouncing_since = now
    return user


def counted(user: User | None) -> str:
    """What a bounce counted for, in words for the operator's note."""
    if user is None:
        return "no player has that address now"
    if user.mail_bouncing_since is not None:
        return f"{user.handle}'s address is marked as bouncing"
    needed = current_app.config["PBEM"]["mail"]["bounces_to_stop"]
    return f"{user.handle}'s bounce {user.mail_bounces} of the {needed} that mark an address"


def count_refusal(address: str, status: str, words: str) -> None:
    """Count a permanent refusal of the recipient ``address`` at sending time, in a transaction of its
    own (the outbox's deliverer holds none).  A database that fails here loses the count, not the run:
    the mail is given up already, and its next one will be refused and counted again."""
    try:
        with unit_of_work() as uow:
            count_bounce(address, status, words)
            uow.commit()
    except Exception:
        db.session.rollback()
        log.exception("could not count the refusal of %s as a bounce", address)


def bouncing_in_sql(address: ColumnElement[str]) -> ColumnElement[bool]:
    """Whether the ``address`` (a column or expression of the caller's statement) is a player's and
    marked as bouncing, asked inside that statement: the same answer as :func:`bouncing` for an ASCII
    address (SQL's ``lower`` folds only ASCII letters alike in every database)."""
    return exists().where(User.email == func.lower(address), User.mail_bouncing_since.is_not(None))


def bouncing(addresses: Iterable[str]) -> set[str]:
    """Those of ``addresses`` (lowercased) that are a player's and marked as bouncing."""
    wanted = {address.strip().lower() for address in addresses}
    if not wanted:
        return set()
    found = db.session.scalars(
        select(User.email).where(User.email.in_(wanted), User.mail_bouncing_since.is_not(None))
    ).all()
    db.session.rollback()
    return set(found)
