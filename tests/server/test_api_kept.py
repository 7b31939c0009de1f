"""API answers kept in the process (pbem.api.kept): each kept answer changes as soon as what it shows
changes, and one caller never gets another's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta
from email.message import Message
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select, update

from pbem.accounts import accounts, apitokens
from pbem.api import kept
from pbem.api.kept import answers_of
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User, utcnow
from pbem.game import clock as clock_module
from pbem.game import play, queries
from pbem.lobby import challenges
from tests.server.test_api import server  # noqa: F401


@pytest.fixture
def tokens(ctx: Flask, players) -> dict[str, str]:
    """An API token for each player, each used once already (a token's first use notes it, a write)."""
    made = {user.handle: apitokens.create(user, "test")[1] for user in players}
    for token in made.values():
        apitokens.authenticate(token)
    return made


class Answer:
    """An answer over HTTP: its status, headers, bytes and JSON."""

    def __init__(self, status: int, headers: Message, data: bytes) -> None:
        self.status_code, self.headers, self.data = status, headers, data

    @property
    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.data)


class Client:
    """Calls over HTTP to the server in a thread, each request in its own context as in production (a
    test client inside the test's app context would share the request globals between requests)."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method: str, path: str, token: str | None = None, body: object = None,
             **headers: str) -> Answer:
        """One call with ``token`` (none: as a caller without a token)."""
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        asked = urllib.request.Request(self.base + path, method=method, data=data, headers=headers)
        try:
            with urllib.request.urlopen(asked, timeout=30) as answer:
                return Answer(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as refused:
            return Answer(refused.code, refused.headers, refused.read())


@pytest.fixture
def client(server: str) -> Client:  # noqa: F811
    """A client of the app served over HTTP."""
    return Client(server)


def get(client: Client, path: str, token: str | None = None, **headers: str) -> Answer:
    """A GET of ``path`` with ``token`` (none: as a caller without a token)."""
    return client.call("GET", path, token, **headers)


def a_game(players, slug: str = "cambio", **options: object) -> int:
    """A public game of alice and bob in play, made through the move path's own start."""
    alice, bob, _carol = players
    game = play.create_game(slug, [alice, bob], options, created_by=alice, seed=3)
    db.session.commit()
    return game.id


def seats(game_id: int) -> tuple[str, str, int, int]:
    """The handle of the player to move and of the other, and their seats as the API counts them (from 1)."""
    game = db.session.get(Game, game_id)
    (mover,) = queries.seats_to_move(game)
    handles = {seat.number: seat.user.handle for seat in game.seats}
    return handles[mover], handles[1 - mover], mover + 1, 2 - mover


def move(game_id: int) -> None:
    """The player to move plays their first legal move."""
    game = db.session.get(Game, game_id)
    engine, state = queries.engine_of(game), queries.state_of(game)
    (seat,) = engine.to_move(state)
    user = next(s.user for s in game.seats if s.number == seat)
    chosen = engine.moves(state, seat)[0]
    db.session.rollback()
    play.submit(game_id, user, chosen, "api")
    db.session.expire_all()


def test_a_kept_game_follows_every_move_and_each_caller_gets_their_own(ctx: Flask, client: Client, players,
                                                                     tokens) -> None:
    game_id = a_game(players)
    mover, other, mover_seat, other_seat = seats(game_id)
    path = f"/api/v1/games/{game_id}"
    first = get(client, path, tokens[mover])
    assert first.status_code == 200 and first.json["your_seat"] == mover_seat
    again = get(client, path, tokens[mover])
    assert again.data == first.data and len(answers_of(ctx)) == 1
    # The other player, carol and a caller without a token each get their own answer, never the mover's.
    theirs = get(client, path, tokens[other]).json
    assert theirs["your_seat"] == other_seat and not theirs["your_turn"] and theirs["legal_moves"] is None
    assert first.json["your_turn"] is True and first.json["legal_moves"]
    for token in (tokens["carol"], None):
        assert get(client, path, token).json["your_seat"] is None
    assert get(client, path, tokens[mover]).data == first.data
    move(game_id)
    after = get(client, path, tokens[mover]).json
    assert len(after["record"]) == len(first.json["record"]) + 1 and after["your_turn"] is False
    assert get(client, path, tokens[other]).json["your_turn"] is True


