"""Box Off: the rule sheet's example, rectangle rules, the solver, deals, seats, timeouts, rendering."""

from __future__ import annotations

import random
import statistics
import time
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from games import DRAW, LOSS, WIN, IllegalMove
from games.boxoff import _built_deal, engine, solve
from tests.games.protocol import check_metadata, check_playout, check_round_trip

SVG = "{http://www.w3.org/2000/svg}"
EXAMPLE = "bbwbbw/byyywb/ywwwyy"  # The rule sheet's 6x3 game (docs/RULES.md).
EXAMPLE_MOVES = ["a2-a3", "a3-b3", "b1-c1", "b2-c2", "c1-d1", "c2-d2", "d3-e3", "e1-f1"]
PUBLISHED_LINE = ["b1-c1", "a2-a3", "a1-b2", "c2-d2", "d3-e3", "c3-d1", "e1-f1"]


def start(position: str, players: int = 1, **options: Any) -> Any:
    """A game on a written position."""
    return engine.new(players, engine.options.load({"position": position, **options}), 1)


def play_all(state: Any, moves: list[str], seat: int = 0) -> Any:
    for move in moves:
        state = engine.play(state, seat, move)
    return state


def board(state: Any, seat: int = 0) -> str:
    """A seat's board as a written position (from the dump, the engine's public form)."""
    return engine.dump(state)["seats"][seat]["board"]


def refusal(state: Any, text: str, seat: int = 0) -> str:
    with pytest.raises(IllegalMove) as info:
        engine.play(state, seat, text)
    return info.value.message


def clears(position: str, line: list[str]) -> bool:
    """Whether playing ``line`` on ``position`` empties the board."""
    state = play_all(start(position), line)
    return set(board(state)) <= {".", "/"}


# -- the rule sheet's example (docs/RULES.md) --------------------------------------------------------


def test_metadata() -> None:
    check_metadata(engine)
    assert engine.simultaneous and engine.players == range(1, 9)
    assert "b1-c1" in engine.help and "solvable" in engine.help


def test_example_has_exactly_the_ruled_moves() -> None:
    assert engine.moves(start(EXAMPLE), 0) == EXAMPLE_MOVES


def test_published_line_is_legal_and_gets_stuck_with_four_tiles() -> None:
    state = play_all(start(EXAMPLE), PUBLISHED_LINE)
    assert board(state) == ".b...w/....wb/......"
    assert engine.to_move(state) == frozenset()
    outcome = engine.outcome(state)
    assert outcome is not None
    assert outcome.results == (LOSS,) and outcome.scores == (4,)
    assert "stuck with 4 tiles left" in outcome.reason
    assert not engine.clearable(state, 0)


def test_the_example_deal_itself_is_solvable() -> None:
    line = solve(EXAMPLE)
    assert line is not None and len(line) == 9
    assert clears(EXAMPLE, line)
    assert engine.clearable(start(EXAMPLE), 0)


def test_sheet_diagrams_after_each_removal() -> None:
    # The sheet's diagrams, except that its first one misprints rank 3 (docs/RULES.md gives the deal).
    expected = [
        "bbwbbw/byyywb/y..wyy",
        ".bwbbw/.yyywb/y..wyy",
        ".bwbbw/..yywb/...wyy",
        ".bwbbw/....wb/...wyy",
        ".bw..w/....wb/...wyy",
        ".b...w/....wb/....yy",
        ".b...w/....wb/......",
    ]
    state = start(EXAMPLE)
    for move, after in zip(PUBLISHED_LINE, expected, strict=True):
        state = engine.play(state, 0, move)
        assert board(state) == after, move


def test_winning_a_solitaire() -> None:
    state = play_all(start("bw/bw"), ["a1-a2", "b1-b2"])
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (WIN,) and outcome.scores == (0,)
    assert "cleared" in outcome.reason


# -- the rectangle rule -------------------------------------------------------------------------------


def test_sheet_examples_on_a_4x4_board() -> None:
    assert engine.moves(start("..../.bb./..../...."), 0) == ["b3-c3"]  # a 2x1 rectangle
    assert engine.moves(start("..../w.../..../w..."), 0) == ["a1-a3"]  # ends of an empty 1x3 line
    assert engine.moves(start("...y/..../..../.y.."), 0) == ["b1-d4"]  # corners of an empty 3x4 rectangle


def test_a_tile_between_blocks_even_of_the_same_colour() -> None:
    line = start("w.../w.../w.../w...")  # a1 to a4 white: a1-a3 has a2 between
    assert engine.moves(line, 0) == ["a1-a2", "a2-a3", "a3-a4"]
    message = refusal(line, "a1-a3")
    assert "a1 and a3 are not the ends of an empty line: a2 lies between them" in message
    assert "a1-a2" in message


