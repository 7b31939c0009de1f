"""Pages kept for visitors (pbem.web.pagecache): a visitor sees every change the moment it is made, the
clocks' words as time passes, and never a page that was someone else's (a player's, or one carrying
another visitor's message)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from datetime import timedelta

import pytest
from flask import Flask
from sqlalchemy import bindparam, event, select

from pbem.accounts import accounts, vacation
from pbem.archive import records
from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, Seat, User, set_clock, utcnow
from pbem.game import play, queries
from pbem.lobby import challenges
from pbem.present import keeping
from pbem.schedule import sweep
from pbem.web.pagecache import Page, PageCache, cache_of
from tests.server.test_page_queries import play_moves
from tests.server.test_player_page_cache import _without_token
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient


def _active_game(alice: User, bob: User, engine: str = "cambio") -> int:
    game_id = challenges.new_game(alice, engine, [alice, bob], seed=3).id
    challenges.accept(game_id, bob)
    return game_id


def _page(web: WebClient, path: str) -> str:
    response = web.get(path)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_a_visitor_is_answered_from_the_kept_page_until_the_game_changes(app: Flask, ctx: Flask,
                                                                        players) -> None:
    alice, bob, _ = players
    alice_id = alice.id
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    first = _page(WebClient(app), path)
    assert len(cache_of(app)) == 1
    # Another visitor gets the same bytes.
    assert _page(WebClient(app), path) == first
    play_moves(game_id, 1)
    moved = _page(WebClient(app), path)
    record = db.session.get(Game, game_id).moves
    assert moved != first and f"<code>{record[0].text}</code>" in moved
    # The page's script asks for the changing part: it shows the move too.
    assert f"<code>{record[0].text}</code>" in _page(WebClient(app), f"{path}/live")
    play.resign(game_id, db.session.get(User, alice_id), "web")
    over = _page(WebClient(app), path)
    assert "Game over" in over and "resigned" in over


def test_the_clock_words_a_visitor_sees_follow_the_time(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    now = utcnow()
    try:
        set_clock(now)
        before = _page(WebClient(app), path)
        assert "2 days 23 hours left" in before or "3 days left" in before
        set_clock(now + timedelta(hours=5))
        later = _page(WebClient(app), path)
        assert "2 days 19 hours left" in later or "2 days 18 hours left" in later
        set_clock(now + timedelta(days=2, hours=23, minutes=50))
        assert "minutes left" in _page(WebClient(app), path)
    finally:
        set_clock(None)


def test_a_vacation_shows_on_a_kept_page(app: Flask, ctx: Flask, players) -> None:
    """A player's vacation changes the player and the clocks, not the game: the visitor sees it."""
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    assert "on vacation" not in _page(WebClient(app), path)
    game = db.session.get(Game, game_id)
    mover = game.seats[next(iter(queries.seats_to_move(game)))]
    vacation.turn_on(db.session.get(User, mover.user_id))
    db.session.remove()
    page = _page(WebClient(app), path)
    assert "on vacation" in page and "the clock is stopped" in page


