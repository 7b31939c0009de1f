"""Cambio: the docs/RULES.md test vector, placement and push rules, line judging, repetition, rendering."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from games import DRAW, LOSS, WIN, IllegalMove
from games.cambio import State, engine
from tests.games.protocol import check_metadata, check_playout, check_round_trip

SVG = "{http://www.w3.org/2000/svg}"


def start(**raw: Any) -> State:
    """A new game with these raw options."""
    return engine.new(2, engine.options.load(raw), seed=0)


def play(state: State, *moves: str) -> State:
    """Play moves in turn order, each by the seat to move."""
    for move in moves:
        (seat,) = engine.to_move(state)
        state = engine.play(state, seat, move)
    return state


def board(state: State) -> str:
    """The board as a written position: ranks top to bottom."""
    n = state.size
    return "/".join(state.cells[r * n : (r + 1) * n] for r in range(n - 1, -1, -1))


def refusal(state: State, seat: int, move: str) -> str:
    """The message refusing ``move``; fails if the move is accepted."""
    with pytest.raises(IllegalMove) as info:
        engine.play(state, seat, move)
    return info.value.message


def targets(svg: str) -> list[str]:
    """The data-move attributes of an SVG, after checking it parses and has a title."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    title = root.find(f"{SVG}title")
    assert title is not None and "Cambio" in (title.text or "")
    assert root.get("aria-labelledby") == title.get("id")
    return [el.get("data-move", "") for el in root.iter() if el.get("data-move") is not None]


# -- the docs/RULES.md test vector-----------------------------------------------------------------

RULINGS_PLACEMENTS = ("b3", "a2", "c2", "b1")
RULINGS_PUSHES = ["a3v", "b3v", "c3v", "a1^", "c1^", "a1>", "a3>", "c1<", "c2<", "c3<"]


@pytest.fixture
def rulings_position() -> State:
    """Size 3, placements 2, after O b3, X a2, O c2, X b1."""
    return play(start(size=3, placements=2), *RULINGS_PLACEMENTS)


def test_rulings_placements_put_opponent_cubes(rulings_position: State) -> None:
    assert board(rulings_position) == ".x./o.x/.o."
    assert rulings_position.pushing
    assert engine.to_move(rulings_position) == frozenset({0})


def test_rulings_exactly_ten_pushes(rulings_position: State) -> None:
    assert engine.moves(rulings_position, 0) == RULINGS_PUSHES
    assert engine.moves(rulings_position, 1) == []


@pytest.mark.parametrize(("move", "victim"), [("b1^", "b3"), ("a2>", "c2")])
def test_rulings_pushing_off_an_x_is_refused(rulings_position: State, move: str, victim: str) -> None:
    message = refusal(rulings_position, 0, move)
    assert f"X cube on {victim} off the board" in message
    assert "a3v" in message and "c3<" in message  # the ten legal pushes are listed


def test_rulings_b3v(rulings_position: State) -> None:
    after = engine.play(rulings_position, 0, "b3v")
    assert board(after) == ".o./oxx/..."
    assert engine.outcome(after) is None
    assert engine.to_move(after) == frozenset({1})


# -- placement phase -------------------------------------------------------------------------------


def test_placement_alternates_and_counts_down() -> None:
    state = start()  # 5x5, 4 placements each
    assert state.size == 5 and state.placements == 4
    moves = engine.moves(state, 0)
    assert len(moves) == 21 and "a1" not in moves and "e5" not in moves and "a2" in moves
    for k in range(8):
        assert not state.pushing
        assert engine.to_move(state) == frozenset({k % 2})
        state = play(state, engine.moves(state, k % 2)[0])
    assert state.pushing and engine.to_move(state) == frozenset({0})
    assert state.cells.count("o") == 4 and state.cells.count("x") == 4


def test_placement_refusals() -> None:
    state = play(start(size=3, placements=2), "b3")
    assert "corner" in refusal(state, 1, "c3")
    assert "already holds an X cube" in refusal(state, 1, "B3")
    assert "off the board" in refusal(state, 1, "d4")
    assert "placement phase" in refusal(state, 1, "a2>")
    message = refusal(state, 1, "c3")
    assert "a2, b1, b2 or c2" in message  # few free cells: they are listed


def test_not_your_turn() -> None:
    assert refusal(start(), 1, "b3") == "It is O (seat 1)'s turn, not yours."


# -- push phase ------------------------------------------------------------------------------------


def test_edge_cells_accept_the_arrowless_form(rulings_position: State) -> None:
    assert board(engine.play(rulings_position, 0, " B3 ")) == ".o./oxx/..."
    assert board(engine.play(rulings_position, 0, "c2")) == board(engine.play(rulings_position, 0, "c2<"))
    assert engine.play(rulings_position, 0, "b3 V").last == "b3v"


