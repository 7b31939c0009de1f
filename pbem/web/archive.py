"""The public library of finished games: the archive and its feeds, game records, standings."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

from flask import Blueprint, Response, abort, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import Integer, and_, bindparam, case, or_, select, union_all

import games
from pbem.accounts import accounts
from pbem.archive import archive, feeds, records, standings
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, Tally, Tournament, User
from pbem.core.site import absolute_url
from pbem.game import endings, ratings, replay, results
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


# The stamp's statements of the pages without a cursor, by their filters as the request names them:
# building one costs more than running it, and reading its players (to check them) as much again.  A
# statement names its players by handle (folded as accounts.find_user folds it), never by id, and reads
# whether each of them, and its tournament, still exists: it stays true whatever becomes of them.
_STAMP_STATEMENTS: OrderedDict[object, tuple[Any, dict[str, Any]]] = OrderedDict()
_STAMP_STATEMENTS_KEPT = 64


def _stamp_statement(filters: archive.Filters, after: int | None,
                     before: int | None) -> tuple[Any, dict[str, Any]]:
    """The statement of :func:`_stamp` for valid ``filters``, and what it binds."""
    named: list[User] = []
    parts: list[Any] = []
    bound: dict[str, Any] = {}
    for i, player in enumerate(filters.players):
        key: Any = bindparam(f"player_key_{i}")
        bound[key.key] = accounts.handle_key(player.handle)
        named.append(cast(User, SimpleNamespace(
            id=select(User.id).where(User.handle_key == key).scalar_subquery(), handle=player.handle)))
        parts.append(select(User.id.label("id"), User.id.label("version")).where(User.handle_key == key))
    if filters.tournament is not None:
        parts.append(select(Tournament.id, Tournament.id.label("version"))
                     .where(Tournament.id == filters.tournament))
    query, _limit = archive.page_query(replace(filters, players=tuple(named)), after=after, before=before)
    return pagecache.list_statement(query.with_only_columns(Game.id, Game.version), *parts), bound


def _stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What the archive page is made of: its filters' players and the games it lists, and the reader's
    row, whose time zone its dates are written in (see :mod:`pbem.web.pagecache`); None (not kept) for
    filters in error."""
    after, before = _cursor("after"), _cursor("before")
    key = tuple((request.args.get(name) or "").strip()[:64] for name in archive.FILTER_PARAMS)
    cached = _STAMP_STATEMENTS.get(key) if after is None and before is None else None
    if cached is None:
        try:
            cached = _stamp_statement(archive.parse_filters(request.args), after, before)
        except archive.ArchiveError:
            return None
        if after is None and before is None:
            _STAMP_STATEMENTS[key] = cached
            while len(_STAMP_STATEMENTS) > _STAMP_STATEMENTS_KEPT:
                _STAMP_STATEMENTS.popitem(last=False)
    statement, bound = cached
    made_of, reader = pagecache.list_stamp(statement, reader_id, bound)
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


def _feed_stamp(reader_id: int | None) -> pagecache.Stamp | None:
    """What the archive's feed is made of: as the archive page with the same filters (see
    :func:`_stamp`); None (not kept) for a feed of no game, whose time of update is the time asked."""
    read = _stamp(reader_id)
    if read is None or not cast(tuple[Any, tuple[Any, ...]], read[0])[1]:
        return None
    return read


# A player's feed: the player by their handle as it was asked for (folded as accounts.find_user folds it),
# whether they have a page (a confirmed address, or an imported player's), and their games in the
# archive's first page; one statement, built once.
_FEED_PLAYER = select(User.id).where(User.handle_key == bindparam("player_key")).scalar_subquery()
_PLAYER_FEED = pagecache.plain_read(pagecache.list_statement(
    select(User.id.label("id"), case((or_(User.verified_at.is_not(None), User.placeholder.is_(True)), 1),
                                     else_=0).label("version"))
    .where(User.handle_key == bindparam("player_key")),
    archive.page_query(archive.Filters(players=(cast(User, SimpleNamespace(id=_FEED_PLAYER)),)))[0]
    .with_only_columns(Game.id, Game.version),
))


def _player_feed_stamp(reader_id: int | None, handle: str) -> pagecache.Stamp | None:
    """What a player's feed is made of: whether they have a page, and their games listed (see
    :func:`_stamp`); None (not kept) for no such player, or no game (see :func:`_feed_stamp`)."""
    made_of, reader = pagecache.list_stamp(_PLAYER_FEED, reader_id,
                                           {"player_key": accounts.handle_key(handle.strip())})
    if not any(row[0] == 1 for row in cast(tuple[tuple[Any, ...], ...], made_of)):
        return None
    return (handle, made_of), reader


@bp.get("/archive.atom")
@pagecache.kept(_feed_stamp)
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
@pagecache.kept(_player_feed_stamp)
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


