"""Tournaments played through the one move path: a Swiss of 9 over 3 rounds (a bye, no rematch, sides
balanced), a knockout with a drawn match, a ladder's swap and forfeited challenge, a withdrawal in the
middle, and `pbem verify` finding a standing that does not match its games."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import select

from pbem.accounts import apitokens
from pbem.accounts.accounts import create_user
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, Tournament, TournamentGame, User, set_clock, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import play
from pbem.lobby import challenges
from pbem.schedule import sweep
from pbem.tournament import organise, pairing, standings
from tests.server.conftest import give_mail_key
from tests.server.test_api import Client, server  # noqa: F401 (a fixture)
from tests.server.test_mail_play import Postman, start_postman, text_of

CAMBIO = {"size": 3, "placements": 2}


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink."""
    yield from start_postman(app, sink)


def make_players(count: int) -> list[User]:
    """``count`` verified players, p01, p02, …"""
    with unit_of_work() as uow:
        users = [create_user(f"p{n:02d}", f"p{n:02d}@example.org", verified=True)
                 for n in range(1, count + 1)]
        uow.commit()
    return users


def tournament_of(players: list[User], format: str, **settings) -> Tournament:
    """A tournament of Cambio organised by the first player, every player entered, started."""
    made = organise.create(players[0], f"Test {format}", "cambio", format, options=CAMBIO,
                           max_players=len(players), start_at=utcnow() + timedelta(days=1), settings=settings)
    for user in players:
        organise.join(made.id, user)
    organise.start(made.id, players[0])
    return db.session.get_one(Tournament, made.id)


def open_games(tournament_id: int, number: int | None = None) -> list[TournamentGame]:
    """The tournament's pairings with a game still in play (of round ``number``)."""
    query = select(TournamentGame).join(Game, Game.id == TournamentGame.game_id).where(
        TournamentGame.tournament_id == tournament_id, Game.status == "active")
    if number is not None:
        query = query.where(TournamentGame.round == number)
    db.session.expire_all()
    return list(db.session.scalars(query.order_by(TournamentGame.id)))


def finish(made: TournamentGame, result: str) -> None:
    """End the pairing's game through the move path: "1" the first player wins (the second resigns),
    "0" the second wins, "½" a draw agreed."""
    first, second = db.session.get_one(User, made.first_id), db.session.get_one(User, made.second_id)
    assert made.game_id is not None
    if result == "1":
        play.resign(made.game_id, second, "web")
    elif result == "0":
        play.resign(made.game_id, first, "web")
    else:
        play.offer_draw(made.game_id, first, "web")
        play.accept_draw(made.game_id, second, "web")


def test_a_swiss_of_nine_over_three_rounds_pairs_by_score_without_rematches_and_balances_sides(
        ctx: Flask, runner: FlaskCliRunner) -> None:
    players = make_players(9)
    swiss = tournament_of(players, "swiss", rounds=3)
    handle = {u.id: u.handle for u in players}
    for number in (1, 2, 3):
        db.session.expire_all()
        assert db.session.get_one(Tournament, swiss.id).round == number
        this_round = open_games(swiss.id, number)
        assert len(this_round) == 4
        for index, made in enumerate(this_round):
            # The better-seeded (lower handle) player wins, except every third game is drawn.
            better_first = handle[made.first_id] < handle[made.second_id]
            result = "½" if index % 3 == 2 else ("1" if better_first else "0")
            finish(made, result)
    db.session.expire_all()
    done = db.session.get_one(Tournament, swiss.id)
    assert done.status == "finished"
    found = standings.pairings(swiss.id)
    byes = [p for p in found if p.kind == "bye"]
    assert len(byes) == 3 and len({p.first for p in byes}) == 3  # One a round, never twice to one player.
    met = Counter(frozenset((p.first, p.second)) for p in found if p.second is not None)
    assert max(met.values()) == 1  # No rematch.
    sides = Counter()
    for p in found:
        if p.second is not None:
            sides[p.first] += 1
            sides[p.second] -= 1
    assert all(abs(balance) <= 1 for balance in sides.values()), sides
    # Round 2 and 3 paired players on equal or near scores: never 2 points apart.
    ranked = standings.standings(done, found)
    assert sum(e.points for e in ranked) == 12 + 3  # 12 games of a point each, and three byes of 1.
    assert ranked[0].place == 1 and ranked[0].tie_breaks["buchholz"] >= ranked[-1].tie_breaks["median"]
    assert all(e.played + 1 == 3 or e.played == 3 for e in ranked)
    # Everyone was mailed each round's pairing and the final standings.
    mails = select(OutboxMail.subject).where(OutboxMail.to_addr == "p05@example.org")
    subjects = list(db.session.scalars(mails))
    assert sum("your pairings" in s for s in subjects) == 3
    assert sum("final standings" in s for s in subjects) == 1
    assert runner.invoke(main, ["verify"]).exit_code == 0


