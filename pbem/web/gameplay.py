"""Playing on the web: the new-game form, challenges and the lobby, the dashboard, the game page and its
move, draw and resign posts.  Every change is made by :mod:`pbem.game.play` or
:mod:`pbem.lobby.challenges`."""

from __future__ import annotations

import json
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from flask import Blueprint, abort, flash, jsonify, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_limiter.util import get_remote_address
from flask_login import current_user, login_required
from sqlalchemy import and_, bindparam, exists, select, union, union_all
from sqlalchemy.orm.interfaces import ORMOption
from werkzeug.wrappers import Response

import games
from pbem.accounts import bots, vacation
from pbem.core.extensions import db, limiter
from pbem.core.models import MAX_COMMENT, MAX_NOTE, Challenge, Game, Rating, Seat, User, Watch
from pbem.core.unit_of_work import unit_of_work
from pbem.game import analysis, clock, conditional, notes, play, queries, queueing, ratings, watching
from pbem.game.play import PlayError
from pbem.lobby import challenges
from pbem.present import dashboard as dashboard_service
from pbem.present import gameview, newgame
from pbem.web import engine_or_404, pagecache, wants_json
from pbem.web.limits import setting

bp = Blueprint("games", __name__)


@bp.context_processor
def _comment_bound() -> dict[str, int]:
    # The comment boxes stop at the length the posts accept, so that a browser keeps the player from
    # writing what would be refused.
    return {"max_comment": MAX_COMMENT}


@bp.context_processor
def _private_note() -> dict[str, Any]:
    # The game page's notes box: the signed-in player's own note on the game, for its players only.
    def my_note(game: Game) -> str | None:
        """The signed-in player's note on ``game`` ("" for none yet), or None when they keep none there."""
        user = current_user if current_user.is_authenticated else None
        return notes.note_of(game, user) if user is not None and notes.may_keep_notes(game, user) else None

    return {"my_note": my_note, "max_note": MAX_NOTE}


def _visible_game(game_id: int, *options: ORMOption) -> Game:
    game = db.session.get(Game, game_id, options=options)
    if game is None or not gameview.visible(game, current_user):
        abort(404)
    return game


def _me() -> User:
    """The signed-in player as a model object (the proxy cannot be stored in relationships)."""
    return current_user._get_current_object()


def _seat_arg() -> int | None:
    value = request.values.get("seat", "")
    return int(value) if value.isdigit() else None


def _move_arg() -> int | None:
    """The position of the record asked for with ``?move=N`` (None for the game as it stands)."""
    value = request.args.get("move", "")
    return int(value) if value.isdigit() and len(value) < 7 else None


# Pages ---------------------------------------------------------------------------



@bp.get("/games/<int:game_id>")
@pagecache.kept(pagecache.game_stamp)
def game(game_id: int) -> str:
    """A game's page: the board (clickable on the viewer's move), players, clocks, record and actions."""
    game = _visible_game(game_id, *gameview.PAGE_LOADS)
    view = gameview.build(game, current_user, _seat_arg(), _move_arg())
    return render_template("games/game.html", view=view, typed="", comment="", said="")


@bp.get("/games/<int:game_id>/live")
@pagecache.kept(pagecache.game_stamp)
def live(game_id: int) -> str:
    """The changing part of the game page, for the page's script to swap in after a move."""
    game = _visible_game(game_id, *gameview.PAGE_LOADS)
    view = gameview.build(game, current_user, _seat_arg(), _move_arg())
    return render_template("games/_live.html", view=view, typed="", comment="", said="")


@bp.get("/games/<int:game_id>/version")
@pagecache.kept(pagecache.game_stamp)
def version(game_id: int) -> Response:
    """The game's change counter, which the page polls to learn that someone else has moved."""
    return jsonify(version=_visible_game(game_id).version)


@bp.get("/rules")
@pagecache.kept(pagecache.static_stamp)
def rules_index() -> str:
    """Every game in a line: its title, how many play it, what it is about, and a link to its rules."""
    return render_template("games/rules_index.html", engines=games.all(), count_words=play.count_words)


