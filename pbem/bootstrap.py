"""The app factory: builds the Flask app and wires its layers together.

It stands above every part of pbem and is the one place that knows them all: it binds the extensions,
gives the game's events their handlers (:data:`EVENT_HANDLERS`: what happens in a game, told by the move
path, reaches the mails of :mod:`pbem.mailout.notify`), and registers the web pages and the API, which
never import each other, with the answers to errors that both share.  Importing it starts nothing: no
threads, no scheduler, no listener.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask, abort
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from pbem import PROJECT_ROOT, api, web
from pbem.accounts import accounts
from pbem.api import errors as api_errors
from pbem.core import config as config_module
from pbem.core import database, inputs, models
from pbem.core.extensions import csrf, db, limiter, login_manager, mail, migrate
from pbem.game import events
from pbem.mailout import notify
from pbem.tournament import rounds
from pbem.web import secretlinks

# Each kind of event the move path publishes, and the handlers that write its mails, in order.
EVENT_HANDLERS: events.Handlers = {
    events.GameStarted: [notify.game_started],
    events.MovePlayed: [notify.move_played],
    events.MovesPlayed: [notify.moves_played],
    events.ConditionalRefused: [notify.conditional_refused],
    # The result mails first, then the tournament's news (a round's pairings follow the result).
    events.GameOver: [notify.game_over, rounds.game_over],
    events.DrawOffered: [notify.draw_offered],
    events.DrawDeclined: [notify.draw_declined],
    events.TimedOut: [notify.timed_out],
    events.GamesLocked: [rounds.games_locked],
}


def create_app(config: dict[str, Any] | None = None, role: str = "pbem web", workers: int = 1) -> Flask:
    """Build the app from the settings (see :mod:`pbem.core.config`); ``config`` overrides by section.
    ``role`` names the process to the database (PostgreSQL's ``application_name``); ``workers`` is how
    many processes serve it side by side (a WSGI server's workers), which per-process rate limits cannot
    serve (see :func:`pbem.core.config.check_limit_storage`)."""
    settings = config_module.load(config)
    config_module.check_limit_storage(settings, workers)
    instance_path = Path(settings["server"]["instance_path"]).resolve()
    instance_path.mkdir(parents=True, exist_ok=True)
    app = Flask(
        "pbem",
        instance_path=str(instance_path),
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "pbem" / "static"),
    )
    # Form fields and query parameters come cleaned of control characters (pbem.core.inputs).
    app.request_class = inputs.CleanRequest
    app.config.update(config_module.flask_config(settings, role))
    proxies = settings["server"]["trusted_proxies"]
    if proxies:
        # Behind a reverse proxy the peer is the proxy: take the client's address and scheme from the
        # headers the trusted proxies add, and from no one else.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies
        )

    db.init_app(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"))
    mail.init_app(app)
    csrf.init_app(app)
    login_manager.init_app(app)
    limiter.init_app(app)
    database.init_app(app)
    events.init_app(app, EVENT_HANDLERS)

    @login_manager.user_loader
    def load_user(session_id: str) -> models.User | None:
        return accounts.user_for_session(session_id)

    web.init_app(app)
    api.init_app(app)
    # After every route is added: the links that carry a secret are found among them.
    secretlinks.init_app(app)
    _answer_errors(app)

    @app.url_value_preprocessor
    def no_control_characters_in_paths(endpoint: str | None, values: dict[str, Any] | None) -> None:
        # A part of the path with a control character in it (/players/x%00y) names nothing.
        parts = (values or {}).values()
        if any(isinstance(part, str) and not inputs.is_clean(part, one_line=True) for part in parts):
            abort(404)

    return app


def _answer_errors(app: Flask) -> None:
    """The answers to errors no view answers (no such route, a rate limit, a crash): JSON for the API,
    pages for the rest."""

    @app.errorhandler(429)
    def too_many(exc: HTTPException) -> ResponseReturnValue:
        return api_errors.http_error(exc) if api_errors.is_api_request() else web.too_many_page(exc)

    @app.errorhandler(405)
    def wrong_method(exc: HTTPException) -> ResponseReturnValue:
        return api_errors.http_error(exc) if api_errors.is_api_request() else exc

    @app.errorhandler(500)
    def server_error(exc: HTTPException) -> ResponseReturnValue:
        if api_errors.is_api_request():
            return api_errors.error_response(500, "server-error",
                                             "Something went wrong on the server; it has been logged.")
        return exc

    @app.errorhandler(404)
    def not_found(exc: HTTPException) -> ResponseReturnValue:
        return api_errors.http_error(exc) if api_errors.is_api_request() else web.not_found_page(exc)