def test_swiss_pairing_of_a_round_by_score_and_colour() -> None:
    players = [pairing.SwissPlayer(i, score) for i, score in enumerate([2, 2, 1, 1, 1, 1, 0, 0])]
    players[0].opponents, players[1].opponents = {1}, {0}
    players[0].balance, players[2].balance = 1, 1
    paired = pairing.swiss(players)
    assert paired.bye is None
    assert {frozenset(p) for p in paired.pairs} >= {frozenset((6, 7))}
    assert all(frozenset(p) != frozenset((0, 1)) for p in paired.pairs)
    # Players 0 and 2 both owe the second side: they are not paired together.
    assert frozenset((0, 2)) not in {frozenset(p) for p in paired.pairs}
    with pytest.raises(pairing.PairingError):
        pairing.swiss([pairing.SwissPlayer(0, 0, {1}), pairing.SwissPlayer(1, 0, {0})])


def test_a_knockout_replays_a_drawn_match_and_ends_with_a_winner(ctx: Flask) -> None:
    players = make_players(5)  # Three byes in the first round of a bracket of 8.
    knockout = tournament_of(players, "knockout", draw_rule="replay")
    first_round = open_games(knockout.id, 1)
    assert len(first_round) == 1
    made = first_round[0]
    assert {made.first_id, made.second_id} == {players[3].id, players[4].id}  # Seeds 4 and 5.
    finish(made, "½")
    replay = open_games(knockout.id, 1)
    assert len(replay) == 1 and (replay[0].first_id, replay[0].second_id) == (made.second_id, made.first_id)
    finish(replay[0], "1")
    semi_finals = open_games(knockout.id, 2)
    assert len(semi_finals) == 2
    for made in semi_finals:
        finish(made, "0")
    final = open_games(knockout.id, 3)
    assert len(final) == 1
    finish(final[0], "½")  # Drawn again: replayed.
    finish(open_games(knockout.id, 3)[0], "1")
    db.session.expire_all()
    done = db.session.get_one(Tournament, knockout.id)
    assert done.status == "finished"
    ranked = standings.standings(done)
    assert ranked[0].status == "active" and all(e.status == "out" for e in ranked[1:])


def test_a_knockout_drawn_match_goes_to_the_better_seed_when_the_settings_say(ctx: Flask) -> None:
    players = make_players(2)
    knockout = tournament_of(players, "knockout", draw_rule="seed")
    finish(open_games(knockout.id, 1)[0], "½")
    db.session.expire_all()
    done = db.session.get_one(Tournament, knockout.id)
    assert done.status == "finished"
    assert standings.standings(done)[0].user_id == players[0].id  # The first seed (all rated alike).


