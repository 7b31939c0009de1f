"""Accounts: signing up, confirming the address, signing in, password resets and a player's settings
(notifications, time zone, a new mail address confirmed from that address).

Confirmation and reset links are signed with the server secret (itsdangerous) and expire; a reset link
is also bound to the password it replaces, so it works once.  Mails go through the outbox.
"""

from __future__ import annotations

import hmac
import re
from datetime import timedelta
from functools import cache
from typing import Any

from flask import current_app
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import delete, exists, func, or_, select, update
from werkzeug.security import check_password_hash, generate_password_hash

from pbem.core.extensions import db
from pbem.core.models import (
    Challenge,
    Game,
    InboundMail,
    Move,
    OutboxMail,
    Rating,
    Seat,
    User,
    hash_mail_key,
    new_mail_key,
    new_session_token,
    utcnow,
)
from pbem.core.site import absolute_url
from pbem.core.unit_of_work import UnitOfWork, unit_of_work
from pbem.game import clock
from pbem.mailout import outbox, sendagain, tokens
from pbem.mailout.compose import compose

HANDLE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{1,31}$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$|^[^@\s]+@localhost$|^[^@\s]+@[^@\s]+\.localhost$")
MIN_PASSWORD = 8
NOTIFY_CHOICES = {"move": "a mail for every move", "digest": "one mail a day listing the games awaiting me"}
# How long the links in confirmation and reset mails stay good, in seconds.
VERIFY_LINK_SECONDS = 7 * 86400
RESET_LINK_SECONDS = 2 * 3600
EMAIL_LINK_SECONDS = 2 * 86400

# Characters people confuse in a handle, folded to one representative.
_LOOKALIKES = str.maketrans({"0": "o", "1": "l", "i": "l", "5": "s", "_": "-"})

# Handles nobody may take: words the new-game form and the API read as something else ("me" is the
# player filling it in), and names of the server's own mailboxes or of its operators, which a player
# could otherwise pass for.  Compared as handles are (see :func:`handle_key`), so "ME" and "r00t" too.
RESERVED_HANDLES = ("me", "you", "open", "nobody", "pbem", "play", "bounces", "postmaster",
                    "mailer-daemon", "admin", "root", "abuse")


class AccountError(ValueError):
    """A handle, address, password or link that cannot be used; the message says why."""


def handle_key(handle: str) -> str:
    """The handle folded so that look-alikes (case, 0/o, 1/l/i, 5/s, _/-) collide."""
    return handle.casefold().translate(_LOOKALIKES)


def check_handle(handle: str) -> None:
    """AccountError unless ``handle`` (stripped) has the form of a handle and is not reserved (see
    :data:`RESERVED_HANDLES`)."""
    if not HANDLE.match(handle):
        raise AccountError(
            "A handle is 2 to 32 letters, digits, '-' or '_', starting with a letter, without spaces."
        )
    _refuse_reserved(handle)


def _refuse_reserved(handle: str) -> None:
    key = handle_key(handle)
    for word in RESERVED_HANDLES:
        if handle_key(word) == key:
            raise AccountError(f"{word!r} is a word the server reads itself; choose another handle.")


def internationalised(email: str) -> bool:
    """Whether ``email`` has letters beyond plain ASCII, written as they are or, in its domain, in their
    ASCII form (a label beginning "xn--", which browsers send for what was typed as "exämple.org")."""
    domain = email.rpartition("@")[2]
    return not email.isascii() or any(label[:4].lower() == "xn--" for label in domain.split("."))


def check_address(email: str) -> None:
    """AccountError unless ``email`` (stripped, lower case) is a mail address this server can send to."""
    if len(email) > 254 or not EMAIL.match(email):
        raise AccountError(f"{email[:254]!r} is not a mail address.")
    if internationalised(email):
        # The local part of such an address needs SMTPUTF8, which this server does not speak, so its mail
        # would never go; the domain's ASCII form is refused alike, so that one address gets one answer
        # whether it is typed with its letters, or a browser turned them into "xn--" first.
        raise AccountError(f"{email!r} has letters beyond plain ASCII (in their own form or as an xn-- "
                           "domain), and this server takes only plain ASCII addresses; give another one.")


