"""Accounts on the web: sign up, confirm the address, sign in and out, reset a password, settings."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast
from urllib.parse import urlsplit

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required, login_user, logout_user
from sqlalchemy import and_, bindparam, select
from werkzeug.wrappers import Response

from pbem.accounts import accounts, apitokens, vacation
from pbem.accounts.accounts import AccountError
from pbem.core.extensions import limiter
from pbem.core.models import ApiToken, User, utcnow
from pbem.game import clock
from pbem.mailout import sendagain
from pbem.web import pagecache
from pbem.web.limits import MAIL_LINK_SCOPE, answered, per_account, per_ip_and, setting

bp = Blueprint("auth", __name__)


def _safe_next(target: str | None) -> str:
    """Only a path on this site, so a crafted link cannot send a player elsewhere after signing in."""
    # Browsers read a backslash in a link as a slash and drop tabs and line breaks, so "/\evil.example"
    # or "/<tab>/evil.example" would take them to another site as "//evil.example" does: a target with any
    # of these is refused outright rather than cleaned.
    if (target and target.startswith("/") and not target.startswith("//") and target.isprintable()
            and "\\" not in target and not urlsplit(target).netloc):
        return target
    return url_for("games.dashboard")


@bp.route("/signup", methods=["GET", "POST"])
@per_ip_and("signup_per_ip")
# A sign-up mails the address (a confirmation link, or a notice to the account that has it): counted with
# the other mails to it, but only when one may have gone, so that typing a short password is no cost.
@per_account("mail_link_per_address", "email", answered, shared_scope=MAIL_LINK_SCOPE)
@pagecache.kept(pagecache.static_stamp, forms=True)
def signup() -> str | Response | tuple[str, int]:
    """Create an account; a confirmation link goes to the address given."""
    form = request.form
    if request.method == "POST":
        try:
            accounts.sign_up(form.get("handle", ""), form.get("email", ""), form.get("password", ""))
        except AccountError as exc:
            return render_template("auth/signup.html", error=exc.args[0], form=form), 400
        # The same answer whether the address was free (a confirmation link went to it) or already an
        # account's (its owner was told): the page names the address as typed, and neither case.
        return render_template("auth/check_mail.html", email=form.get("email", "").strip().lower(),
                               signup=True)
    return render_template("auth/signup.html", form=form)


@bp.get("/verify/<token>")
def verify(token: str) -> Response | tuple[str, int]:
    """Follow the link of a confirmation mail."""
    try:
        user = accounts.verify(token)
    except accounts.LinkUsed as exc:
        flash(exc.args[0], "info")
        return redirect(url_for("auth.login"))
    except AccountError as exc:
        return render_template("auth/resend.html", error=exc.args[0]), 400
    login_user(user)
    flash(f"Your address is confirmed. Welcome, {user.handle}! Your mail key is on its way to you.", "info")
    return redirect(url_for("games.dashboard"))


@bp.route("/verify", methods=["GET", "POST"])
@per_ip_and("mail_link_per_ip", "email", "mail_link_per_address", shared_scope=MAIL_LINK_SCOPE)
def resend() -> str:
    """Ask for a new confirmation link."""
    if request.method == "POST":
        accounts.resend_verification(request.form.get("email", ""))
        return render_template("auth/check_mail.html", email=request.form.get("email", ""))
    return render_template("auth/resend.html")


@bp.route("/login", methods=["GET", "POST"])
@per_ip_and("signin_per_ip", "login", "signin_per_account", only_failures=True)
@pagecache.kept(pagecache.static_stamp, forms=True)
def login() -> str | Response | tuple[str, int]:
    """Sign in with handle (or address) and password."""
    if request.method == "POST":
        try:
            user = accounts.authenticate(request.form.get("login", ""), request.form.get("password", ""))
        except AccountError as exc:
            return render_template("auth/login.html", error=exc.args[0], form=request.form), 400
        login_user(user, remember=bool(request.form.get("remember")))
        return redirect(_safe_next(request.args.get("next")))
    if current_user.is_authenticated:
        # Signed in already (a bookmark, the back button): where the form would have led.  Signing in as
        # someone else is a matter of signing out first.
        return redirect(_safe_next(request.args.get("next")))
    return render_template("auth/login.html", form=request.form)


@bp.post("/logout")
def logout() -> Response:
    """Sign out (a POST, so a link on another site cannot sign a player out)."""
    logout_user()
    return redirect(url_for("main.index"))


@bp.route("/reset", methods=["GET", "POST"])
@per_ip_and("mail_link_per_ip", "email", "mail_link_per_address", shared_scope=MAIL_LINK_SCOPE)
@pagecache.kept(pagecache.static_stamp, forms=True)
def reset_request() -> str:
    """Ask for a password-reset link by mail, naming the account by its handle or its address."""
    # The field keeps its name "email" (it now takes a handle too), so the per-address limit and forms
    # posted before go on as they were.
    if request.method == "POST":
        accounts.request_reset(request.form.get("email", ""))
        return render_template("auth/check_mail.html", email=request.form.get("email", ""), reset=True)
    return render_template("auth/reset_request.html")


@bp.route("/reset/<token>", methods=["GET", "POST"])
def reset(token: str) -> str | Response | tuple[str, int]:
    """Choose a new password through the link of a reset mail."""
    try:
        user = accounts.user_for_reset(token)
    except AccountError as exc:
        return render_template("auth/reset_request.html", error=exc.args[0]), 400
    if request.method == "POST":
        try:
            user = accounts.reset_password(token, request.form.get("password", ""))
        except AccountError as exc:
            return render_template("auth/reset.html", user=user, error=exc.args[0]), 400
        login_user(user)
        flash("Your password is changed and you are signed in.", "info")
        return redirect(url_for("games.dashboard"))
    return render_template("auth/reset.html", user=user)


# What the settings page shows of the reader's row besides :data:`pagecache.READER_COLUMNS`, and their
# API tokens that still work (a row each); one statement, built once.
_SETTINGS = pagecache.with_reader(
    select(User.email, User.notify, User.digest_hour, User.pending_email, User.mail_bounce_reason,
           User.vacation_since, User.vacation_year, User.vacation_days_used, ApiToken.created_at,
           ApiToken.id, ApiToken.name, ApiToken.prefix, ApiToken.last_used_at)
    .outerjoin(ApiToken, and_(ApiToken.user_id == User.id, ApiToken.revoked_at.is_(None)))
    .where(User.id == bindparam("reader_id"))
)


def _settings_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What a player's settings page shows: their row and their tokens (see :data:`_SETTINGS`), and the
    words the clock changes: the time now, to the minute, and the vacation days left; None (not kept)
    for a visitor, who is sent to sign in."""
    if reader_id is None:
        return None
    rows, reader = pagecache.rows_stamp(_SETTINGS, {}, reader_id)
    if reader is None or not rows:
        return rows, reader
    since, year, used = rows[0][5:8]
    away = cast(User, SimpleNamespace(vacation_since=since, vacation_year=year, vacation_days_used=used))
    words = (clock.format_time(utcnow(), reader[2]), round(vacation.days_left(away), 1))
    return (rows, words), reader


