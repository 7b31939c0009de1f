"""Rate limits on the web forms strangers can use: the limits come from the [ratelimit] settings.

Each form is limited per client address and, where it names an account or a mail address, per that
account too, so that neither one machine nor many machines can guess a password or flood one inbox.
A per-account count is kept under the account's id, however the form named it (its handle, a look-alike
of it, its address in any case), so that switching names gives no fresh count; a name that is no
account's is counted under its folded form, so that the limits answer alike whether or not an account
exists.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

from flask import current_app, g, request
from flask_limiter.util import get_remote_address
from werkzeug.wrappers import Response

from pbem.accounts.accounts import account_for_login, handle_key
from pbem.core.extensions import limiter

# The longest form value read for a key: the longest mail address there is.
MAX_NAME = 320
# The scope every limit on mails with a link to one address shares: sign-up, reset and confirmation.
MAIL_LINK_SCOPE = "mail-link-per-account"


def setting(name: str) -> Callable[[], str]:
    """The limit called ``name`` in [ratelimit], read when a request is checked (so tests may set it)."""
    return lambda: current_app.config["PBEM"]["ratelimit"][name]


def account_key(value: str) -> str:
    """The per-account limits' key for a form's handle or address: the account's id when it names one,
    else the name folded (case, width, and a handle's look-alikes)."""
    name = unicodedata.normalize("NFKC", value.strip()[:MAX_NAME])
    # A name with a control character names no account (and PostgreSQL refuses a NUL in a query).
    if name.isprintable():
        user = account_for_login(name)
        if user is not None:
            return f"account:{user.id}"
    return f"name:{name.casefold() if '@' in name else handle_key(name)}"


def form_account(field: str) -> Callable[[], str]:
    """A key function: :func:`account_key` of the form field ``field``, looked up once a request."""

    def key() -> str:
        found: dict[str, str] = g.setdefault("limit_account_keys", {})
        if field not in found:
            found[field] = account_key(request.form.get(field, ""))
        return found[field]

    return key


def failed(response: Response) -> bool:
    """Count a request only when it was refused (a form shown again with an error)."""
    return response.status_code >= 400


def answered(response: Response) -> bool:
    """Count a request only when it was done (a form's success page, which may have sent a mail)."""
    return response.status_code < 400


def per_account(name: str, field: str, counted: Callable[[Response], bool] | None = None,
                shared_scope: str | None = None) -> Callable:
    """Decorate a view with the limit ``name`` per account the form field ``field`` names (see
    :func:`account_key`), counting the POSTs ``counted`` says (all without it).  Views given the same
    ``shared_scope`` share one count."""

    def decorate(view: Callable) -> Callable:
        if shared_scope is not None:
            return limiter.shared_limit(setting(name), shared_scope, key_func=form_account(field),
                                        methods=["POST"], deduct_when=counted)(view)
        return limiter.limit(setting(name), key_func=form_account(field), methods=["POST"],
                             deduct_when=counted, scope=f"{view.__name__}-{field}")(view)

    return decorate


def per_ip_and(name_ip: str, field: str | None = None, name_field: str | None = None,
               only_failures: bool = False, shared_scope: str | None = None) -> Callable:
    """Decorate a view with the limit ``name_ip`` per client address and, with ``field``, the limit
    ``name_field`` per account that field names (:func:`per_account`); only POSTs count, and with
    ``only_failures`` only those refused."""
    deduct = failed if only_failures else None

    def decorate(view: Callable) -> Callable:
        if field is not None and name_field is not None:
            view = per_account(name_field, field, deduct, shared_scope)(view)
        return limiter.limit(setting(name_ip), key_func=get_remote_address, methods=["POST"],
                             deduct_when=deduct, scope=f"{view.__name__}-ip")(view)

    return decorate