def test_push_refusals(rulings_position: State) -> None:
    assert refusal(rulings_position, 0, "a1") == "a1 is a corner, so say which line to push: a1^ or a1>."
    assert "not on the edge" in refusal(rulings_position, 0, "b2v")
    message = refusal(rulings_position, 0, "b3^")
    assert "enters at the bottom edge (rank 1)" in message and "b3v" in message
    assert "not a push" in refusal(rulings_position, 0, "push a3")


def test_pushing_off_own_cube_is_legal(rulings_position: State) -> None:
    # b1 holds an O cube; O pushing b3v pushes it off.
    after = engine.play(rulings_position, 0, "b3v")
    assert after.cells.count("o") == 2


def test_corner_pushes_move_the_right_line() -> None:
    state = start(position="x../.../o..")
    assert board(engine.play(state, 0, "a1>")) == "x../.../oo."
    assert "X cube on a3 off the board" in refusal(state, 0, "a1^")
    assert board(engine.play(state, 0, "c1^")) == "x../.../o.o"


def test_far_end_x_blocks_only_that_line() -> None:
    state = start(position="x../.../...")
    assert "a1^" not in engine.moves(state, 0) and "c3<" not in engine.moves(state, 0)
    assert board(engine.play(state, 0, "a1>")) == "x../.../o.."
    assert board(engine.play(state, 0, "a3v")) == "o../x../..."


# -- lines -----------------------------------------------------------------------------------------


def test_mover_wins_with_a_full_rank() -> None:
    state = play(start(position=".../oo./..."), "a2>")
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (WIN, LOSS)
    assert "rank 2" in outcome.reason
    assert engine.to_move(state) == frozenset() and engine.moves(state, 1) == []
    assert "game is over" in refusal(state, 1, "a3v")


def test_diagonal_counts() -> None:
    state = play(start(position="..o/.o./..."), "a1^")
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (WIN, LOSS) and "diagonal a1-c3" in outcome.reason


def test_both_lines_draw() -> None:
    state = play(start(position="xxx/oo./..."), "a2>")
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (DRAW, DRAW)


def test_lines_made_at_once_are_named_with_and() -> None:
    both = engine.outcome(play(start(position="o..o/.oo./oo../o..o"), "a2>"))
    assert both is not None and both.reason == "O wins with full lines on diagonal a1-d4 and diagonal a4-d1"
    draw = engine.outcome(play(start(position="xxx/.../oo."), "a1>"))
    assert draw is not None and "(rank 1 and rank 3)" in draw.reason


def test_push_that_completes_only_the_opponents_line_loses() -> None:
    state = play(start(position="o../.oo/..."), "a1>", "c3v")
    assert board(state) == "o.x/.o./o.o"
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (WIN, LOSS) and "diagonal a3-c1" in outcome.reason


def test_line_made_during_placement_counts_at_the_first_push() -> None:
    state = play(start(size=4, placements=4), "a2", "a3", "b2", "b3", "c2", "c3", "d2")
    assert engine.outcome(state) is None
    state = play(state, "d3")  # O now has X cubes on all of rank 2 and X gave O all of rank 3
    assert board(state) == "..../oooo/xxxx/...."
    assert engine.outcome(state) is None and state.pushing
    after = play(state, "a1>")
    outcome = engine.outcome(after)
    assert outcome is not None and outcome.results == (DRAW, DRAW)


def test_opponents_line_from_placement_wins_at_the_first_push() -> None:
    state = play(start(size=4, placements=4), "a2", "a3", "b2", "b4", "c2", "c4", "d2", "d3")
    assert board(state) == ".oo./o..o/xxxx/...."
    assert engine.outcome(state) is None
    outcome = engine.outcome(play(state, "a1>"))
    assert outcome is not None and outcome.results == (LOSS, WIN) and "rank 2" in outcome.reason


def test_line_in_a_written_position_counts_at_the_first_push() -> None:
    state = start(position="xxx/.o./...")
    assert engine.outcome(state) is None
    outcome = engine.outcome(play(state, "a1>"))
    assert outcome is not None and outcome.results == (LOSS, WIN)


# -- repetition and a stuck player -----------------------------------------------------------------

CYCLE = ("a1^", "c3v", "a3v", "c1^")


