"""The computer players (games.players): legal moves from what their seat may know, a win taken when
it is there, Box Off deals cleared, Easy Slider rounds solved; and the seat views they start from."""

from __future__ import annotations

import random
from typing import Any

import games
from games import boxoff, easyslider, players

# Cambio 3x3 (see tests/server/test_mail_play.py): after these five moves X wins with c3<.
CAMBIO = ["b3", "a2", "c2", "b1", "c1^"]


def _cambio_with_a_win() -> tuple[Any, Any]:
    """Cambio 3x3 after :data:`CAMBIO`: seat 1 (X) to move, with a win at once."""
    cambio = games.get("cambio")
    state = cambio.new(2, cambio.options.load({"size": 3, "placements": 2}), seed=1)
    for number, move in enumerate(CAMBIO):
        state = cambio.play(state, number % 2, move)
    return cambio, state


def test_the_search_takes_a_win_that_is_there() -> None:
    cambio, state = _cambio_with_a_win()
    decision = players.choose(cambio, state, 1, "medium", random.Random(1))
    after = cambio.play(state, 1, decision.move)
    assert cambio.outcome(after).results == ("loss", "win")
    assert decision.value == 1.0


def test_every_strength_plays_legal_moves_in_the_games_of_two() -> None:
    rng = random.Random(2)
    for slug in ("cambio", "carreaux", "truchet"):
        engine = games.get(slug)
        state = engine.new(2, engine.options.load({}), seed=2)
        for ply in range(4):
            seat = min(engine.to_move(state))
            view = engine.load(engine.seat_view(state, seat))
            move = players.choose(engine, view, seat, "easy", rng).move
            assert move in engine.moves(state, seat), (slug, ply, move)
            state = engine.play(state, seat, move)


def test_box_off_hard_clears_a_clearable_deal_and_easy_plays_as_a_person() -> None:
    engine = games.get("boxoff")
    for strength, seed in (("hard", 3), ("easy", 4)):
        state = engine.new(1, engine.options.load({"width": 6, "height": 4}), seed=seed)
        while engine.outcome(state) is None:
            view = engine.load(engine.seat_view(state, 0))
            move = players.choose(engine, view, 0, strength, random.Random(seed)).move
            assert move in engine.moves(state, 0)
            state = engine.play(state, 0, move)
        if strength == "hard":
            assert engine.outcome(state).results == ("win",)
    assert boxoff.solve("bw/wb") is None  # Crossed pairs: no line clears it, and the solver says so.


def test_easy_slider_rounds_are_solved_in_moves_the_server_takes() -> None:
    engine = games.get("easyslider")
    state = engine.new(1, engine.options.load({"rounds": 1}), seed=5)
    rounds = 0
    while engine.outcome(state) is None:
        view = engine.load(engine.seat_view(state, 0))
        move = players.choose(engine, view, 0, "hard", random.Random(5)).move
        assert len(move) <= 200  # The longest move the server takes.
        state = engine.play(state, 0, move)
        rounds = len(state.history)
    assert rounds == 1 and all(r.statuses[0] == "solved" for r in state.history)
    deal = engine.new(1, engine.options.load({}), seed=6)
    lines = {plan: easyslider.solve(deal.seats[0].board, deal.pawns, deal.coins, plan)
             for plan in easyslider.PLANS}
    assert all(lines.values()) and len(lines["pairs"]) <= len(lines["single"]) + 40


def test_a_seat_view_shows_nothing_the_rules_hide() -> None:
    box = games.get("boxoff")
    state = box.new(2, box.options.load({"width": 4, "height": 3}), seed=7)
    state = box.play(state, 1, box.moves(state, 1)[0])
    view = box.seat_view(state, 0)
    assert view["seats"][1] == view["seats"][0] and view["seats"][1]["moves"] == []
    assert box.seat_view(state, 1)["seats"][1]["moves"] == list(state.seats[1].moves)

    slider = games.get("easyslider")
    state = slider.new(2, slider.options.load({}), seed=8)
    state = slider.play(state, 1, slider.moves(state, 1)[0])
    view = slider.seat_view(state, 0)
    assert view["seed"] == 0  # The seed would tell the rounds to come.
    assert view["seats"][1]["slides"] == 0 and tuple(view["seats"][1]["board"]) == state.start
    assert slider.load(view).seats[0] == state.seats[0]

    cambio = games.get("cambio")
    state = cambio.new(2, cambio.options.load({}), seed=9)
    assert cambio.seat_view(state, 1) == cambio.dump(state)


def test_the_search_stops_once_more_search_cannot_change_its_choice() -> None:
    # An iteration budget alone (the CPU deadline out of reach; positions judged without playouts, so
    # that no clock sets their length), so that both searches run the same iterations until the first
    # stops: it plays the move the whole budget would have chosen, having spent less.
    budget = players.Budget(iterations=800, seconds=1000.0, playouts=10**9)
    carreaux = games.get("carreaux")
    state, rng = carreaux.new(2, carreaux.options.load({}), seed=10), random.Random(10)
    spent = []
    for ply in range(12):
        seat = min(carreaux.to_move(state))
        legal = carreaux.moves(state, seat)
        if len(legal) > 1:
            early = players._Search(carreaux, seat, budget, random.Random(ply)).run(state, legal)
            whole = players._Search(carreaux, seat, budget, random.Random(ply), early_stop=False)
            full = whole.run(state, legal)
            assert early.move == full.move, ply
            assert full.visits == budget.iterations
            spent.append(early.visits)
        state = carreaux.play(state, seat, rng.choice(legal))
    assert len(spent) > 3 and min(spent) < 0.9 * budget.iterations, spent


def test_a_win_at_once_or_a_single_move_is_played_without_searching() -> None:
    cambio, state = _cambio_with_a_win()
    decision = players.choose(cambio, state, 1, "hard", random.Random(1))
    assert cambio.outcome(cambio.play(state, 1, decision.move)).results == ("loss", "win")
    assert (decision.value, decision.visits) == (1.0, 0)

    carreaux = games.get("carreaux")
    state, rng = carreaux.new(2, carreaux.options.load({}), seed=11), random.Random(11)
    while len(carreaux.moves(state, min(carreaux.to_move(state)))) != 1:
        seat = min(carreaux.to_move(state))
        state = carreaux.play(state, seat, rng.choice(carreaux.moves(state, seat)))
    seat = min(carreaux.to_move(state))
    decision = players.choose(carreaux, state, seat, "hard", random.Random(11))
    assert decision.move == carreaux.moves(state, seat)[0] and decision.visits == 0
