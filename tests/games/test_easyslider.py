"""Easy Slider: deals, slides, fumbles, scoring in both modes, playoffs, timeouts, rendering, protocol."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from games import DRAW, LOSS, WIN, IllegalMove
from games.easyslider import engine
from tests.games.protocol import check_metadata, check_playout, check_round_trip

SVG = "{http://www.w3.org/2000/svg}"
PAWNS = "msca"  # Moons on rank 5, Suns on 4, Crowns on 3, Arms on 2
COINS = "245a3"  # values of files a..e
SOLVED_RANKS = [
    [p + c for c in COINS] for p in PAWNS
] + [["mn", "sn", "cn", "an", ".."]]  # top rank first


def scrambled(slides: str) -> tuple[str, list[str]]:
    """A position reached from the solved board by ``slides``, and the slides that solve it again.

    Undoing a slide means sliding the tile back from where the hole was before it, so the solution is
    the hole's earlier cells in reverse order.
    """
    grid = {(f, 4 - r): code for r, rank in enumerate(SOLVED_RANKS) for f, code in enumerate(rank)}
    hole = (4, 0)
    before: list[tuple[int, int]] = []
    for word in slides.split():
        cell = (ord(word[0]) - ord("a"), int(word[1]) - 1)
        assert abs(cell[0] - hole[0]) + abs(cell[1] - hole[1]) == 1, f"{word} is not next to the hole"
        before.append(hole)
        grid[hole], grid[cell] = grid[cell], ".."
        hole = cell
    position = "/".join("".join(grid[(f, r)] for f in range(5)) for r in range(4, -1, -1))
    return position, [f"{chr(ord('a') + f)}{r + 1}" for f, r in reversed(before)]


# Two slides from solved (the Arms ace and 3 are swapped round through e1).
NEAR, NEAR_SOLUTION = scrambled("e2 d2")
# Four slides from solved.
FAR, FAR_SOLUTION = scrambled("e2 e3 d3 d2")


def start(players: int, position: str = NEAR, **options: Any) -> Any:
    """A game whose every round deals ``position`` with the fixed pawns and coins above."""
    opts = engine.options.load({"position": position, "pawns": PAWNS, "coins": COINS, **options})
    return engine.new(players, opts, 7)


def board_of(state: Any, seat: int) -> dict[str, str]:
    """A seat's board as cell name -> tile code, from the dump (the engine's public form)."""
    cells = engine.dump(state)["seats"][seat]["board"]
    return {f"{chr(ord('a') + i % 5)}{i // 5 + 1}": code for i, code in enumerate(cells)}


# --- metadata and options ------------------------------------------------------------------------------


def test_metadata() -> None:
    check_metadata(engine)
    assert engine.slug == "easyslider"
    assert engine.players == range(1, 9)
    assert engine.simultaneous is True
    assert engine.options.load({}) == {"rounds": 3, "scoring": "slides", "position": "", "pawns": "",
                                       "coins": ""}


def test_help_states_the_rulings() -> None:
    text = engine.help.lower()
    for phrase in ("fumble", "bonus", "playoff", "slides", "race", "done", "d1 d2 c2", "out of time",
                   "rounds", "sponge"):
        assert phrase in text, phrase


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"rounds": 0}, "rounds", "1 to 10"),
        ({"rounds": 11}, "rounds", "1 to 10"),
        ({"scoring": "fastest"}, "scoring", "slides"),
        ({"pawns": "smc"}, "pawns", "each suit once"),
        ({"pawns": "ssca"}, "pawns", "each suit once"),
        ({"coins": "n2345"}, "coins", "each value once"),
        ({"position": NEAR}, "position", "pawns and coins"),
        ({"position": "m2m4/s2s4", "pawns": PAWNS, "coins": COINS}, "position", "5 ranks"),
        ({"position": NEAR.replace("mn", "m2"), "pawns": PAWNS, "coins": COINS}, "position", "repeated"),
        ({"position": NEAR.replace("mn", "xx"), "pawns": PAWNS, "coins": COINS}, "position", "x"),
        ({"position": scrambled("d1")[0], "pawns": PAWNS, "coins": COINS}, "position", "already solved"),
    ],
)
def test_bad_options_are_refused_with_a_reason(raw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.options.load(raw)
    messages = info.value.messages
    assert isinstance(messages, dict) and field in messages
    assert words in " ".join(messages[field])


def test_options_are_forgiving_and_canonical() -> None:
    opts = engine.options.load({"position": NEAR.upper(), "pawns": " M S C A ", "coins": "24 5A3",
                                "scoring": "race", "rounds": 10})
    assert opts["position"] == NEAR and opts["pawns"] == PAWNS and opts["coins"] == COINS


# --- the deal ------------------------------------------------------------------------------------------


def test_the_deal_is_the_same_for_everyone_with_the_hole_at_e1() -> None:
    state = engine.new(5, engine.options.load({}), 1234)
    first = board_of(state, 0)
    assert all(board_of(state, s) == first for s in range(5))
    assert first["e1"] == ".."
    tiles = sorted(code for code in first.values() if code != "..")
    assert tiles == sorted(s + v for s in "smca" for v in "na2345")
    dump = engine.dump(state)
    assert sorted(dump["pawns"]) == sorted("smca") and sorted(dump["coins"]) == sorted("a2345")
    assert engine.to_move(state) == frozenset(range(5))


def test_each_round_deal_comes_from_seed_and_round_number() -> None:
    opts = engine.options.load({"rounds": 2})
    # Different play in round 1 must not change round 2's deal.
    a = engine.play(engine.play(engine.new(2, opts, 99), 0, "done"), 1, "done")
    b = engine.new(2, opts, 99)
    b = engine.play(b, 1, engine.moves(b, 1)[0])
    b = engine.play(engine.play(b, 1, "done"), 0, "done")
    da, db = engine.dump(a), engine.dump(b)
    assert da["round"] == db["round"] == 2
    assert (da["start"], da["pawns"], da["coins"]) == (db["start"], db["pawns"], db["coins"])
    first = engine.dump(engine.new(2, opts, 99))
    assert (first["start"], first["pawns"], first["coins"]) != (da["start"], da["pawns"], da["coins"])
    other = engine.dump(engine.new(2, opts, 100))
    assert other["start"] != first["start"]


# --- slides --------------------------------------------------------------------------------------------


def test_moves_are_the_tiles_next_to_the_hole_and_done() -> None:
    state = engine.new(2, engine.options.load({}), 5)
    assert engine.moves(state, 0) == ["d1", "e2", "done"]
    state = engine.play(state, 0, "E2 ")
    assert engine.moves(state, 0) == ["d2", "e1", "e3", "done"]
    assert engine.moves(state, 1) == ["d1", "e2", "done"]  # each seat slides on its own board


def test_a_batch_of_slides_is_played_in_order() -> None:
    state = engine.new(1, engine.options.load({}), 5)
    before = board_of(state, 0)
    after = engine.play(state, 0, "  D1   d2,c2 ")
    assert engine.notation(state, 0, "  D1   d2,c2 Done!") == "d1 d2 c2 done"  # As the record writes it.
    board = board_of(after, 0)
    assert board["c2"] == ".." and board["d1"] == before["d2"] and board["e1"] == before["d1"]
    assert board["d2"] == before["c2"]
    assert engine.dump(after)["seats"][0]["slides"] == 3
    assert board_of(state, 0) == before  # the old state is untouched


def test_a_bad_slide_refuses_the_whole_batch_and_says_what_could_slide() -> None:
    state = engine.new(1, engine.options.load({}), 5)
    with pytest.raises(IllegalMove) as info:
        engine.play(state, 0, "d1 d2 b4")
    message = info.value.message
    assert "Slide 3 of 3" in message and "b4" in message and "d2" in message
    assert "c2, d1, d3 or e2" in message and "None of your slides were played" in message
    with pytest.raises(IllegalMove, match="c3 is not next to the hole at e1; you can slide d1 or e2"):
        engine.play(state, 0, "c3")
    with pytest.raises(IllegalMove, match="e1 is the hole; you can slide d1 or e2"):
        engine.play(state, 0, "e1")
    with pytest.raises(IllegalMove, match="off the board"):
        engine.play(state, 0, "f1")
    with pytest.raises(IllegalMove, match="'done' comes last"):
        engine.play(state, 0, "done d1")
    with pytest.raises(IllegalMove, match="you can slide d1 or e2"):
        engine.play(state, 0, "   ")
    with pytest.raises(IllegalMove, match="like d1 d2 c2"):
        engine.play(state, 0, "slide the moon")


def test_a_board_is_finished_the_moment_it_is_solved() -> None:
    state = start(2)
    assert engine.moves(state, 0) == ["c2", "d1", "d3", "e2", "done"]
    state = engine.play(state, 0, " ".join(NEAR_SOLUTION))
    seat = engine.dump(state)["seats"][0]
    assert seat["status"] == "solved" and seat["slides"] == 2
    assert engine.to_move(state) == frozenset({1})
    assert engine.moves(state, 0) == []
    with pytest.raises(IllegalMove, match="solved your board in 2 slides"):
        engine.play(state, 0, "e2")


def test_slides_after_the_solving_one_are_not_played_or_counted() -> None:
    state = engine.play(start(2), 0, " ".join([*NEAR_SOLUTION, "d1", "d2", "done"]))
    seat = engine.dump(state)["seats"][0]
    assert seat["status"] == "solved" and seat["slides"] == 2
    assert board_of(state, 0)["e1"] == ".."


def test_nulls_and_hole_anywhere_in_the_bottom_row_is_solved() -> None:
    # The nulls shifted right and the hole ends at b1: still solved.
    position, solution = scrambled("d1 c1 b1 b2")
    state = engine.play(start(2, position), 0, solution[0])
    assert engine.dump(state)["seats"][0]["status"] == "solved"
    assert board_of(state, 0)["b1"] == ".."


def test_done_on_an_unsolved_board_is_a_fumble() -> None:
    state = engine.play(start(2), 0, "D3, Done!")
    seat = engine.dump(state)["seats"][0]
    assert seat["status"] == "fumbled" and seat["slides"] == 1
    assert engine.to_move(state) == frozenset({1})
    with pytest.raises(IllegalMove, match="fumbled"):
        engine.play(state, 0, "done")


# --- scoring -------------------------------------------------------------------------------------------


def round_points(state: Any, number: int = 0) -> list[int | None]:
    return engine.dump(state)["history"][number]["points"]


def test_slides_scoring_ranks_by_fewest_slides_and_equal_counts_tie() -> None:
    state = start(3, FAR, rounds=2)
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))  # 4 slides, first by the clock
    state = engine.play(state, 0, "d3 d2 " + " ".join(FAR_SOLUTION))  # 6 slides
    assert engine.dump(state)["history"] == []  # the round goes on until everyone is done
    state = engine.play(state, 2, " ".join(FAR_SOLUTION))  # 4 slides: ties seat 2
    assert round_points(state) == [0, 1, 1]
    assert engine.dump(state)["round"] == 2 and engine.to_move(state) == frozenset({0, 1, 2})


def test_race_scoring_ranks_by_finishing_order_and_the_last_player_scores_nothing() -> None:
    state = start(3, FAR, scoring="race")
    state = engine.play(state, 2, "d3 d2 " + " ".join(FAR_SOLUTION))  # 6 slides but first
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    # Only seat 2 is left solving: the round is over and it is last.
    assert round_points(state) == [1, 0, 2]
    assert engine.dump(state)["history"][0]["statuses"] == ["solved", "last", "solved"]
    assert engine.to_move(state) == frozenset({0, 1, 2})  # round 2 has begun


def test_fumble_bonus_points_in_slides_scoring() -> None:
    state = start(3, FAR)
    state = engine.play(state, 2, "d1 done")
    state = engine.play(state, 1, "d3 d2 " + " ".join(FAR_SOLUTION))
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    # Seat 1 beats seat 2 and the fumbler; seat 2 beats only the fumbler; the fumbler scores 0.
    assert round_points(state) == [2, 1, 0]


def test_fumble_bonus_points_in_race_scoring_include_the_unfinished_player() -> None:
    state = start(3, FAR, scoring="race", rounds=1)
    state = engine.play(state, 0, "done")
    state = engine.play(state, 2, " ".join(FAR_SOLUTION))
    assert round_points(state) == [0, 1, 2]
    outcome = engine.outcome(state)
    assert outcome is not None
    assert outcome.results == (LOSS, LOSS, WIN) and outcome.scores == (0, 1, 2)
    assert "Seat 3 wins" in outcome.reason and "seat 3 2, seat 2 1, seat 1 0" in outcome.reason


def test_points_add_up_over_the_rounds() -> None:
    state = start(3, FAR, rounds=2)
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    state = engine.play(state, 1, "d3 d2 " + " ".join(FAR_SOLUTION))
    state = engine.play(state, 2, "d1 done")
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))
    state = engine.play(state, 2, "d3 d2 " + " ".join(FAR_SOLUTION))
    state = engine.play(state, 0, "done")
    assert [r["points"] for r in engine.dump(state)["history"]] == [[2, 1, 0], [0, 2, 1]]
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.scores == (2, 3, 1) and outcome.results == (LOSS, WIN, LOSS)
    assert engine.to_move(state) == frozenset()
    assert "Seat 2 wins after 2 rounds" in outcome.reason


# --- playoff -------------------------------------------------------------------------------------------


def test_a_tie_for_the_lead_is_settled_by_a_playoff_among_the_leaders() -> None:
    state = start(3, FAR, rounds=1)
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))
    state = engine.play(state, 2, "done")
    assert round_points(state) == [1, 1, 0]
    assert engine.outcome(state) is None
    assert engine.to_move(state) == frozenset({0, 1})
    assert engine.moves(state, 2) == []
    with pytest.raises(IllegalMove, match="not in playoff round 1"):
        engine.play(state, 2, "d1")
    assert "playoff round 1" in engine.render_text(state, 0)
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))
    state = engine.play(state, 0, "d1 d2 " + " ".join(FAR_SOLUTION))
    assert round_points(state, 1) == [0, 1, None]
    outcome = engine.outcome(state)
    assert outcome is not None
    assert outcome.scores == (1, 2, 0) and outcome.results == (LOSS, WIN, LOSS)
    assert "1 playoff" in outcome.reason


def test_playoffs_repeat_while_tied_then_the_leaders_share_the_win() -> None:
    state = engine.play(engine.play(start(2, rounds=1), 0, "done"), 1, "done")
    for playoff in (1, 2, 3):
        assert engine.dump(state)["playoff"] == playoff
        state = engine.play(engine.play(state, 0, "done"), 1, "done")
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (DRAW, DRAW)
    assert "share the lead" in outcome.reason


# --- timeouts ------------------------------------------------------------------------------------------


def test_a_timed_out_seat_scores_as_the_last_finisher() -> None:
    state = start(3, FAR)
    state = engine.time_out(state, 1)
    assert engine.to_move(state) == frozenset({0, 2})
    state = engine.play(state, 2, "d1 done")
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    assert round_points(state) == [2, 1, 0]
    assert engine.dump(state)["history"][0]["statuses"] == ["solved", "timed out", "fumbled"]


def test_in_a_race_the_last_player_still_solving_beats_a_timed_out_one() -> None:
    state = engine.time_out(start(2, scoring="race"), 0)
    assert round_points(state) == [0, 1]
    with pytest.raises(IllegalMove, match="no seat 5"):
        engine.time_out(state, 4)


def test_time_out_refuses_a_seat_that_is_not_solving() -> None:
    state = engine.play(start(2), 0, "done")
    with pytest.raises(IllegalMove, match="fumbled"):
        engine.time_out(state, 0)


# --- solitaire -----------------------------------------------------------------------------------------


def test_solitaire_plays_every_round_and_wins_with_its_score() -> None:
    state = start(1, rounds=2)
    state = engine.play(state, 0, " ".join(NEAR_SOLUTION))
    assert engine.to_move(state) == frozenset({0}) and engine.dump(state)["round"] == 2
    state = engine.play(state, 0, "d3 done")
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (WIN,) and outcome.scores == (0,)
    assert outcome.reason == "Seat 1 solved 1 of 2 boards, using 3 slides in all."


def test_solitaire_race_waits_for_the_player() -> None:
    state = start(1, scoring="race", rounds=1)
    state = engine.play(state, 0, "d3")
    assert engine.to_move(state) == frozenset({0})


# --- refusals ------------------------------------------------------------------------------------------


def test_moves_after_the_game_are_refused() -> None:
    state = engine.play(start(1, rounds=1), 0, "done")
    assert engine.to_move(state) == frozenset()
    with pytest.raises(IllegalMove, match="game is over"):
        engine.play(state, 0, "d1")


# --- rendering -----------------------------------------------------------------------------------------


def test_text_for_a_seat_shows_its_board_pawns_coins_and_scores() -> None:
    state = engine.play(start(3), 0, "c2")
    text = engine.render_text(state, 0)
    assert text.isascii()
    assert max(len(line) for line in text.splitlines()) <= 72
    lines = text.splitlines()
    assert any(line.split() == ["coins", "2", "4", "5", "1", "3"] for line in lines)
    # No letter means two things: A is Arms, the ace is 1.
    assert "A Arms; 1 ace, n null" in text
    assert any(line.split() == list("abcde") for line in lines)
    rank5 = next(line for line in lines if line.startswith(" Moons"))
    assert rank5.split() == ["Moons", "5", "|", "M2", "M4", "M5", "M1", "M3", "|", "5"]
    rank2 = next(line for line in lines if line.startswith(" Arms"))
    assert rank2.split() == ["Arms", "2", "|", "A2", "A4", "..", "A5", "A1", "|", "2"]
    rank1 = next(line for line in lines if line.startswith(" (nulls)"))
    assert rank1.split() == ["(nulls)", "1", "|", "Mn", "Sn", "Cn", "An", "A3", "|", "1"]
    assert "round 1 of 3" in text and "1 slide so far" in text
    assert "You can slide c3, d2 or e2" not in text  # d2 is the hole
    assert "You can slide b2, c1, c3 or d2" in text


def test_text_for_a_spectator_summarises_every_seat() -> None:
    state = engine.play(engine.play(start(3), 0, " ".join(NEAR_SOLUTION)), 2, "done")
    text = engine.render_text(state)
    assert "|" not in text  # no board
    assert "solved in 2 slides" in text and "fumbled after 0 slides" in text
    assert "solving, 0 slides so far" in text


def test_text_for_a_seat_waiting_out_a_playoff_says_so() -> None:
    state = start(3, FAR, rounds=1)
    state = engine.play(state, 0, " ".join(FAR_SOLUTION))
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))
    state = engine.play(state, 2, "done")
    text = engine.render_text(state, 2)
    assert "not in playoff round 1" in text and "seats 1 and 2" in text and "|" not in text


def test_text_stays_narrow_with_eight_players_ten_rounds_and_playoffs() -> None:
    state = engine.new(8, engine.options.load({"rounds": 10}), 3)
    while engine.to_move(state):
        for seat in sorted(engine.to_move(state)):
            state = engine.play(state, seat, "done")
    assert len(engine.dump(state)["history"]) == 13  # everyone tied: 10 rounds and 3 playoffs
    for seat in (None, *range(8)):
        text = engine.render_text(state, seat)
        assert text.isascii() and max(len(line) for line in text.splitlines()) <= 72
    words = " ".join(engine.render_text(state).split())  # The line is wrapped to stay narrow.
    assert "Seat 1, seat 2, seat 3, seat 4, seat 5, seat 6, seat 7 and seat 8 share the lead" in words


def svg_targets(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and "Easy Slider" in (title.text or "")
    assert root.get("aria-labelledby") == title.get("id")
    marked = [el for el in root.iter() if el.get("data-move") is not None]
    assert all(el.get("class") == "target" for el in marked)
    return sorted(el.get("data-move") or "" for el in marked)


def test_svg_marks_exactly_the_tiles_that_can_slide_and_done() -> None:
    state = engine.play(start(2), 0, "c2")
    assert svg_targets(engine.render_svg(state, 0)) == sorted(engine.moves(state, 0))
    assert svg_targets(engine.render_svg(state, 0)) == ["b2", "c1", "c3", "d2", "done"]
    assert svg_targets(engine.render_svg(state, 1)) == sorted(engine.moves(state, 1))
    assert svg_targets(engine.render_svg(state)) == []
    svg = engine.render_svg(state, 0)
    for edge in ("a", "e", "1", "5"):
        assert f">{edge}</text>" in svg
    assert ">Moons</text>" in svg and ">M1</text>" in svg
    done = engine.play(state, 1, "done")
    assert svg_targets(engine.render_svg(done, 1)) == []


# --- protocol ------------------------------------------------------------------------------------------


def test_dump_load_round_trips_mid_game() -> None:
    state = engine.play(start(3, FAR, rounds=1), 0, " ".join(FAR_SOLUTION))
    state = engine.play(state, 1, " ".join(FAR_SOLUTION))
    state = engine.play(state, 2, "done")  # into the playoff
    check_round_trip(engine, state)
    again = engine.load(json.loads(json.dumps(engine.dump(state))))
    assert again == state


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), players=st.integers(1, 8), scoring=st.sampled_from(["slides", "race"]))
def test_random_playouts(seed: int, players: int, scoring: str) -> None:
    state, _ = check_playout(engine, players, {"scoring": scoring}, seed)
    assert engine.outcome(state) is not None


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_playouts_fixed_position_one_round(seed: int) -> None:
    check_playout(engine, 3, {"position": FAR, "pawns": PAWNS, "coins": COINS, "rounds": 1,
                              "scoring": "race"}, seed)
