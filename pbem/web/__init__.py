"""The web blueprints, one per area, and what they share: sign-in settings and error pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import Flask, abort, g, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_login import current_user
from flask_wtf.csrf import CSRFError
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import IntegerConverter, Map
from werkzeug.wrappers import Response

import games
from pbem.core.extensions import db, login_manager
from pbem.core.models import User
from pbem.game import clock, ratings, results
from pbem.lobby import challenges
from pbem.present import gameview


def wants_json() -> bool:
    """Whether the request came from the page's script, which reads JSON answers."""
    return request.accept_mimetypes.best == "application/json"


def engine_or_404(slug: str) -> games.Engine:
    """The engine of the game a page's address names; Not Found when there is no such game."""
    try:
        return games.get(slug)
    except games.UnknownGame:
        abort(404)


def _game_title(slug: str) -> str:
    try:
        return games.get(slug).title
    except games.UnknownGame:
        return slug


@pass_context
def _local_time(context: Context, moment: datetime | None, date_only: bool = False) -> str:
    """A stored time in the reader's time zone: a mail's recipient (``time_zone`` in the mail's
    context), else the signed-in player, else UTC."""
    zone = context.get("time_zone") or _reader_zone()
    return clock.format_time(moment, zone, date_only)


def _reader_zone() -> str:
    """The signed-in reader's time zone (else UTC), looked up once per request: a list page writes two
    times a row, and asking the sign-in for the user each time cost a tenth of the archive page."""
    if "reader_zone" not in g:
        g.reader_zone = clock.zone_of(current_user)
    return g.reader_zone


def _bot_badge(user: User | None) -> Markup:
    """The BOT mark after a computer player's handle (nothing after anyone else's)."""
    if user is not None and user.is_bot:
        return Markup(' <span class="bot" title="A computer player">BOT</span>')
    return Markup("")


class RowIdConverter(IntegerConverter):
    """``<int:…>`` in every route: a number no database integer can hold names nothing, and is answered
    404 like any other missing row (the database would otherwise refuse the query with an error)."""

    def __init__(self, url_map: Map, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max", 2**31 - 1)
        super().__init__(url_map, *args, **kwargs)


# What every answer says of frames and content sniffing (see never_in_a_frame in init_app).
_FRAME_AND_SNIFF_HEADERS = (
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
)


def init_app(app: Flask) -> None:
    """Register the web-play blueprints and the sign-in and error behaviour they rely on.

    The app factory (:mod:`pbem.bootstrap`) then registers the API, and the answers to errors that
    both share (:func:`too_many_page`, :func:`not_found_page`)."""
    # Before any route is added: the routes read the converter when they are registered.
    app.url_map.converters["int"] = RowIdConverter
    # This package's own blueprints, imported here rather than above: they import this module's helpers
    # (wants_json), so they can only be loaded once it is.
    from pbem.web import (
        archive,
        auth,
        gameplay,
        links,
        mailbox,
        main,
        monitoring,
        players,
        secretlinks,
        tournaments,
    )

    app.add_template_filter(_game_title, "game_title")
    app.add_template_filter(_local_time, "local_time")
    app.add_template_global(_bot_badge, "bot_badge")
    app.add_template_global(gameview.action_words, "action_words")
    app.add_template_global(clock.describe_time_control, "describe_time_control")
    app.add_template_global(challenges.options_words, "options_words")
    # How games ended, in the same words on every page (see pbem.game.results).
    app.add_template_global(results.summary, "result_summary")
    app.add_template_global(results.user_result, "user_result")
    app.add_template_global(results.players, "players_words")
    app.add_template_global(results.opponents, "opponents")
    # A rating as it stands now: its deviation grows with the time since the player's last rated game.
    app.add_template_global(ratings.display, "rating_display")
    app.add_template_global(ratings.is_provisional, "rating_provisional")
    app.add_template_global(ratings.deviation_now, "rating_deviation")
    login_manager.login_view = "auth.login"
    login_manager.login_message = "Sign in to see that page."
    login_manager.login_message_category = "info"
    app.register_blueprint(main.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(gameplay.bp)
    app.register_blueprint(players.bp)
    app.register_blueprint(links.bp)
    app.register_blueprint(mailbox.bp)
    app.register_blueprint(archive.bp)
    app.register_blueprint(monitoring.bp)
    app.register_blueprint(tournaments.bp)

    @app.after_request
    def never_in_a_frame(response: Response) -> Response:
        # No page of ours is drawn inside another site's frame, where a decoy laid over it could get a
        # player to press Resign or Accept unawares (the SameSite=Lax cookie signs out a frame on another
        # site, but not on one that counts as the same, such as another port of this host); and a
        # download (a game's record) is taken as what it says it is, never sniffed into a page.  The
        # headers go on together after one look: this runs for every kept page.
        if "X-Frame-Options" not in response.headers:
            response.headers.extend(_FRAME_AND_SNIFF_HEADERS)
        return response

    @app.errorhandler(CSRFError)
    def csrf_refused(exc: CSRFError) -> ResponseReturnValue:
        # Said in the log, for the operator: a proxy that changes the Host (drops its port, say) makes
        # every form fail this way, and the page cannot tell the player why.
        app.logger.warning("form refused: %s (%s %s, Host %s, Referer %s)", exc.description, request.method,
                           secretlinks.redact(request.path), request.host,
                           secretlinks.redact(request.referrer or "-"))
        message = ("This form has expired or did not come from this site, so nothing was done. "
                   "Reload the page and try again.")
        if wants_json():
            return jsonify(ok=False, code="csrf", message=message), 400
        return render_template("error.html", title="Form refused", message=message), 400

    @app.errorhandler(OperationalError)
    def database_busy(exc: OperationalError) -> ResponseReturnValue:
        # A database too busy to answer in time (or away for a moment) is the server's trouble, not a
        # fault in the request: say so, and when to try again, rather than answer 500.
        db.session.rollback()
        app.logger.warning("database unavailable for %s %s: %s", request.method, request.path,
                           type(exc.orig).__name__)
        message = ("The server is very busy just now and could not do this; nothing was changed. "
                   "Please try again in a few seconds.")
        headers = {"Retry-After": "5"}
        if wants_json():
            return jsonify(ok=False, code="busy", message=message), 503, headers
        return render_template("error.html", title="Busy, try again", message=message), 503, headers


def too_many_page(exc: HTTPException) -> ResponseReturnValue:
    """The answer to a rate limit reached on a page or a form post."""
    message = ("Too many attempts from here or for this account in a short time, so this was not done. "
               "Wait a while (an hour at most) and try again.")
    retry = getattr(exc, "retry_after", None)
    headers = {"Retry-After": str(retry)} if retry else {}
    if wants_json():
        return jsonify(ok=False, code="rate-limited", message=message), 429, headers
    return render_template("error.html", title="Too many attempts", message=message), 429, headers


def not_found_page(exc: HTTPException) -> ResponseReturnValue:
    """The page for an address that names nothing (or nothing the reader may see)."""
    return render_template("error.html", title="Not found",
                           message="There is nothing here (or it is not yours to see)."), 404