@bp.get("/rules/<slug>")
@pagecache.kept(pagecache.static_stamp)
def rules(slug: str) -> str:
    """A game's rules, notation and rulings."""
    return render_template("games/rules.html", engine=engine_or_404(slug))


# What the lobby shows, for its stamp: the latest waiting public games as challenges.open_games reads
# them, each with its seats' players and whether a challenge is pending on each seat (a waiting game's
# seats and challenges change without its version), and its creator's rating in its game.
_WAITING = select(Game.id).where(Game.status == "waiting", Game.public.is_(True)) \
    .order_by(Game.created_at.desc()).limit(50).subquery()
_LOBBY = pagecache.with_reader(
    select(Game.id, Seat.number, Game.version, Seat.user_id,
           exists().where(Challenge.game_id == Game.id, Challenge.seat == Seat.number,
                          Challenge.status == "pending"),
           Rating.rating, Rating.deviation, Rating.volatility, Rating.last_game_at)
    .join(_WAITING, _WAITING.c.id == Game.id).join(Seat, Seat.game_id == Game.id)
    .outerjoin(Rating, and_(Rating.user_id == Game.created_by_id, Rating.engine == Game.engine)),
    ordered_by=2,
)


def _lobby_stamp(reader_id: int | None) -> pagecache.Stamp:
    """What the lobby shows (see :data:`_LOBBY`), each creator's rating as it is written now."""
    rows, reader = pagecache.rows_stamp(_LOBBY, {}, reader_id)
    now = ratings.shown_now((row[6], row[7], row[8]) if row[5] is not None else (0.0, 0.0, None)
                            for row in rows)
    return tuple(zip(rows, now, strict=True)), reader


@bp.get("/lobby")
@pagecache.kept(_lobby_stamp)
def lobby() -> str:
    """Public games with open seats anyone may take (``?bots=hide``: none with a computer player)."""
    hide_bots = request.args.get("bots") == "hide"
    entries = [entry for entry in challenges.lobby()
               if not (hide_bots and any(s.user is not None and s.user.is_bot for s in entry.game.seats))]
    return render_template("games/lobby.html", entries=entries, gameview=gameview, hide_bots=hide_bots)


# What My games shows, for its stamp (see pbem.web.pagecache), read as pbem.present.dashboard reads it:
# the games it may list (the reader's unfinished seats' games, their latest finished and the games they
# watch: a superset of those listed, each list's choice following from the versions read), each with its
# seats, their clocks and their players' vacations, which change without the game's version; and the
# challenges of those games and those sent to the reader (a game gathering players fills its seats and
# its challenges change without its version).
_READER_ID: Any = bindparam("reader_id")
_MY_GAME_IDS = union(
    select(Seat.game_id).where(Seat.user_id == _READER_ID, Seat.finished_at.is_(None)),
    select(select(Seat.game_id).where(Seat.user_id == _READER_ID, Seat.finished_at.is_not(None))
           .order_by(Seat.finished_at.desc(), Seat.game_id.desc()).limit(dashboard_service.FINISHED_SHOWN)
           .subquery().c.game_id),
    select(select(Watch.game_id).join(Game, Game.id == Watch.game_id).where(Watch.user_id == _READER_ID)
           .order_by(Game.status != "active", Game.updated_at.desc(), Game.id.desc())
           .limit(dashboard_service.WATCHED_SHOWN).subquery().c.game_id),
)
_MY_GAMES = pagecache.plain_read(pagecache.with_reader(
    select(Game.id, Seat.number, Game.version, Game.status, Game.time_control, Seat.user_id, Seat.deadline,
           User.vacation_since, User.vacation_year, User.vacation_days_used)
    .join(Seat, Seat.game_id == Game.id).outerjoin(User, User.id == Seat.user_id)
    .where(Game.id.in_(_MY_GAME_IDS)),
    ordered_by=2,
))
_CHALLENGE_COLUMNS = (Challenge.id, Challenge.game_id, Challenge.seat, Challenge.status,
                      Challenge.challenged_id, Challenge.challenger_id)
