"""Carreaux: the rulings' test vectors (docs/RULES.md), the tables against the plain search, refusals,
options, the stuck and no-repeat rulings, rendering, and random playouts through the shared protocol
checks."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from games import IllegalMove, carreaux
from games.carreaux import engine, group_value, pair_value, slide_distance, slide_distance_bfs
from games.coords import cell_name
from tests.games.protocol import check_metadata, check_playout, check_round_trip

SVG = "{http://www.w3.org/2000/svg}"


def start(**raw: object) -> carreaux.State:
    return engine.new(2, engine.options.load(raw), 0)


# --- the rulings' vectors ------------------------------------------------------------------------------

PAIRS_6X6_BUBBLE_F6 = [
    ("a1", "a3", 10),
    ("a1", "f1", 22),
    ("a1", "c3", 14),
    ("a1", "e5", 22),
    ("c6", "e6", 5),
    ("b5", "e2", 17),
    ("a6", "f1", 29),
]


@pytest.mark.parametrize(("a", "b", "value"), PAIRS_6X6_BUBBLE_F6)
def test_rulings_pair_values(a: str, b: str, value: int) -> None:
    assert pair_value(6, "f6", a, b) == value
    assert pair_value(6, "f6", b, a) == value
    assert min(slide_distance_bfs(6, "f6", a, b), slide_distance_bfs(6, "f6", b, a)) == value


def test_rulings_slide_distance_is_directional() -> None:
    assert slide_distance(6, "f6", "a1", "f1") == 25
    assert slide_distance(6, "f6", "f1", "a1") == 22
    assert slide_distance_bfs(6, "f6", "a1", "f1") == 25
    assert slide_distance_bfs(6, "f6", "f1", "a1") == 22


def test_touching_tiles_are_zero_apart() -> None:
    assert slide_distance(6, "f6", "a1", "a2") == 0
    assert pair_value(6, "f6", "c3", "d3") == 0


def test_rulings_default_start() -> None:
    state = start()
    board = {cell_name(carreaux._cell(i, 6)): c for i, c in enumerate(state.board)}
    reds = ["a1", "a3", "a5", "b2", "b4", "b6", "c1", "c3", "c5"]
    assert sorted(k for k, v in board.items() if v == "r") == reds
    blues = ["d2", "d4", "d6", "e1", "e3", "e5", "f2", "f4", "f6"]
    assert sorted(k for k, v in board.items() if v == "b") == blues
    assert [k for k, v in board.items() if v == "."] == ["a6"]
    assert engine.group_values(state) == (24, 48)
    assert group_value(6, "a6", reds) == 24
    assert engine.moves(state, 0) == ["a5", "b6"]
    for move in ("a5", "b6"):
        assert sum(engine.group_values(engine.play(state, 0, move))) == 62


def test_default_start_on_every_size() -> None:
    for size in (4, 8, 10):
        state = start(size=size)
        assert state.board.count("r") == state.board.count("b") == size * size // 4
        assert state.board[(size - 1) * size] == "."  # the top-left corner
        assert engine.moves(state, 0)


# --- the tables against the plain search -----------------------------------------------------------


def test_tables_match_plain_search_everywhere_on_4x4() -> None:
    cells = [(f, r) for r in range(4) for f in range(4)]
    for bubble in cells:
        for a in cells:
            for b in cells:
                if len({bubble, a, b}) == 3:
                    assert slide_distance(4, bubble, a, b) == slide_distance_bfs(4, bubble, a, b)


@pytest.mark.parametrize(("size", "samples"), [(6, 300), (8, 40), (10, 10)])
def test_tables_match_plain_search_on_random_triples(size: int, samples: int) -> None:
    rng = random.Random(size)
    for _ in range(samples):
        bubble, a, b = rng.sample([(f, r) for f in range(size) for r in range(size)], 3)
        plain = (slide_distance_bfs(size, bubble, a, b), slide_distance_bfs(size, bubble, b, a))
        assert slide_distance(size, bubble, a, b) == plain[0]
        assert pair_value(size, bubble, a, b) == min(plain)


def test_symmetric_copies_equal_direct_searches() -> None:
    tables = carreaux.tables(6)
    for b in range(36):
        assert tables.distance[b] == carreaux._distances_to(6, b)


def test_tables_are_small() -> None:
    assert carreaux.tables(8).nbytes < 50 * 2**20


def test_pair_value_needs_three_cells() -> None:
    with pytest.raises(ValueError, match="different cells"):
        pair_value(6, "a1", "a1", "b3")


# --- moves, refusals and the end of the game -------------------------------------------------------


def test_refusals_name_the_reason_and_the_legal_moves() -> None:
    state = start()
    with pytest.raises(IllegalMove, match=r"b4 is not next to the bubble \(a6\); you can slide a5 or b6"):
        engine.play(state, 0, "b4")
    with pytest.raises(IllegalMove, match="a6 is the bubble itself"):
        engine.play(state, 0, "a6")
    with pytest.raises(IllegalMove, match="It is Red's turn, not Blue's"):
        engine.play(state, 1, "a5")
    with pytest.raises(IllegalMove, match="off the board"):
        engine.play(state, 0, "g7")
    with pytest.raises(IllegalMove, match="not a cell"):
        engine.play(state, 0, "slide a5")
    after = engine.play(state, 0, "a5")
    assert engine.moves(after, 1) == ["a4", "b5"]
    refusal = r"sliding a6 would not lower the total group value \(62 -> 72\); legal: a4 or b5"
    with pytest.raises(IllegalMove, match=refusal):
        engine.play(after, 1, "a6")


def test_input_is_forgiving() -> None:
    state = start()
    assert engine.play(state, 0, "  A5 ").board == engine.play(state, 0, "a5").board
    assert engine.play(state, 0, "a5").history == ("a5",)


def test_moves_only_for_the_seat_to_move() -> None:
    state = start()
    assert engine.moves(state, 1) == []
    assert engine.to_move(state) == frozenset({0})
    assert engine.to_move(engine.play(state, 0, "b6")) == frozenset({1})


def test_every_legal_move_lowers_the_total_under_the_sheets_rule() -> None:
    state = start(size=8, when_stuck="draw")
    rng = random.Random(3)
    while not state.over:
        total = sum(engine.group_values(state))
        bubble = state.bubble
        for tile in carreaux._neighbours(8)[bubble]:
            name = carreaux._name(tile, 8)
            after = sum(carreaux._values(8, carreaux._slide(state.board, bubble, tile)))
            assert (name in engine.moves(state, state.turn)) == (after < total)
        state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))


def test_sliding_your_own_tile_to_join_your_group_wins() -> None:
    state = start(position="gggg/gbr./gggr/gggb")
    assert engine.moves(state, 0) == ["c3", "d2"]
    won = engine.play(state, 0, "c3")
    assert engine.to_move(won) == frozenset()
    result = engine.outcome(won)
    assert result is not None and result.results == ("win", "loss")
    assert result.reason == "Red wins by joining all 2 red tiles into one group"
    with pytest.raises(IllegalMove, match="The game is over"):
        engine.play(won, 1, "c3")


def test_completing_the_opponents_group_makes_the_opponent_win() -> None:
    state = start(position="bggg/.grg/bggg/gggr")
    assert engine.moves(state, 0) == ["a2"]
    result = engine.outcome(engine.play(state, 0, "a2"))
    assert result is not None and result.results == ("loss", "win")
    assert "when Red slid a2" in result.reason


def test_group_value_zero_is_not_a_win() -> None:
    # A square block touches itself four times, so with one more tile apart, the N-1 = 4 smallest
    # pair values are all 0, yet the five tiles are not one group.
    tiles = ["a1", "a2", "b1", "b2", "d4"]
    assert group_value(4, "c1", tiles) == 0
    assert not carreaux._connected(4, tuple(carreaux._as_index(t, 4) for t in tiles))


def test_no_lowering_slide_is_a_draw_under_the_sheets_rule() -> None:
    state = start(size=4, when_stuck="draw")
    while not state.over:
        state = engine.play(state, state.turn, engine.moves(state, state.turn)[0])
    assert state.history == ("a3", "a2", "b2", "c2", "c3")
    result = engine.outcome(state)
    assert result is not None and result.results == ("draw", "draw")
    assert result.reason == "Drawn: Blue had no legal move (no slide lowers the total group value 5)"
    assert "/" not in result.reason  # no raw position in a result
    assert carreaux.written(state.board, 4) == "rrgb/gg.g/rgbb/rgbg"
    assert engine.to_move(state) == frozenset() and engine.moves(state, 1) == []


def test_a_stuck_start_is_drawn_at_once_under_the_sheets_rule() -> None:
    state = start(position="ggbg/grgg/gbg./gggr", when_stuck="draw")
    assert engine.to_move(state) == frozenset()
    result = engine.outcome(state)
    assert result is not None and "Red had no legal move" in result.reason
    assert "ggbg" not in result.reason
    rising = start(position="ggbg/grgg/gbg./gggr")
    assert engine.to_move(rising) == frozenset({0}) and engine.moves(rising, 0)


# --- when stuck, no repeated positions, the spanning group value ----------------------------------

STUCK_LINE = ["a5", "a4", "a3", "b3", "b2", "c2"]


def played(state: carreaux.State, moves: list[str]) -> carreaux.State:
    for move in moves:
        state = engine.play(state, state.turn, move)
    return state


def test_rulings_totals_along_the_line_to_the_first_stuck_position() -> None:
    state, totals = start(), []
    for move in STUCK_LINE:
        state = engine.play(state, state.turn, move)
        totals.append(sum(engine.group_values(state)))
    assert totals == [62, 59, 58, 46, 43, 36]
    assert engine.group_values(state) == (10, 26) and state.turn == 0
    after = {carreaux._name(t, 6): v for t, v in carreaux._choice(state).after.items()}
    assert after == {"c3": 36, "d2": 38, "c1": 41, "b2": 43}


def test_rulings_least_rise_allows_only_the_smallest_rise() -> None:
    state = played(start(), STUCK_LINE)
    assert engine.moves(state, 0) == ["c3"]
    assert engine.turn_note(state, 0) == (
        "No slide lowers the total group value (36), so the slides that raise it least are allowed: c3.")
    with pytest.raises(IllegalMove, match=r"no slide lowers the total group value \(36\), so only the slides "
                                          r"that raise it least \(to 36\) are allowed: c3; sliding d2 would "
                                          r"make it 38"):
        engine.play(state, 0, "d2")
    state = engine.play(state, 0, "c3")
    assert sum(engine.group_values(state)) == 36
    assert engine.moves(state, 1) == ["c4", "d3"]
    for move in ("c4", "d3"):
        assert sum(engine.group_values(engine.play(state, 1, move))) == 32
    assert engine.turn_note(state, 1) is None  # lowering slides again: the sheet's rule
    assert engine.turn_note(state, 0) is None  # not Red's turn


def test_rulings_the_sheets_rule_draws_at_the_same_point() -> None:
    state = played(start(when_stuck="draw"), STUCK_LINE)
    assert state.over and engine.to_move(state) == frozenset()
    result = engine.outcome(state)
    assert result is not None and result.results == ("draw", "draw")
    assert result.reason == "Drawn: Red had no legal move (no slide lowers the total group value 36)"
    assert engine.turn_note(state, 0) is None


def test_rulings_spanning_group_value_from_the_default_start() -> None:
    state = start(group_value="spanning")
    assert engine.group_values(state) == (32, 54)
    assert engine.moves(state, 0) == ["a5", "b6"]
    assert [sum(engine.group_values(engine.play(state, 0, m))) for m in ("a5", "b6")] == [72, 74]
    reds = ["a1", "a3", "a5", "b2", "b4", "b6", "c1", "c3", "c5"]
    assert group_value(6, "a6", reds, "spanning") == 32 and group_value(6, "a6", reds) == 24


def _kruskal(size: int, bubble: str, tiles: list[str]) -> int:
    """A minimum spanning tree's weight by Kruskal's algorithm, the reference for Prim's in the engine."""
    parent = {t: t for t in tiles}

    def root(t: str) -> str:
        while parent[t] != t:
            t = parent[t]
        return t

    total = 0
    for value, a, b in sorted((pair_value(size, bubble, a, b), a, b)
                              for i, a in enumerate(tiles) for b in tiles[i + 1:]):
        if root(a) != root(b):
            parent[root(a)] = root(b)
            total += value
    return total


