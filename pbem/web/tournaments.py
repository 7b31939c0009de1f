"""The tournament pages: the list, the organiser's form, a tournament's page (standings, rounds, the
organiser's and the players' buttons), its crosstable and its Atom feed."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required
from marshmallow import ValidationError
from sqlalchemy import bindparam, case, select

import games
from pbem.archive import archive, feeds
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, Tournament, User
from pbem.game import clock
from pbem.present import newgame, tournamentview
from pbem.tournament import organise, standings
from pbem.web import pagecache

bp = Blueprint("tournaments", __name__)

# The settings a form may give, with how each is read.
_SETTINGS: dict[str, Callable[[str], Any]] = {
    "rounds": int, "bye_points": float, "draw_rule": str, "leaving": str, "reach": int, "accept_days": int,
}


def _me() -> User:
    return current_user._get_current_object()


def _tournament_or_404(tournament_id: int) -> Tournament:
    found = db.session.get(Tournament, tournament_id)
    if found is None:
        abort(404)
    return found


# The tournaments the index lists, as organise.listing orders them, for its stamp: their ids and
# versions, which rise with every change of a tournament and its entries (see :func:`_stamp`).
_LISTED = pagecache.list_statement(
    select(Tournament.id, Tournament.version)
    .order_by(case((Tournament.status.in_(("open", "running", "paused")), 0), else_=1), Tournament.id.desc())
    .limit(100))


def _index_stamp(reader_id: int | None) -> pagecache.Stamp:
    """What the tournaments' index shows: the tournaments listed (see :data:`_LISTED`), and the reader's
    row (a signed-in reader is offered to organise one)."""
    return pagecache.list_stamp(_LISTED, reader_id)


@bp.get("/tournaments")
@pagecache.kept(_index_stamp)
def index() -> str:
    """Tournaments taking entries or running, then those over."""
    return render_template("tournaments/index.html", tournaments=organise.listing(),
                           format_names=standings.FORMATS, status_words=organise.status_words)


def _new_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What a player's form to organise a tournament shows: nothing from the database but their row (the
    game and its options come from the URL); None (not kept) for a visitor, who is sent to sign in."""
    return None if reader_id is None else pagecache.static_stamp(reader_id)


@bp.route("/tournaments/new", methods=["GET", "POST"])
@pagecache.kept(_new_stamp)
@login_required
def new() -> ResponseReturnValue:
    """The organiser's form: game, options, time, format and its settings, field, start, rating range."""
    form = request.form if request.method == "POST" else request.args
    try:
        engine = games.get(form.get("game") or "cambio")
    except games.UnknownGame:
        engine = games.get("cambio")
    errors: dict[str, str] = {}
    if request.method == "POST" and form.get("create"):
        made = _create(engine, form, errors)
        if made is not None:
            flash(f"Tournament #{made.id} is open for entries.", "info")
            return redirect(url_for("tournaments.page", tournament_id=made.id), 303)
    engines = [e for e in games.all() if 2 in e.players]
    return render_template(
        "tournaments/new.html", engine=engine, engines=engines, options=newgame.option_fields(engine),
        form=form, submitted=request.method == "POST", errors=errors, formats=standings.FORMATS,
        time_choices=clock.time_control_choices(), default_time=newgame.default_time_choice(),
        defaults=organise.rounds.DEFAULT_SETTINGS,
    ), (422 if errors else 200)