def test_a_tile_inside_the_rectangle_blocks_even_of_the_same_colour() -> None:
    rect = start("..y./.y../y.../...y")  # a2, b3, c4, d1 yellow: a2-c4 holds b3
    assert "a2-c4" not in engine.moves(rect, 0)
    assert "b3 lies inside it" in refusal(rect, "c4-a2")
    other = start("..y./.w../y.../...w")
    assert "b3 lies inside it" in refusal(other, "a2-c4")


def test_only_the_rectangle_matters_not_its_surroundings() -> None:
    # A full rank right below the line does not block it; a crossing pair does.
    assert engine.moves(start("b.b/ww."), 0) == ["a1-b1", "a2-c2"]
    assert engine.moves(start("bwbw/wbwb"), 0) == []


def test_refusals_are_readable() -> None:
    state = start(EXAMPLE)
    assert "a1 is yellow and b1 is white" in refusal(state, "a1-b1")
    assert "named b1 twice" in refusal(state, "b1-b1")
    assert "off the board" in refusal(state, "a1-g1")
    assert "is not a move" in refusal(state, "take the black ones")
    only = refusal(state, "b1")
    assert "you named only b1" in only and "b1 can go with c1" in only
    # Few legal moves: the refusal lists them all.
    assert ", ".join(EXAMPLE_MOVES) in refusal(state, "a1-a3")
    emptied = engine.play(state, 0, "b1-c1")
    assert "c1 is empty" in refusal(emptied, "c1-d1")


def test_input_is_forgiving_and_output_canonical() -> None:
    for text in ["c1-b1", "B1-C1", "  b1   c1 ", "c1 b1", "b1,c1", "B1 - C1", "b1 to c1"]:
        state = engine.play(start(EXAMPLE), 0, text)
        assert engine.dump(state)["seats"][0]["moves"] == ["b1-c1"]
        assert engine.notation(start(EXAMPLE), 0, text) == "b1-c1"  # And so the record writes it.
        assert board(state) == "bbwbbw/byyywb/y..wyy"


def test_moves_sort_by_file_then_rank_on_tall_boards() -> None:
    ranks = ["bw"] + ["ww"] * 8 + ["bw"]  # rank 10 at the top ... rank 1
    state = start("/".join(ranks), width=2, height=10)
    moves = engine.moves(state, 0)
    assert moves == sorted(moves, key=lambda m: [(c[0], int(c[1:])) for c in m.split("-")])
    assert "b9-b10" in moves and "b10-b9" not in moves
    assert moves.index("a2-a3") < moves.index("a8-a9") < moves.index("b1-b2")
    after = engine.play(state, 0, "B10 b9")
    assert engine.dump(after)["seats"][0]["moves"] == ["b9-b10"]


# -- the solver ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("position", ["bb/..", "bw/bw", EXAMPLE, "..../.bb./..../....", "bwb/bwb", "b.b/ww."])
def test_solver_clears_solvable_positions(position: str) -> None:
    line = solve(position)
    assert line is not None and clears(position, line)


@pytest.mark.parametrize(
    "position",
    [
        "bw/wb",  # the diagonals cross: each pair's rectangle holds the other colour
        "b.w/w.b",  # the same, with empty cells between
        "bwbw/wbwb",  # every pair's rectangle holds a tile of the other colour
        ".b...w/....wb/......",  # where the published line gets stuck
        "b.../y.../..../b..y",  # a4-a1 needs a3 gone, a3-d1 needs a1 gone
    ],
)
def test_solver_proves_dead_positions(position: str) -> None:
    assert solve(position) is None


def test_solver_sees_a_dead_end_that_needs_search() -> None:
    # Moves exist and every tile has a partner it might some day reach, but every line strands a pair:
    # a4 needs a3 gone, a3 needs a1, f1 and g1 gone, and then a4 has no partner left.
    position = "b......./y......./......../b....bby"
    state = start(position)
    assert engine.moves(state, 0) == ["a1-f1", "f1-g1"]
    assert solve(position) is None
    assert not engine.clearable(state, 0)


def test_the_published_mistake_is_c3_d1() -> None:
    before = play_all(start(EXAMPLE), PUBLISHED_LINE[:5])
    assert engine.clearable(before, 0)
    assert not engine.clearable(engine.play(before, 0, "c3-d1"), 0)
    assert engine.clearable(engine.play(before, 0, "c3-f3"), 0)


def test_solvable_deals_are_clearable_and_fast() -> None:
    options = engine.options.load({})
    times = []
    for seed in range(15):
        began = time.perf_counter()
        state = engine.new(1, options, seed)
        times.append(time.perf_counter() - began)
        deal = engine.dump(state)["deal"]
        assert deal.count("b") == deal.count("w") == deal.count("y") == 16
        line = solve(deal)
        assert line is not None and clears(deal, line)
    assert statistics.median(times) < 1.0