def _standings_statement(bots: bool, engines: list[str] | None = None) -> Any:
    """What a game's standings show of its ``limit`` best-rated players (the game bound as ``engine``, or
    each of ``engines``, bound as ``engine_0``...): each one's handle and whether a computer plays, their
    rating with what its deviation now follows from, and their tallies of rated games (a row each for
    public and private games), as :func:`pbem.archive.standings.table` reads them; with the reader's row
    (see :func:`pbem.web.pagecache.with_reader`).  Each row starts with its game."""
    def best(engine: Any) -> Any:
        chosen = select(Rating.engine, Rating.rating, Rating.user_id, Rating.deviation, Rating.volatility,
                        Rating.last_game_at) \
            .join(User, User.id == Rating.user_id).where(Rating.engine == engine)
        if not bots:
            chosen = chosen.where(User.is_bot.is_(False))
        top = chosen.order_by(Rating.rating.desc(), Rating.user_id) \
            .limit(bindparam("limit", type_=Integer)).subquery()
        return select(*top.c)

    if engines is None:
        top = best(bindparam("engine")).subquery()
    else:
        top = union_all(*(best(bindparam(f"engine_{i}")) for i in range(len(engines)))).subquery()
    # Ordered by the columns that tell its rows apart (a player's tallies of public and private games
    # are two rows): sorting by every column cost SQLite a third of the statement.
    return pagecache.plain_read(pagecache.with_reader(
        select(top.c.engine, top.c.rating, top.c.user_id, Tally.public, User.handle, User.is_bot,
               top.c.deviation, top.c.volatility, top.c.last_game_at, Tally.wins, Tally.draws, Tally.losses)
        .join(User, User.id == top.c.user_id)
        .outerjoin(Tally, and_(Tally.user_id == top.c.user_id, Tally.engine == top.c.engine,
                               Tally.rated.is_(True))), ordered_by=4))


_STANDINGS = {bots: _standings_statement(bots) for bots in (True, False)}
# The index's: every game's best in one statement, by the games installed.
_STANDINGS_INDEX: dict[tuple[str, ...], Any] = {}


def _standings_shown(read: tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...] | None]) -> pagecache.Stamp:
    """What standings show of the rows of :func:`_standings_statement`: the deviations read as whether
    each rating is provisional now, the only words of the page that change with the clock."""
    rows, reader = read
    now = ratings.shown_now((row[6], row[7], pagecache.moment(row[8])) for row in rows)
    return tuple((*row[:6], *row[9:], provisional) for row, (provisional, _deviation) in zip(
        rows, now, strict=True)), reader


def _standings_index_stamp(reader_id: int | None) -> pagecache.Stamp:
    """What the standings index shows: each game's best players (see :func:`_standings_shown`)."""
    slugs = tuple(engine.slug for engine in games.all())
    statement = _STANDINGS_INDEX.get(slugs)
    if statement is None:
        statement = _STANDINGS_INDEX.setdefault(slugs, _standings_statement(True, list(slugs)))
    bound: dict[str, Any] = {f"engine_{i}": slug for i, slug in enumerate(slugs)}
    return _standings_shown(pagecache.rows_stamp(statement, {**bound, "limit": INDEX_SHOWN}, reader_id))


def _standings_stamp(reader_id: int | None, slug: str) -> pagecache.Stamp:
    """What a game's standings show (see :func:`_standings_shown`), with or without the computer players."""
    bots = request.args.get("bots") != "hide"
    return _standings_shown(pagecache.rows_stamp(_STANDINGS[bots], {"engine": slug, "limit": standings.SHOWN},
                                                 reader_id))


@bp.get("/standings")
@pagecache.kept(_standings_index_stamp)
def standings_index() -> str:
    """Every game's best-rated players, each game linking to its whole standings."""
    tables = [(engine, standings.table(engine.slug, INDEX_SHOWN)) for engine in games.all()]
    return render_template("archive/standings_index.html", tables=tables)


@bp.get("/standings/<slug>")
@pagecache.kept(_standings_stamp)
def standings_page(slug: str) -> str:
    """The players of a game ranked by rating, with their games, wins, draws and losses."""
    engine = engine_or_404(slug)
    hide_bots = request.args.get("bots") == "hide"
    return render_template("archive/standings.html", engine=engine, hide_bots=hide_bots,
                           rows=standings.table(engine.slug, bots=not hide_bots), engines=games.all())


def _game_stamp(reader_id: int | None, game_id: int, **_position: int) -> pagecache.Stamp | None:
    """What a game's record and replay are made of: what its page is (see
    :func:`pbem.web.pagecache.game_stamp`), which covers the game, its record and its players."""
    return pagecache.game_stamp(reader_id, game_id)


@bp.get("/games/<int:game_id>/replay/<int:number>")
@pagecache.kept(_game_stamp)
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
@pagecache.kept(_game_stamp)
def record_json(game_id: int) -> Response:
    """A game's record in the JSON format of docs/RECORDS.md."""
    game = _record_game(game_id)
    response = Response(records.to_json(records.record(game)), mimetype="application/json")
    response.headers["Content-Disposition"] = f'inline; filename="pbem-{game.engine}-{game.id}.json"'
    return response


@bp.get("/games/<int:game_id>.txt")
@pagecache.kept(_game_stamp)
def record_txt(game_id: int) -> Response:
    """A game's record as plain text: header, numbered moves with comments, the final board."""
    game = _record_game(game_id)
    response = Response(records.text(game), mimetype="text/plain")
    response.headers["Content-Disposition"] = f'inline; filename="pbem-{game.engine}-{game.id}.txt"'
    return response
