"""Rate limits on the web forms strangers can use: the limits come from the [ratelimit] settings.

Each form is limited per client address and, where it names an account or a mail address, per that
name too, so that neither one machine nor many machines can guess a password or flood one inbox.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import current_app, request
from flask_limiter.util import get_remote_address
from werkzeug.wrappers import Response

from pbem.accounts.accounts import handle_key
from pbem.core.extensions import limiter


def setting(name: str) -> Callable[[], str]:
    """The limit called ``name`` in [ratelimit], read when a request is checked (so tests may set it)."""
    return lambda: current_app.config["PBEM"]["ratelimit"][name]


def form_value(field: str) -> Callable[[], str]:
    """A key function: the form field ``field``, folded, so that case and spaces give no fresh count, nor
    (for a handle, which has no "@") a look-alike of it, which names the same account."""

    def key() -> str:
        value = request.form.get(field, "").strip()[:320]
        return f"{field}:{value.casefold() if '@' in value else handle_key(value)}"

    return key


def failed(response: Response) -> bool:
    """Count a request only when it was refused (a form shown again with an error)."""
    return response.status_code >= 400


def per_ip_and(name_ip: str, field: str | None = None, name_field: str | None = None,
               only_failures: bool = False) -> Callable:
    """Decorate a view with the limit ``name_ip`` per client address and, with ``field``, the limit
    ``name_field`` per value of that form field; only POSTs count."""
    deduct = failed if only_failures else None

    def decorate(view: Callable) -> Callable:
        if field is not None and name_field is not None:
            view = limiter.limit(setting(name_field), key_func=form_value(field), methods=["POST"],
                                 deduct_when=deduct, scope=f"{view.__name__}-{field}")(view)
        return limiter.limit(setting(name_ip), key_func=get_remote_address, methods=["POST"],
                             deduct_when=deduct, scope=f"{view.__name__}-ip")(view)

    return decorate