# Two statements in one, not one with OR: PostgreSQL would read every challenge to test it.
_MY_CHALLENGES = pagecache.plain_read(union_all(
    select(*_CHALLENGE_COLUMNS).where(Challenge.game_id.in_(
        select(Seat.game_id).where(Seat.user_id == _READER_ID, Seat.finished_at.is_(None)))),
    select(*_CHALLENGE_COLUMNS).where(Challenge.challenged_id == _READER_ID, Challenge.status == "pending"),
).order_by("id"))


def _dashboard_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What a player's My games shows (see :data:`_MY_GAMES`), with the words the clock changes: each
    running clock's time left, and until when each player away is away, in the reader's zone.  None (not
    kept) for a visitor, who is sent to sign in."""
    if reader_id is None:
        return None
    with pagecache.reads_together():
        rows, reader = pagecache.rows_stamp(_MY_GAMES, {}, reader_id)
        challenge_rows = _MY_CHALLENGES.rows({"reader_id": reader_id})
    if reader is None:
        return rows, reader
    zone = reader[2] or "UTC"
    words = []
    for _id, _number, _version, status, control, _user, deadline, since, year, used in rows:
        # (Read from the driver: on SQLite the times and the time control as their stored text.)
        deadline, since = pagecache.moment(deadline), pagecache.moment(since)
        control = json.loads(control) if isinstance(control, str) else control
        player = SimpleNamespace(vacation_since=since, vacation_year=year, vacation_days_used=used)
        if status == "active" and deadline is not None:
            seat = SimpleNamespace(deadline=deadline, user=player, game=SimpleNamespace(time_control=control))
            words.append(clock.describe(clock.time_left(cast(Seat, seat))))
        if since is not None:
            words.append(clock.format_day(vacation.ends_at(cast(User, player)), zone))
    return (rows, challenge_rows, words), reader


@bp.get("/dashboard")
@pagecache.kept(_dashboard_stamp)
@login_required
def dashboard() -> str:
    """My challenges and games, those waiting for my move first."""
    return render_template("games/dashboard.html", board=dashboard_service.build(current_user))


# Starting games ---------------------------------------------------------------------------


# What the new-game form shows from the database besides its reader: the computer players, whose games
# and strengths it offers; one statement, built once.
_NEW_GAME = pagecache.with_reader(
    select(User.id, User.bot_games, User.bot_strength).where(User.is_bot.is_(True)))


def _new_game_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What a player's new-game form shows (see :data:`_NEW_GAME`); the game it is for and its options
    come from the URL, the time controls from the settings.  None (not kept) for a visitor, who is sent
    to sign in."""
    if reader_id is None:
        return None
    return pagecache.rows_stamp(_NEW_GAME, {}, reader_id)


@bp.route("/games/new", methods=["GET", "POST"])
@pagecache.kept(_new_game_stamp)
@login_required
def new() -> str | Response | tuple[str, int]:
    """The new-game form: the game, its options, the players in seat order, public or private, time."""
    slug = request.values.get("game", "cambio")
    try:
        engine = games.get(slug)
    except games.UnknownGame:
        engine = games.all()[0]
    form: Any = request.form if request.method == "POST" and "create" in request.form else {}
    if not form:
        return _new_form(engine, {}, {})
    read = newgame.read(engine, form, _me())
    if read.errors:
        return _new_form(engine, form, read.errors), 400
    try:
        created = challenges.new_game(
            _me(), engine.slug, read.seats, read.options, public=read.public,
            time_control=read.time_control, rated=read.rated, min_rating=read.min_rating,
            max_rating=read.max_rating,
        )
    except PlayError as exc:
        return _new_form(engine, form, {"players": exc.message}), 400
    flash("The game has started: your move." if created.status == "active"
          else "The game is created; it starts when every seat is taken.", "info")
    return redirect(url_for("games.game", game_id=created.id))


def _new_form(engine: games.Engine, form: Any, errors: dict[str, str]) -> str:
    return render_template(
        "games/new.html", engine=engine, engines=games.all(), options=newgame.option_fields(engine),
        form=form, errors=errors, time_choices=clock.time_control_choices(),
        default_time=newgame.default_time_choice(), submitted=bool(form),
        computer_strengths=bots.strengths_for(engine.slug),
    )


# Actions: each POST calls one service function and answers the page's script in JSON, or redirects
# back to the game page (the page without script).


