"""The front page."""

from __future__ import annotations

from flask import Blueprint, render_template
from sqlalchemy import select

import games
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
