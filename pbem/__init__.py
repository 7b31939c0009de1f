"""pbem: a play-by-email and asynchronous turn server for abstract board games.

:func:`create_app` builds the Flask app; nothing starts threads, schedulers or listeners at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Flask

from pbem import config as config_module

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def create_app(config: dict[str, Any] | None = None, role: str = "pbem web") -> Flask:
    """Build the app from the settings (see :mod:`pbem.config`); ``config`` overrides by section.
    ``role`` names the process to the database (PostgreSQL's ``application_name``)."""
    settings = config_module.load(config)
    instance_path = Path(settings["server"]["instance_path"]).resolve()
    instance_path.mkdir(parents=True, exist_ok=True)
    app = Flask(
        __name__,
        instance_path=str(instance_path),
        template_folder=str(PROJECT_ROOT / "templates"),
        static_folder=str(PROJECT_ROOT / "pbem" / "static"),
    )
    app.config.update(config_module.flask_config(settings, role))
    proxies = settings["server"]["trusted_proxies"]
    if proxies:
        # Behind a reverse proxy the peer is the proxy: take the client's address and scheme from the
        # headers the trusted proxies add, and from no one else.
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies
        )

    from pbem import database
    from pbem.extensions import csrf, db, limiter, login_manager, mail, migrate

    db.init_app(app)
    migrate.init_app(app, db, directory=str(PROJECT_ROOT / "migrations"))
    mail.init_app(app)
    csrf.init_app(app)
    login_manager.init_app(app)
    limiter.init_app(app)
    database.init_app(app)

    from pbem import accounts, models

    @login_manager.user_loader
    def load_user(session_id: str) -> models.User | None:
        return accounts.user_for_session(session_id)

    from pbem import web

    web.init_app(app)
    return app