def test_spanning_value_is_a_minimum_spanning_tree_and_zero_only_for_one_group() -> None:
    rng = random.Random(13)
    names = [cell_name((f, r)) for f in range(6) for r in range(6)]
    for _ in range(40):
        bubble, *tiles = rng.sample(names, 1 + rng.randint(2, 9))
        value = group_value(6, bubble, tiles, "spanning")
        assert value == _kruskal(6, bubble, tiles) >= group_value(6, bubble, tiles)
        connected = carreaux._connected(6, tuple(carreaux._as_index(t, 6) for t in tiles))
        assert (value == 0) == connected
    # The sheet's value is 0 for a block and a tile apart; the spanning value is not.
    assert group_value(4, "c1", ["a1", "a2", "b1", "b2", "d4"], "spanning") > 0


def test_sliding_straight_back_is_a_repeat() -> None:
    state = played(start(), [*STUCK_LINE, "c3", "c4"])  # Blue's c4 went to c3, the bubble is on c4
    choice = carreaux._choice(state)
    assert choice.repeats == {carreaux._as_index("c3", 6)}
    assert "c3" not in engine.moves(state, 0)
    assert engine.moves(played(start(when_stuck="draw"), ["a5"]), 1) == ["a4", "b5"]


def test_a_lowering_slide_that_repeats_is_barred_and_the_note_says_so() -> None:
    # Two plies that raise and then lower back: Red's only slide raises the total, Blue's slide back
    # would lower it to where it was, which is the first arrangement again.
    rng = random.Random(1)
    for seed in range(200):
        rng.seed(seed)
        state = start()
        while not state.over:
            note = engine.turn_note(state, state.turn)
            if note and "would repeat an earlier position" in note:
                choice = carreaux._choice(state)
                barred = [t for t in choice.repeats if choice.after[t] < choice.total]
                if barred and not choice.least_rise:
                    name = carreaux._name(barred[0], 6)
                    assert name in note and name not in engine.moves(state, state.turn)
                    with pytest.raises(IllegalMove, match=f"sliding {name} would repeat an earlier position"):
                        engine.play(state, state.turn, name)
                    return
            state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))
    raise AssertionError("no game met a lowering slide barred as a repeat")