def test_deals_follow_the_seed() -> None:
    options = engine.options.load({"solvable": False})
    deals = {engine.dump(engine.new(1, options, seed))["deal"] for seed in range(5)}
    assert len(deals) == 5
    again = engine.dump(engine.new(1, options, 3))["deal"]
    assert again == engine.dump(engine.new(1, options, 3))["deal"]


def test_built_deals_clear() -> None:
    for seed in range(5):
        deal = _built_deal(random.Random(seed), 6, 6, 6)
        assert all(deal.count(c) == 6 for c in "bwygrp")
        written = "/".join(deal[rank * 6 : rank * 6 + 6] for rank in reversed(range(6)))
        assert solve(written) is not None
    options = engine.options.load({"width": 12, "height": 12, "colours": 6})
    deal = engine.dump(engine.new(1, options, 2))["deal"]
    assert all(deal.count(c) == 24 for c in "bwygrp")


# -- several seats, timeouts ---------------------------------------------------------------------------


def test_every_seat_gets_the_same_deal_and_plays_alone() -> None:
    options = engine.options.load({})
    state = engine.new(3, options, 42)
    dump = engine.dump(state)
    assert len({s["board"] for s in dump["seats"]}) == 1 and dump["seats"][0]["board"] == dump["deal"]
    assert engine.to_move(state) == frozenset({0, 1, 2})
    move = engine.moves(state, 1)[0]
    after = engine.play(state, 1, move)
    assert board(after, 1) != board(after, 0) == board(after, 2) == dump["deal"]
    assert engine.moves(after, 0) == engine.moves(state, 0)
    assert move not in engine.moves(after, 1)
    assert engine.to_move(after) == frozenset({0, 1, 2})


def test_ranked_by_tiles_left() -> None:
    state = start(EXAMPLE, players=3)
    state = play_all(state, PUBLISHED_LINE, seat=0)  # stuck with 4
    line = solve(EXAMPLE)
    assert line is not None
    state = play_all(state, line, seat=1)  # cleared
    assert engine.to_move(state) == frozenset({2})
    assert engine.outcome(state) is None
    state = engine.play(state, 2, "b1-c1")
    state = engine.time_out(state, 2)  # 16 tiles left
    outcome = engine.outcome(state)
    assert outcome is not None
    assert outcome.results == (LOSS, WIN, LOSS)
    assert outcome.ranks == (2, 1, 3)
    assert outcome.scores == (4, 0, 16)
    assert "seat 2 cleared the board" in outcome.reason
    assert "seat 3 ran out of time with 16 tiles left" in outcome.reason


def test_equal_counts_tie() -> None:
    state = start(EXAMPLE, players=2)
    for seat in (0, 1):
        state = play_all(state, PUBLISHED_LINE, seat=seat)
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (DRAW, DRAW) and outcome.ranks == (1, 1)


def test_time_out_stops_one_board() -> None:
    state = start(EXAMPLE, players=2)
    state = engine.play(state, 0, "b1-c1")
    timed = engine.time_out(state, 0)
    assert engine.to_move(timed) == frozenset({1})
    assert engine.moves(timed, 0) == []
    assert board(timed, 0) == board(state, 0)
    assert "time ran out" in refusal(timed, "a2-a3")
    assert engine.time_out(timed, 0) == timed  # a second timeout changes nothing
    check_round_trip(engine, timed)


def test_finished_and_foreign_seats_are_refused() -> None:
    state = play_all(start(EXAMPLE, players=2), PUBLISHED_LINE)
    assert "finished" in refusal(state, "b3-f2")
    assert "no seat 3" in refusal(state, "a2-a3", seat=2)
    assert engine.moves(state, 0) == [] and engine.moves(state, 5) == []


# -- options ------------------------------------------------------------------------------------------


def test_option_defaults() -> None:
    defaults = {"width": 8, "height": 6, "colours": 3, "position": "", "solvable": True}
    assert engine.options.load({}) == defaults