class AddressTaken(AccountError):
    """An address that is already an account's (``owner``)."""

    def __init__(self, email: str, owner: User) -> None:
        super().__init__(f"There is already an account for {email}.")
        self.owner = owner


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"A password needs at least {MIN_PASSWORD} characters.")


def hash_password(password: str) -> str:
    """Check ``password`` and hash it.  Hashing is slow on purpose, so it is done before a transaction
    takes the write lock, never while holding it."""
    _check_password(password)
    return _hashed(password)


def _hashed(password: str) -> str:
    # The method is a setting only so that the test suite can hash cheaply; servers keep the default.
    return generate_password_hash(password, current_app.config["PBEM"]["server"]["password_hash"])


def create_user(handle: str, email: str, password: str | None = None, verified: bool = False, *,
                password_hash: str | None = None) -> User:
    """A new player (added to the session, not committed); AccountError if the handle or address is
    unusable or taken (:class:`AddressTaken` for the address)."""
    handle, email = handle.strip(), email.strip().lower()
    check_handle(handle)
    check_address(email)
    # A taken handle is said first: handles are public, while whose an address is, is not.
    clash = db.session.scalar(select(User).where(User.handle_key == handle_key(handle)))
    if clash is not None:
        if clash.handle.casefold() == handle.casefold():
            raise AccountError(f"The handle {clash.handle!r} is taken.")
        raise AccountError(f"The handle {handle!r} is too like {clash.handle!r}, which is taken.")
    owner = _by_email(email)
    if owner is not None:
        raise AddressTaken(email, owner)
    user = User(
        handle=handle,
        handle_key=handle_key(handle),
        email=email,
        password_hash=password_hash or (_hashed(password) if password else None),
        verified_at=utcnow() if verified else None,
    )
    db.session.add(user)
    return user


def find_user(handle: str) -> User | None:
    """The player with this handle (case-insensitive), if any."""
    return db.session.scalar(select(User).where(User.handle_key == handle_key(handle.strip())))


def _by_email(email: str) -> User | None:
    return db.session.scalar(select(User).where(func.lower(User.email) == email.strip().lower()))


def account_for_login(login: str) -> User | None:
    """The account a form's handle or address names (a handle's look-alike, an address in any case),
    if any: sign-in and password resets take either."""
    login = login.strip()
    return _by_email(login) if "@" in login else find_user(login)


# Signing up and confirming the address ----------------------------------------------------------------


def _signer(purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=f"account-{purpose}")


def sign_up(handle: str, email: str, password: str) -> User | None:
    """Create an unconfirmed account and mail it a confirmation link; commits.  The handle of a
    placeholder account (made by importing records) is claimed instead: see :func:`claim`.

    An address that is already an account's is answered as a new one is (the sign-up form must not
    tell strangers whose addresses have accounts): nothing is made, and the account's owner is mailed
    that someone tried, with a link to reset the password; None then.
    """
    # A reserved handle is refused even where an imported record made a placeholder of it (whose form
    # is otherwise not checked: an imported handle may be claimed as it is).
    _refuse_reserved(handle.strip())
    hashed = hash_password(password)
    # The write lock first: the check for a taken handle and the insert must see the same database.
    with unit_of_work() as uow:
        try:
            placeholder = find_user(handle)
            if placeholder is not None and placeholder.placeholder:
                return claim(uow, placeholder, email, hashed)
            user = create_user(handle, email, password_hash=hashed)
        except AddressTaken as taken:
            _tell_owner_of_sign_up(taken.owner)
            uow.commit()
            return None
        db.session.flush()
        send_verification(user)
        uow.commit()
    return user


