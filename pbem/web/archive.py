"""The public library of finished games: the archive and its feeds, game records, standings."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from flask import Blueprint, Response, abort, render_template, request, url_for
from flask_login import current_user

import games
from pbem.accounts import accounts
from pbem.archive import archive, feeds, records, standings
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.core.site import absolute_url
from pbem.game import endings, replay, results
from pbem.present import gameview
from pbem.web import engine_or_404, pagecache

bp = Blueprint("archive", __name__)


def _cursor(name: str) -> int | None:
    value = request.args.get(name, "")
    return int(value) if value.isdigit() and len(value) < 19 else None


def _page() -> tuple[archive.Page | None, archive.Filters | None, dict[str, str]]:
    """The archive page the request asks for, or the errors in its filters."""
    try:
        filters = archive.parse_filters(request.args)
        page = archive.search(filters, after=_cursor("after"), before=_cursor("before"))
    except archive.ArchiveError as exc:
        return None, None, exc.errors
    return page, filters, {}


# The stamp's statements of the pages without a cursor, by filters: building them costs more than
# running them.  The filters' players are in the key by id, so a statement is never reused for another.
_STAMP_STATEMENTS: OrderedDict[object, Any] = OrderedDict()
_STAMP_STATEMENTS_KEPT = 64


def _stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What the archive page is made of: its filters' players and the games it lists, and the reader's
    row, whose time zone its dates are written in (see :mod:`pbem.web.pagecache`); None (not kept) for
    filters in error."""
    after, before = _cursor("after"), _cursor("before")
    try:
        filters = archive.parse_filters(request.args)
        key = (tuple(p.id for p in filters.players), tuple(sorted(filters.params().items())))
        statement = _STAMP_STATEMENTS.get(key) if after is None and before is None else None
        if statement is None:
            query, _limit = archive.page_query(filters, after=after, before=before)
            statement = pagecache.list_statement(query.with_only_columns(Game.id, Game.version))
            if after is None and before is None:
                _STAMP_STATEMENTS[key] = statement
                while len(_STAMP_STATEMENTS) > _STAMP_STATEMENTS_KEPT:
                    _STAMP_STATEMENTS.popitem(last=False)
    except archive.ArchiveError:
        return None
    made_of, reader = pagecache.list_stamp(statement, reader_id)
    return (key, made_of), reader


@bp.get("/archive")
@pagecache.kept(_stamp)
def index() -> tuple[str, int] | str:
    """Finished public games, newest first, filtered by the GET parameters and paged by cursor."""
    page, filters, errors = _page()
    html = render_template(
        "archive/index.html", page=page, errors=errors, args=request.args, engines=games.all(),
        endings=endings.endings_for(filters.engine if filters else None), results=archive.RESULTS,
        result_words=archive.result_words,
        seat_words=results.seat_words,
        # The rows' links, built once: url_for for each of 50 rows would cost more than the query.
        game_path=url_for("games.game", game_id=0)[:-1],
        player_path=url_for("players.player", handle="x")[:-1],
        params=filters.params() if filters else {},
    )
    return (html, 400) if errors else html


@bp.get("/archive.atom")
def feed() -> Response:
    """The archive as an Atom feed, with the same filters as the page."""
    page, filters, errors = _page()
    if page is None:
        return Response("; ".join(errors.values()) + "\n", 400, mimetype="text/plain")
    title = "Finished games" + (f": {games.get(filters.engine).title}" if filters and filters.engine else "")
    if filters and filters.players:
        title += " of " + " against ".join(p.handle for p in filters.players)
    # Every link on the site's own address, never the Host the request named (feed readers keep them).
    params: dict[str, Any] = page.filters.params()
    return feeds.atom(page.games, title, absolute_url(url_for("archive.index", **params)),
                      absolute_url(url_for("archive.feed", **params)))


@bp.get("/players/<handle>.atom")
def player_feed(handle: str) -> Response:
    """A player's finished public games as an Atom feed."""
    user = accounts.find_user(handle)
    if user is None or not (user.verified or user.placeholder):
        abort(404)
    page = archive.search(archive.Filters(players=(user,)))
    return feeds.atom(page.games, f"Games of {user.handle}",
                      absolute_url(url_for("players.player", handle=user.handle)),
                      absolute_url(url_for("archive.player_feed", handle=user.handle)))


# How many of each game's best players the standings index shows.
INDEX_SHOWN = 5


@bp.get("/standings")
def standings_index() -> str:
    """Every game's best-rated players, each game linking to its whole standings."""
    tables = [(engine, standings.table(engine.slug, INDEX_SHOWN)) for engine in games.all()]
    return render_template("archive/standings_index.html", tables=tables)


@bp.get("/standings/<slug>")
def standings_page(slug: str) -> str:
    """The players of a game ranked by rating, with their games, wins, draws and losses."""
    engine = engine_or_404(slug)
    hide_bots = request.args.get("bots") == "hide"
    return render_template("archive/standings.html", engine=engine, hide_bots=hide_bots,
                           rows=standings.table(engine.slug, bots=not hide_bots), engines=games.all())


@bp.get("/games/<int:game_id>/replay/<int:number>")
def replay_position(game_id: int, number: int) -> str:
    """The boards after one entry of the record, for the game page's replay to swap in."""
    game = db.session.get(Game, game_id)
    if game is None or not gameview.visible(game, current_user) or not replay.replayable(game):
        abort(404)
    position = replay.position(game, number)
    return render_template("games/_replay_position.html", view={"replay": position})


def _record_game(game_id: int) -> Game:
    game = db.session.get(Game, game_id)
    # A running game where everyone plays the same deal keeps its moves hidden until the end.
    if game is None or not gameview.visible(game, current_user) or not replay.replayable(game):
        abort(404)
    return game


@bp.get("/games/<int:game_id>.json")
def record_json(game_id: int) -> Response:
    """A game's record in the JSON format of docs/RECORDS.md."""
    game = _record_game(game_id)
    response = Response(records.to_json(records.record(game)), mimetype="application/json")
    response.headers["Content-Disposition"] = f'inline; filename="pbem-{game.engine}-{game.id}.json"'
    return response


@bp.get("/games/<int:game_id>.txt")
def record_txt(game_id: int) -> Response:
    """A game's record as plain text: header, numbered moves with comments, the final board."""
    game = _record_game(game_id)
    response = Response(records.text(game), mimetype="text/plain")
    response.headers["Content-Disposition"] = f'inline; filename="pbem-{game.engine}-{game.id}.txt"'
    return response