def test_every_slide_repeating_is_a_draw() -> None:
    for seed in range(100):
        rng, state = random.Random(seed), start()
        while not state.over:
            state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))
        if state.stuck:
            break
    else:
        raise AssertionError("no drawn game in 100")
    choice = carreaux._choice(state)
    assert choice.legal == () and set(choice.after) == set(choice.repeats)
    result = engine.outcome(state)
    assert result is not None and result.results == ("draw", "draw")
    assert result.reason.endswith("had no legal move (every slide would repeat an earlier position)")


def test_most_random_games_end_with_a_winner() -> None:
    """The point of the rulings: under the defaults, random play on 6x6 mostly ends with a winner."""
    winners = 0
    for seed in range(100):
        rng, state = random.Random(seed), start()
        while not state.over:
            state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))
        winners += state.winner is not None
    assert winners >= 80


def test_games_from_before_the_options_keep_the_sheets_rules() -> None:
    """A dump written before when_stuck and group_value existed loads as a when_stuck=draw game, dumps
    back unchanged, and is what replaying its moves under when_stuck=draw gives, so `pbem verify` passes."""
    stored = {"size": 4, "board": "rrgb/gg.g/rgbb/rgbg", "history": ["a3", "a2", "b2", "c2", "c3"],
              "winner": None, "stuck": True}
    state = engine.load(stored)
    assert (state.when_stuck, state.group_value, state.seen) == ("draw", "smallest", frozenset())
    assert engine.dump(state) == stored
    replayed = played(start(size=4, when_stuck="draw", group_value="smallest"), stored["history"])
    assert engine.dump(replayed) == stored
    midway = {"size": 6, "board": ".rgbgb/rgrgbg/grgbgb/rgrgbg/grgbgb/rgrgbg", "history": [], "winner": None,
              "stuck": False}
    assert engine.moves(engine.load(midway), 0) == ["a5", "b6"]
    assert engine.dump(engine.load(midway)) == midway


