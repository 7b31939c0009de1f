"""API tokens: the keys programs use to act for a player through the JSON API.

A token is ``pbem_`` and 43 characters of randomness (256 bits).  It is shown to the player once, when
made; only its SHA-256 is stored, with its first characters so the player can tell their tokens apart.
Revoking a token refuses it from the next request on.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import joinedload

from pbem.accounts.accounts import AccountError
from pbem.core.extensions import db
from pbem.core.models import ApiToken, User, utcnow
from pbem.core.redaction import API_TOKEN_PREFIX
from pbem.core.unit_of_work import unit_of_work

PREFIX = API_TOKEN_PREFIX
MAX_NAME = 64
# The longest text that could be a token: anything longer is refused before it is hashed.
MAX_TOKEN = 100
MAX_TOKENS_PER_USER = 20
# How stale "last used" may get: recording every request would make each one a write.
USE_GRANULARITY = timedelta(hours=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create(user: User, name: str) -> tuple[ApiToken, str]:
    """Make a new token for ``user`` called ``name``; returns the row and the token itself, which is
    never shown again.  Commits; AccountError for a bad name or too many tokens."""
    name = " ".join(name.split())
    if not name:
        raise AccountError("Give the token a name, such as the program that will use it.")
    if len(name) > MAX_NAME:
        raise AccountError(f"A token's name can be at most {MAX_NAME} characters.")
    with unit_of_work() as uow:
        if len(active(user)) >= MAX_TOKENS_PER_USER:
            uow.rollback()
            raise AccountError(
                f"You already have {MAX_TOKENS_PER_USER} tokens; revoke one you no longer use.")
        token = PREFIX + secrets.token_urlsafe(32)
        row = ApiToken(user_id=user.id, name=name, token_hash=_digest(token), prefix=token[:12])
        db.session.add(row)
        uow.commit()
    return row, token


def active(user: User) -> list[ApiToken]:
    """The player's tokens that still work, newest first."""
    return list(db.session.scalars(
        select(ApiToken).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
        .order_by(ApiToken.created_at.desc(), ApiToken.id.desc())
    ))


def revoke(user: User, token_id: int) -> ApiToken:
    """Revoke one of ``user``'s tokens; it is refused from now on.  Commits; AccountError if the player
    has no such working token."""
    with unit_of_work() as uow:
        row = db.session.get(ApiToken, token_id)
        if row is None or row.user_id != user.id or row.revoked_at is not None:
            uow.rollback()
            raise AccountError("You have no such token (it may be revoked already).")
        row.revoked_at = utcnow()
        uow.commit()
    return row


def stored_digest(token: str) -> str | None:
    """What is stored of ``token`` (its SHA-256), to be looked up by; None for a text that cannot be a
    token, which is refused unread."""
    token = token.strip()
    if not token.startswith(PREFIX) or len(token) > MAX_TOKEN:
        return None
    return _digest(token)


def authenticate(token: str) -> ApiToken | None:
    """The working token ``token`` is, with its player, or None: unknown, revoked, or its player can no
    longer sign in.  Notes when it was used (to the hour)."""
    digest = stored_digest(token)
    if digest is None:
        return None
    # The player with the token, in the same read: every request asks whether they may still sign in.
    row = db.session.scalar(select(ApiToken).where(ApiToken.token_hash == digest)
                            .options(joinedload(ApiToken.user)))
    if row is None or row.revoked_at is not None or not row.user.is_active:
        return None
    now = utcnow()
    if row.last_used_at is None or now - row.last_used_at > USE_GRANULARITY:
        token_id = row.id
        with unit_of_work() as uow:
            db.session.get_one(ApiToken, token_id).last_used_at = now
            uow.commit()
        row = db.session.get(ApiToken, token_id)
    return row
