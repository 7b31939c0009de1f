"""The library's pages kept by pbem.web.pagecache (standings, feeds, a game's record and replay, the
analysis board, the rules): each is served as kept until what it shows changes, and then shows the
change at once: a game finishing, a rating, the clock making a rating provisional again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from flask import Flask
from sqlalchemy import create_engine, select, text

from pbem.accounts import accounts, apitokens, bots, vacation
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, Rating, Tournament, User, set_clock, utcnow
from pbem.game import play, ratings, watching
from pbem.lobby import challenges
from pbem.tournament import organise
from tests.server.test_page_queries import play_moves
from tests.server.test_player_page_cache import _renders
from tests.server.test_tournaments import finish, make_players, open_games, tournament_of
from tests.server.test_web_games import signed_in
from tests.server.webclient import WebClient


def _active_game(first: User, second: User, engine: str = "cambio", seed: int = 3) -> int:
    game_id = challenges.new_game(first, engine, [first, second], seed=seed).id
    challenges.accept(game_id, second)
    return game_id


def _kept(app: Flask, web: WebClient, path: str) -> str:
    """The page at ``path``, asked twice: the second answer must come as kept (nothing rendered)."""
    first = web.get(path)
    assert first.status_code == 200, path
    with _renders(app) as rendered:
        again = web.get(path)
    assert again.status_code == 200 and not rendered, path
    body = again.get_data(as_text=True)
    assert body == first.get_data(as_text=True) or "csrf_token" in body
    return body


def test_the_standings_and_the_feeds_show_a_game_the_moment_it_ends(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    alice_id, bob_id = alice.id, bob.id
    game_id = _active_game(alice, bob)
    visitor = WebClient(app)
    assert "Nobody is rated in Cambio yet." in _kept(app, visitor, "/standings/cambio")
    assert "/players/alice" not in _kept(app, visitor, "/standings")
    # A feed of no game is not kept: its time of update is the time asked.
    assert f"/games/{game_id}" not in visitor.get("/archive.atom?game=cambio").get_data(as_text=True)
    play.resign(game_id, db.session.get(User, bob_id), "web")
    standings = _kept(app, visitor, "/standings/cambio")
    assert "/players/alice" in standings and "/players/bob" in standings
    assert "<td>1</td><td>1</td><td>0</td><td>0</td>" in standings  # alice: one rated game, won
    assert "/players/alice" in _kept(app, visitor, "/standings")
    assert f"/games/{game_id}" in _kept(app, visitor, "/archive.atom")
    assert f"/games/{game_id}" in _kept(app, visitor, "/archive.atom?game=cambio")
    assert f"/games/{game_id}" in _kept(app, visitor, "/players/bob.atom")
    # A second game: the counts, the ratings and the feeds all move on.
    second = _active_game(db.session.get(User, bob_id), db.session.get(User, alice_id), seed=4)
    play.resign(second, db.session.get(User, alice_id), "web")
    standings = _kept(app, visitor, "/standings/cambio")
    assert "<td>2</td><td>1</td><td>0</td><td>1</td>" in standings
    assert f"/games/{second}" in _kept(app, visitor, "/players/alice.atom")
    assert f"/games/{second}" in _kept(app, visitor, "/archive.atom")
    # A signed-in reader has their own copy, never a visitor's.
    (web_alice,) = signed_in(app, db.session.get(User, alice_id))
    assert "Sign out" in _kept(app, web_alice, "/standings/cambio")
    assert "Sign out" not in _kept(app, WebClient(app), "/standings/cambio")


def test_a_rating_turns_provisional_on_the_kept_standings_as_time_passes(app: Flask, ctx: Flask,
                                                                         players) -> None:
    alice, bob, _carol = players
    play.resign(_active_game(alice, bob), bob, "web")
    # Alice as a settled player: a small deviation, just now.
    now = utcnow()
    row = db.session.query(Rating).filter_by(user_id=alice.id, engine="cambio").one()
    row.deviation, row.last_game_at = 60.0, now
    db.session.commit()
    mark = '<span class="provisional"'
    try:
        set_clock(now)
        visitor = WebClient(app)
        page = _kept(app, visitor, "/standings/cambio")
        assert page.count(mark) == 1  # bob's only
        # No game for years: her deviation has grown past the line, and the page says so.
        set_clock(now + timedelta(days=3 * 365))
        assert _kept(app, visitor, "/standings/cambio").count(mark) == 2
        assert _kept(app, visitor, "/standings").count(mark) == 2
    finally:
        set_clock(None)


def test_the_kept_standings_follow_a_rating_and_a_readers_bouncing_mail(app: Flask, ctx: Flask,
                                                                          players) -> None:
    """The standings' stamp reads its rows from the driver (SQLite's times as text): a rating changed
    shows at once, and a reader whose mail bounces gets their page kept, with its notice."""
    alice, bob, _carol = players
    alice_id = alice.id
    play.resign(_active_game(alice, bob), bob, "web")
    visitor = WebClient(app)
    assert "1987" not in _kept(app, visitor, "/standings/cambio")
    row = db.session.query(Rating).filter_by(user_id=alice_id, engine="cambio").one()
    row.rating = 1987.0
    db.session.commit()
    assert "1987" in _kept(app, visitor, "/standings/cambio")
    assert "1987" in _kept(app, visitor, "/standings")
    (web_alice,) = signed_in(app, db.session.get(User, alice_id))
    plain = _kept(app, web_alice, "/standings/cambio")
    db.session.get(User, alice_id).mail_bouncing_since = utcnow() - timedelta(days=1)
    db.session.commit()
    bouncing = _kept(app, web_alice, "/standings/cambio")
    assert bouncing != plain and "1987" in bouncing
    assert _kept(app, web_alice, "/standings") != _kept(app, visitor, "/standings")


def test_a_games_record_and_replay_follow_its_moves(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    game_id = _active_game(alice, bob)
    visitor = WebClient(app)
    assert '"moves":[]' in _kept(app, visitor, f"/games/{game_id}.json")
    _kept(app, visitor, f"/games/{game_id}.txt")
    play_moves(game_id, 2)
    moves = db.session.get(Game, game_id).moves
    record = _kept(app, visitor, f"/games/{game_id}.json")
    assert all(f'"text":"{move.text}"' in record for move in moves)
    assert f"{moves[1].text}" in _kept(app, visitor, f"/games/{game_id}.txt")
    _kept(app, visitor, f"/games/{game_id}/replay/1")
    board = _kept(app, visitor, f"/games/{game_id}/analysis")
    play_moves(game_id, 1)
    assert _kept(app, visitor, f"/games/{game_id}/analysis") != board


def test_the_rules_are_kept_for_visitors_and_for_each_player(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    web_alice, web_bob = signed_in(app, alice, bob)
    for path in ("/rules", "/rules/cambio"):
        assert "Sign out" not in _kept(app, WebClient(app), path)
        assert ">alice<" in _kept(app, web_alice, path) or "alice" in _kept(app, web_alice, path)
        assert "alice" not in _kept(app, web_bob, path)


def test_a_players_page_and_the_directory_follow_their_games_ratings_and_time(app: Flask, ctx: Flask,
                                                                              players) -> None:
    alice, bob, _carol = players
    alice_id, bob_id = alice.id, bob.id
    visitor = WebClient(app)
    assert "None yet." in _kept(app, visitor, "/players/alice")
    assert "not rated" in _kept(app, visitor, "/players?q=al")
    game_id = _active_game(alice, bob)
    page = _kept(app, visitor, "/players/alice")
    assert f"/games/{game_id}" in page and "in play" in page
    play.resign(game_id, db.session.get(User, bob_id), "web")
    page = _kept(app, visitor, "/players/alice")
    assert "in play" not in page and "1 rated game" in page and 'id="history-cambio"' in page
    directory = _kept(app, visitor, "/players?q=al")
    assert "not rated" not in directory and "<td>1</td>" in directory
    # Her deviation grows while she does not play: the page writes it as it is now.
    now = utcnow()
    try:
        set_clock(now)
        before = _kept(app, visitor, "/players/alice")
        set_clock(now + timedelta(days=3 * 365))
        assert _kept(app, visitor, "/players/alice") != before
    finally:
        set_clock(None)
    # A vacation shows on her page; a new player, once confirmed, in the directory.
    vacation.turn_on(db.session.get(User, alice_id))
    assert "on vacation" in _kept(app, visitor, "/players/alice")
    assert "/players/alina" not in _kept(app, visitor, "/players?q=al")
    accounts.sign_up("alina", "alina@example.org", "a long password")
    assert "/players/alina" not in _kept(app, visitor, "/players?q=al")
    assert WebClient(app).get("/players/alina").status_code == 404
    mail = db.session.scalars(select(OutboxMail).where(OutboxMail.to_addr == "alina@example.org")).all()[-1]
    accounts.verify(re.search(r"/verify/(\S+)", mail.body_text).group(1))
    assert "/players/alina" in _kept(app, visitor, "/players?q=al")
    assert "Playing since" in _kept(app, visitor, "/players/alina")


def test_a_players_settings_are_kept_for_them_until_a_setting_a_token_or_the_minute_changes(
        app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    alice_id = alice.id
    web_alice, web_bob = signed_in(app, alice, bob)
    now = utcnow().replace(second=0, microsecond=0)
    try:
        set_clock(now)
        page = _kept(app, web_alice, "/settings")
        assert "alice@example.org" in page and 'name="csrf_token"' in page
        assert "bob@example.org" in _kept(app, web_bob, "/settings")
        # A visitor is sent to sign in, as ever.
        assert WebClient(app).get("/settings").status_code == 302
        accounts.set_notify(db.session.get(User, alice_id), "digest")
        assert _kept(app, web_alice, "/settings") != page
        page = _kept(app, web_alice, "/settings")
        _row, _token = apitokens.create(db.session.get(User, alice_id), "my script")
        assert "my script" in _kept(app, web_alice, "/settings")
        vacation.turn_on(db.session.get(User, alice_id))
        away = _kept(app, web_alice, "/settings")
        # The clock moves on: the time now and the days of vacation left with it.
        set_clock(now + timedelta(days=2, minutes=1))
        later = _kept(app, web_alice, "/settings")
        assert later != away
        assert "alice@example.org" not in _kept(app, web_bob, "/settings")
    finally:
        set_clock(None)


def test_a_browser_remembered_without_a_session_gets_its_players_page_not_a_visitors(
        app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    web = WebClient(app)
    web.sign_in(alice)
    web.post("/login", {"login": alice.handle, "password": "correct horse", "remember": "1"})
    remembered = web.client.get_cookie("remember_token")
    assert remembered is not None
    assert "Sign out" not in _kept(app, WebClient(app), "/rules")
    # The browser closed: its session is gone, the remember-me cookie stays.
    fresh = WebClient(app)
    fresh.client.set_cookie("remember_token", remembered.value)
    assert "Sign out" in fresh.get("/rules").get_data(as_text=True)


def test_the_new_game_form_is_kept_for_a_player_and_offers_a_new_computer_player(
        app: Flask, ctx: Flask, players) -> None:
    alice, bob, _carol = players
    web_alice, web_bob = signed_in(app, alice, bob)
    form = _kept(app, web_alice, "/games/new?game=cambio")
    assert 'id="computer"' not in form and 'value="alice"' in form and 'name="csrf_token"' in form
    assert 'value="bob"' in _kept(app, web_bob, "/games/new?game=cambio")
    assert WebClient(app).get("/games/new").status_code == 302
    bots.add("deep-think", ["cambio"], "hard")
    assert 'id="computer"' in _kept(app, web_alice, "/games/new?game=cambio")
    assert 'id="computer"' not in _kept(app, web_alice, "/games/new?game=truchet")


def test_my_games_is_kept_until_a_game_a_challenge_a_clock_or_a_vacation_it_shows_changes(
        app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    alice_id, bob_id, carol_id = alice.id, bob.id, carol.id

    def user(user_id: int) -> User:
        return db.session.get(User, user_id)

    (web_alice,) = signed_in(app, alice)
    assert "No game is waiting for you." in _kept(app, web_alice, "/dashboard")
    # A challenge from bob; and her game of three, gathering players.
    challenges.new_game(user(bob_id), "cambio", [user(bob_id), user(alice_id)], seed=7)
    assert 'id="challenges"' in _kept(app, web_alice, "/dashboard")
    waiting = challenges.new_game(user(alice_id), "easyslider",
                                  [user(alice_id), user(bob_id), user(carol_id)], seed=5).id
    assert "carol (challenged)" in _kept(app, web_alice, "/dashboard")
    # carol takes her seat: the game still gathers players, its version unchanged, the page changed.
    challenges.accept(waiting, user(carol_id))
    page = _kept(app, web_alice, "/dashboard")
    assert "carol (challenged)" not in page and "carol" in page
    game_id = _active_game(user(alice_id), user(bob_id))
    page = _kept(app, web_alice, "/dashboard")
    assert f"/games/{game_id}" in page
    play_moves(game_id, 1)
    assert _kept(app, web_alice, "/dashboard") != page
    # The clock runs, and bob goes away: both show.
    page = _kept(app, web_alice, "/dashboard")
    now = utcnow()
    try:
        set_clock(now + timedelta(hours=5))
        later = _kept(app, web_alice, "/dashboard")
        assert later != page
        vacation.turn_on(user(bob_id))
        assert "bob is on vacation" in _kept(app, web_alice, "/dashboard")
    finally:
        set_clock(None)
    # A game she starts watching, and one that ends.
    other = _active_game(user(bob_id), user(carol_id), seed=6)
    watching.watch(db.session.get(Game, other), user(alice_id))
    assert 'id="watched"' in _kept(app, web_alice, "/dashboard")
    play.resign(game_id, user(bob_id), "web")
    assert 'id="finished"' in _kept(app, web_alice, "/dashboard")
    assert WebClient(app).get("/dashboard").status_code == 302


def test_what_the_stamps_read_of_a_rating_is_what_the_pages_write(ctx: Flask) -> None:
    """The stamps read a rating's clock words in one pass (ratings.shown_now): the very words the
    pages write with is_provisional and deviation_now, at any time."""
    now = utcnow()
    rows = [Rating(deviation=d, volatility=v, last_game_at=last) for d in (40.0, 109.0, 200.0, 350.0)
            for v in (0.03, 0.06, 0.09) for last in (None, now, now - timedelta(days=400))]
    for later in (timedelta(0), timedelta(days=30), timedelta(days=900)):
        at = now + later
        assert ratings.shown_now([(r.deviation, r.volatility, r.last_game_at) for r in rows], at) == [
            (ratings.is_provisional(r, at), round(ratings.deviation_now(r, at))) for r in rows]


def test_the_tournament_pages_follow_its_entries_and_results(app: Flask, ctx: Flask) -> None:
    first, second, third, fourth = make_players(4)
    visitor = WebClient(app)
    assert "Test round_robin" not in _kept(app, visitor, "/tournaments")
    made = tournament_of([first, second, third, fourth], "round_robin")
    index = _kept(app, visitor, "/tournaments")
    assert "Test round_robin" in index
    cross = _kept(app, visitor, f"/tournaments/{made.id}/crosstable")
    # A feed of no finished game is kept too: its time of update is when the tournament began.
    empty = _kept(app, visitor, f"/tournaments/{made.id}.atom")
    assert "/games/" not in empty
    began = db.session.get(Tournament, made.id).started_at
    assert f"<updated>{began.isoformat()}+00:00</updated>" in empty
    pairing = open_games(made.id)[0]
    finish(pairing, "1")
    assert _kept(app, visitor, f"/tournaments/{made.id}/crosstable") != cross
    assert f"/games/{pairing.game_id}" in _kept(app, visitor, f"/tournaments/{made.id}.atom")
    finish(open_games(made.id)[0], "½")
    assert _kept(app, visitor, f"/tournaments/{made.id}.atom").count("<entry>") == 2
    organise.cancel(made.id, db.session.get(User, first.id))
    assert _kept(app, visitor, "/tournaments") != index


def test_the_lobby_follows_its_open_seats(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    alice_id, bob_id, carol_id = alice.id, bob.id, carol.id
    visitor = WebClient(app)
    assert "/games/" not in _kept(app, visitor, "/lobby").split("<main")[-1]
    # A game of three with two open seats: one taken leaves one, and the lobby says who sits.
    game_id = challenges.new_game(alice, "easyslider", [alice, None, None], seed=5).id
    page = _kept(app, visitor, "/lobby")
    assert f"/games/{game_id}" in page and "bob" not in page.split("<main")[-1]
    challenges.take_seat(game_id, db.session.get(User, bob_id))
    assert "bob" in _kept(app, visitor, "/lobby").split("<main")[-1]
    (web_carol,) = signed_in(app, db.session.get(User, carol_id))
    assert f"/games/{game_id}" in _kept(app, web_carol, "/lobby")
    challenges.take_seat(game_id, db.session.get(User, carol_id))
    assert f"/games/{game_id}" not in _kept(app, visitor, "/lobby")
    assert f"/games/{game_id}" not in _kept(app, web_carol, "/lobby")
    assert db.session.get(User, alice_id) is not None


def test_the_archive_filtered_by_a_player_follows_the_player_by_handle(app: Flask, ctx: Flask,
                                                                       players) -> None:
    """The archive's stamp names a filter's players by handle: a player gone makes the filter an error
    again, and another account taking the handle gets its own games listed."""
    visitor = WebClient(app)
    assert visitor.get("/archive?player=dora").status_code == 400
    accounts.sign_up("dora", "dora@example.org", "a long password")
    assert "No finished games" in _kept(app, visitor, "/archive?player=dora")
    set_clock(utcnow() + timedelta(days=30))
    try:
        assert accounts.expire_unconfirmed() == 1
        assert visitor.get("/archive?player=dora").status_code == 400
    finally:
        set_clock(None)
    dora = accounts.create_user("dora", "dora2@example.org", verified=True)
    db.session.commit()
    bob_id = players[1].id
    assert "No finished games" in _kept(app, visitor, "/archive?player=dora")
    game_id = _active_game(dora, db.session.get(User, bob_id))
    play.resign(game_id, db.session.get(User, bob_id), "web")
    assert f'data-game="{game_id}"' in _kept(app, visitor, "/archive?player=dora")
    assert f'data-game="{game_id}"' in _kept(app, visitor, "/archive?player=DORA&opponent=bob")


def end_every_session() -> None:
    """End every session of the app's database, as a restart of the server would (from a connection of
    its own, so that every one the app holds or pools is ended)."""
    admin = create_engine(db.engine.url)
    with admin.connect() as conn:
        ended = conn.execute(text(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )).scalar()
    admin.dispose()
    assert ended >= 1


@contextmanager
def pings() -> Iterator[list[object]]:
    """The pool's pings of a connection taken from it while the block runs."""
    sent: list[object] = []
    dialect = db.engine.dialect
    ping = dialect.do_ping

    def record(dbapi_connection: object) -> bool:
        sent.append(dbapi_connection)
        return ping(dbapi_connection)

    dialect.do_ping = record  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        dialect.do_ping = ping  # type: ignore[method-assign]