def _act(game_id: int, action: Callable[[Game], Any], done: str | Callable[[Any], str],
         said: str = "") -> Response | tuple[Response | str, int]:
    """Run ``action`` on the game and answer with ``done`` (or ``done`` of what the action returned) or
    the refusal.  ``said`` is what the player wrote with the action: a refusal without the script shows
    the page again with it kept in its box, where a redirect would lose it."""
    game = _visible_game(game_id)
    try:
        with unit_of_work() as uow:
            returned = action(game)
            uow.commit()
    except PlayError as exc:
        status = exc.http_status
        if wants_json():
            return jsonify(ok=False, code=exc.code, message=exc.message), status
        if said:
            return _page_again(game_id, exc, said=said)
        flash(exc.message, "error")
        return redirect(url_for("games.game", game_id=game_id)), 303
    if callable(done):
        done = done(returned)
    if wants_json():
        return jsonify(ok=True, message=done)
    flash(done, "info")
    return redirect(url_for("games.game", game_id=game_id)), 303


@bp.post("/games/<int:game_id>/move")
@login_required
def move(game_id: int) -> str | Response | tuple[Any, int]:
    """Play a move for the signed-in player, checked against the move number the page showed."""
    game = _visible_game(game_id)
    text = request.form.get("move", "").strip()
    comment = _comment_written()
    expect_text = request.form.get("expect", "")
    error: PlayError | None = None
    if not text:
        error = PlayError("Type a move, or click the board to choose one.", "empty")
    elif len(comment) > MAX_COMMENT:
        error = _comment_too_long()
    elif not expect_text.isdigit():
        error = PlayError("The form did not say which move you were answering; reload the page.", "stale")
    if error is None:
        try:
            with unit_of_work() as uow:
                played = play.submit(game_id, _me(), text, "web", expect=int(expect_text),
                                     comment=comment or None, seat=_seat_arg())
                # Said before the commit, which expires what the move wrote.
                message = _played_words(played)
                uow.commit()
        except PlayError as exc:
            error = exc
    if error is None:
        if wants_json():
            return jsonify(ok=True, message=message, move=played.move.text)
        flash(message, "info")
        return redirect(url_for("games.game", game_id=game_id, seat=_seat_arg())), 303
    if wants_json():
        return jsonify(ok=False, code=error.code, message=error.message), error.http_status
    # A refused move comes back with the legal moves listed open, as the mail lists them.
    return _page_again(game.id, error, show_legal=True, typed=text, comment=comment)


def _played_words(played: play.Played) -> str:
    """What the page tells the player who made a move: the move, and the conditional answers to it."""
    message = f"You played {played.move.text}."
    if not played.answers:
        return message  # (Without reading the game back: the move over plain rows held no model of it.)
    answered = conditional.answers_words(played.game, list(played.answers), played.seat_number)
    return f"{message} {answered}" if answered else message


def _page_again(game_id: int, error: PlayError, show_legal: bool = False,
                **kept: str) -> tuple[str, int]:
    """The game page again after a refusal to a browser without the script: the refusal on top, and
    what the player wrote kept in its box (``typed`` and ``comment`` in the move form, ``said`` in the
    draw and resign form), so that nothing written is lost; ``show_legal`` opens the list of legal
    moves."""
    db.session.rollback()
    view = gameview.build(db.session.get_one(Game, game_id), current_user, _seat_arg())
    fields = {"typed": "", "comment": "", "said": "", **kept}
    return render_template("games/game.html", view=view, error=error.message, show_legal=show_legal,
                           **fields), error.http_status


@bp.post("/games/<int:game_id>/draw")
@login_required
def draw(game_id: int) -> Response | tuple[Response | str, int]:
    """Offer, accept or decline a draw, with the player's comment to the opponent if they wrote one."""
    answer = request.form.get("answer", "offer")
    actions: dict[str, tuple[Callable[..., Any], str | Callable[[Any], str]]] = {
        # The offer cancels every conditional line of the game, the offerer's own too: they are told.
        "offer": (play.offer_draw,
                  lambda cancelled: "You offered a draw." + (f" {conditional.OWN_LINES_CANCELLED}"
                                                             if cancelled else "")),
        "accept": (play.accept_draw, "You accepted the draw: the game is drawn."),
        "decline": (play.decline_draw, "You declined the draw; play goes on."),
    }
    if answer not in actions:
        answer = "offer"
    function, done = actions[answer]
    said = _comment_written()
    return _act(game_id, lambda g: function(g.id, _me(), "web", _bounded(said)), done, said)


