"""The development mailbox page, ``/mailbox``: the mail ``pbem run`` caught, by address, and replies.

Only when ``server.development`` is on.  It reads the dev mailbox's Maildir (:mod:`pbem.mailout.devmail`) and
sends a reply the way a mail client would — From the address the mail was sent to, To its Reply-To,
quoting it — through the real SMTP listener at ``smtpd.host:smtpd.port``, so a newcomer can play a
whole game "by mail" on one machine.
"""

from __future__ import annotations

import smtplib
from email import message_from_bytes
from email.message import EmailMessage
from email.policy import default as default_policy
from email.utils import formatdate, make_msgid, parseaddr
from pathlib import Path
from typing import TYPE_CHECKING

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

if TYPE_CHECKING:
    import mailbox

bp = Blueprint("mailbox", __name__, url_prefix="/mailbox")


@bp.before_request
def development_only() -> None:
    """The page exists only on a development server."""
    if not current_app.config["PBEM"]["server"]["development"]:
        abort(404)


def _path() -> Path:
    return Path(current_app.instance_path) / "mailbox"


def _parse(raw: bytes) -> EmailMessage:
    """A kept message parsed with the modern policy (decoded headers, ``get_body``)."""
    parsed = message_from_bytes(raw, policy=default_policy)
    assert isinstance(parsed, EmailMessage)
    return parsed


def _maildir() -> mailbox.Maildir:
    """The dev mailbox's Maildir."""
    # Imported here: only a development server reads it, and the module is 0.4 MB of every web worker.
    import mailbox

    return mailbox.Maildir(str(_path()), create=True)


def _mails() -> list[tuple[str, EmailMessage]]:
    """Every kept mail, newest first, with its Maildir key."""
    box = _maildir()
    kept = [(key, _parse(box.get_bytes(key))) for key in box.iterkeys()]
    return sorted(kept, key=lambda item: _date(item[1]), reverse=True)


def _date(message: EmailMessage) -> float:
    try:
        return message["Date"].datetime.timestamp()
    except (AttributeError, TypeError, ValueError):
        return 0.0


def _recipient(message: EmailMessage) -> str:
    return str(message.get("X-Pbem-Envelope-To") or message.get("To") or "").split(",")[0].strip()


def _text(message: EmailMessage) -> str:
    body = message.get_body(preferencelist=("plain", "html"))
    return body.get_content() if body is not None else ""


@bp.get("")
def index() -> str:
    """The addresses that have mail, and the mails of the one chosen."""
    mails = _mails()
    addresses: dict[str, int] = {}
    for _key, message in mails:
        addresses[_recipient(message)] = addresses.get(_recipient(message), 0) + 1
    chosen = request.args.get("to") or (next(iter(addresses)) if addresses else None)
    listed = [(key, m) for key, m in mails if _recipient(m) == chosen]
    return render_template("mailbox/index.html", addresses=sorted(addresses.items()), chosen=chosen,
                           listed=listed)


def _one(key: str) -> EmailMessage:
    box = _maildir()
    try:
        return _parse(box.get_bytes(key))
    except KeyError:
        abort(404)


@bp.get("/<key>")
def show(key: str) -> str:
    """One mail, with a reply form."""
    message = _one(key)
    return render_template("mailbox/show.html", key=key, message=message, text=_text(message),
                           recipient=_recipient(message))


@bp.post("/<key>/reply")
def reply(key: str) -> Response:
    """Send the typed answer as a reply to the mail, through the real SMTP listener."""
    original = _one(key)
    words = request.form.get("body", "").strip()
    if not words:
        flash("Write something to send: your move, or a command such as 'show'.", "error")
        return redirect(url_for("mailbox.show", key=key))
    sender = _recipient(original)
    to = parseaddr(str(original.get("Reply-To") or original.get("From") or ""))[1]
    answer = EmailMessage()
    answer["From"], answer["To"] = sender, to
    subject = str(original.get("Subject", ""))
    answer["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
    answer["Date"] = formatdate(localtime=False)
    answer["Message-ID"] = make_msgid(domain="mailbox.localhost")
    if original.get("Message-ID"):
        answer["In-Reply-To"] = str(original["Message-ID"])
        answer["References"] = f"{original.get('References', '')} {original['Message-ID']}".strip()
    quoted = "\n".join("> " + line for line in _text(original).splitlines())
    answer.set_content(f"{words}\n\nOn {original.get('Date', 'an earlier day')}, pbem wrote:\n{quoted}\n")
    settings = current_app.config["PBEM"]["smtpd"]
    try:
        with smtplib.SMTP(settings["host"], settings["port"], timeout=10) as client:
            client.send_message(answer)
    except (OSError, smtplib.SMTPException) as exc:
        flash(f"The mail listener at {settings['host']}:{settings['port']} did not take the reply: {exc}. "
              "Is `pbem run` (or `pbem smtpd`) running?", "error")
        return redirect(url_for("mailbox.show", key=key))
    flash(f"Sent to {to}. The answer arrives here in a few seconds.", "info")
    return redirect(url_for("mailbox.index", to=sender))