@bp.route("/settings", methods=["GET", "POST"])
@pagecache.kept(_settings_stamp)
@login_required
def settings() -> str | Response | tuple[str, int]:
    """Notification choice, vacation, mail key and password."""
    if request.method == "POST":
        action = request.form.get("action", "")
        if action == "token-new":
            # The token is shown on this answer only, never stored in the session or a flash message.
            try:
                me = current_user._get_current_object()
                row, token = apitokens.create(me, request.form.get("name", ""))
            except AccountError as exc:
                return render_template("auth/settings.html", error=exc.args[0], **_settings_context()), 400
            return render_template("auth/settings.html", new_token=token, new_token_name=row.name,
                                   **_settings_context())
        if action == "mail-key":
            # Shown once, on this page only: not in a flash message, which would travel in the cookie.
            key = accounts.regenerate_mail_key(current_user._get_current_object())
            return render_template("auth/settings.html", new_key=key, **_settings_context())
        try:
            message = _apply_setting(action)
        except AccountError as exc:
            return render_template("auth/settings.html", error=exc.args[0], **_settings_context()), 400
        flash(message, "info")
        return redirect(url_for("auth.settings"))
    return render_template("auth/settings.html", **_settings_context())


def _settings_context() -> dict:
    user = current_user._get_current_object()
    ends = vacation.ends_at(user) if user.on_vacation else None
    return {"notify_choices": accounts.NOTIFY_CHOICES, "vacation_days_left": vacation.days_left(user),
            "api_tokens": apitokens.active(user),
            "vacation_ends": clock.format_time(ends, user.time_zone) if ends else None,
            "zones": clock.zone_choices(), "now": utcnow(), "digest_words": digest_hour_words(user)}


