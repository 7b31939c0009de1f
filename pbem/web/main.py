"""The front page and the game page (read-only until the web-play pages arrive)."""

from __future__ import annotations

from flask import Blueprint, abort, render_template
from markupsafe import Markup
from sqlalchemy import select

import games
from pbem import clock, play
from pbem.extensions import db
from pbem.models import Game

bp = Blueprint("main", __name__)


@bp.get("/")
def index() -> str:
    """The front page: the games, the active public games and the latest finished ones."""
    active = db.session.scalars(
        select(Game).where(Game.public.is_(True), Game.status == "active").order_by(Game.updated_at.desc())
        .limit(20)
    ).all()
    finished = db.session.scalars(
        select(Game).where(Game.public.is_(True), Game.status == "finished")
        .order_by(Game.finished_at.desc()).limit(20)
    ).all()
    return render_template("index.html", engines=games.all(), active=active, finished=finished)


@bp.get("/games/<int:game_id>")
def game_page(game_id: int) -> str:
    """A game: its board, players, clocks and record."""
    game = db.session.get(Game, game_id)
    if game is None or not game.public:
        abort(404)
    engine = games.get(game.engine)
    board = Markup(engine.render_svg(play.state_of(game))) if game.state else None
    clocks = {s.number: clock.describe(clock.time_left(s)) for s in game.seats}
    return render_template("game.html", game=game, engine=engine, board=board, clocks=clocks)