def test_a_kept_game_shows_its_clocks_as_they_are_now(client: Client, players, tokens, stamps_read,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # (The words as the stamp reads them: unread on the write generation they can be a second late.)
    game_id = a_game(players)
    mover, other, seat, _other_seat = seats(game_id)
    path = f"/api/v1/games/{game_id}"
    mine = (Seat.game_id == game_id, Seat.number == seat - 1)
    # Half an hour left; then five minutes on, with nothing else changed: the words say so.
    soon = utcnow() + timedelta(minutes=30, seconds=30)
    db.session.execute(update(Seat).where(*mine).values(deadline=soon))
    db.session.commit()
    clock = get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert clock.startswith("30 minutes left (until") and "UTC" in clock
    later = utcnow() + timedelta(minutes=5)
    with monkeypatch.context() as patched:
        # The time the clock's words are written at, and the time the stamp reads what they change with.
        patched.setattr(clock_module, "utcnow", lambda: later)
        patched.setattr(kept, "utcnow", lambda: later)
        five_on = get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert five_on.startswith("25 minutes left")
    # A deadline moved without the game's row (as a return from vacation moves it).
    deadline = db.session.scalar(select(Seat.deadline).where(*mine))
    db.session.execute(update(Seat).where(*mine)
                       .values(deadline=deadline + timedelta(days=2)))
    db.session.commit()
    later = get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert later != clock and later.startswith("2 days")
    # Times in the caller's own zone, once they change it.
    accounts.set_time_zone(db.session.scalar(select(User).where(User.handle == mover)), "Asia/Tokyo")
    db.session.commit()
    assert "JST" in get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert "UTC" in get(client, path, tokens[other]).json["players"][seat - 1]["clock"]


def test_a_revoked_token_gets_nothing_kept(client: Client, players, tokens) -> None:
    game_id = a_game(players)
    path = f"/api/v1/games/{game_id}"
    assert get(client, path, tokens["alice"]).status_code == 200
    alice = db.session.get(User, players[0].id)
    row = db.session.scalar(select(apitokens.ApiToken).where(apitokens.ApiToken.user_id == alice.id))
    apitokens.revoke(alice, row.id)
    refused = get(client, path, tokens["alice"])
    assert refused.status_code == 401 and refused.json["code"] == "bad-token"
    assert get(client, path, "pbem_" + "x" * 43).status_code == 401


def test_notes_and_conditional_lines_are_their_owners_only(client: Client, players, tokens) -> None:
    game_id = a_game(players)
    note = f"/api/v1/games/{game_id}/note"
    assert get(client, note, tokens["alice"]).json == {"note": ""}
    client.call("PUT", note, tokens["alice"], {"note": "push the corner"})
    assert get(client, note, tokens["alice"]).json == {"note": "push the corner"}
    assert get(client, note, tokens["bob"]).json == {"note": ""}
    assert get(client, note, tokens["carol"]).status_code == 403
    client.call("PUT", note, tokens["alice"], {"note": "no, the edge"})
    assert get(client, note, tokens["alice"]).json == {"note": "no, the edge"}

    # The player not to move may queue answers to the mover's next move.
    mover, other, mover_seat, other_seat = seats(game_id)
    lines = f"/api/v1/games/{game_id}/conditionals"
    assert get(client, lines, tokens[other]).json == {"lines": []}
    game = db.session.get(Game, game_id)
    state = queries.state_of(game)
    engine = queries.engine_of(game)
    theirs = engine.moves(state, mover_seat - 1)[0]
    mine = engine.moves(engine.play(state, mover_seat - 1, theirs), other_seat - 1)[0]
    queued = client.call("POST", lines, tokens[other], {"lines": [f"if {theirs} then {mine}"]})
    assert queued.status_code == 201, queued.json
    assert len(get(client, lines, tokens[other]).json["lines"]) == 1
    assert get(client, lines, tokens[mover]).json == {"lines": []}
    client.call("DELETE", lines, tokens[other])
    assert get(client, lines, tokens[other]).json == {"lines": []}


def test_my_turn_is_kept_answers_304_and_follows_each_move(client: Client, players, tokens) -> None:
    game_id = a_game(players)
    mover, other, _seat, _other_seat = seats(game_id)
    first = get(client, "/api/v1/me/turn", tokens[mover])
    assert [g["id"] for g in first.json["games"]] == [game_id]
    etag = first.headers["ETag"]
    for _ in range(3):
        unchanged = get(client, "/api/v1/me/turn", tokens[mover], **{"If-None-Match": etag})
        assert unchanged.status_code == 304 and unchanged.data == b"" and unchanged.headers["ETag"] == etag
    assert get(client, "/api/v1/me/turn", tokens[other]).json["games"] == []
    move(game_id)
    news = get(client, "/api/v1/me/turn", tokens[mover], **{"If-None-Match": etag})
    assert news.status_code == 200 and news.json["games"] == []
    assert [g["id"] for g in get(client, "/api/v1/me/turn", tokens[other]).json["games"]] == [game_id]


def test_lists_follow_new_games_and_seats_taken(client: Client, players, tokens) -> None:
    alice, bob, carol = players
    assert get(client, "/api/v1/games", tokens["alice"]).json["games"] == []
    private = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3}, public=False)
    assert [g["id"] for g in get(client, "/api/v1/games", tokens["alice"]).json["games"]] == [private.id]
    assert get(client, "/api/v1/games", tokens["carol"]).json["games"] == []
    assert get(client, "/api/v1/games").json["games"] == []
    waiting = challenges.new_game(alice, "easyslider", [alice, None, None], {}, public=True)
    listed = get(client, "/api/v1/games", tokens["carol"]).json["games"]
    assert [(g["id"], [p["player"] for p in g["players"]]) for g in listed] == [
        (waiting.id, ["alice", None, None])]
    challenges.take_seat(waiting.id, db.session.get(User, carol.id))
    listed = get(client, "/api/v1/games", tokens["carol"]).json["games"]
    assert [p["player"] for p in listed[0]["players"]] == ["alice", "carol", None]
    waiting_for = get(client, "/api/v1/me/challenges", tokens["bob"]).json["challenges"]
    assert [c["game"]["id"] for c in waiting_for] == [private.id]
    challenges.accept(private.id, db.session.get(User, bob.id))
    assert get(client, "/api/v1/me/challenges", tokens["bob"]).json["challenges"] == []