def test_kept_pages_are_read_on_held_connections_and_right_after_the_server_ended_them(
        app: Flask, ctx: Flask, players) -> None:
    """PostgreSQL: a kept page's stamp is read on a connection the process holds, without the pool's
    ping on every request; when the server has ended it (a restart, pg_terminate_backend), the next
    request reads the stamp again on a fresh one and shows what changed meanwhile, for a visitor and
    for a signed-in player alike."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the stamps' held connections are PostgreSQL's")
    alice, bob, _carol = players
    bob_id = bob.id
    game_id = _active_game(alice, bob)
    visitor = WebClient(app)
    (web_alice,) = signed_in(app, alice)
    path = f"/games/{game_id}"
    assert "Game over" not in _kept(app, visitor, path)
    assert "Game over" not in _kept(app, web_alice, path)
    with pings() as sent, _renders(app) as rendered:
        answers = [client.get(path).status_code for client in (visitor, web_alice) for _ in range(3)]
    assert answers == [200] * 6 and not rendered and not sent
    play.resign(game_id, db.session.get(User, bob_id), "web")
    db.session.remove()
    end_every_session()
    for client in (visitor, web_alice):
        page = client.get(path)
        assert page.status_code == 200 and "Game over" in page.get_data(as_text=True)
        assert "Game over" in _kept(app, client, path)
    # Ended again while every page is kept: served kept, as the stamps still read the same.
    end_every_session()
    with _renders(app) as rendered:
        assert [client.get(path).status_code for client in (visitor, web_alice)] == [200, 200]
    assert not rendered


def test_pages_whose_stamps_read_several_statements_are_right_after_the_server_ended_them(
        app: Flask, ctx: Flask, players, stamps_read) -> None:
    """PostgreSQL: the standings, the directory, a player's page and My games, whose stamps read several
    statements on one held connection, answer the first request after a restart of the server too."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("the stamps' held connections are PostgreSQL's")
    alice, bob, _carol = players
    _active_game(alice, bob)
    visitor = WebClient(app)
    (web_alice,) = signed_in(app, alice)
    reads = [(visitor, "/standings"), (visitor, "/players"), (visitor, "/players/alice"),
             (web_alice, "/dashboard"), (web_alice, "/players/bob")]
    for client, path in reads:
        _kept(app, client, path)
    for _ in range(2):  # Ended while kept, then ended again.
        end_every_session()
        assert [(path, client.get(path).status_code) for client, path in reads] == \
            [(path, 200) for _client, path in reads]