@bp.post("/settings/email")
@login_required
@limiter.limit(setting("email_change_per_account"), key_func=lambda: f"user:{current_user.get_id()}",
               methods=["POST"], scope="email-change")
def change_email() -> Response | tuple[str, int]:
    """Ask to move the account to a new mail address; a link to confirm it goes to that address."""
    try:
        form = request.form
        new_email = accounts.request_email_change(
            current_user._get_current_object(), form.get("email", ""), form.get("password", ""))
    except AccountError as exc:
        return render_template("auth/settings.html", error=exc.args[0], **_settings_context()), 400
    flash(f"A confirmation link has gone to {new_email}. Your address changes when you open it; until then "
          "everything keeps going to your current address.", "info")
    return redirect(url_for("auth.settings"))


@bp.get("/settings/email/<token>")
def confirm_email(token: str) -> Response | tuple[str, int]:
    """Follow the link mailed to a new address: the account moves to it."""
    try:
        user, resent = accounts.confirm_email_change(token)
    except AccountError as exc:
        return render_template("error.html", title="Address not changed", message=exc.args[0]), 400
    flash(f"Your mail address is now {user.email}.{sendagain.resent_words(resent)}", "info")
    return redirect(url_for("auth.settings") if current_user.is_authenticated else url_for("auth.login"))


def digest_hour_words(user: User) -> str:
    """When ``user``'s daily digest goes out, for the settings page."""
    if user.digest_hour is None:
        hour = current_app.config["PBEM"]["scheduler"]["digest_hour"]
        return f"Your daily digest goes out at the server's usual hour, {hour:02d}:00 UTC."
    return f"Your daily digest goes out at {user.digest_hour:02d}:00, {user.time_zone} time."


def _apply_setting(action: str) -> str:
    user = current_user._get_current_object()
    if action == "notify":
        accounts.set_notify(user, request.form.get("notify", ""))
        return f"Notifications: {accounts.NOTIFY_CHOICES[user.notify]}."
    if action == "time-zone":
        accounts.set_time_zone(user, request.form.get("time_zone", ""))
        return f"Times are shown in {user.time_zone} now."
    if action == "digest-hour":
        accounts.set_digest_hour(user, request.form.get("digest_hour", ""))
        return digest_hour_words(user)
    if action == "renew-tokens":
        resent = accounts.renew_reply_addresses(user)
        return ("The reply addresses and move links of the mails you have had no longer work; "
                f"the mails from now on carry new ones.{sendagain.resent_words(resent)}")
    if action == "password":
        accounts.change_password(user, request.form.get("current", ""), request.form.get("password", ""))
        login_user(user)  # This session goes on under the new session token; every other one ends.
        return "Your password is changed, and every other place signed in to your account is signed out."
    if action == "token-revoke":
        token_id = request.form.get("token", "")
        if not token_id.isdigit() or len(token_id) > 12:
            raise AccountError("You have no such token (it may be revoked already).")
        row = apitokens.revoke(user, int(token_id))
        return f"The API token {row.name!r} is revoked: programs using it are refused from now on."
    if action == "email-cancel":
        pending = accounts.cancel_email_change(user)
        if pending is None:
            return "No change of address was waiting."
        return f"The change to {pending} is cancelled: the link sent there no longer works."
    if action == "mail-works":
        resent = sendagain.address_works_again(user)
        return f"Game mail goes to {user.email} again.{sendagain.resent_words(resent)}"
    if action in ("vacation-on", "vacation-off"):
        return vacation.turn_on(user) if action == "vacation-on" else vacation.turn_off(user)
    raise AccountError("That setting does not exist.")