def test_position_gives_size_and_colours() -> None:
    loaded = engine.options.load({"position": "gg/bb"})
    assert (loaded["width"], loaded["height"], loaded["colours"]) == (2, 2, 4)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"width": 1}, "width must be 2 to 12"),
        ({"height": 13}, "height must be 2 to 12"),
        ({"colours": 7}, "colours must be 2 to 6"),
        ({"colours": 5}, "The 8x6 board has 48 cells, which cannot be dealt as an even number"),
        ({"width": 3, "height": 3}, "Colour counts that fit: none"),
        ({"position": "bb/bx"}, "Unknown piece letters"),
        ({"position": "bbb/bb"}, "Every rank must have"),
        ({"position": "bw/bw", "width": 3}, "position is 2x2 but the board is 3x2"),
        ({"position": "bb/bw"}, "odd: black (3), white (1)"),
        ({"position": "../.."}, "no tiles"),
        ({"position": "yy/bb", "colours": 2}, "letters are b w"),
    ],
)
def test_invalid_options_are_explained(raw: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.options.load(raw)
    assert words in str(info.value.messages)


# -- rendering ----------------------------------------------------------------------------------------


def test_text_board() -> None:
    text = engine.render_text(engine.play(start(EXAMPLE), 0, "b1-c1"), 0)
    lines = text.splitlines()
    assert all(len(line) <= 72 and line.isascii() for line in lines)
    assert "    a b c d e f" in lines
    assert " 3  b b w b b w  3" in lines
    assert " 1  y . . w y y  1" in lines
    assert lines.index(" 3  b b w b b w  3") < lines.index(" 1  y . . w y y  1")
    assert "b black" in text and "Tiles left: 16 (b 6, w 4, y 6)" in text and "Last: b1-c1" in text


def test_text_for_several_seats() -> None:
    state = engine.play(start(EXAMPLE, players=2), 1, "b1-c1")
    own = engine.render_text(state, 0)
    assert "seat 2: 16 tiles left, playing" in own and own.count("a b c d e f") == 2
    # A spectator sees the deal and how each seat stands, never a board in play: its moves would show
    # the players how to clear the deal they share.
    spectator = engine.render_text(state)
    assert "The deal" in spectator and spectator.count("a b c d e f") == 2
    assert " 1  y w w w y y  1" in spectator and " 1  y . . w y y  1" not in spectator
    assert "Seat 1: 18 tiles left, playing." in spectator and "Seat 2: 16 tiles left, playing." in spectator
    svg = engine.render_svg(state)
    assert "The deal" in svg and svg.count('class="tile"') == 18
    # At the end (or when the server ended the game) every board is shown.
    ended = engine.render_text(state, over=True)
    assert "Seat 1:" in ended and "Seat 2:" in ended and ended.count("a b c d e f") == 4


def test_a_player_of_several_sees_how_the_others_stand_on_the_page_as_in_the_mail() -> None:
    state = engine.play(start(EXAMPLE, players=2), 1, "b1-c1")
    assert "Others: seat 2: 16 tiles left, playing" in engine.render_svg(state, 0)
    assert "seat 2: 16 tiles left, playing" in engine.render_text(state, 0)


def svg_targets(svg: str) -> tuple[ET.Element, list[str]]:
    root = ET.fromstring(svg)
    marked = [el.get("data-move", "") for el in root.iter() if el.get("data-move") is not None]
    for el in root.iter():
        if el.get("data-move") is not None:
            assert "target" in el.get("class", "")
    return root, marked


def test_svg_marks_exactly_the_tiles_that_can_move() -> None:
    state = start(EXAMPLE)
    root, marked = svg_targets(engine.render_svg(state, 0))
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title = root.find(f"{SVG}title")
    assert title is not None and "Box Off" in (title.text or "")
    assert root.get("aria-labelledby") == title.get("id")
    cells = {c for m in EXAMPLE_MOVES for c in m.split("-")}
    assert sorted(marked) == sorted(cells)
    # Every fragment occurs literally in a legal move.
    assert all(any(f in m.split("-") for m in EXAMPLE_MOVES) for f in marked)
    texts = {t.text for t in root.iter(f"{SVG}text")}
    assert {"a", "f", "1", "3"} <= texts


def test_svg_marks_nothing_for_spectators_or_finished_seats() -> None:
    state = start(EXAMPLE, players=2)
    assert svg_targets(engine.render_svg(state))[1] == []
    stuck = play_all(state, PUBLISHED_LINE)
    assert svg_targets(engine.render_svg(stuck, 0))[1] == []
    cells = {c for m in EXAMPLE_MOVES for c in m.split("-")}
    assert sorted(svg_targets(engine.render_svg(stuck, 1))[1]) == sorted(cells)


# -- the protocol -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("players", "options"),
    [
        (1, {}),
        (3, {}),
        (1, {"width": 4, "height": 4, "colours": 2}),
        (2, {"width": 5, "height": 4, "colours": 5, "solvable": False}),
        (1, {"width": 12, "height": 12, "colours": 4, "solvable": False}),
        (3, {"width": 6, "height": 4, "colours": 6}),
        (1, {"position": EXAMPLE}),
    ],
)
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=4, deadline=None)
def test_playouts(players: int, options: dict[str, Any], seed: int) -> None:
    state, record = check_playout(engine, players, options, seed)
    outcome = engine.outcome(state)
    assert outcome is not None
    dump = engine.dump(state)
    left = tuple(sum(c != "." for c in s["board"] if c != "/") for s in dump["seats"])
    assert outcome.scores == left
    assert len(record) == sum(len(s["moves"]) for s in dump["seats"])