def test_third_occurrence_draws() -> None:
    state = start(position="o../.../..x")
    state = play(state, *CYCLE)
    assert board(state) == "o../.../..x" and engine.outcome(state) is None
    assert "occurred twice" in engine.render_text(state)
    state = play(state, *CYCLE[:3])
    assert engine.outcome(state) is None
    state = play(state, CYCLE[3])
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (DRAW, DRAW) and "repetition" in outcome.reason
    check_round_trip(engine, state)


def test_no_legal_push_loses() -> None:
    state = start(position="xxx/x.x/xxx")
    assert engine.to_move(state) == frozenset()
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == (LOSS, WIN) and "no legal push" in outcome.reason


# -- options ---------------------------------------------------------------------------------------


def test_option_defaults() -> None:
    assert engine.options.load({}) == {"size": 5, "placements": 4, "position": None}
    assert engine.options.load({"size": 3}) == {"size": 3, "placements": 2, "position": None}
    loaded = engine.options.load({"position": " .X./o.x/.O. "})
    assert loaded == {"size": 3, "placements": 2, "position": ".x./o.x/.o."}


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"size": 6}, "size", "3, 4 or 5"),
        ({"size": 3, "placements": 3}, "placements", "at most 2"),
        ({"placements": 0}, "placements", "at least 1"),
        ({"size": 4, "position": ".../.../..."}, "size", "3x3 but size is 4"),
        ({"position": "..../..../...."}, "position", "this one has 3 ranks, the first of 4 cells."),
        ({"position": "."}, "position", "this one has 1 rank, the first of 1 cell."),
        ({"position": "ab./.../..."}, "position", "Unknown piece letters"),
        ({"colour": "red"}, "colour", "Unknown field"),
    ],
)
def test_option_errors(raw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.options.load(raw)
    assert words in " ".join(info.value.messages[field])  # type: ignore[index]


def test_position_starts_in_the_push_phase() -> None:
    state = start(position="..../.ox./.xo./....")
    assert state.size == 4 and state.pushing and engine.to_move(state) == frozenset({0})
    assert all(move[-1] in "v^<>" for move in engine.moves(state, 0))


# -- rendering -------------------------------------------------------------------------------------


def test_render_text(rulings_position: State) -> None:
    text = engine.render_text(play(start(size=3, placements=2), "b3"), 1)
    assert "    a b c" in text and "3 | . X . | 3" in text and "1 | . . . | 1" in text
    assert "Placement phase: X (seat 2) to place an O cube." in text
    assert "Placements still to make: O 1, X 2." in text
    pushing = engine.render_text(rulings_position)
    assert "2 | O . X | 2" in pushing and "Push phase: O (seat 1) to push." in pushing
    assert "Last move: X placed an O cube on b1." in pushing
    for text in (pushing, engine.render_text(start())):
        assert text.isascii() and max(len(line) for line in text.splitlines()) <= 72


def test_svg_marks_placement_cells() -> None:
    state = play(start(size=3, placements=2), "b3")
    assert sorted(targets(engine.render_svg(state, 1))) == engine.moves(state, 1)
    assert targets(engine.render_svg(state, 0)) == []
    assert targets(engine.render_svg(state)) == []


def test_svg_marks_push_arrows(rulings_position: State) -> None:
    svg = engine.render_svg(rulings_position, 0)
    marked = targets(svg)
    assert sorted(marked) == sorted(RULINGS_PUSHES) and len(marked) == 10
    root = ET.fromstring(svg)
    assert all(el.get("class") == "target" for el in root.iter() if el.get("data-move"))
    labels = {el.text for el in root.iter(f"{SVG}text")}
    assert {"a", "b", "c", "1", "2", "3"} <= labels
    assert targets(engine.render_svg(rulings_position)) == []
    over = play(start(position=".../oo./..."), "a2>")
    assert targets(engine.render_svg(over, 1)) == []
    assert "wins" in (ET.fromstring(engine.render_svg(over)).find(f"{SVG}title").text or "")  # type: ignore[union-attr]


# -- protocol --------------------------------------------------------------------------------------


def test_metadata() -> None:
    check_metadata(engine)
    assert engine.players == range(2, 3) and engine.simultaneous is False
    for word in ("a3v", "placements", "third time", "no legal push"):
        assert word in engine.help


@pytest.mark.parametrize("size", [3, 4, 5])
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_playout(size: int, seed: int) -> None:
    check_playout(engine, 2, {"size": size}, seed)


@given(seed=st.integers(0, 2**32 - 1), placements=st.integers(1, 10))
@settings(max_examples=40, deadline=None)
def test_playout_placements(seed: int, placements: int) -> None:
    check_playout(engine, 2, {"size": 5, "placements": placements}, seed)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_playout_from_position(seed: int) -> None:
    check_playout(engine, 2, {"position": "o.../.x../..o./...x"}, seed)