def test_the_front_page_and_the_archive_show_new_and_finished_games(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    visitor = WebClient(app)
    first = _active_game(alice, bob)
    front = _page(visitor, "/")
    assert f"/games/{first}" in front and _page(visitor, "/") == front
    assert "No finished games" in _page(visitor, "/archive")
    assert "No finished games" in _page(visitor, "/archive?player=bob&game=cambio")
    second = _active_game(alice, carol)
    assert f"/games/{second}" in _page(visitor, "/")
    play.resign(first, bob, "web")
    front = _page(visitor, "/")
    assert "alice vs bob — " in front
    archive = _page(visitor, "/archive")
    assert f'data-game="{first}"' in archive and f'data-game="{second}"' not in archive
    assert f'data-game="{first}"' in _page(visitor, "/archive?player=bob&game=cambio")
    assert "No finished games" in _page(visitor, "/archive?player=carol&game=cambio")
    # A game that starts when its last seat is taken joins the list.
    third = challenges.new_game(carol, "cambio", [carol, bob], seed=4).id
    assert f"/games/{third}" not in _page(visitor, "/")
    challenges.accept(third, bob)
    assert f"/games/{third}" in _page(visitor, "/")


def test_a_players_page_is_never_shown_to_a_visitor_nor_a_visitors_to_a_player(app: Flask, ctx: Flask,
                                                                               players) -> None:
    alice, bob, _ = players
    game_id = _active_game(alice, bob)
    path = f"/games/{game_id}"
    mover = alice if 0 in queries.seats_to_move(db.session.get(Game, game_id)) else bob
    (web_m,) = signed_in(app, mover)
    assert 'id="my-board"' in _page(web_m, path)
    page = _page(WebClient(app), path)
    assert 'id="my-board"' not in page and "csrf_token" not in page and "Sign out" not in page
    # Kept for visitors now; the player still gets their own page, form and all.
    mine = _page(web_m, path)
    assert 'id="my-board"' in mine and "Sign out" in mine and 'name="csrf_token"' in mine
    for shared in ("/", "/archive"):
        assert "Sign out" not in _page(WebClient(app), shared)
        assert "Sign out" in _page(web_m, shared)


def test_a_message_for_one_visitor_is_shown_to_them_alone(app: Flask, ctx: Flask, players) -> None:
    """A visitor sent to sign in carries a message in their session: their next page shows it, and
    neither is that page kept nor a kept page shown to them instead."""
    _active_game(*players[:2])
    _page(WebClient(app), "/")
    told = WebClient(app)
    assert told.get("/dashboard").status_code == 302
    page = _page(told, "/")
    assert "Sign in to see that page." in page
    assert "Sign in to see that page." not in _page(WebClient(app), "/")


def test_the_kept_pages_stay_within_their_bound() -> None:
    cache = PageCache(max_bytes=10_000)
    for n in range(50):
        cache.put(f"/games/{n}", Page(n, b"x" * 1000, ()))
        assert cache.size <= 10_000
    assert len(cache) == 9
    # The least recently used go first; a page asked for again stays.
    assert cache.get("/games/41", 41) is not None and cache.get("/games/40", 40) is None
    cache.get("/games/42", 42)
    cache.put("/games/50", Page(50, b"x" * 1000, ()))
    assert cache.get("/games/42", 42) is not None and cache.get("/games/43", 43) is None
    # A page kept under another stamp is not given out, and a newer one takes its place.
    assert cache.get("/games/50", 49) is None
    cache.put("/games/50", Page(51, b"y" * 10, ()))
    assert cache.get("/games/50", 51).body == b"y" * 10 and cache.size <= 10_000


def _what_lists_show() -> dict[int, tuple[int, tuple[tuple[object, ...], ...]]]:
    """Each active or finished game's version, and what the lists show of its seats: each seat's
    player, their handle and the seat's result; read on a connection of its own (what is committed)."""
    query = (select(Game.id, Game.version, Seat.number, Seat.user_id, User.handle, Seat.result)
             .join(Seat, Seat.game_id == Game.id).outerjoin(User, Seat.user_id == User.id)
             .where(Game.status.in_(("active", "finished"))).order_by(Game.id, Seat.number))
    with db.engine.connect() as connection:
        rows = connection.execute(query).all()
    shown: dict[int, tuple[int, tuple[tuple[object, ...], ...]]] = {}
    for row in rows:
        version, seats = shown.get(row.id, (row.version, ()))
        shown[row.id] = (version, (*seats, tuple(row[2:])))
    return shown


def test_what_a_list_shows_of_a_game_changes_only_with_its_version(app: Flask, ctx: Flask, players) -> None:
    """The lists' stamps read their games' ids and versions, not their seats and players (see
    pbem.web.pagecache): along every path that writes games, seats or accounts, what a list shows of
    a game never changes while its version stays, and every kept list page, a visitor's and a
    player's, is served as it would be rendered now."""
    alice, bob, _ = players
    ids = {user.handle: user.id for user in players}
    browsers = [WebClient(app), *signed_in(app, alice, bob)]
    shown = _what_lists_show()

    def step() -> None:
        nonlocal shown
        db.session.remove()
        now = _what_lists_show()
        for game_id, (version, seats) in shown.items():
            if game_id in now and now[game_id][0] == version:
                assert now[game_id][1] == seats, f"game #{game_id} shows other seats under version {version}"
        shown = now
        served = [_without_token(_page(web, path)) for web in browsers for path in ("/", "/archive")]
        cache_of(app).clear()
        assert served == [_without_token(_page(web, path)) for web in browsers for path in ("/", "/archive")]

    def user(handle: str) -> User:
        return db.session.get(User, ids[handle])

    step()
    # Seats filled by a challenge accepted and by an open seat taken, starting the games.
    first = _active_game(user("alice"), user("bob"))
    step()
    opened = challenges.new_game(user("carol"), "cambio", [user("carol"), None], seed=5).id
    step()
    challenges.take_seat(opened, user("alice"))
    step()
    play_moves(first, 2)
    step()
    play.offer_draw(opened, user("carol"), "web")
    play.accept_draw(opened, user("alice"), "web")
    step()
    play.resign(first, user("bob"), "web")
    step()
    # Clocks running out: a game of two ends, a game of one is abandoned.
    timed = _active_game(user("bob"), user("carol"))
    step()
    seat = next(iter(queries.seats_to_move(db.session.get(Game, timed))))
    play.time_out(timed, seat)
    step()
    alone = challenges.new_game(user("carol"), "boxoff", [user("carol")], seed=2).id
    step()
    play.time_out(alone, 0)
    step()
    # And as the sweep times games out, a batch at a time, its writes sent together.
    swept = _active_game(user("alice"), user("bob"))
    step()
    seat = next(iter(queries.seats_to_move(db.session.get(Game, swept))))
    assert sweep.time_out([play.DueTimeout(swept, seat)]) == (1, [])
    step()
    # A vacation, a time zone, sessions ended: the players' rows, not what the lists show.
    playing = _active_game(user("alice"), user("carol"))
    step()
    vacation.turn_on(user("alice"))
    step()
    vacation.turn_off(user("alice"))
    step()
    accounts.set_time_zone(user("bob"), "Pacific/Auckland")
    step()
    # An imported game's player is a placeholder account until someone claims the handle.
    seats = [{"seat": 1, "handle": "zoe"}, {"seat": 2, "handle": "bob"}]
    record = records.record(db.session.get(Game, first)) | {"players": seats}
    assert records.import_lines([json.dumps(record)]).added == 1
    step()
    zoe = accounts.sign_up("zoe", "zoe@example.org", "a long password")
    mail = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == "zoe@example.org")).all()[-1]
    accounts.verify(re.search(r"/verify/(\S+)", mail.body_text).group(1))
    assert not db.session.get(User, zoe.id).placeholder
    step()
    # An account never confirmed is deleted once its link has expired.
    accounts.sign_up("dan", "dan@example.org", "a long password")
    set_clock(utcnow() + timedelta(days=30))
    try:
        assert accounts.expire_unconfirmed() == 1
        step()
    finally:
        set_clock(None)
    play_moves(playing, 1)
    step()