def test_a_kept_player_follows_their_vacation(client: Client, players, tokens) -> None:
    for path, token in (("/api/v1/players/alice", tokens["bob"]), ("/api/v1/me", tokens["alice"])):
        assert get(client, path, token).json["on_vacation"] is False
    db.session.execute(update(User).where(User.id == players[0].id).values(vacation_since=utcnow()))
    db.session.commit()
    for path, token in (("/api/v1/players/alice", tokens["bob"]), ("/api/v1/me", tokens["alice"])):
        assert get(client, path, token).json["on_vacation"] is True
    assert get(client, "/api/v1/me", tokens["bob"]).json["handle"] == "bob"


def test_the_lobby_follows_its_games_and_seats(client: Client, players, tokens) -> None:
    alice, bob, carol = players
    assert get(client, "/api/v1/lobby", tokens["carol"]).json["games"] == []
    open_game = challenges.new_game(alice, "easyslider", [alice, None, None], {}, public=True)
    lobby = get(client, "/api/v1/lobby", tokens["carol"]).json["games"]
    assert [(g["game"]["id"], g["creator"], g["creator_rating"]) for g in lobby] == [
        (open_game.id, "alice", "1500?")]
    # The creator's rating as shown, once they have one.
    from pbem.core.models import Rating

    db.session.add(Rating(user_id=alice.id, engine="easyslider", rating=1612.4, deviation=40.0,
                          volatility=0.06, games=30, last_game_at=utcnow(), updated_at=utcnow()))
    db.session.commit()
    assert get(client, "/api/v1/lobby", tokens["carol"]).json["games"][0]["creator_rating"] == "1612"
    challenges.take_seat(open_game.id, db.session.get(User, bob.id))
    lobby = get(client, "/api/v1/lobby").json["games"]
    assert [p["player"] for p in lobby[0]["game"]["players"]] == ["alice", "bob", None]
    challenges.take_seat(open_game.id, db.session.get(User, carol.id))  # The last seat: the game starts.
    assert get(client, "/api/v1/lobby", tokens["carol"]).json["games"] == []
    assert get(client, "/api/v1/lobby").json["games"] == []


def test_bots_and_tournaments_follow_their_changes(client: Client, players, tokens) -> None:
    from pbem.accounts import bots
    from pbem.tournament import organise

    assert get(client, "/api/v1/bots").json["bots"] == []
    assert get(client, "/api/v1/tournaments", tokens["alice"]).json["tournaments"] == []
    bots.add("easybot", ["cambio"], "easy")
    assert [b["handle"] for b in get(client, "/api/v1/bots").json["bots"]] == ["easybot"]
    made = organise.create(db.session.get(User, players[0].id), "Cup", "cambio", "round_robin", max_players=4)
    listed = get(client, "/api/v1/tournaments", tokens["alice"]).json["tournaments"]
    assert [(t["id"], t["players"]) for t in listed] == [(made.id, 0)]
    path = f"/api/v1/tournaments/{made.id}"
    assert get(client, path).json["standings"] == []
    organise.join(made.id, db.session.get(User, players[1].id))
    assert [e["player"] for e in get(client, path).json["standings"]] == ["bob"]
    assert get(client, "/api/v1/tournaments", tokens["alice"]).json["tournaments"][0]["players"] == 1