def test_a_ladder_swap_and_a_challenge_forfeited_for_want_of_an_answer(ctx: Flask) -> None:
    players = make_players(4)
    ladder = tournament_of(players, "ladder", reach=2, accept_days=3)
    place = lambda: {e.handle: e.position for e in standings.entries(ladder.id)}  # noqa: E731
    assert place() == {"p01": 1, "p02": 2, "p03": 3, "p04": 4}
    with pytest.raises(play.PlayError, match="up to 2 places above"):
        organise.challenge(ladder.id, players[3], "p01")
    made = organise.challenge(ladder.id, players[2], "p02")
    with pytest.raises(play.PlayError, match="one at a time"):
        organise.challenge(ladder.id, players[3], "p02")
    challenges.accept(made.game_id, players[1])
    finish(db.session.get_one(TournamentGame, made.id), "0")  # The challenger wins.
    assert place() == {"p01": 1, "p02": 3, "p03": 2, "p04": 4}
    # p04 challenges p02 (now third), who never answers: the challenge lapses and p04 takes the place.
    lapsing = organise.challenge(ladder.id, players[3], "p02")
    assert sweep.sweep().tournaments == 0
    set_clock(utcnow() + timedelta(days=3, minutes=1))
    try:
        assert sweep.sweep().tournaments == 1
    finally:
        set_clock(None)
    assert place() == {"p01": 1, "p02": 4, "p03": 2, "p04": 3}
    db.session.expire_all()
    assert db.session.get_one(Game, lapsing.game_id).status == "abandoned"
    told = db.session.scalar(select(OutboxMail).where(OutboxMail.to_addr == "p02@example.org",
                                                      OutboxMail.kind == "tournament-ladder")
                             .order_by(OutboxMail.id.desc()))
    assert told is not None and "did not accept" in told.body_text and "place 4" in told.body_text


def test_a_withdrawal_in_the_middle_forfeits_the_games_in_play_and_is_paired_no_more(ctx: Flask) -> None:
    players = make_players(5)
    swiss = tournament_of(players, "swiss", rounds=3)
    first_round = open_games(swiss.id, 1)
    leaver = db.session.get_one(User, first_round[0].second_id)
    theirs = [m for m in first_round if leaver.id in (m.first_id, m.second_id)]
    for made in first_round:
        if made not in theirs:
            finish(made, "1")
    organise.withdraw(swiss.id, leaver)
    db.session.expire_all()
    for made in theirs:
        game = db.session.get_one(Game, made.game_id)
        assert game.status == "finished" and game.ending == "resignation"
        assert made.result == ("0" if made.first_id == leaver.id else "1")
    # The round is complete, and the next is paired among the four left: no bye, no leaver.
    second_round = open_games(swiss.id, 2)
    assert len(second_round) == 2
    assert all(leaver.id not in (m.first_id, m.second_id) for m in second_round)
    ranked = standings.standings(db.session.get_one(Tournament, swiss.id))
    assert ranked[-1].user_id == leaver.id and ranked[-1].status == "withdrawn"
    with pytest.raises(play.PlayError, match="not playing"):
        organise.withdraw(swiss.id, leaver)


def test_verify_reports_a_standing_that_does_not_match_its_game(ctx: Flask, runner: FlaskCliRunner) -> None:
    players = make_players(2)
    round_robin = tournament_of(players, "round_robin")
    made = open_games(round_robin.id)[0]
    finish(made, "1")
    assert runner.invoke(main, ["verify"]).exit_code == 0
    with unit_of_work() as uow:
        db.session.get_one(TournamentGame, made.id).result = "½"
        uow.commit()
    answer = runner.invoke(main, ["verify"])
    assert answer.exit_code == 1
    assert f"tournament #{round_robin.id}, game #{made.game_id}" in answer.output