@bp.post("/games/<int:game_id>/resign")
@login_required
def resign(game_id: int) -> Response | tuple[Response | str, int]:
    """Resign (or abandon a game of one), with the player's comment to the others if they wrote one."""
    said = _comment_written()
    return _act(game_id, lambda g: play.resign(g.id, _me(), "web", _bounded(said)), "You resigned.", said)


def _answer_comment() -> str | None:
    """What the player wrote with their answer to a challenge or a draw, or with their resignation, if
    anything (the challenge module bounds a challenge answer's length, as it does for one by mail; the
    draw and resign posts bound theirs with :func:`_bounded`)."""
    return request.form.get("comment") or None


def _comment_written() -> str:
    """The comment written with a move, a draw offer, a draw answer or a resignation ('' for none)."""
    # A browser sends a box's line breaks as CRLF but counts them as one character against its
    # maxlength: counted as sent, a comment the box allowed could be refused as too long.
    return (_answer_comment() or "").replace("\r\n", "\n").strip()


def _bounded(said: str) -> str | None:
    """``said`` to pass on (None for nothing), refused as a move's comment is when longer than one may
    be: the action is then not taken, rather than taken with the comment cut short."""
    if len(said) > MAX_COMMENT:
        raise _comment_too_long()
    return said or None


def _comment_too_long() -> PlayError:
    """The refusal of a comment longer than a record entry holds."""
    return PlayError(f"The comment is too long: at most {MAX_COMMENT} characters.", "comment")


@bp.post("/games/<int:game_id>/accept")
@login_required
def accept(game_id: int) -> ResponseReturnValue:
    """Accept a challenge, with a comment to the challenger if the player wrote one; the game starts
    when every seat is taken."""
    comment = _answer_comment()
    return _act(game_id, lambda g: challenges.accept(g.id, _me(), comment), "You accepted the challenge.")


@bp.post("/games/<int:game_id>/decline")
@login_required
def decline(game_id: int) -> ResponseReturnValue:
    """Decline a challenge, with a comment to the challenger if the player wrote one; the game is
    called off."""
    comment = _answer_comment()
    return _act(game_id, lambda g: challenges.decline(g.id, _me(), comment),
                "You declined the challenge; the game is called off.")


@bp.post("/games/<int:game_id>/withdraw")
@login_required
def withdraw(game_id: int) -> ResponseReturnValue:
    """The creator calls off a game still waiting for players."""
    return _act(game_id, lambda g: challenges.withdraw(g.id, _me()), "You withdrew the game.")


@bp.post("/games/<int:game_id>/take")
@login_required
def take(game_id: int) -> ResponseReturnValue:
    """Take an open seat; taking the last one starts the game."""
    return _act(game_id, lambda g: challenges.take_seat(g.id, _me()), "You took a seat.")


@bp.post("/games/<int:game_id>/watch")
@login_required
def watch(game_id: int) -> ResponseReturnValue:
    """Start watching a game (its move notices and result by mail), or stop with ``stop``."""
    if request.form.get("stop"):
        return _act(game_id, lambda g: watching.unwatch(g, _me()), "You no longer watch this game.")
    return _act(game_id, lambda g: watching.watch(g, _me()),
                "You are watching this game: its moves and result come by mail.")


@bp.post("/games/<int:game_id>/note")
@login_required
def note(game_id: int) -> ResponseReturnValue:
    """Keep the signed-in player's private note on the game (an empty one deletes it)."""
    text = request.form.get("note", "")
    game = _visible_game(game_id)
    try:
        kept = notes.save(game, _me(), text)
    except PlayError as exc:
        if wants_json():
            return jsonify(ok=False, code=exc.code, message=exc.message), exc.http_status
        # The page again with what was written kept in the box, so that nothing is lost.
        db.session.rollback()
        view = gameview.build(db.session.get_one(Game, game_id), current_user, _seat_arg())
        return render_template("games/game.html", view=view, error=exc.message, typed="", comment="",
                               said="", note_written=text), exc.http_status
    done = "Your note is saved; only you can read it." if kept else "Your note is deleted."
    if wants_json():
        return jsonify(ok=True, message=done)
    flash(done, "info")
    return redirect(url_for("games.game", game_id=game_id, seat=_seat_arg()) + "#my-note"), 303


