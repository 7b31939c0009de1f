"""Accounts: creating players, with handles checked for look-alikes."""

from __future__ import annotations

import re

from sqlalchemy import func, or_, select
from werkzeug.security import generate_password_hash

from pbem.extensions import db
from pbem.models import User, utcnow

HANDLE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{1,31}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$|^[^@\s]+@[^@\s]+\.localhost$")

# Characters people confuse in a handle, folded to one representative.
_LOOKALIKES = str.maketrans({"0": "o", "1": "l", "i": "l", "5": "s", "_": "-"})


class AccountError(ValueError):
    """A handle or address that cannot be used; the message says why."""


def handle_key(handle: str) -> str:
    """The handle folded so that look-alikes (case, 0/o, 1/l/i, 5/s, _/-) collide."""
    return handle.casefold().translate(_LOOKALIKES)


def create_user(handle: str, email: str, password: str | None = None, verified: bool = False) -> User:
    """A new player (added to the session, not committed); AccountError if the handle or address is
    unusable or taken."""
    handle, email = handle.strip(), email.strip().lower()
    if not HANDLE.match(handle):
        raise AccountError(
            "A handle is 2 to 32 letters, digits, '-' or '_', starting with a letter, without spaces."
        )
    if not EMAIL.match(email):
        raise AccountError(f"{email!r} is not a mail address.")
    clash = db.session.scalar(
        select(User).where(or_(User.handle_key == handle_key(handle), func.lower(User.email) == email))
    )
    if clash is not None:
        if clash.email == email:
            raise AccountError(f"There is already an account for {email}.")
        raise AccountError(f"The handle {handle!r} is too like {clash.handle!r}, which is taken.")
    user = User(
        handle=handle,
        handle_key=handle_key(handle),
        email=email,
        password_hash=generate_password_hash(password) if password else None,
        verified_at=utcnow() if verified else None,
    )
    db.session.add(user)
    return user


def find_user(handle: str) -> User | None:
    """The player with this handle (case-insensitive), if any."""
    return db.session.scalar(select(User).where(User.handle_key == handle_key(handle.strip())))
