"""What the mails say around a game: the challenge gives the time control and the sides, a comment
written with an answer to a challenge is passed on, and `show` of a finished game says so once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask

from pbem.core.extensions import db
from pbem.game import play
from pbem.lobby import challenges
from tests.server.test_mail_play import Postman, start_postman, text_of


@pytest.fixture
def postman(app: Flask, ctx: Flask, sink) -> Iterator[Postman]:
    """The real listener, its processor and the outbound sink, seen from the players' side."""
    yield from start_postman(app, sink)


def test_a_challenge_gives_the_time_control_and_an_answer_passes_a_comment(postman: Postman, players) -> None:
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3},
                               time_control={"kind": "per_move", "days": 5, "weekend_pause": True})
    postman.settle()
    challenge = text_of(postman.last(bob.email, "challenges you"))
    assert f"alice challenges you to a game of Cambio (#{game.id}), as seat 2 (X)." in challenge
    assert "Players: alice, bob (challenged)." in challenge
    assert "Time: 5 days per move; weekends (Saturday and Sunday, UTC) do not count." in challenge

    postman.reply(postman.last(bob.email, "challenges you"), bob.email, "accept",
                  "Gladly. Five days suits me.")
    postman.settle()
    assert "Your comment is passed on." in text_of(postman.last(bob.email, "Re: "))
    accepted = text_of(postman.last(alice.email, "bob accepted your challenge"))
    assert f"bob accepted your challenge to Cambio #{game.id}, and the game has started." in accepted
    assert "bob says: Gladly. Five days suits me." in accepted

    other = challenges.new_game(alice, "truchet", [alice, carol])
    postman.settle()
    postman.reply(postman.last(carol.email, "challenges you"), carol.email, "decline", "Not this week.")
    postman.settle()
    declined = text_of(postman.last(alice.email, "carol declined your challenge"))
    assert f"carol declined your challenge to Truchet #{other.id}" in declined
    assert "carol says: Not this week." in declined


def test_show_of_a_finished_game_says_it_is_over_once(postman: Postman, players, ctx: Flask) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"position": "o.o/.../xx."})
    db.session.commit()
    for mover, move in ((alice, "c3v"), (bob, "a3v"), (alice, "c3v")):
        play.submit(game.id, mover, move, "web")
    postman.command(bob.email, f"cambio show {game.id}")
    postman.settle()
    answer = text_of(postman.last(bob.email, f"Re: cambio show {game.id}"))
    assert f"Cambio #{game.id} is over. alice (O) wins with a full line on file c." in answer
    assert answer.count("is over") == 1