def test_round_trip_keeps_the_options_and_the_arrangements_seen() -> None:
    state = played(start(group_value="spanning"), ["a5", "a4", "a3"])
    data = json.loads(json.dumps(engine.dump(state)))
    assert data["when_stuck"] == "least-rise" and data["group_value"] == "spanning"
    assert len(data["seen"]) == 4 and all(len(key) <= 18 for key in data["seen"])  # 2 bits a cell
    assert engine.load(data) == state


# --- options ---------------------------------------------------------------------------------------


def test_option_defaults() -> None:
    assert engine.options.load({}) == {"size": 6, "position": "", "when_stuck": "least-rise",
                                       "group_value": "smallest"}
    check_metadata(engine)
    assert engine.players == range(2, 3) and engine.simultaneous is False


@pytest.mark.parametrize(("raw", "message"), [
    ({"size": 5}, "4, 6, 8 or 10"),
    ({"size": 12}, "4, 6, 8 or 10"),
    ({"position": "rb./gggg"}, "Every rank must have 3 cells"),
    ({"position": "rrbb/gggg/gggg/gggg"}, "one bubble"),
    ({"position": "r.bb/gggg/gggg/gggg"}, "same number of tiles"),
    ({"position": "rbg/g.g/ggg"}, "3x3"),
    ({"position": "rrb./gggb/gggg/gggg"}, "Red's tiles already form one group"),
    ({"position": "rgbb/ggg./gggg/rggg"}, "Blue's tiles already form one group"),
    ({"position": "rgb./ggxg/gggg/bggr"}, "Unknown piece letters"),
    ({"position": "rgb./gggg/gggg/bggr", "size": 6}, "4x4 but the size asked for is 6"),
    ({"when_stuck": "pass"}, "when_stuck must be least-rise or draw"),
    ({"group_value": "largest"}, "group_value must be smallest or spanning"),
])
def test_bad_options_are_refused_with_a_reason(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.options.load(raw)
    assert message in json.dumps(info.value.messages)


def test_position_sets_the_size() -> None:
    options = engine.options.load({"position": " RGB./gggg/gggg/bggr "})
    assert options["size"] == 4 and options["position"] == "rgb./gggg/gggg/bggr"
    state = engine.new(2, options, 0)
    assert state.size == 4 and engine.dump(state)["board"] == "rgb./gggg/gggg/bggr"


# --- rendering -------------------------------------------------------------------------------------


def test_text_board() -> None:
    text = engine.render_text(start())
    lines = text.splitlines()
    assert all(len(line) <= 72 and line.isascii() for line in lines)
    assert "a  b  c  d  e  f" in text
    assert "  6  .  R  g  B  g  B  6" in lines
    assert "  1  R  g  R  g  B  g  1" in lines
    assert "Red 24, Blue 48, total 72" in text
    assert "Red (seat 1) to move" in text and "Red may slide: a5 b6" in text
    assert "R red" in text and "bubble" in text
    wide = engine.render_text(start(size=10)).splitlines()
    assert max(map(len, wide)) <= 72 and " 10 " in wide[5]


def _svg(state: carreaux.State, seat: int | None) -> ET.Element:
    return ET.fromstring(engine.render_svg(state, seat))


def test_svg_marks_exactly_the_legal_tiles() -> None:
    state = start()
    root = _svg(state, 0)
    title = root.find(f"{SVG}title")
    assert title is not None and "Carreaux 6x6" in (title.text or "")
    assert root.get("role") == "img" and root.get("aria-labelledby") == title.get("id")
    marked = [e for e in root.iter() if e.get("data-move")]
    assert sorted(e.get("data-move") for e in marked) == ["a5", "b6"]
    assert all(e.get("class") == "target" for e in marked)
    text = " ".join(e.text or "" for e in root.iter(f"{SVG}text"))
    assert "Red 24" in text and "Blue 48" in text
    assert {"a", "f", "1", "6"} <= set(text.split())
    fills = {e.get("fill") for e in root.iter(f"{SVG}rect")}
    assert {"#c62828", "#1565c0", "#2e7d32"} <= fills
    assert not [e for e in _svg(state, 1).iter() if e.get("data-move")]
    assert not [e for e in _svg(state, None).iter() if e.get("data-move")]


def test_svg_after_some_moves_matches_moves() -> None:
    state = start(size=8, when_stuck="draw")
    rng = random.Random(5)
    while not state.over:
        root = _svg(state, state.turn)
        assert sorted(e.get("data-move") for e in root.iter() if e.get("data-move")) == sorted(
            engine.moves(state, state.turn))
        state = engine.play(state, state.turn, rng.choice(engine.moves(state, state.turn)))
    assert not [e for e in _svg(state, state.turn).iter() if e.get("data-move")]


def test_help_states_the_rulings() -> None:
    for phrase in ("Figure 1", "Slide distance", "N-1 smallest", "draw", "mover wins", "a5",
                   "`when_stuck=draw` is the sheet's own rule", "`smallest` (default, the sheet's rule",
                   "minimum spanning tree", "No repeated positions", "raises the total least"):
        assert phrase in " ".join(engine.help.split()), phrase


# --- playouts --------------------------------------------------------------------------------------


def test_round_trip_mid_game() -> None:
    state = engine.play(start(), 0, "a5")
    check_round_trip(engine, state)
    assert engine.load(engine.dump(state)) == state


@pytest.mark.parametrize("size", [4, 6, 8, 10])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_playouts_under_the_sheets_rules(size: int, seed: int) -> None:
    options = {"size": size, "when_stuck": "draw"}
    state, record = check_playout(engine, 2, options, seed, refuse_every=1)
    assert engine.outcome(state) is not None
    assert len(record) <= sum(engine.group_values(start(**options)))  # each move lowers the total


@pytest.mark.parametrize(("size", "group_rule", "examples"), [
    (4, "smallest", 10), (6, "smallest", 10), (6, "spanning", 5), (8, "smallest", 2),
])
def test_playouts_under_the_defaults(size: int, group_rule: str, examples: int) -> None:
    for seed in range(examples):
        state, _ = check_playout(engine, 2, {"size": size, "group_value": group_rule}, seed, refuse_every=25)
        assert len(state.seen) == len(state.history) + 1  # no arrangement came twice


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_playouts_from_random_positions(seed: int) -> None:
    rng = random.Random(seed)
    when_stuck = rng.choice(["draw", "least-rise"])
    size = rng.choice([4, 6, 8] if when_stuck == "draw" else [4, 6])  # 8x8 games run long under least-rise
    for _ in range(100):
        cells = list(carreaux.default_board(size))
        rng.shuffle(cells)
        position = carreaux.written("".join(cells), size)
        try:
            engine.options.load({"position": position})
        except ValidationError:
            continue  # a group was already complete
        check_playout(engine, 2, {"position": position, "when_stuck": when_stuck}, seed, refuse_every=10)
        return


def _results(state: carreaux.State, seen: dict[tuple[str, int], set[str]]) -> set[str]:
    """Every result reachable from ``state``, memoised by position in ``seen``."""
    key = (state.board, state.turn)
    if key not in seen:
        found = {"draw"} if state.stuck else {f"win {state.winner}"} if state.over else set()
        for move in engine.moves(state, state.turn):
            found |= _results(engine.play(state, state.turn, move), seen)
        seen[key] = found
    return seen[key]


@pytest.mark.parametrize(("size", "positions"), [(4, 17), (6, 138)])
def test_every_line_from_the_default_start_is_drawn_under_the_sheets_rule(size: int, positions: int) -> None:
    """The finding behind the when_stuck ruling: taken literally, no line of play reaches a win.

    The whole game tree is small (every move lowers the total), so it is walked exhaustively.
    """
    seen: dict[tuple[str, int], set[str]] = {}
    assert _results(start(size=size, when_stuck="draw"), seen) == {"draw"}
    assert len(seen) == positions
