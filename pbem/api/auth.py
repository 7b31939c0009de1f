"""Who is calling the API: the Bearer token of each request, and the rate limit per token."""

from __future__ import annotations

from flask import current_app, g, request
from flask_limiter.util import get_remote_address

from pbem.accounts import apitokens
from pbem.api import kept
from pbem.api.errors import ApiError
from pbem.core.models import ApiToken, User


def current_token() -> ApiToken | None:
    """The working token the request carries, or None (read once per request)."""
    if "api_token" not in g:
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        g.api_token = apitokens.authenticate(value) if scheme.lower() == "bearer" and value else None
    return g.api_token


def caller(optional: bool = False) -> User | None:
    """The player the request acts for; ApiError 401 without a working token.

    Where the call is ``optional`` (it reads only what every visitor of the site may read), a request
    without any ``Authorization`` header is answered as for a visitor (None); a wrong or revoked token is
    refused all the same, so that a program whose token stopped working is told rather than quietly
    shown less."""
    token = current_token()
    if token is None:
        if optional and "Authorization" not in request.headers:
            return None
        if not request.headers.get("Authorization"):
            raise ApiError(401, "unauthorized",
                           "This call needs an API token: send the header 'Authorization: Bearer <token>'. "
                           "Make a token in your Settings.")
        raise ApiError(401, "bad-token", "This API token is not valid: it is wrong, or has been revoked.")
    return token.user


def limit() -> str:
    """The API's rate limit, from the settings (read per request, so tests may change it)."""
    return current_app.config["PBEM"]["ratelimit"]["api_per_token"]


def limit_key() -> str:
    """Counts are kept per token; requests without a working token count against their address.  Asked on
    every request, so the token is read without loading it (see :func:`pbem.api.kept.working_token_id`):
    an answer served kept then loads nothing."""
    token_id = kept.working_token_id()
    return f"token:{token_id}" if token_id is not None else f"ip:{get_remote_address()}"