def _create(engine: games.Engine, form: Any, errors: dict[str, str]) -> Tournament | None:
    """Read the form and organise the tournament; None with ``errors`` filled when it cannot be."""
    options = newgame.read_options(engine, form, errors)
    settings: dict[str, Any] = {"double": bool(form.get("double"))}
    for name, kind in _SETTINGS.items():
        value = (form.get(name) or "").strip()
        if value:
            try:
                settings[name] = kind(value)
            except ValueError:
                errors[name] = f"{value!r} is not a number."
    numbers: dict[str, Any] = {}
    for name, default in (("min_players", 2), ("max_players", 16), ("min_rating", None),
                          ("max_rating", None)):
        value = (form.get(name) or "").strip()
        if not value:
            numbers[name] = default
        elif value.isascii() and value.isdigit() and len(value) <= 5:
            numbers[name] = int(value)
        else:
            errors[name] = "Write a whole number."
    start_at = None
    start = (form.get("start_at") or "").strip()
    if start:
        try:
            # Read in the organiser's time zone, kept in UTC as every time is.
            zone = clock.time_zone(clock.zone_of(current_user))
            start_at = datetime.fromisoformat(start).replace(tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
        except ValueError:
            errors["start_at"] = ("Write the start as a date and time, e.g. 2026-12-01T18:00, or leave it "
                                  "empty.")
    try:
        time_control = clock.time_control_from_choice(form.get("time", ""), bool(form.get("weekend_pause")))
    except clock.TimeControlError as exc:
        errors["time"] = str(exc)
    if errors:
        return None
    try:
        return organise.create(
            _me(), form.get("name", ""), engine.slug, form.get("format", ""), options=options,
            time_control=time_control, rated=bool(form.get("rated")), start_at=start_at,
            settings=settings, **numbers)
    except PlayError as exc:
        errors["form"] = exc.message
    except ValidationError as exc:
        errors["form"] = str(exc.normalized_messages())
    return None


# A tournament's row (bound by id), built once: building the statement for each request cost more than
# reading it, a third of a kept page.
_TOURNAMENT = pagecache.plain_read(pagecache.list_statement(
    select(Tournament.id, Tournament.version).where(Tournament.id == bindparam("tournament_id"))))


def _stamp(reader_id: int | None, tournament_id: int) -> pagecache.Stamp | None:
    """What a tournament's page is made of: its ``version``, which every change of the tournament, its
    entries or its pairings' results raises (:func:`pbem.tournament.rounds.changed`; handles never
    change), the round shown, and the reader's row (see :mod:`pbem.web.pagecache`)."""
    made_of, reader = pagecache.list_stamp(_TOURNAMENT, reader_id, {"tournament_id": tournament_id})
    return (request.args.get("round", "")[:4], made_of), reader


@bp.get("/tournaments/<int:tournament_id>")
@pagecache.kept(_stamp)
def page(tournament_id: int) -> str:
    """The tournament: what it is, the standings, the current round's pairings, the buttons."""
    view = tournamentview.build(_tournament_or_404(tournament_id))
    me = _me() if current_user.is_authenticated else None
    mine = next((e for e in view.standings if me is not None and e.user_id == me.id), None)
    shown = request.args.get("round", "")
    current = int(shown) if shown.isdigit() else view.tournament.round
    return render_template("tournaments/page.html", view=view, t=view.tournament, me=me, mine=mine,
                           shown_round=current, pairings=view.rounds.get(current, []),
                           points_words=standings.points_words,
                           # Links of a thousand rows, built once: url_for per row cost a third of the page.
                           player_url=url_for("players.player", handle="_").removesuffix("_"),
                           game_url=url_for("games.game", game_id=1).removesuffix("1"))


@bp.get("/tournaments/<int:tournament_id>/crosstable")
@pagecache.kept(_stamp)
def crosstable(tournament_id: int) -> str:
    """The crosstable: a grid of results (round-robin), a line per round (Swiss), the bracket (knockout)."""
    view = tournamentview.build(_tournament_or_404(tournament_id))
    grid = tournamentview.crosstable(view) if view.tournament.format == "round_robin" else None
    lines = tournamentview.swiss_table(view) if view.tournament.format == "swiss" else None
    return render_template("tournaments/crosstable.html", view=view, t=view.tournament, grid=grid,
                           lines=lines, points_words=standings.points_words)


# A tournament's feed: the tournament and its finished games as the archive lists them (bound by id).
_FEED = pagecache.plain_read(pagecache.list_statement(
    select(Tournament.id, Tournament.version).where(Tournament.id == bindparam("tournament_id")),
    archive.page_query(archive.Filters(tournament=cast(int, bindparam("tournament_id"))))[0]
    .with_only_columns(Game.id, Game.version),
))


def _feed_stamp(reader_id: int | None, tournament_id: int) -> pagecache.Stamp | None:
    """What a tournament's feed is made of: the tournament (its version covers its name and when it
    began, the time of update of a feed of no game) and its games listed; None (not kept) for no such
    tournament."""
    made_of, reader = pagecache.list_stamp(_FEED, reader_id, {"tournament_id": tournament_id})
    if not any(row[0] == 0 for row in cast(tuple[tuple[Any, ...], ...], made_of)):
        return None
    return made_of, reader


@bp.get("/tournaments/<int:tournament_id>.atom")
@pagecache.kept(_feed_stamp)
def feed(tournament_id: int) -> ResponseReturnValue:
    """An Atom feed of the tournament's finished games, newest first."""
    tournament = _tournament_or_404(tournament_id)
    found = archive.search(archive.parse_filters({"tournament": str(tournament.id)}))
    # A feed of no game yet was updated when the tournament began (or was organised): a time of its own
    # row, not the time asked, so that the feed can be kept.
    return feeds.atom(found.games, f"Tournament #{tournament.id}: {tournament.name}",
                      url_for("tournaments.page", tournament_id=tournament.id, _external=True),
                      url_for("tournaments.feed", tournament_id=tournament.id, _external=True),
                      updated=tournament.started_at or tournament.created_at)


def _act(tournament_id: int, action: Callable[[], Any], done: str) -> ResponseReturnValue:
    """Run ``action`` and come back to the tournament's page with ``done`` or the refusal."""
    _tournament_or_404(tournament_id)
    try:
        action()
    except PlayError as exc:
        flash(exc.message, "error")
    else:
        flash(done, "info")
    return redirect(url_for("tournaments.page", tournament_id=tournament_id), 303)


@bp.post("/tournaments/<int:tournament_id>/<action>")
@login_required
def act(tournament_id: int, action: str) -> ResponseReturnValue:
    """Join, withdraw, and the organiser's start, pause, resume, cancel and remove; a ladder challenge."""
    player = request.form.get("player", "")[:32]
    actions: dict[str, tuple[Callable[[], Any], str]] = {
        "join": (lambda: organise.join(tournament_id, _me()), "You are in."),
        "withdraw": (lambda: organise.withdraw(tournament_id, _me()), "You have left the tournament."),
        "start": (lambda: organise.start(tournament_id, _me()), "The tournament has started."),
        "pause": (lambda: organise.pause(tournament_id, _me()), "Paused: no new round is paired."),
        "resume": (lambda: organise.resume(tournament_id, _me()), "Pairing goes on."),
        "cancel": (lambda: organise.cancel(tournament_id, _me()), "The tournament is cancelled."),
        "remove": (lambda: organise.remove(tournament_id, _me(), player), f"{player} was removed."),
        "challenge": (lambda: organise.challenge(tournament_id, _me(), player),
                      f"You challenged {player}; they have the ladder's days to accept."),
    }
    if action not in actions:
        abort(404)
    run, done = actions[action]
    return _act(tournament_id, run, done)