def test_a_list_page_is_kept_under_the_stamp_of_what_it_shows(app: Flask, ctx: Flask, players) -> None:
    """A game of one starts just after a visitor's stamp of the front page is read, and is abandoned
    later, which puts the list back as it was: the page rendered meanwhile, showing the game, must not
    have been kept under the stamp read before the game started, or it would be served again then."""
    alice, bob, carol = players
    _active_game(alice, bob)
    carol_id = carol.id
    started: list[int] = []

    def start_a_game_of_one() -> None:
        with app.app_context():
            started.append(challenges.new_game(db.session.get(User, carol_id), "boxoff",
                                               [db.session.get(User, carol_id)], seed=2).id)

    def after_the_first_stamp(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "UNION ALL" in statement and not started:
            writer = threading.Thread(target=start_a_game_of_one)
            writer.start()
            writer.join()

    event.listen(db.engine, "after_cursor_execute", after_the_first_stamp)
    try:
        page = _page(WebClient(app), "/")
    finally:
        event.remove(db.engine, "after_cursor_execute", after_the_first_stamp)
    (alone,) = started
    assert f"/games/{alone}" in page
    play.time_out(alone, 0)
    assert f"/games/{alone}" not in _page(WebClient(app), "/")


def test_every_update_of_a_game_row_raises_its_version(app: Flask, ctx: Flask, players) -> None:
    """The stamps rely on a game's row being covered by its version (see pbem.web.pagecache): raised by
    every UPDATE of the row, the session's (its version counter) and the move path's own direct writes
    (play._write_back, one at a time or in the sweep's batches) alike.  Along the paths that write games,
    every UPDATE of a game row sets its version, and a row that changed has a new version."""
    alice, bob, _ = players
    user_ids = {"alice": alice.id, "bob": bob.id}
    updates: list[str] = []

    def user(handle: str) -> User:
        return db.session.get(User, user_ids[handle])

    def seen(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        # The statement itself, or on PostgreSQL the main statement after a move's data-modifying WITHs
        # (its record entry and seats: play._entry_and_game).
        game_update = re.search(r"(?:^\s*|\)\s*)(UPDATE game\b.*)", statement, re.S)
        if game_update:
            updates.append(game_update.group(1))

    def rows() -> dict[int, tuple[object, ...]]:
        db.session.remove()
        with db.engine.connect() as connection:
            return {row.id: tuple(row) for row in connection.execute(select(Game.__table__))}

    def step(action: Callable[[], object]) -> None:
        before = rows()
        action()
        for game_id, row in rows().items():
            if game_id in before and row != before[game_id]:
                version = Game.__table__.c.keys().index("version")
                assert row[version] > before[game_id][version], f"game #{game_id} changed, not its version"

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        first: list[int] = []
        step(lambda: first.append(_active_game(user("alice"), user("bob"))))  # Started by the session.
        step(lambda: play_moves(first[0], 2))  # The move path's direct UPDATEs.
        step(lambda: play.offer_draw(first[0], user("alice"), "web"))
        step(lambda: play.decline_draw(first[0], user("bob"), "web"))
        seat = next(iter(queries.seats_to_move(db.session.get(Game, first[0]))))
        step(lambda: sweep.time_out([play.DueTimeout(first[0], seat)]))  # A batch's executemany.
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert len(updates) >= 5
    assert [s for s in updates if not re.search(r"\bSET\b.*\bversion\s*=", s, re.S)] == []


def test_a_record_only_grows_and_only_with_its_games_version(app: Flask, ctx: Flask, players) -> None:
    """The game page's stamp counts a record's entries, and the replay keeps a game's states under its
    version and record length (pbem.game.replay): both rely on a record growing only by new entries, each
    written with an UPDATE of its game.  Along the move path's writes, an earlier record is always the
    start of the later one, and a game whose version stayed has the same record."""
    alice, bob, carol = players
    user_ids = {"alice": alice.id, "bob": bob.id, "carol": carol.id}
    ids = (_active_game(alice, bob), _active_game(bob, carol))

    def user(handle: str) -> User:
        return db.session.get(User, user_ids[handle])

    def records_now() -> dict[int, tuple[int, list[tuple[object, ...]]]]:
        db.session.remove()
        with db.engine.connect() as connection:
            versions = dict(connection.execute(select(Game.id, Game.version).where(Game.id.in_(ids))).all())
            entries = connection.execute(select(Move.game_id, Move.number, Move.kind, Move.text)
                                         .where(Move.game_id.in_(ids)).order_by(Move.number)).all()
        return {game_id: (versions[game_id], [tuple(e[1:]) for e in entries if e.game_id == game_id])
                for game_id in ids}

    before = records_now()
    steps = [
        lambda: play_moves(ids[0], 2),
        lambda: play.offer_draw(ids[1], user("bob"), "web"),
        lambda: play.decline_draw(ids[1], user("carol"), "web"),
        lambda: sweep.time_out([play.DueTimeout(ids[1], next(iter(
            queries.seats_to_move(db.session.get(Game, ids[1])))))]),
        lambda: play.resign(ids[0], user("alice"), "web"),
    ]
    for step in steps:
        step()
        after = records_now()
        for game_id in ids:
            (version, record), (new_version, new_record) = before[game_id], after[game_id]
            assert new_record[:len(record)] == record
            assert new_version != version or new_record == record
        before = after
    assert all(len(record) >= 2 for _version, record in before.values())


def test_a_stamp_read_from_the_driver_gives_what_the_model_gives(app: Flask, ctx: Flask, players) -> None:
    """A stamp's statement read straight from the driver (keeping.PlainRead) gives the rows SQLAlchemy
    gives, its times read back by keeping.moment, and refuses to run without a value it binds."""
    alice = players[0]
    alice.mail_bouncing_since = utcnow() - timedelta(hours=3)
    db.session.commit()
    statement = select(User.id, User.handle, User.created_at, User.mail_bouncing_since).where(
        User.id == bindparam("user_id"))
    plain = keeping.PlainRead(statement)
    expected = tuple(db.session.execute(statement, {"user_id": alice.id}).one())
    db.session.rollback()
    with app.test_request_context("/"):
        (row,) = plain.rows({"user_id": alice.id})
        assert (*row[:2], *map(keeping.moment, row[2:])) == expected
        with pytest.raises(KeyError):
            plain.rows({})
