"""The JSON API under ``/api/v1``, for bots, mobile clients and tournament tools.

Every call but the OpenAPI document and the API page carries ``Authorization: Bearer <token>`` (tokens
are made in Settings or with ``pbem user token HANDLE``) and needs no CSRF token, since no cookie can
stand for it.  Requests and answers go through the marshmallow schemas of :mod:`pbem.api.schemas`;
errors are ``{"error": message, "code": machine_code}`` with the right status.  Every change goes through
:mod:`pbem.game.play` or :mod:`pbem.lobby.challenges`, as on the web.  Each token has its own rate limit.
"""

from __future__ import annotations

from flask import Blueprint, Flask

from pbem.core.extensions import csrf, limiter

bp = Blueprint("api", __name__, url_prefix="/api")


def init_app(app: Flask) -> None:
    """Register the API blueprint: without CSRF (Bearer tokens only), with its per-token rate limit."""
    # This package's own modules, imported here rather than above: they register themselves on ``bp``,
    # so they can only be loaded once it exists.
    from pbem.api import auth, errors, openapi, routes  # noqa: F401

    csrf.exempt(bp)
    limiter.limit(auth.limit, key_func=auth.limit_key, scope="api")(bp)
    app.register_blueprint(bp)