@bp.get("/games/<int:game_id>/hint")
@login_required
def hint(game_id: int) -> Response:
    """The game's hint, on request (Box Off: whether the player's board can still be cleared).

    It only reads the position, so a GET serves; it is never shown unless asked for."""
    game = _visible_game(game_id)
    engine = queries.engine_of(game)
    seat = next((s for s in game.seats if s.user_id == current_user.id and
                 (_seat_arg() is None or s.number == _seat_arg())), None)
    if seat is None or game.status != "active" or not engine.offers_clearable_hint:
        abort(404)
    if engine.clearable(queries.state_of(game), seat.number):
        flash("Hint: your board can still be cleared.", "info")
    else:
        flash("Hint: your board can no longer be cleared, whatever you play; clear as many tiles as you can.",
              "info")
    return redirect(url_for("games.game", game_id=game_id, seat=seat.number))


# Conditional moves: only the signed-in player's own lines, on their own seat.


@bp.post("/games/<int:game_id>/conditionals")
@login_required
def queue_conditional(game_id: int) -> ResponseReturnValue:
    """Queue a conditional line, typed or built by clicking: ``if c4 then d4 [then e3 then f5]``."""
    line = request.form.get("line", "")
    return _act(game_id, lambda g: queueing.queue(g.id, _me(), [line], seat=_seat_arg()),
                "Queued: it is played the moment your opponent's move matches.")


@bp.post("/games/<int:game_id>/conditionals/delete")
@login_required
def delete_conditional(game_id: int) -> ResponseReturnValue:
    """Delete one of the player's conditional lines (``line``), or all of them."""
    line = None if request.form.get("all") else request.form.get("line", "")
    return _act(game_id, lambda g: queueing.delete(g.id, _me(), line, seat=_seat_arg()),
                "Deleted." if line is not None else "Every conditional move of yours here is deleted.")


@bp.get("/games/<int:game_id>/conditionals/preview")
@login_required
def preview_conditional(game_id: int) -> tuple[Response, int] | Response:
    """Where a line being built leads: the board there and the legal moves, for building by clicking."""
    game = _visible_game(game_id)
    try:
        return jsonify(ok=True, **queueing.preview(game, _me(), request.args.get("line", ""), _seat_arg()))
    except PlayError as exc:
        return jsonify(ok=False, code=exc.code, message=exc.message), exc.http_status


# The analysis board: moves tried without playing them, read from the engine, never changing the game.


def _reader_key() -> str:
    """Whom a read is counted against: the signed-in player, else the client's address."""
    if current_user.is_authenticated:
        return f"user:{current_user.get_id()}"
    return f"ip:{get_remote_address()}"


@bp.get("/games/<int:game_id>/analysis")
@limiter.limit(setting("analysis_per_reader"), key_func=_reader_key, scope="analysis")
@pagecache.kept(pagecache.game_stamp)
def analyse(game_id: int) -> tuple[Response, int] | Response:
    """Where a tried line leads from a position of the record (``at``; the position as it stands when
    left out): the board there, the legal moves, whose move it is; ``move`` once per move of the line,
    ``seat`` for whose board in a game where each player has their own."""
    game = _visible_game(game_id)
    moves = request.args.getlist("move")
    at_text = request.args.get("at", "")
    at = int(at_text) if at_text.isdigit() and len(at_text) < 7 else None
    seat = _seat_arg()
    if seat is None or not 0 <= seat < game.players:
        mine = game.seat_of(current_user) if current_user.is_authenticated else None
        seat = mine.number if mine is not None else 0
    try:
        tried = analysis.explore(game, at, moves, seat)
    except PlayError as exc:
        return jsonify(ok=False, code=exc.code, message=exc.message), exc.http_status
    return jsonify(ok=True, **analysis.shown(game, tried, seat))