def test_the_api_page_is_kept_for_visitors_only(app: Flask, client: Client, players) -> None:
    from tests.server.test_web_games import signed_in

    page = get(client, "/api/")
    assert page.status_code == 200 and b"Sign in" in page.data and b"Sign out" not in page.data
    assert get(client, "/api/").data == page.data
    (alice,) = signed_in(app, players[0])
    mine = alice.get("/api/")
    assert "Sign out" in mine.text and "alice" in mine.text
    assert b"Sign out" not in get(client, "/api/").data


def test_the_directory_follows_new_players_and_ratings(client: Client, players, tokens) -> None:
    from pbem.accounts.accounts import create_user
    from pbem.core.models import Rating

    found = get(client, "/api/v1/players?q=", tokens["alice"]).json["players"]
    assert [(p["handle"], p["ratings"]) for p in found] == [("alice", []), ("bob", []), ("carol", [])]
    create_user("dave", "dave@example.org", verified=True)
    db.session.add(Rating(user_id=players[1].id, engine="cambio", rating=1612.4, deviation=40.0,
                          volatility=0.06, games=30, last_game_at=utcnow(), updated_at=utcnow()))
    db.session.commit()
    found = get(client, "/api/v1/players?q=", tokens["alice"]).json["players"]
    assert [(p["handle"], p["ratings"]) for p in found] == [
        ("alice", []), ("bob", [{"game": "cambio", "display": "1612"}]), ("carol", []), ("dave", [])]
    assert [p["handle"] for p in get(client, "/api/v1/players?q=b").json["players"]] == ["bob"]


def test_a_kept_answer_reads_its_caller_in_its_stamps_statement_and_sees_them_change(
        client: Client, players, tokens, stamps_read) -> None:
    """A kept answer reads the caller's token and player in its stamp's own statement (one statement a
    request); when their row changed meanwhile (their time zone), the answer shows it at once, and the
    next is read in one statement again."""
    from tests.server.test_page_queries import statements

    game_id = a_game(players)
    mover, _other, seat, _other_seat = seats(game_id)
    path = f"/api/v1/games/{game_id}"
    db.session.execute(update(Seat).where(Seat.game_id == game_id, Seat.number == seat - 1)
                       .values(deadline=utcnow() + timedelta(days=3)))
    db.session.commit()
    for _ in range(2):
        assert "UTC" in get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    with statements() as sent:
        assert "UTC" in get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    reads = [statement for statement in sent if statement.startswith("SELECT")]  # (not SQLite's BEGIN)
    assert len(reads) == 1 and "api_token" in reads[0]
    accounts.set_time_zone(db.session.scalar(select(User).where(User.handle == mover)), "Asia/Tokyo")
    db.session.commit()
    with statements() as sent:
        assert "JST" in get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert len([statement for statement in sent if statement.startswith("SELECT")]) > 1
    for _ in range(2):
        with statements() as sent:
            assert "JST" in get(client, path, tokens[mover]).json["players"][seat - 1]["clock"]
    assert len([statement for statement in sent if statement.startswith("SELECT")]) == 1


def test_a_token_whose_last_use_is_due_is_written_though_its_answer_is_kept_unread(
        client: Client, players, tokens, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer served unread on the host's write generation still checks the token's "last used", as
    its row was read, against the time: once it is due the request is answered afresh and writes it."""
    game_id = a_game(players)
    path = f"/api/v1/games/{game_id}"
    for _ in range(3):
        assert get(client, path, tokens["alice"]).status_code == 200
    row = select(apitokens.ApiToken.last_used_at).where(apitokens.ApiToken.user_id == players[0].id)
    used = db.session.scalar(row)
    later = utcnow() + timedelta(hours=2)
    with monkeypatch.context() as patched:
        patched.setattr(kept, "utcnow", lambda: later)
        patched.setattr(apitokens, "utcnow", lambda: later)
        assert get(client, path, tokens["alice"]).status_code == 200
    db.session.rollback()
    assert used is not None and db.session.scalar(row) == later
