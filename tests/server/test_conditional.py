"""Conditional moves through the move path: queueing (checked on the engine), answers played at once in
the opponent's transaction, lines broken by an unexpected move or by a refused answer, answers in a row,
draw offers and the game's end; on Cambio and Truchet."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select, update

import games
from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, Seat, User
from pbem.game import conditional, play, queries, queueing, replay
from pbem.game.play import PlayError


def cambio(alice: User, bob: User) -> Game:
    """Cambio 4x4: three placements each, on the twelve cells that are not corners; alice places first."""
    game = play.create_game("cambio", [alice, bob], {"size": 4})
    db.session.commit()
    return game


def truchet(alice: User, bob: User) -> Game:
    game = play.create_game("truchet", [alice, bob], {"size": 3}, seed=1)
    db.session.commit()
    return game


def record(game_id: int) -> list[tuple[str, str]]:
    return [(m.text, m.via) for m in db.session.scalars(
        select(Move).where(Move.game_id == game_id).order_by(Move.number))]


def mails_to(user: User, kind: str | None = None) -> list[OutboxMail]:
    rows = db.session.scalars(
        select(OutboxMail).where(OutboxMail.to_addr == user.email).order_by(OutboxMail.id))
    return [r for r in rows if kind is None or r.kind == kind]


def lines(game_id: int, user: User) -> list[list[str]]:
    db.session.rollback()
    return conditional.lines_of(db.session.get(Game, game_id), user)


def test_a_line_answers_the_opponents_moves_at_once(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    assert queueing.queue(game.id, alice, ["if b1 then c4 then c1 then d2"]) == [["b1", "c4", "c1", "d2"]]
    bob_asked = len(mails_to(bob, "your-move"))

    played = play.submit(game.id, bob, "b1", "mail")
    assert [m.text for m in played.answers] == ["c4"]
    assert record(game.id)[-2:] == [("b1", "mail"), ("c4", "conditional")]
    assert lines(game.id, alice) == [["c1", "d2"]]
    # Bob's request already shows the answer: the board after c4, and who played what.
    request = mails_to(bob, "your-move")[-1]
    assert len(mails_to(bob, "your-move")) == bob_asked + 1
    # The mail speaks to its reader: bob's own move is "You played".
    assert "You played b1." in request.body_text and "bob played" not in request.body_text
    assert "alice played c4 (a conditional move)." in request.body_text
    assert request.subject.endswith("your move (move 4)")
    # Alice hears what was played for her, and what is still queued; bob never does.
    notice = mails_to(alice, "move-notice")[-1]
    assert "still queued: if c1 then d2" in notice.body_text
    assert "bob played b1.\nYou played c4 (a conditional move)." in notice.body_text
    assert all("if c1 then d2" not in m.body_text and "queued" not in m.body_text for m in mails_to(bob))

    play.submit(game.id, bob, "C1", "web")  # Any spelling the engine reads matches.
    assert record(game.id)[-2:] == [("c1", "web"), ("d2", "conditional")]
    assert lines(game.id, alice) == []
    assert queries.seats_to_move(db.session.get(Game, game.id)) == {1}


def test_an_unexpected_move_drops_the_lines_and_the_player_hears_of_it(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4", "if b2 then c4 then c1 then d2"])
    play.submit(game.id, bob, "c1", "web")
    assert record(game.id)[-1] == ("c1", "web")
    assert lines(game.id, alice) == []
    assert "did not expect c1, so they are dropped: if b1 then c4; if b2 then c4 then c1 then d2." in \
        mails_to(alice, "your-move")[-1].body_text


def test_a_line_sharing_a_beginning_is_a_tree(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4 then c1 then d2"])
    queueing.queue(game.id, alice, ["if b1 then c4 then b2 then b3", "if b1 then c4"])
    assert lines(game.id, alice) == [["b1", "c4", "c1", "d2"], ["b1", "c4", "b2", "b3"]]
    with pytest.raises(PlayError, match="answers it with c4"):
        queueing.queue(game.id, alice, ["if b1 then c1"])
    play.submit(game.id, bob, "b1", "web")
    assert lines(game.id, alice) == [["c1", "d2"], ["b2", "b3"]]
    play.submit(game.id, bob, "b2", "web")
    assert record(game.id)[-1] == ("b3", "conditional")
    assert lines(game.id, alice) == []


@pytest.mark.parametrize(("line", "reason"), [
    ("if a1 then b1", "your opponent's move a1 is not legal now: a1 is a corner"),
    ("if b1 then b1", "your answer b1 is not legal after b1: b1 already holds"),
    ("if b1 then c4 then c4 then d2", "your opponent's move c4 is not legal after b1 c4"),
    ("if b1", "does not end with your answer"),
    ("if b1 then then c4", "a move is missing"),
    ("if " + " then ".join(["b1"] * 14), "at most 12 moves"),
])
def test_every_move_of_a_line_is_checked_when_it_is_queued(ctx: Flask, players, line: str,
                                                           reason: str) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    with pytest.raises(PlayError, match=reason) as refused:
        queueing.queue(game.id, alice, [line])
    assert lines(game.id, alice) == []
    # The engine's advice to the mover ("you can place on …") is never given as the writer's own: a
    # refused move of the opponent's comes with the moves the opponent has there.
    if "opponent's move" in reason:
        assert "you can" not in refused.value.message.lower()
        assert "Your opponent's moves there: " in refused.value.message


def test_lines_are_queued_only_by_the_waiting_player_of_a_two_player_game(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = cambio(alice, bob)
    with pytest.raises(PlayError, match="It is your move"):
        queueing.queue(game.id, alice, ["if b1 then c4"])
    with pytest.raises(PlayError, match="not playing"):
        queueing.queue(game.id, carol, ["if b4 then c4"])
    slider = play.create_game("easyslider", [alice, bob])
    db.session.commit()
    with pytest.raises(PlayError, match="no conditional moves"):
        queueing.queue(slider.id, alice, ["if a then b"])
    assert queueing.queue(game.id, bob, ["if b4 then b1"]) == [["b4", "b1"]]


def test_too_many_lines_are_refused(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    cells = ["a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3", "c4", "d2", "d3"]
    many = [f"if {first} then c4 then {third} then {next(c for c in cells if c not in (first, 'c4', third))}"
            for first in ("b1", "b2", "b3") for third in cells if third not in (first, "c4")]
    assert len(many) > conditional.MAX_LINES
    with pytest.raises(PlayError, match="At most 20"):
        queueing.queue(game.id, alice, many)
    assert lines(game.id, alice) == []


def test_an_answer_that_became_illegal_drops_the_line_and_tells_its_player(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    # Queued under an earlier version of the rules, say: the engine now refuses the answer.
    db.session.execute(update(Seat).where(Seat.game_id == game.id, Seat.number == 0)
                       .values(conditionals=[["b1", "b1", "c1", "d2"]]))
    db.session.commit()
    play.submit(game.id, bob, "b1", "web")
    assert record(game.id)[-1] == ("b1", "web")
    assert lines(game.id, alice) == []
    [told] = mails_to(alice, "conditional-refused")
    assert told.subject.endswith("your conditional move b1 was not played")
    assert "b1 already holds" in told.body_text and "if b1 then b1 then c1 then d2" in told.body_text
    assert mails_to(alice, "your-move")[-1].subject.endswith("your move (move 3)")
    assert mails_to(bob, "conditional-refused") == []


def test_two_conditional_answers_in_a_row(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    queueing.queue(game.id, bob, ["if b4 then b1 then c4 then c1"])
    # Alice moves with lines of her own, checked in the position after her move.
    play.submit(game.id, alice, "b4", "mail", conditionals=["if b1 then c4 then c1 then d2"])
    assert record(game.id) == [("b4", "mail"), ("b1", "conditional"), ("c4", "conditional"),
                               ("c1", "conditional"), ("d2", "conditional")]
    assert lines(game.id, alice) == lines(game.id, bob) == []
    game = db.session.get(Game, game.id)
    assert queries.seats_to_move(game) == {1} and game.ply == 5
    request = mails_to(bob, "your-move")[-1]
    assert request.subject.endswith("your move (move 6)")
    assert "alice played d2 (a conditional move)." in request.body_text


def test_lines_loop_no_further_than_they_reach(ctx: Flask, players) -> None:
    """Two players whose lines answer each other stop where the shorter line ends."""
    alice, bob, _ = players
    game = cambio(alice, bob)
    queueing.queue(game.id, bob, ["if b4 then b1 then c4 then c1 then a2 then a3"])
    play.submit(game.id, alice, "b4", "web", conditionals=["if b1 then c4"])
    assert [text for text, _via in record(game.id)] == ["b4", "b1", "c4", "c1"]
    assert lines(game.id, bob) == [["a2", "a3"]]
    assert queries.seats_to_move(db.session.get(Game, game.id)) == {0}


def test_a_refused_line_with_a_move_refuses_the_move(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    with pytest.raises(PlayError, match="a1 is a corner"):
        play.submit(game.id, alice, "b4", "mail", conditionals=["if a1 then c4"])
    assert record(game.id) == []


def test_a_draw_offer_cancels_the_lines(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4"])
    play.offer_draw(game.id, bob, "web")
    assert lines(game.id, alice) == []
    assert "cancels the conditional moves you had queued" in mails_to(alice, "draw-offered")[-1].body_text
    with pytest.raises(PlayError, match="offered a draw"):
        queueing.queue(game.id, alice, ["if b1 then c4"])
    play.submit(game.id, bob, "b1", "web")  # Moving declines the offer; nothing answers.
    assert record(game.id)[-1] == ("b1", "web")


def test_the_games_end_forgets_the_lines(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4"])
    play.resign(game.id, bob, "web")
    assert lines(game.id, alice) == []


def test_a_deletion_removes_a_line_and_the_lines_it_begins(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4 then c1 then d2", "if b2 then c4"])
    assert queueing.delete(game.id, alice, "if b1 then c4") == 1
    assert lines(game.id, alice) == [["b2", "c4"]]
    for missing in ("if c1 then c4", "", "if then"):
        with pytest.raises(PlayError, match="no conditional line"):
            queueing.delete(game.id, alice, missing)
    assert lines(game.id, alice) == [["b2", "c4"]]
    assert queueing.delete(game.id, alice) == 1
    assert lines(game.id, alice) == []


# Truchet ------------------------------------------------------------------------------------------------


def test_truchet_lines_answer_flips_and_stack_moves(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = truchet(alice, bob)
    engine = games.get("truchet")
    state = queries.state_of(game)
    first = engine.moves(state, 0)[0]
    play.submit(game.id, alice, first, "web")
    state = queries.state_of(db.session.get(Game, game.id))
    # A line of flips and stack moves, read off the engine; bob's move is written without its space.
    theirs = next(m for m in engine.moves(state, 1) if m.startswith("^"))
    after = engine.play(state, 1, theirs)
    mine = engine.moves(after, 0)[-1]
    after_mine = engine.play(after, 0, mine)
    theirs_next = engine.moves(after_mine, 1)[0]
    mine_next = engine.moves(engine.play(after_mine, 1, theirs_next), 0)[0]
    line = [theirs, mine, theirs_next, mine_next]
    queueing.queue(game.id, alice, [" then ".join(line)])
    unexpected = next(m for m in engine.moves(state, 1) if m != theirs)
    answer = engine.moves(engine.play(state, 1, unexpected), 0)[0]
    queueing.queue(game.id, alice, [f"if {unexpected} then {answer}"])

    play.submit(game.id, bob, theirs.replace(" ", ""), "web")
    assert record(game.id)[-1] == (mine, "conditional")
    assert lines(game.id, alice) == [[theirs_next, mine_next]]
    play.submit(game.id, bob, theirs_next, "web")
    assert record(game.id)[-1] == (mine_next, "conditional")
    stored = db.session.get(Game, game.id)
    assert replay.final_state(stored) == queries.state_of(stored)


def test_truchet_a_line_broken_by_another_move(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = truchet(alice, bob)
    engine = games.get("truchet")
    play.submit(game.id, alice, engine.moves(queries.state_of(game), 0)[0], "web")
    state = queries.state_of(db.session.get(Game, game.id))
    expected, other = engine.moves(state, 1)[:2]
    answer = engine.moves(engine.play(state, 1, expected), 0)[0]
    queueing.queue(game.id, alice, [f"if {expected} then {answer}"])
    play.submit(game.id, bob, other, "web")
    assert record(game.id)[-1] == (other, "web")
    assert lines(game.id, alice) == []


def test_truchet_refuses_an_illegal_answer_with_the_engines_reason(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = truchet(alice, bob)
    engine = games.get("truchet")
    play.submit(game.id, alice, engine.moves(queries.state_of(game), 0)[0], "web")
    state = queries.state_of(db.session.get(Game, game.id))
    theirs = engine.moves(state, 1)[0]
    with pytest.raises(PlayError, match=f"your answer c3=x is not legal after {theirs}"):
        queueing.queue(game.id, alice, [f"if {theirs} then c3=x"])


def test_long_or_many_lines_are_refused_before_the_engine_sees_them(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    with pytest.raises(PlayError, match="too long"):
        queueing.queue(game.id, alice, ["if " + "b1 then " * 200_000 + "c4"])
    with pytest.raises(PlayError, match="At most 20"):
        queueing.queue(game.id, alice, ["if b1 then c4"] * 21)
    with pytest.raises(PlayError, match="too long for a move"):
        conditional.parse_line("if " + "b" * 100 + " then c4")


def truchet_line(engine, state, length: int) -> list[str]:
    """A line of ``length`` moves read off the engine from ``state``, bob (seat 1) to move first."""
    line = []
    for i in range(length):
        move = engine.moves(state, 1 - i % 2)[0]
        line.append(move)
        state = engine.play(state, 1 - i % 2, move)
    return line


def test_truchet_two_conditional_answers_in_a_row(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = truchet(alice, bob)
    engine = games.get("truchet")
    state = queries.state_of(game)
    first = engine.moves(state, 0)[0]
    after_first = engine.play(state, 0, first)
    # Bob queues while alice is to move: if she plays her first move, he answers, and so on; alice
    # sends her move with a line of her own that answers his answer.
    his = [first, *truchet_line(engine, after_first, 3)]
    queueing.queue(game.id, bob, [" then ".join(his)])
    play.submit(game.id, alice, first, "web", conditionals=[" then ".join(his[1:3])])
    assert record(game.id) == [(first, "web"), (his[1], "conditional"), (his[2], "conditional"),
                               (his[3], "conditional")]
    assert lines(game.id, alice) == lines(game.id, bob) == []
    game = db.session.get(Game, game.id)
    assert queries.seats_to_move(game) == {0}
    assert replay.final_state(game) == queries.state_of(game)


def test_truchet_an_answer_that_became_illegal_is_dropped_and_told(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = truchet(alice, bob)
    engine = games.get("truchet")
    play.submit(game.id, alice, engine.moves(queries.state_of(game), 0)[0], "web")
    theirs = engine.moves(queries.state_of(db.session.get(Game, game.id)), 1)[0]
    # As if queued under an earlier version of the rules: an answer the engine now refuses.
    db.session.execute(update(Seat).where(Seat.game_id == game.id, Seat.number == 0)
                       .values(conditionals=[[theirs, "a1-a1"]]))
    db.session.commit()
    play.submit(game.id, bob, theirs, "web")
    assert record(game.id)[-1] == (theirs, "web")
    assert lines(game.id, alice) == []
    [told] = mails_to(alice, "conditional-refused")
    assert f"if {theirs} then a1-a1" in told.body_text and "It is your move now" in told.body_text


def test_a_line_queued_as_the_opponent_moves_is_answered_or_refused(app: Flask, ctx: Flask, players) -> None:
    """The two take the game's lock in turn: the line is queued first and answers, or the move comes
    first and the line is refused (it is her move); never a line left over for the player to move."""
    from tests.server.test_concurrency import race, submit_as

    alice, bob, _ = players
    for _ in range(4):
        game = cambio(alice, bob)
        play.submit(game.id, alice, "b4", "web")

        def queue(game_id: int = game.id) -> object:
            return queueing.queue(game_id, db.session.get(User, alice.id), ["if b1 then c4"])

        results = race(app, [queue, submit_as(bob.id, game.id, "b1")])
        db.session.rollback()  # End the read snapshot to see what the threads committed.
        texts = [text for text, _via in record(game.id)]
        if isinstance(results[0], PlayError):
            assert "It is your move" in results[0].message and texts == ["b4", "b1"]
        else:
            assert texts == ["b4", "b1", "c4"]
        assert lines(game.id, alice) == []


def test_a_conditional_answer_can_end_the_game(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    for i, text in enumerate(["b3", "a2", "c2", "b1"]):
        play.submit(game.id, [alice, bob][i % 2], text, "web")
    # After c1^ and c3< bob has a full line: nothing may follow in a line.
    with pytest.raises(PlayError, match=r"after c1\^ c3< the game is over"):
        queueing.queue(game.id, bob, ["if c1^ then c3< then a1v then a3>"])
    queueing.queue(game.id, bob, ["if c1^ then c3<"])
    play.submit(game.id, alice, "c1^", "web")
    game = db.session.get(Game, game.id)
    assert record(game.id)[-1] == ("c3<", "conditional")
    assert game.status == "finished" and game.result["results"] == ["loss", "win"]
    assert all(s.deadline is None for s in game.seats)
    assert mails_to(alice, "game-over") and mails_to(bob, "game-over")


def test_a_conditional_answer_starts_the_opponents_clock(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b4", "web")
    queueing.queue(game.id, alice, ["if b1 then c4"])
    play.submit(game.id, bob, "b1", "web")
    game = db.session.get(Game, game.id)
    waiting, to_move = game.seats
    assert waiting.deadline is None and to_move.deadline is not None
    assert [s.moves_made for s in game.seats] == [2, 1]
