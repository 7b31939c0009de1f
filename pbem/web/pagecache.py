"""Pages as a visitor, or a signed-in player, sees them, kept ready in each web process.

Rendering the game page, the front page or the archive reads rows into model objects, words the
results and runs the templates: most of a request's time.  A visitor without a session sees the same
bytes as every other such visitor, for as long as what the page is made of stays the same; a signed-in
player sees the same bytes each time too, but their own.  So each of those pages names a *stamp*: one
cheap read of everything its words can depend on (rows as tuples, no model objects), and the page
rendered for a URL and a reader (a player, or every visitor alike) is kept with the stamp it was
rendered under.  The reader's next request reads the stamp again and gets the kept bytes only when it
is equal; any change the page would show makes it differ, and the page is rendered afresh.  Nothing has
to be told to forget a page, so web processes need not share anything: each reads the stamp from the
database every time.

What a stamp must hold, and why the stamps below hold enough:

- a game's row is covered by its ``version``, raised by every UPDATE of the row: the session's (it is
  SQLAlchemy's version counter) and the move path's own, which writes the locked game by a direct
  UPDATE (:func:`pbem.game.play._write_back`, one at a time or in the sweep's batches) that raises it
  and matches the version read, as the session would; no other statement updates a game row
  (``test_every_update_of_a_game_row_raises_its_version`` in ``tests/server/test_page_cache.py``);
- its record grows only by new rows (moves are never changed nor deleted): their number and the
  highest entry number cover it (``test_a_record_only_grows_and_only_with_its_games_version``);
- the lists (the front page, the archive) show only active and finished games, and of their seats who
  holds each (by handle) and how each finished.  Those follow from the game's ``version``, so a list's
  stamp reads only its games' ids and versions (one row a game, the seats and players unread):

  - a seat's player is set only while its game waits for players (:mod:`pbem.lobby.challenges` fills seats,
    and the last one starts the game, an UPDATE of its row); once a game is active no path sets or
    clears a seat's player, and no seat is added or removed;
  - a seat's result is written only by :func:`pbem.game.endings.record_finish`, in the transaction that
    finishes the game and so updates its row (for an imported game, the one that adds it);
  - a handle never changes once the account exists (there is no renaming; claiming a placeholder keeps
    it), and an account holding a seat is never deleted (:func:`pbem.accounts.accounts.expire_unconfirmed`);

  ``tests/server/test_page_cache.py`` checks, along every path that writes games, seats or players, that
  what a list shows of a game never changes while its version stays the same;
- the game page shows, of the seats, the players' vacations and the clocks too: its stamp reads the
  seats and their players' columns;
- time: the only words that change with the clock alone are a running clock's ("2 days 5 hours left"),
  and the game page's stamp holds those very words, in the reader's time zone; a page showing ratings
  (whether each is provisional, its deviation now), vacations (until when) or the time itself holds
  those words as the page writes them (:func:`pbem.game.ratings.shown_now`, and the views' stamps);
- the other pages (standings, the directory, a player's page, My games, settings, the lobby, the
  tournaments') read, in their stamps beside their views, the very rows they show, as tuples
  (:func:`with_reader`, :func:`rows_stamp`), or a row whose version covers them (a tournament's);
- a signed-in player's page shows, besides, what is theirs: their handle, time zone and since when
  their mail bounces (the layout's notice) from their user row (:data:`READER_COLUMNS`), and on the
  game page their own seats' conditional lines, whether they watch the game and their private note on
  it; those columns are read in the same statement as the rest.  Which seat is theirs, and so their
  result, their board and their move, follows from the seats' players, read for everyone.

The stamp is kept with the page and compared whole (no digest that two stamps could share).  It is read
by a statement of its own, outside any transaction, and a page kept under it is served when it is
equal; a page not kept is rendered in one snapshot of the database with its stamp read again (see
:func:`_in_snapshot`), and kept under what that read (the machinery the pages share with the API's
answers, :mod:`pbem.api.kept`, is in :mod:`pbem.present.keeping`, which gives its reasoning).
So a kept page always shows the database as it was when its stamp was read, and is served only while
the stamp still reads the same: never older than the stamp, nor newer (a stamp can come back once
changed: a player's line queued then deleted, a game of one joining the active list then abandoned).

A player's page is served kept without loading the player: the session names their id and session
token as Flask-Login stored it, and the stamp's statement reads the token from their row, to be
compared as :func:`pbem.accounts.accounts.user_for_session` compares it; a session ended (signed out, or every
session ended by a new password) gets nothing kept.

Visitors qualify with a GET or HEAD with no session content at all (no sign-in, no flashed message,
no form token) and no user loaded by any other means; signed-in players with a GET or HEAD whose session
carries no flashed message.  A page is kept only when rendering it wrote nothing into the session and
set no cookie, answered 200, and is not too large; so a page carrying a message is never kept.  A
player's pages are kept under their own user id, never given to anyone else, and carry no form token:
they are rendered with :data:`FORM_TOKEN` in its place, and each answer (kept or fresh) puts in the
token of the session asking, as Flask-WTF makes it for this request, so a form posted from a kept page
is accepted as from a fresh one.  The sign-in forms (sign in, sign up, ask for a reset link) are kept
so for visitors too, whose session may then hold a form token already (``kept(..., forms=True)``); a
form shown after a refused POST (its error, the address typed) is never kept, being a POST's answer.
Each process keeps at most :data:`MAX_BYTES` of pages, the least recently used going first, one page
per URL and reader.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from functools import wraps
from types import SimpleNamespace
from typing import Any, cast

from flask import current_app, g, request, session
from flask.typing import ResponseReturnValue
from flask_login import current_user
from flask_wtf.csrf import generate_csrf
from markupsafe import Markup
from sqlalchemy import (
    CompoundSelect,
    DateTime,
    Integer,
    Select,
    bindparam,
    case,
    exists,
    func,
    literal,
    null,
    select,
    union_all,
)
from sqlalchemy.orm import aliased

from pbem.accounts.accounts import session_token_matches
from pbem.core.extensions import login_manager
from pbem.core.models import Game, GameNote, Move, Seat, User, Watch
from pbem.game import clock
from pbem.present import keeping
from pbem.present.keeping import KeptStore

# What one process keeps at most, pages and their URLs together, and the largest page it keeps.
MAX_BYTES = 32 * 2**20
MAX_PAGE_BYTES = 2**20

_EXTENSION = "pbem_page_cache"

# What a player's page carries in place of the form token while it is rendered, to be replaced by the
# asking session's token on every answer.  Markup, so that it is written as it is: no text a user
# wrote can come out of a template as these bytes, since their "<" would be escaped; and the random
# part is the process's own.
FORM_TOKEN = Markup(f"<pbem-form-token-{secrets.token_hex(16)}>")
_FORM_TOKEN_BYTES = str(FORM_TOKEN).encode()

# Where Flask-WTF keeps the request's form token (its WTF_CSRF_FIELD_NAME): generate_csrf() makes one
# only when there is none there yet, and returns what is there.
_TOKEN_IN_G = "csrf_token"

# A page as rendered: the stamp it was rendered under, its bytes and the headers its view gave.
Page = keeping.Kept


class PageCache(KeptStore):
    """Pages by URL and reader (a user's id, or None for every visitor), each with the stamp it was
    rendered under; bounded by bytes, least recently used first out."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes, MAX_PAGE_BYTES)


def cache_of(app: Any = None) -> PageCache:
    """The pages kept by ``app`` (the current app by default); each app keeps its own."""
    return keeping.store_of(app, _EXTENSION, PageCache)


def _visitor() -> bool:
    """Whether the request is a visitor's that every other visitor would be answered alike."""
    if request.method not in ("GET", "HEAD") or session:
        return False
    # With nothing in the session and no remember-me cookie, Flask-Login loads nobody (pbem gives it no
    # loader by request): not asking it spares the session-protection digest it makes for every
    # visitor, a tenth of a kept page.
    if g.get("_login_user") is None and not _remembered():
        return True
    return not current_user.is_authenticated


# What a visitor's session may hold and still be given a kept form (see :func:`kept`): the raw form
# token Flask-WTF put there, and the mark Flask-Login's session protection leaves on a session signed in
# to nobody.
_FORM_VISITOR_KEYS = frozenset({_TOKEN_IN_G, "_fresh"})


def _form_visitor() -> bool:
    """Whether the request is a visitor's asking for a form (sign in, sign up, a reset link) that every
    other visitor would be answered alike but for the form token: a GET or HEAD whose session holds
    nothing but a form token (no sign-in, no flashed message), and nobody signed in by other means."""
    if request.method not in ("GET", "HEAD") or not _FORM_VISITOR_KEYS.issuperset(session.keys()):
        return False
    if session.get("_fresh", False) is not False:
        return False
    if g.get("_login_user") is None and not _remembered():
        return True
    return not current_user.is_authenticated


def _remembered() -> bool:
    """Whether the request carries Flask-Login's remember-me cookie."""
    return current_app.config.get("REMEMBER_COOKIE_NAME", "remember_token") in request.cookies


def _signed_in_as() -> tuple[int, str] | None:
    """The user id and session token that the request's session is signed in with, if its page may be
    kept or served kept: a GET or HEAD, and no message waiting in the session (the page must show it,
    once).  Read from the session as Flask-Login stored it at sign-in (see
    :func:`pbem.accounts.accounts.user_for_session`); whether the token is still the user's is for the stamp's
    read to tell, so that the user is not loaded when their page is served kept."""
    if request.method not in ("GET", "HEAD") or "_flashes" in session:
        return None
    # Flask-Login's "strong" protection would end a session used from another browser; pbem does not
    # ask for it, and a page is not kept for a session it might end.
    if current_app.config.get("SESSION_PROTECTION", login_manager.session_protection) == "strong":
        return None
    value = session.get("_user_id")
    if not isinstance(value, str):
        return None
    user_id, _, token = value.partition(":")
    if not user_id.isdigit() or len(user_id) > 9 or not token:
        return None
    return int(user_id), token


def _keepable(response: Any) -> bool:
    """Whether a rendered answer may be kept: nothing was written to the session (a form token, a
    message) and no cookie set, and no form token made (a player's page carries :data:`FORM_TOKEN`)."""
    return (keeping.plain_ok(response) and not session.modified
            and g.get(_TOKEN_IN_G, FORM_TOKEN) is FORM_TOKEN)


def _with_form_token(body: bytes) -> bytes:
    """A player's page with the asking session's form token in place of :data:`FORM_TOKEN`."""
    if _FORM_TOKEN_BYTES not in body:
        return body
    return body.replace(_FORM_TOKEN_BYTES, _form_token().encode())


class _SignedTokens:
    """The form tokens lately signed in this process, by the session's own token that each signs: the
    signed token, when it was signed and under which key; at most :data:`SIGNED_TOKENS_KEPT`, the
    oldest going first."""

    def __init__(self) -> None:
        self.tokens: dict[str, tuple[str, float, object]] = {}
        self.lock = threading.Lock()

    def get(self, raw: str, key: object, since: float, now: float) -> str | None:
        """The token signed for ``raw`` under ``key`` between ``since`` and ``now``, if there is one."""
        signed = self.tokens.get(raw)
        return signed[0] if signed is not None and since <= signed[1] <= now and signed[2] == key else None

    def put(self, raw: str, token: str, at: float, key: object) -> None:
        """Keep ``token``, signed for ``raw`` under ``key`` at ``at``."""
        with self.lock:
            self.tokens.pop(raw, None)
            self.tokens[raw] = (token, at, key)
            while len(self.tokens) > SIGNED_TOKENS_KEPT:
                del self.tokens[next(iter(self.tokens))]


# How long a signed form token is given out again to the same session: a hundredth of the time a token
# is accepted (Flask-WTF's WTF_CSRF_TIME_LIMIT), and at most a minute.
TOKEN_REUSE_SHARE = 0.01
TOKEN_REUSE_SECONDS = 60.0
SIGNED_TOKENS_KEPT = 4096
_SIGNED_TOKENS = "pbem_signed_form_tokens"


def _form_token() -> str:
    """The asking session's form token: as Flask-WTF's ``generate_csrf`` makes it, or as it made it for
    the same session a moment ago (see :data:`TOKEN_REUSE_SHARE`).

    Signing a token (a serializer made for it, then an HMAC) cost a twentieth of a kept player's page.
    Its signature carries the second it was made, and it is accepted for WTF_CSRF_TIME_LIMIT after
    that: a token given out again is accepted a little less long after the answer carrying it, at
    least the limit less a hundredth (and the second the signing rounds down to, as always).  It is the
    same session's token, signed under the same key: nothing another session could use."""
    raw = session.get(_TOKEN_IN_G)
    if _TOKEN_IN_G in g or not isinstance(raw, str):
        return generate_csrf()
    config = current_app.config
    limit = config.get("WTF_CSRF_TIME_LIMIT", 3600)
    reuse = TOKEN_REUSE_SECONDS if limit is None else min(TOKEN_REUSE_SECONDS, limit * TOKEN_REUSE_SHARE)
    key = config.get("WTF_CSRF_SECRET_KEY") or current_app.secret_key
    signed = current_app.extensions.get(_SIGNED_TOKENS)
    if signed is None:
        signed = current_app.extensions.setdefault(_SIGNED_TOKENS, _SignedTokens())
    now = time.time()
    token = signed.get(raw, key, now - reuse, now)
    if token is None:
        token = generate_csrf()
        signed.put(raw, token, now, key)
    else:
        # Where generate_csrf keeps the request's token, as if it had made it.
        setattr(g, _TOKEN_IN_G, token)
    return token


# A stamp as the views give it: what the page is made of, and the reader's row (see :func:`kept`).
Stamp = tuple[object, tuple[Any, ...] | None]

# What a stamp reads of a signed-in reader's user row: their session token (to check the session's),
# and what every page shows of them: their handle (in the layout), the time zone it writes times in,
# and since when their mail bounces (the layout's notice, which shows that time and nothing else).
READER_COLUMNS = (User.session_token, User.handle, User.time_zone, User.mail_bouncing_since)


def _rendered_for(reader_id: int, reader: tuple[Any, ...]) -> bool:
    """Whether the page just rendered was rendered for the user ``reader_id`` as the stamp read their
    row: the sign-in loads them after the stamp is read (in the same snapshot, see :func:`_in_snapshot`;
    checked all the same, since a page kept under another's row would be served to them)."""
    if not current_user.is_authenticated or current_user.id != reader_id:
        return False
    return tuple(getattr(current_user, column.key) for column in READER_COLUMNS[1:]) == tuple(reader[1:])


View = Callable[..., ResponseReturnValue]


def _page_key(made_of: object, reader_id: int | None, reader: tuple[Any, ...] | None) -> object:
    """What a page is kept under: what it is made of, and for a signed-in reader their id and what the
    page shows of their row (the session token, the row's first column, is checked, not shown)."""
    if reader_id is None or reader is None:
        return made_of
    return (made_of, reader_id, *reader[1:])


def _in_snapshot(stamp: Callable[..., Stamp | None], reader_id: int | None,
                 kwargs: dict[str, Any]) -> Stamp | None:
    """The stamp read again in a snapshot of the database that the page is then rendered in: the
    session's transaction, begun afresh for it (on PostgreSQL REPEATABLE READ, which a read-only
    transaction never fails for; on SQLite a transaction's reads all see the database as its first did).

    A page rendered after its stamp was read, but kept under it, could show what came after: kept
    under a stamp that comes back, it would then be served again when it no longer holds.  A player's
    stamp can come back (a line queued then deleted, watching turned on then off), and so can a list's:
    a game of one starts, joining the list of active games, then runs out of time and is abandoned,
    leaving the list as it was."""
    with keeping.snapshot():
        return stamp(reader_id, **kwargs)


def _unread(cache: PageCache, url: str, reader_id: int | None, signed_in: tuple[int, str] | None,
            generation: tuple[bytes, float, float]) -> Page | None:
    """The page kept for ``url`` and the reader that may be served without reading its stamp: found to
    hold under the write generation that is still the host's, lately (see :mod:`pbem.present.keeping`),
    and for a signed-in reader under the session token the request's session carries, as their row held
    it then (so a session ended since, by a write, is not served)."""
    now, _at, max_age = generation
    found = cache.fresh(url, reader_id, now, max_age)
    if found is None:
        return None
    page, checked = found
    if signed_in is not None and not (checked[2] is not None and session_token_matches(checked[2],
                                                                                       signed_in[1])):
        return None
    return page


def _serve_kept(page: Page, tokened: bool) -> ResponseReturnValue:
    """The answer of a kept page: if it is rendered with :data:`FORM_TOKEN`, with the asking session's
    form token put in."""
    body = _with_form_token(page.body) if tokened else page.body
    return current_app.response_class(body, headers=list(page.headers))


def kept(stamp: Callable[..., Stamp | None], forms: bool = False) -> Callable[[View], View]:
    """Keep the view's page for visitors and for each signed-in player under ``stamp``, called with the
    reader's user id (None for a visitor) and the view's arguments.  The stamp answers what the page is
    made of and, for a reader, their row's :data:`READER_COLUMNS` (None if there is no such user); or
    None when the page is not to be kept (a private game, say), and the view answers as always.

    A signed-in reader's session token is checked against their row, as the sign-in would, before
    anything kept for them is given out; their page is then served without loading them.

    With ``forms``, a page whose form a visitor posts (sign in, sign up): the visitor's page too is
    rendered with :data:`FORM_TOKEN` and served with their session's own token put in (made, and the
    session cookie set, as Flask-WTF would, when the session has none yet); and a visitor whose session
    holds a form token already is served it kept as well (see :func:`_form_visitor`)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def serve(**kwargs: Any) -> ResponseReturnValue:
            signed_in = _signed_in_as()
            if signed_in is None and not (_form_visitor() if forms else _visitor()):
                return view(**kwargs)
            tokened = forms or signed_in is not None
            reader_id = signed_in[0] if signed_in else None
            cache = cache_of()
            url = keeping.request_url()
            generation = keeping.generation_now()
            if generation is not None:
                page = _unread(cache, url, reader_id, signed_in, generation)
                if page is not None:
                    return _serve_kept(page, tokened)
            read = stamp(reader_id, **kwargs)
            if read is None:
                return view(**kwargs)
            made_of, reader = read
            # A signed-in reader's session must still be theirs (see _signed_in_as) before anything is kept.
            ended = signed_in is not None and (reader is None or not session_token_matches(reader[0],
                                                                                         signed_in[1]))
            if ended:
                return view(**kwargs)
            made_of = _page_key(made_of, reader_id, reader)
            holder = reader[0] if reader is not None else None
            page = cache.get(url, made_of, reader_id, keeping.checked_at(generation, holder))
            if page is not None:
                return _serve_kept(page, tokened)
            generation = keeping.generation_now()
            read = _in_snapshot(stamp, reader_id, kwargs)
            if read is None or read[1] != reader:
                return view(**kwargs)
            made_of = _page_key(read[0], reader_id, reader)
            if tokened:
                # A player's page (or a form's) is rendered with the stand-in for the form token, which
                # Flask-WTF then gives out as the request's own; it is taken back whatever happens, so
                # that an error page rendered after the view carries a real token.
                setattr(g, _TOKEN_IN_G, FORM_TOKEN)
            try:
                response = current_app.make_response(view(**kwargs))
                keep = _keepable(response) and (
                    signed_in is None or (reader is not None and _rendered_for(signed_in[0], reader)))
            finally:
                if tokened:
                    g.pop(_TOKEN_IN_G, None)
            if keep:
                cache.put(url, Page(made_of, response.get_data(), keeping.kept_headers(response),
                                    checked=keeping.checked_at(generation, holder)), reader_id)
            if tokened and not response.direct_passthrough and not response.is_streamed:
                response.set_data(_with_form_token(response.get_data()))
            return response

        return serve

    return decorate


# Stamps -----------------------------------------------------------------------------------------------
# The statements are built once: building one costs more than SQLite takes to answer it.

# What the game page shows of a game besides its record and position (which its version covers): its
# seats, their players, clocks and results; its record's length.
# The record's length is read by the game's id as bound, not as each seat's row names it, so that each
# part is read once for the statement, not once for each seat; and by the index of the game's entry
# numbers: the highest id, read by the moves' own index, walked back over every later game's moves.
_RECORD = Move.game_id == bindparam("game_id")
_GAME = (
    select(Game.version, Game.public, Game.status, Game.time_control,
           select(func.count(Move.id)).where(_RECORD).scalar_subquery(),
           select(func.max(Move.number)).where(_RECORD).scalar_subquery(),
           Seat.number, Seat.user_id, Seat.deadline, Seat.result, User.handle, User.vacation_since)
    .outerjoin(Seat, Seat.game_id == Game.id).outerjoin(User, Seat.user_id == User.id)
    .where(Game.id == bindparam("game_id")).order_by(Seat.number)
)

# The signed-in reader's row, for the stamps that read it beside what the page is made of (by id, under
# a name of its own: the game's statement reads the seats' players from the same table).
_READER = aliased(User, name="reader")
_READER_ROW = tuple(select(getattr(_READER, column.key)).where(_READER.id == bindparam("reader_id"))
                    .scalar_subquery() for column in READER_COLUMNS)

# A signed-in reader's game page shows, besides, their own seats' conditional lines (only theirs: the
# others' are not read), whether they watch the game and their own private note on it; then come their
# row's columns.
_READERS_GAME = _GAME.add_columns(
    case((Seat.user_id == bindparam("reader_id"), Seat.conditionals)),
    exists().where(Watch.game_id == Game.id, Watch.user_id == bindparam("reader_id")),
    select(GameNote.text).where(GameNote.game_id == Game.id, GameNote.user_id == bindparam("reader_id"))
    .scalar_subquery(),
    *_READER_ROW,
)


# A stamp of several statements reads them on one connection (see :func:`pbem.present.keeping.reading`).
reads_together = keeping.reading


def _clock_words(time_control: dict[str, Any] | None, deadline: Any, user: SimpleNamespace | None,
                 zone: str) -> str:
    """The words of a running clock exactly as the page writes them for a reader in ``zone``: the seat is
    handed to :func:`pbem.game.clock.status` with just what that reads, from the stamp's row."""
    seat = SimpleNamespace(deadline=deadline, user=user, game=SimpleNamespace(time_control=time_control))
    return clock.status(cast(Seat, seat), zone)


def game_stamp(reader_id: int | None, game_id: int) -> Stamp | None:
    """What a reader's game page is made of: the game's version, its record's length, its seats and
    players, and the words of its running clocks in the reader's zone; for a signed-in reader also
    their own seats' conditional lines, whether they watch the game and their note on it.  With it, the
    reader's row (see :func:`kept`).  None (not kept) for a game the reader cannot see, or one not yet
    started or called off, whose page reads its challenges too.  A private game is kept only for its
    players: whoever else may see it does so by a challenge or by having made it, which the stamp does
    not read."""
    if reader_id is None:
        rows, reader = keeping.read(_GAME, {"game_id": game_id}), None
    else:
        rows = keeping.read(_READERS_GAME, {"game_id": game_id, "reader_id": reader_id})
        width = len(READER_COLUMNS)
        reader = rows[0][-width:] if rows and rows[0][-width] is not None else None
        rows = [row[:-width] for row in rows]
    if not rows:
        return None
    _version, public, status, time_control, *_ = rows[0]
    if status not in ("active", "finished"):
        return None
    if not public and (reader_id is None or all(row[7] != reader_id for row in rows)):
        return None
    # The zone as :func:`pbem.game.clock.zone_of` gives it for the reader.
    zone = (reader[2] if reader is not None else None) or "UTC"
    clocks = []
    if status == "active":
        for row in rows:
            _number, user_id, deadline, _result, handle, vacation_since = row[6:12]
            if deadline is not None:
                holder = None if user_id is None else SimpleNamespace(vacation_since=vacation_since,
                                                                      handle=handle)
                clocks.append(_clock_words(time_control, deadline, holder, zone))
    return (rows, clocks), reader


def list_statement(*queries: Select) -> CompoundSelect:
    """The one statement reading what lists of games are made of, for :func:`list_stamp`: each listed
    game's id and version (each query selects ``Game.id`` and ``Game.version``; its seats and players
    follow from its version, see the module's docstring), and the row of the reader whose id is bound
    as ``reader_id``, if any.  One statement rather than one per list, since on PostgreSQL each is a
    round trip to the server.  Each row starts with its part: the list's index, one more for the
    reader."""
    # The empty columns of a part's rows are typed as the others' are: PostgreSQL matches a union's
    # columns by type.
    empty = [null().cast(column.type) for column in READER_COLUMNS]
    lists = [query.subquery() for query in queries]
    parts = [select(literal(i), listed.c.id, listed.c.version, *empty) for i, listed in enumerate(lists)]
    parts.append(select(literal(len(queries)), User.id, null().cast(Integer), *READER_COLUMNS)
                 .where(User.id == bindparam("reader_id")))
    return union_all(*parts)


def list_stamp(statement: CompoundSelect | keeping.PlainRead, reader_id: int | None = None,
               parameters: dict[str, Any] | None = None) -> Stamp:
    """What lists of games are made of, read by their :func:`list_statement` (with ``parameters`` bound
    besides the reader's id), and the row of the reader ``reader_id`` (None for a visitor, or if there is
    no such user).  The games are put in one fixed order (list, then game): a list's own order follows
    from the versions of its games, since whatever orders it (a move, a game's end) raises them."""
    bound = {**(parameters or {}), "reader_id": reader_id}
    plain = isinstance(statement, keeping.PlainRead)
    if isinstance(statement, keeping.PlainRead):
        rows, reader_part = statement.rows(bound), len(cast(CompoundSelect, statement.statement).selects) - 1
    else:
        rows, reader_part = keeping.read(statement, bound), len(statement.selects) - 1
    listed = sorted(row[:3] for row in rows if row[0] != reader_part)
    reader = next((row[3:] for row in rows if row[0] == reader_part), None)
    return tuple(listed), (_as_model(reader) if plain and reader is not None else reader)


def _as_model(reader: tuple[Any, ...]) -> tuple[Any, ...]:
    """The reader's row as a :func:`plain_read` gives it, as the model gives it: what the page rendered
    for them is checked against (:func:`_rendered_for`)."""
    return tuple(keeping.moment(value) if isinstance(column.type, DateTime) else value
                 for column, value in zip(READER_COLUMNS, reader, strict=True))


def with_reader(statement: Select, ordered_by: int | None = None) -> Select:
    """``statement`` with the row of the reader whose id is bound as ``reader_id`` beside each of its
    rows, for :func:`rows_stamp`: the reader's columns first (all None for a visitor or no such user),
    on one row even when the statement gives none.  Build it once: the result is a statement of its
    own, its rows in the order of their first ``ordered_by`` columns (every column by default; PostgreSQL
    cannot order JSON, so a statement reading some names the leading columns that tell its rows apart)."""
    reader = select(*(column.label(f"reader_{i}") for i, column in enumerate(_READER_ROW))).subquery()
    rows = statement.add_columns(literal(1).label("present")).subquery()
    return (select(*reader.c, *rows.c).select_from(reader.outerjoin(rows, literal(True)))
            .order_by(*list(rows.c)[:-1][:ordered_by]))


def rows_stamp(statement: Select | keeping.PlainRead, parameters: dict[str, Any],
               reader_id: int | None) -> tuple[tuple[tuple[Any, ...], ...], tuple[Any, ...] | None]:
    """What a page made of the rows of a :func:`with_reader` statement (or its :func:`plain_read`)
    shows (the rows as tuples, in its order), and the reader's row (None for a visitor, or if there is
    no such user)."""
    bound = {**parameters, "reader_id": reader_id}
    plain = isinstance(statement, keeping.PlainRead)
    rows = statement.rows(bound) if isinstance(statement, keeping.PlainRead) else keeping.read(
        statement, bound)
    width = len(READER_COLUMNS)
    reader = rows[0][:width] if rows and reader_id is not None and rows[0][0] is not None else None
    if plain and reader is not None:
        reader = _as_model(reader)
    return tuple(row[width:-1] for row in rows if row[-1] is not None), reader


# A statement read straight from the driver (see :class:`pbem.present.keeping.PlainRead`): for the stamps
# of many rows, whose reading through SQLAlchemy cost more than the database's answer.
plain_read = keeping.PlainRead
moment = keeping.moment


def read_rows(statement: Select | CompoundSelect, parameters: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The rows of a stamp's statement of its own, as tuples (read as every stamp's statement is: on a
    connection of its own, or in the snapshot a page is rendered in)."""
    return keeping.read(statement, parameters)


_READER_ONLY = select(*_READER_ROW)


def static_stamp(reader_id: int | None, **_arguments: Any) -> Stamp:
    """The stamp of a page that shows nothing from the database but, for a signed-in reader, their own
    row (the rules, say): nothing read for a visitor."""
    if reader_id is None:
        return (), None
    (row,) = keeping.read(_READER_ONLY, {"reader_id": reader_id})
    return (), (row if row[0] is not None else None)