def _tell_owner_of_sign_up(owner: User) -> None:
    """Write the mail telling ``owner`` that someone tried to sign up with their address into the outbox
    (the caller commits): with their handle, and a link to reset the password (which also confirms an
    address never confirmed), should they have forgotten they have an account."""
    outbox.enqueue(
        owner,
        outbox.subject("Someone tried to sign up with your address"),
        compose("mail/signup_taken.txt", user=owner, reset_url=_reset_url(owner),
                hours=RESET_LINK_SECONDS // 3600, login_url=absolute_url("/login"),
                when=clock.format_time(utcnow(), owner.time_zone)),
        kind="signup-taken",
    )


def send_verification(user: User) -> None:
    """Write the mail with the link that confirms ``user``'s address into the outbox (caller commits)."""
    _mail_confirmation(user, user, _signer("verify").dumps({"u": user.id, "e": user.email}))


def _mail_confirmation(to: User | str, user: User, token: str) -> None:
    """Write the mail with the link (bearing ``token``) that confirms ``user``'s address into the outbox,
    to ``to``: the account, or the address a placeholder is being claimed with."""
    outbox.enqueue(
        to,
        outbox.subject("Confirm your address"),
        compose("mail/verify.txt", user=user, url=absolute_url(f"/verify/{token}"),
                days=VERIFY_LINK_SECONDS // 86400),
        kind="verify",
    )


def claim(uow: UnitOfWork, placeholder: User, email: str, password_hash: str) -> User:
    """Start claiming a placeholder account: mail a confirmation link to ``email``; commits the caller's
    unit of work (see :func:`sign_up`).

    Nothing of the account changes but its pending password (stored hashed), which the link is bound
    to: the handle and its games become the claimant's only when the link is followed, and a later
    sign-up for the same handle makes earlier links void.
    """
    email = email.strip().lower()
    check_address(email)
    owner = _by_email(email)
    if owner is not None:
        raise AddressTaken(email, owner)
    placeholder.password_hash = password_hash
    token = _signer("verify").dumps({"u": placeholder.id, "e": email, "c": _reset_fingerprint(placeholder)})
    _mail_confirmation(email, placeholder, token)
    uow.commit()
    return placeholder


def _finish_claim(uow: UnitOfWork, user: User | None, data: dict[str, Any]) -> User:
    """Make a placeholder account the claimant's; commits the caller's unit of work."""
    if user is None or not user.placeholder:
        raise AccountError("This handle has been claimed already.")
    if data.get("c") != _reset_fingerprint(user):
        raise AccountError("A later sign-up for this handle replaced this link; use the newest one.")
    email = str(data.get("e", ""))
    if _by_email(email) is not None:
        raise AccountError(f"There is already an account for {email}.")
    user.email, user.placeholder, user.verified_at = email, False, utcnow()
    mail_new_key(user, "welcome")
    uow.commit()
    return user


def resend_verification(email: str) -> None:
    """Send a new confirmation link to an unconfirmed account with this address (silently nothing
    otherwise, so the form does not tell strangers who has an account); commits."""
    with unit_of_work() as uow:
        user = _by_email(email)
        if user is not None and not user.verified and not user.placeholder:
            send_verification(user)
        uow.commit()


class LinkUsed(AccountError):
    """A confirmation link that has done its work already: it confirms once and signs in once."""


def verify(token: str) -> User:
    """Confirm the address named by a confirmation link, and mail the player their mail key; commits.

    AccountError if the link is bad; :class:`LinkUsed` once the address is confirmed, so that a link
    found later in a mailbox cannot sign anyone in.
    """
    data = _load(token, "verify", VERIFY_LINK_SECONDS)
    with unit_of_work() as uow:
        user = db.session.get(User, data.get("u"))
        if "c" in data:
            return _finish_claim(uow, user, data)
        if user is None or user.email != data.get("e"):
            raise AccountError("This confirmation link is not for any current account.")
        if user.verified_at is not None:
            raise LinkUsed("This confirmation link has been used already: your address is confirmed. Sign in "
                           "with your handle and password.")
        user.verified_at = utcnow()
        mail_new_key(user, "welcome")
        uow.commit()
    return user


def expire_unconfirmed() -> int:
    """Delete the accounts never confirmed whose last confirmation link has expired (so an address
    someone typed by mistake, or a squatted handle, is free again); commits and returns how many.

    An account that something refers to (a seat, a challenge, a move) is kept: it is for an operator.
    """
    cutoff = utcnow() - timedelta(seconds=VERIFY_LINK_SECONDS)
    last_link = (
        select(func.max(OutboxMail.created_at))
        .where(OutboxMail.user_id == User.id, OutboxMail.kind == "verify")
        .scalar_subquery()
    )
    in_use = or_(*(
        exists().where(column == User.id)
        for column in (Seat.user_id, Game.created_by_id, Move.user_id, Challenge.challenger_id,
                       Challenge.challenged_id, Rating.user_id)
    ))
    with unit_of_work() as uow:
        expired = db.session.scalars(
            select(User.id).where(User.verified_at.is_(None),
                                  func.coalesce(last_link, User.created_at) < cutoff, ~in_use)
        ).all()
        if expired:
            db.session.execute(update(OutboxMail).where(OutboxMail.user_id.in_(expired)).values(user_id=None))
            db.session.execute(update(InboundMail).where(InboundMail.user_id.in_(expired)).values(user_id=None))
            db.session.execute(delete(User).where(User.id.in_(expired)))
        uow.commit()
    return len(expired)


def _load(token: str, purpose: str, max_age: int) -> dict[str, Any]:
    what = "reset" if purpose == "reset" else "confirmation"
    try:
        data = _signer(purpose).loads(token, max_age=max_age)
    except SignatureExpired:
        raise AccountError(f"This {what} link has expired; ask for a new one.") from None
    except BadSignature:
        raise AccountError(f"This {what} link is damaged or not one of ours; ask for a new one.") from None
    if not isinstance(data, dict):
        raise AccountError(f"This {what} link is not one of ours.")
    return data


# Signing in and passwords ---------------------------------------------------------------------------


def authenticate(login: str, password: str) -> User:
    """The player whose handle or address and password these are; AccountError otherwise."""
    user = account_for_login(login)
    # A name with no account (or no password) is checked against a stand-in hash, so that the answer
    # takes as long as for an account's: its time must not tell which names have accounts.
    stored = user.password_hash if user is not None and user.password_hash else _stand_in_hash()
    if not check_password_hash(stored, password) or user is None or not user.password_hash:
        raise AccountError("That handle (or address) and password do not match an account.")
    if not user.verified:
        raise AccountError(
            f"{user.handle} has not confirmed their address yet: follow the link in the mail we sent, "
            "or ask for a new one."
        )
    return user


@cache
def _stand_in_hash() -> str:
    """A password hash made as an account's are, matching no password anyone types (made once)."""
    return generate_password_hash(new_session_token())


def _reset_fingerprint(user: User) -> str:
    # Bound to the current password, so a reset link stops working once it has been used.
    return (user.password_hash or "none")[-16:]


def request_reset(login: str) -> None:
    """Mail a password-reset link to the account with this handle or address, if there is one (to its
    address, whichever was given); commits."""
    with unit_of_work() as uow:
        user = account_for_login(login)
        if user is None or user.placeholder:
            # A placeholder has no address to mail: it is claimed by signing up with its handle.
            uow.rollback()
            return
        outbox.enqueue(
            user,
            outbox.subject("Reset your password"),
            compose("mail/reset.txt", user=user, url=_reset_url(user),
                    hours=RESET_LINK_SECONDS // 3600),
            kind="reset",
        )
        uow.commit()


def _reset_url(user: User) -> str:
    """A link that lets ``user`` choose a new password, once, for :data:`RESET_LINK_SECONDS`."""
    token = _signer("reset").dumps({"u": user.id, "p": _reset_fingerprint(user)})
    return absolute_url(f"/reset/{token}")


def user_for_reset(token: str) -> User:
    """The player a reset link is for; AccountError if it is bad, expired or already used."""
    data = _load(token, "reset", RESET_LINK_SECONDS)
    user = db.session.get(User, data.get("u"))
    if user is None or data.get("p") != _reset_fingerprint(user):
        raise AccountError("This reset link has already been used; ask for a new one.")
    return user


def reset_password(token: str, password: str) -> User:
    """Set a new password through a reset link; the link also confirms the address (and then mails the
    mail key, as confirming does).  Every other session of the account ends, a pending change of address
    is cancelled, and a notice goes to the address.  Commits."""
    hashed = hash_password(password)
    with unit_of_work() as uow:
        user = user_for_reset(token)
        pending = user.pending_email
        _replace_password(user, hashed)
        _tell_password_changed(user, pending)
        if user.verified_at is None:
            user.verified_at = utcnow()
            mail_new_key(user, "welcome")
        uow.commit()
    return user


def set_password(user: User, password: str) -> None:
    """Replace ``user``'s password, end every session signed in with the old one and cancel a pending
    change of address (the caller commits, and signs the current session in again).  No notice is mailed:
    this is for operators and tests, not a player's own change (see :func:`change_password`)."""
    _replace_password(user, hash_password(password))


def _tell_password_changed(user: User, cancelled_email: str | None) -> None:
    """Write the notice that ``user``'s password was changed into the outbox (the caller commits), so that
    an owner who did not change it learns so, and how to take the account back.  It names no password
    and carries no link that acts: the reset page asks for a new link by mail."""
    outbox.enqueue(
        user,
        outbox.subject("Your password was changed"),
        compose("mail/password_changed.txt", user=user, reset_url=absolute_url("/reset"),
                when=clock.format_time(utcnow(), user.time_zone),
                cancelled_email=mask_address(cancelled_email) if cancelled_email else None),
        kind="password-changed",
    )


def _replace_password(user: User, password_hash: str) -> None:
    user.password_hash = password_hash
    # The notice of an address change tells the owner to change the password if the change was not
    # theirs: doing so must also stop the move, or the link (perhaps in someone else's mailbox) would
    # still take the account away.  The confirmation checks ``pending_email``, so clearing it voids it.
    user.pending_email = None
    end_other_sessions(user)


def end_other_sessions(user: User) -> None:
    """Give ``user`` a new session token: every browser signed in (or remembered) with the old one is
    signed out at its next request.  The caller commits."""
    user.session_token = new_session_token()


def user_for_session(session_id: str) -> User | None:
    """The player a session (or remember-me cookie) stands for, if its token is still current."""
    user_id, _, token = session_id.partition(":")
    if not user_id.isdigit() or not token:
        return None
    user = db.session.get(User, int(user_id))
    if user is None or not session_token_matches(user.session_token, token):
        return None
    return user


def session_token_matches(current: object, presented: str) -> bool:
    """Whether ``presented`` (from a session) is the session token a user row holds, compared in constant
    time."""
    return hmac.compare_digest(str(current).encode(), presented.encode())


def change_password(user: User, current: str, password: str) -> None:
    """Replace ``user``'s password after checking the current one; commits.  The account's other
    sessions end (the caller signs the current one in again), a pending change of address is cancelled,
    and a notice goes to the address."""
    if not user.password_hash or not check_password_hash(user.password_hash, current):
        raise AccountError("Your current password is not right, so the password was not changed.")
    hashed = hash_password(password)
    with unit_of_work() as uow:
        pending = user.pending_email
        _replace_password(user, hashed)
        _tell_password_changed(user, pending)
        uow.commit()


# Settings ---------------------------------------------------------------------------


def set_notify(user: User, choice: str) -> None:
    """Choose how ``user`` hears about their moves (see :data:`NOTIFY_CHOICES`); commits."""
    if choice not in NOTIFY_CHOICES:
        raise AccountError(f"Notification must be one of: {', '.join(NOTIFY_CHOICES)}.")
    with unit_of_work() as uow:
        user.notify = choice
        uow.commit()


def set_digest_hour(user: User, hour: str) -> None:
    """Send ``user``'s daily digest at ``hour`` (0-23, in their time zone), or at the server's usual hour
    for ""; commits.  AccountError for anything else."""
    hour = hour.strip()
    if hour and not (hour.isascii() and hour.isdigit() and len(hour) <= 2 and int(hour) <= 23):
        raise AccountError("The digest hour is a whole hour from 0 to 23 (in your time zone).")
    with unit_of_work() as uow:
        fresh = db.session.get_one(User, user.id)
        fresh.digest_hour = int(hour) if hour else None
        uow.commit()


def check_mail_key(user: User, key: str | None) -> bool:
    """Whether ``key`` is ``user``'s mail key (any case)."""
    return bool(key) and hmac.compare_digest(hash_mail_key(key or ""), user.mail_key_hash)


def mail_new_key(user: User, occasion: str) -> str:
    """Give ``user`` a new mail key and write it into the outbox for them (the caller commits).

    The key is stored only as its hash; this mail (and the page that asked for a new key) is the only
    place it is ever shown.
    """
    key = new_mail_key()
    user.mail_key_hash = hash_mail_key(key)
    user.mail_key_paused_until = None
    outbox.enqueue(
        user,
        outbox.subject("Welcome: your mail key" if occasion == "welcome" else "Your new mail key"),
        compose("mail/mail_key.txt", user=user, key=key, occasion=occasion,
                settings_url=absolute_url("/settings")),
        kind="mail-key",
    )
    return key


def regenerate_mail_key(user: User) -> str:
    """Give ``user`` a new mail key (the old one stops working at once) and mail it to them; commits
    and returns it, to be shown once."""
    with unit_of_work() as uow:
        user = db.session.get_one(User, user.id)
        key = mail_new_key(user, "replaced")
        uow.commit()
    return key


def renew_reply_addresses(user: User) -> int:
    """Replace ``user``'s reply addresses and move links: every one mailed so far stops working (for a
    mail gone astray), and each game awaiting their move sends its move request again with new ones,
    since the request they have would be refused now.  Commits; returns how many requests were written."""
    with unit_of_work() as uow:
        fresh = db.session.get(User, user.id, with_for_update={"key_share": True}, populate_existing=True)
        assert fresh is not None
        turns = sendagain.awaiting_move_locked(fresh)
        tokens.renew(fresh)
        resent = sendagain.request_moves_again(fresh, turns, skip_waiting=False)
        uow.commit()
    return resent


def set_time_zone(user: User, zone: str) -> None:
    """Show ``user`` times in ``zone`` (an IANA name such as "Europe/Paris"); commits.  AccountError
    for a name that is not a time zone."""
    zone = zone.strip()
    if zone not in clock.zone_names():
        raise AccountError(f"{zone[:64]!r} is not a time zone; choose one from the list (e.g. Europe/Paris).")
    with unit_of_work() as uow:
        fresh = db.session.get(User, user.id)
        assert fresh is not None
        fresh.time_zone = zone
        uow.commit()


# Changing the mail address --------------------------------------------------------------------------


def request_email_change(user: User, new_email: str, password: str) -> str:
    """Ask to move ``user``'s account to ``new_email``: a confirmation link goes to the new address and a
    notice to the current one, which keeps working until the link is followed.  The password is asked
    for, so that a browser left signed in cannot move the account.  Commits; returns the new address.
    AccountError if the password is wrong or the address unusable or taken."""
    new_email = new_email.strip().lower()
    if not user.password_hash or not check_password_hash(user.password_hash, password):
        raise AccountError("Your password is not right, so the address was not changed.")
    check_address(new_email)
    if new_email == user.email.lower():
        raise AccountError(f"{new_email} is already your address.")
    if _by_email(new_email) is not None:
        raise AccountError(f"There is already an account for {new_email}.")
    with unit_of_work() as uow:
        fresh = db.session.get(User, user.id)
        assert fresh is not None
        fresh.pending_email = new_email
        token = _signer("email").dumps({"u": fresh.id, "e": new_email, "o": fresh.email})
        days = EMAIL_LINK_SECONDS // 86400
        outbox.enqueue(
            new_email,
            outbox.subject("Confirm your new address"),
            compose("mail/email_change.txt", user=fresh, new_email=new_email, days=days,
                    url=absolute_url(f"/settings/email/{token}")),
            kind="email-change",
        )
        outbox.enqueue(
            fresh,
            outbox.subject("Your address is about to change"),
            compose("mail/email_change_notice.txt", user=fresh, new_email=new_email, days=days),
            kind="email-change-notice",
        )
        uow.commit()
    return new_email


def cancel_email_change(user: User) -> str | None:
    """Stop ``user``'s pending change of address: the link mailed to the new address no longer works.
    Commits; returns the address that was pending, or None if there was none."""
    with unit_of_work() as uow:
        fresh = db.session.get(User, user.id)
        assert fresh is not None
        pending, fresh.pending_email = fresh.pending_email, None
        uow.commit()
    return pending


def mask_address(address: str) -> str:
    """``address`` with most of its local part hidden ("d***@example.org"), to tell a mailbox that an
    address exists without handing it out."""
    local, _, domain = address.partition("@")
    return f"{local[:1]}***@{domain}"


def confirm_email_change(token: str) -> tuple[User, int]:
    """Follow the link mailed to a new address: the account's address becomes it, and a mark of the old
    one as bouncing comes off.  Commits; returns the player and how many move requests were sent again
    to the new address (see :func:`pbem.mailout.sendagain.clear_bounce_mark`).  AccountError if the link
    is bad, expired, replaced by a later request, or the address was taken meanwhile."""
    data = _load(token, "email", EMAIL_LINK_SECONDS)
    with unit_of_work() as uow:
        # The row is held (on PostgreSQL; BEGIN IMMEDIATE does it on SQLite) so that the link followed twice
        # at once changes the address, and sends the move requests again, once.
        user = db.session.get(User, data.get("u"), with_for_update={"key_share": True},
                              populate_existing=True)
        if user is None or user.email != data.get("o") or user.pending_email != data.get("e"):
            uow.rollback()
            raise AccountError("This link is no longer good: the address was changed or asked for again "
                               "since. Ask for the change again in your settings.")
        new_email = str(data["e"])
        if db.session.scalar(select(User.id).where(func.lower(User.email) == new_email, User.id != user.id)):
            uow.rollback()
            raise AccountError(f"There is already an account for {new_email}.")
        user.pending_email = None
        old_email = user.email
        resent = sendagain.clear_bounce_mark(user, new_email)  # What bounced was the old address.
        if user.verified_at is None:
            user.verified_at = utcnow()
        # The old address hears of the move, so that an owner who did not ask for it learns of it (and only
        # a masked form of the new address: it may be a stranger's).
        outbox.enqueue(
            old_email,
            outbox.subject("Your address was changed"),
            compose("mail/email_changed.txt", user=user, new_email=mask_address(new_email),
                    when=clock.format_time(utcnow(), user.time_zone)),
            kind="email-changed",
        )
        uow.commit()
    return user, resent