def test_joining_and_withdrawing_by_mail_with_the_mail_key(postman: Postman, players) -> None:
    carol = players[2]
    keys = {u.handle: give_mail_key(u) for u in players}
    made = organise.create(carol, "Mail cup", "cambio", "round_robin", options=CAMBIO, max_players=2)
    postman.command("carol@example.org", f"tournament join {made.id} carol {keys['carol']}")
    postman.settle()
    postman.command("carol@example.org", f"tournament withdraw {made.id} carol {keys['carol']}")
    postman.settle()
    postman.command("alice@example.org", f"tournament join {made.id} alice {keys['alice']}")
    postman.command("bob@example.org", f"tournament join {made.id} bob WRONGKEY")
    postman.settle()
    assert "You are in Tournament" in text_of(postman.last("alice@example.org", "Re:"))
    assert "You have left" in text_of(postman.last("carol@example.org", "Re:"))
    refused = text_of(postman.last("bob@example.org", "Re:"))
    assert "mail key for bob is wrong" in refused and "WRONGKEY" not in refused
    # Bob's right key fills the field, which starts the tournament and its game at once.
    postman.command("bob@example.org", f"tournament join {made.id} bob {keys['bob']}")
    postman.settle()
    assert "it has started" in text_of(postman.last("bob@example.org", "Re:"))
    pairings = text_of(postman.last("alice@example.org", "your games"))
    assert "against bob" in pairings and f"/tournaments/{made.id}" in pairings
    db.session.expire_all()
    assert db.session.get_one(Tournament, made.id).status == "running"
    postman.command("dave@example.org", f"tournament show {made.id}")
    postman.settle()
    shown = text_of(postman.last("dave@example.org", "Re:"))
    assert "Mail cup" in shown and "alice" in shown and "bob" in shown


def test_a_round_robin_of_four_played_to_the_end_by_api_clients(server: str, ctx: Flask) -> None:  # noqa: F811
    players = make_players(4)
    clients = {u.handle: Client(server, apitokens.create(u, "bot")[1]) for u in players}
    status, made = clients["p01"].call("POST", "/api/v1/tournaments", {
        "name": "API cup", "game": "cambio", "format": "round_robin", "options": CAMBIO, "max_players": 4,
        "time": "days:3"})
    assert status == 201 and made["status"] == "open" and made["standings"] == []
    status, refused = clients["p01"].call("POST", "/api/v1/tournaments", {
        "name": "", "game": "cambio", "format": "round_robin"})
    assert status == 422 and "name" in refused["fields"]
    for client in clients.values():
        status, answer = client.call("POST", f"/api/v1/tournaments/{made['id']}/join")
        assert status == 200, answer
    assert answer["status"] == "running"  # The fourth entry filled it.
    assert len(answer["rounds"][0]["pairings"]) == 6  # Every pairing at once.
    status, again = clients["p01"].call("POST", f"/api/v1/tournaments/{made['id']}/join")
    assert status == 400 and again["code"] == "closed"
    # Each program plays its turns: the first mover makes one legal move, the second then resigns.
    for _sweep in range(3):
        for client in clients.values():
            _status, turn = client.call("GET", "/api/v1/me/turn")
            for summary in turn["games"]:
                _status, game = client.call("GET", f"/api/v1/games/{summary['id']}")
                if game["move_number"] == 1:
                    status, _moved = client.call("POST", f"/api/v1/games/{game['id']}/moves", {
                        "move": game["legal_moves"][0], "expect": 1})
                    assert status == 201
                else:
                    assert client.call("POST", f"/api/v1/games/{game['id']}/resign")[0] == 200
    status, done = Client(server, None).call("GET", f"/api/v1/tournaments/{made['id']}")
    assert status == 200 and done["status"] == "finished"
    assert all(p["result"] == "1" for p in done["rounds"][0]["pairings"])
    assert sum(line["points"] for line in done["standings"]) == 6
    places = [line["place"] for line in done["standings"]]
    assert places == sorted(places)
    assert all("sb" in line["tie_breaks"] for line in done["standings"])
    status, listed = Client(server, None).call("GET", "/api/v1/tournaments")
    assert [t["id"] for t in listed["tournaments"]] == [made["id"]]
