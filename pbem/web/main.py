"""The front page."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, render_template, send_from_directory, url_for
from sqlalchemy import Select, select
from sqlalchemy.orm import defer, selectinload
from werkzeug.wrappers import Response

import games
from pbem.core.extensions import db
from pbem.core.models import Game, Seat
from pbem.web import pagecache

bp = Blueprint("main", __name__)

# How many games each of the front page's lists shows.
LISTED = 20


def _lists(*columns: Any) -> tuple[Select[Any], Select[Any]]:
    """The front page's two lists, of ``columns``: the active public games, latest change first, and
    the latest finished ones (both walk the index ``ix_game_front``)."""
    active = select(*columns).where(Game.public.is_(True), Game.status == "active") \
        .order_by(Game.updated_at.desc()).limit(LISTED)
    finished = select(*columns).where(Game.public.is_(True), Game.status == "finished") \
        .order_by(Game.finished_at.desc()).limit(LISTED)
    return active, finished


# What the lists are made of, for the stamp of a visitor's page: one statement, built once.
_LISTED = pagecache.list_statement(*_lists(Game.id, Game.version))


def _stamp(reader_id: int | None) -> pagecache.Stamp:
    """What the front page is made of: its two lists, and the reader's row (see
    :mod:`pbem.web.pagecache`).  A signed-in reader's own results in the lists follow from the seats'
    players, which the lists' stamp holds."""
    return pagecache.list_stamp(_LISTED, reader_id)


@bp.get("/")
@pagecache.kept(_stamp)
def index() -> str:
    """The front page: the games, the active public games and the latest finished ones."""
    # Each list names the players of its games: their seats and handles are read with it, in two
    # statements for all its games rather than two per game.  The lists never show a position, so the
    # games' stored states (the largest column) are left unread.
    players = (selectinload(Game.seats).joinedload(Seat.user), defer(Game.state))
    active, finished = (db.session.scalars(query.options(*players)).all() for query in _lists(Game))
    # The games' links, built once: url_for for each of 40 games would cost as much as reading them.
    return render_template("index.html", engines=games.all(), active=active, finished=finished,
                           game_path=url_for("games.game", game_id=0)[:-1])


@bp.get("/favicon.ico")
def favicon() -> Response:
    """The site's icon where browsers look for it without a link (the pages link the same SVG)."""
    assert current_app.static_folder is not None
    return send_from_directory(current_app.static_folder, "favicon.svg", mimetype="image/svg+xml",
                               max_age=86400)
