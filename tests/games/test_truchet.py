"""Truchet: the rule sheet's examples in constructed positions, the docs/RULES.md vectors, notation,
refusals, options, rendering, and random playouts with invariants checked after every move."""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from itertools import combinations, combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from games import IllegalMove
from games.truchet import (
    DARK,
    LIGHT,
    TruchetState,
    engine,
    geometry,
    pieces_per_side,
    position_state,
)
from tests.games.protocol import check_metadata, check_playout

SVG = "{http://www.w3.org/2000/svg}"


def tiles(n: int, fill: str = "d", **bits: str) -> str:
    """A written tile layout: every tile ``fill`` except the named ones (``d5="l"``)."""
    rows = []
    for r in reversed(range(n)):
        rows.append("".join(bits.get(f"{chr(97 + f)}{r + 1}", fill) for f in range(n)))
    return "/".join(rows)


def at(state: TruchetState, name: str) -> int:
    """The signed stack on a junction (Dark positive)."""
    return state.stacks[geometry(state.size).index[name]]


def pieces(state: TruchetState, seat: int) -> int:
    sign = 1 if seat == DARK else -1
    return sum(abs(v) for v in state.stacks if v * sign > 0)


def refusal(state: TruchetState, seat: int, text: str) -> str:
    with pytest.raises(IllegalMove) as info:
        engine.play(state, seat, text)
    return info.value.message


def stack_part(move: str) -> str:
    """The stack move without a leading flip."""
    return move.split(" ", 1)[1] if move.startswith("^") else move


# ---------------------------------------------------------------------------------- rulings and setup


def test_metadata() -> None:
    check_metadata(engine)
    assert engine.players == range(2, 3) and engine.simultaneous is False
    for word in ("c3-e5", "c3>nne", "d4<ws", "b2-c4,d4<ws", "c1-c3>nne", "^f6 c3-e5", "c3=l", "random",
                 "alternate", "position", "third occurrence"):
        assert word in engine.help


def test_junction_colours_follow_the_parity_diagram() -> None:
    geo = geometry(7)
    assert not geo.light[geo.index["a1"]] and not geo.light[geo.index["h8"]]
    assert geo.light[geo.index["a8"]] and geo.light[geo.index["b1"]]
    # The sheet's diagram, top rank first: "- + - + ..." with - light.
    top = "".join("-" if geo.light[geo.index[f"{f}8"]] else "+" for f in "abcdefgh")
    assert top == "-+-+-+-+"


@pytest.mark.parametrize(("size", "count"), [(5, 6), (7, 12), (9, 20)])
def test_pieces_per_side(size: int, count: int) -> None:
    state = engine.new(2, engine.options.load({"size": size}), 1)
    assert pieces_per_side(size) == count
    assert pieces(state, DARK) == pieces(state, LIGHT) == count
    assert all(abs(v) <= 1 for v in state.stacks)


def test_seven_by_seven_setup() -> None:
    state = engine.new(2, engine.options.load({}), 7)
    geo = geometry(7)
    for name, i in geo.index.items():
        rank = int(name[1:])
        v = state.stacks[i]
        if rank <= 3 and not geo.light[i]:
            assert v == 1, name
        elif rank >= 6 and geo.light[i]:
            assert v == -1, name
        else:
            assert v == 0, name
    assert engine.to_move(state) == {DARK}
    assert engine.moves(state, LIGHT) == []


def test_random_tiles_come_from_the_seed() -> None:
    options = engine.options.load({})
    assert engine.new(2, options, 5).tiles == engine.new(2, options, 5).tiles
    assert len({engine.new(2, options, seed).tiles for seed in range(5)}) == 5
    assert set(engine.new(2, options, 5).tiles) == {"l", "d"}


def test_position_sets_the_tiles_and_the_size() -> None:
    options = engine.options.load({"position": "ldl/dld/llL"})
    assert options["size"] == 3
    state = engine.new(2, options, 0)
    assert engine.dump(state)["tiles"] == "ldl/dld/lll"
    assert state.tiles[:3] == "lll" and state.tiles[6:] == "ldl"  # rank 1 first inside


# --------------------------------------------------------------------------------------------- options


def test_option_defaults() -> None:
    assert engine.options.load({}) == {"size": 7, "tiles": "random", "position": None}


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"size": 6}, "odd"),
        ({"size": 13}, "from 3 to 11"),
        ({"size": 1}, "from 3 to 11"),
        ({"tiles": "spiral"}, "random"),
        ({"position": "ld/dl/ll"}, "square"),
        ({"position": "lxl/dld/ldl"}, "piece letters"),
        ({"position": "ldl/dld/ldl", "size": 5}, "3 ranks"),
        ({"position": "ldl/dld/ldl", "tiles": "alternate"}, "alternate"),
    ],
)
def test_bad_options_are_explained(raw: dict, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        engine.options.load(raw)
    assert words in str(info.value.messages)


# -------------------------------------------------------------------------------- alternate tile setting


def test_alternate_setup_light_first_and_last_centre_last() -> None:
    state = engine.new(2, engine.options.load({"size": 3, "tiles": "alternate"}), 0)
    assert engine.to_move(state) == {LIGHT}
    first = engine.moves(state, LIGHT)
    assert len(first) == 16 and "b2=l" not in first and "a1=d" in first
    assert "centre" in refusal(state, LIGHT, "b2=l")
    assert "tile setting" in refusal(state, LIGHT, "a1-b2")
    assert "not your turn" in refusal(state, DARK, "a1=l")
    order = ["a1", "c1", "a3", "c3", "b1", "a2", "c2", "b3"]
    for k, tile in enumerate(order):
        seat = LIGHT if k % 2 == 0 else DARK
        assert engine.to_move(state) == {seat}
        state = engine.play(state, seat, f" {tile.upper()} = D ")
        assert state.last == f"{tile}=d"
    assert "already set" in refusal(state, LIGHT, "a1=l")
    assert engine.moves(state, LIGHT) == ["b2=d", "b2=l"]
    state = engine.play(state, LIGHT, "b2=light")
    assert state.tiles == "d" * 4 + "l" + "d" * 4
    assert engine.to_move(state) == {DARK}
    assert engine.moves(state, DARK) and all("=" not in m for m in engine.moves(state, DARK))
    assert "all set" in refusal(state, DARK, "a1=l")


# ------------------------------------------------------------------------------------ the sheet's examples


def test_merge_capture_on_an_enemy_junction() -> None:
    # The Light 3-stack stands on d4, a Dark junction: three Dark pieces merging into a 3-stack take it.
    state = position_state(tiles(7), "d4=l3 c4=d1 d5=d1 e4=d1 a8=l1", DARK)
    assert "d4<new" in engine.moves(state, DARK)
    after = engine.play(state, DARK, "d4 < wen")
    assert at(after, "d4") == 3 and at(after, "c4") == at(after, "d5") == at(after, "e4") == 0
    assert pieces(after, LIGHT) == 1 and pieces(after, DARK) == 3
    assert refusal(state, DARK, "d4<nw") == "A 2-stack cannot capture the 3-stack on d4: it is taller."
    assert "d4<nw" not in engine.moves(state, DARK)


def test_stack_on_a_friendly_junction_needs_a_taller_capturer() -> None:
    # A Light 3-stack on a Light junction: three Dark pieces are not enough, four are.
    state = position_state(tiles(7), "c4=l3 b4=d1 c5=d1 d4=d1 c3=d1 a8=l1", DARK)
    moves = engine.moves(state, DARK)
    assert "c4<nesw" in moves and "c4<nes" not in moves
    message = refusal(state, DARK, "c4<nes")
    assert message.startswith("A 3-stack cannot capture the 3-stack on c4: it stands on a Light junction")
    assert at(engine.play(state, DARK, "c4<nesw"), "c4") == 4


def test_split_capture_counts_the_landing_stack_not_the_source() -> None:
    # Light 3-stack on c4; a Dark 1-stack on c5 and a Dark 2-stack on d4, both on Dark junctions.
    state = position_state(tiles(7), "c4=l3 c5=d1 d4=d2 a1=d1", LIGHT)
    moves = {stack_part(m) for m in engine.moves(state, LIGHT)}
    assert "c4>nns" in moves and "c4>nnw" in moves
    after = engine.play(state, LIGHT, "c4>snn")
    assert at(after, "c5") == -2 and at(after, "c3") == -1 and pieces(after, DARK) == 3
    # The Dark 2-stack is on a friendly junction: a 2-stack split off a 3-stack cannot take it.
    assert "c4>nee" not in moves and "c4>ees" not in moves
    assert refusal(state, LIGHT, "c4>ees") == (
        "A 2-stack cannot capture the 2-stack on d4: it stands on a Dark junction, its owner's colour, "
        "so only a taller stack can take it."
    )
    assert "A 1-stack cannot capture the 1-stack on c5" in refusal(state, LIGHT, "c4>nee")


def test_split_capture_on_an_enemy_junction_by_the_same_height() -> None:
    # A Light 2-stack on the Dark junction d4 splits; one piece takes the Dark piece on the Light d5.
    state = position_state(tiles(7), "d4=l2 d5=d1 a1=d1", LIGHT)
    after = engine.play(state, LIGHT, "d4>en")
    assert after.last == "d4>ne" and at(after, "d5") == -1 and at(after, "e4") == -1 and at(after, "d4") == 0


def test_mutual_threats() -> None:
    # Whoever moves next can take an enemy piece with a merge.
    layout = "c4=d1 e4=d1 d5=l1 d3=l1 a1=d1 a8=l1"
    for seat, capture in ((DARK, "d4<ew"), (LIGHT, "d4<ns")):
        state = position_state(tiles(7), layout + (" d4=l1" if seat == DARK else " d4=d1"), seat)
        assert capture in engine.moves(state, seat)


def test_trapped_four_stack_is_forced_to_split_and_becomes_vulnerable() -> None:
    # All bands Dark: no Light junction is joined to another, so the Light 4-stack on c4 cannot step.
    state = position_state(tiles(7), "c4=l4 c6=d1 b5=d1 a1=d1", LIGHT)
    moves = engine.moves(state, LIGHT)
    assert moves and all(stack_part(m).startswith("c4>") for m in moves)
    assert "c4-" not in " ".join(moves)
    after = engine.play(state, LIGHT, "c4>nnee")
    # The 2-stack on c5 stands on a Dark junction, so two Dark pieces merging take it.
    assert "c5<nw" in engine.moves(after, DARK)
    assert at(engine.play(after, DARK, "c5<nw"), "c5") == 2


def test_flip_step_merge() -> None:
    # Light's 2-stack a on c4 and piece b on f7; the Dark 2-stack on d4 looks safe: b's region is only
    # f7-e6.  Flipping tile d5 joins e6 to d5, and d5 to e4 and d3, the junctions next to d4.
    layout = tiles(7, e6="l", d4="l", d3="l")
    state = position_state(layout, "c4=l2 f7=l1 d4=d2 a1=d1", LIGHT)
    moves = engine.moves(state, LIGHT)
    assert not any("d4<" in m for m in moves if not m.startswith("^"))
    captures = sorted(m for m in moves if "d4<" in m)
    assert captures == ["^d5 f7-d3,d4<sw", "^d5 f7-d5,d4<nw", "^d5 f7-e4,d4<ew"]
    assert refusal(state, LIGHT, "f7-d5,d4<nw") == (
        "d5 is not in the region of f7. From f7 you can step to e6."
    )
    after = engine.play(state, LIGHT, "^D5  F7-E4 , D4<WE")
    assert after.last == "^d5 f7-e4,d4<ew"
    assert at(after, "d4") == -3 and pieces(after, DARK) == 1
    assert after.tiles != state.tiles


# ----------------------------------------------------------------------------------------- other rules


def test_region_refusals_name_the_flip() -> None:
    # Dark junctions are isolated except c3-d4-e5, joined by the Dark bands of tiles c3 and d4.
    layout = tiles(7, "l", c3="d", d4="d")
    state = position_state(layout, "c3=d1 a8=l1", DARK)
    assert "c3-e5" in engine.moves(state, DARK)
    assert refusal(state, DARK, "^d4 c3-e5") == (
        "e5 is not in the region of c3 after that flip. From c3 you can step to d4."
    )
    blocked = position_state(layout, "c3=d1 d4=l1 g1=d2 a8=l1", DARK)
    assert "block the way" in refusal(blocked, DARK, "c3-e5")
    assert "no region joins them" in refusal(state, DARK, "c3-c4")


def test_flip_refused_when_pinned() -> None:
    state = position_state(tiles(7), "c3=d1 a8=l1", DARK)
    assert refusal(state, DARK, "^b2 c3-d4") == (
        "Tile b2 cannot be flipped: the stack on c3 pins it (a tile flips only when none of its four "
        "corners holds a stack)."
    )
    assert not any(m.startswith(("^b2 ", "^c3 ", "^b3 ", "^c2 ")) for m in engine.moves(state, DARK))
    assert "followed by a stack move" in refusal(state, DARK, "^e5")


def test_height_limit() -> None:
    state = position_state(tiles(7), "c4=d3 d5=d2 e4=d1 a8=l1", DARK)
    moves = engine.moves(state, DARK)
    assert "d4<ne" in moves and "d4<nw" not in moves and "d4<new" not in moves
    assert "5-stack" in refusal(state, DARK, "d4<nw")


def test_step_refusals() -> None:
    state = position_state(tiles(7), "c3=d1 d4=d1 e5=l1 a8=l1", DARK)
    assert "not your turn" in refusal(state, LIGHT, "e5-f6")
    assert "empty junction" in refusal(state, DARK, "c3-d4")
    assert "no stack of yours" in refusal(state, DARK, "e5-f6")
    assert "no stack of yours" in refusal(state, DARK, "b3-c4")
    assert "junctions run from a1 to h8" in refusal(state, DARK, "c3-j9")
    assert "is not a Truchet move" in refusal(state, DARK, "c3 to d4")


def test_split_and_merge_refusals() -> None:
    state = position_state(tiles(7), "a1=d3 c3=d1 b3=d1 e5=l1 a8=l1", DARK)
    assert "single piece" in refusal(state, DARK, "c3>ne")
    assert "3 letters" in refusal(state, DARK, "a1>ne")
    assert "at least two directions" in refusal(state, DARK, "a1>nnn")
    assert "board's edge" in refusal(state, DARK, "a1>nws")
    assert "not a direction" in refusal(state, DARK, "a1>nex")
    assert "repeats a direction" in refusal(state, DARK, "b4<ss")
    assert "names one" in refusal(state, DARK, "c4<s")
    assert "your own" in refusal(state, DARK, "c3<ws")
    assert "must then merge" in refusal(state, DARK, "c3-e3,c4<sw")


def test_no_pieces_loses() -> None:
    state = position_state(tiles(7), "d4=l3 c4=d1 d5=d1 e4=d1", DARK)
    after = engine.play(state, DARK, "d4<new")
    outcome = engine.outcome(after)
    assert outcome is not None and outcome.results == ("win", "loss")
    assert "Light has no pieces left" in outcome.reason
    assert engine.to_move(after) == frozenset() and engine.moves(after, LIGHT) == []
    assert "over" in refusal(after, LIGHT, "a1-b2")


def test_no_stack_move_loses_even_with_flips_left() -> None:
    state = position_state(tiles(7), "c4=l1 a1=d1", LIGHT)
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == ("win", "loss")
    assert "Light cannot move a stack" in outcome.reason


def test_threefold_repetition_is_a_draw() -> None:
    layout = tiles(5, a5="l")  # joins a6 and b5 for Light; Dark's a1-b2 is joined by the band of a1
    state = position_state(layout, "a1=d1 a6=l1", DARK)
    shuffle = [(DARK, "a1-b2"), (LIGHT, "a6-b5"), (DARK, "b2-a1"), (LIGHT, "b5-a6")] * 2
    for k, (seat, move) in enumerate(shuffle):
        assert engine.outcome(state) is None, k
        state = engine.play(state, seat, move)
    outcome = engine.outcome(state)
    assert outcome is not None and outcome.results == ("draw", "draw")
    assert "three times" in outcome.reason


def test_capture_clears_the_repetition_history() -> None:
    state = position_state(tiles(7), "d4=l1 c4=d1 d5=d1 a8=l1", DARK)
    assert len(engine.play(state, DARK, "d4<nw").history) == 1


def test_forgiving_input_gives_canonical_moves() -> None:
    state = position_state(tiles(7, "l", c3="d", d4="d"), "c3=d2 c1=d1 a8=l1", DARK)
    for text, canonical in [
        ("C3 - D4", "c3-d4"),
        ("c3>EN", "c3>ne"),
        ("  ^G7   c3 - d4 ", "^g7 c3-d4"),
        ("c1-c1>nn", None),
        ("c2 < SN", "c2<ns"),
    ]:
        if canonical is None:
            assert refusal(state, DARK, text)
            continue
        assert engine.play(state, DARK, text).last == canonical
        assert canonical in engine.moves(state, DARK)


def test_pre_step_split() -> None:
    state = position_state(tiles(7, "l", c3="d", d4="d"), "c3=d2 a8=l1", DARK)
    moves = engine.moves(state, DARK)
    assert "c3-e5>nw" in moves and "c3-e5>ns" in moves
    after = engine.play(state, DARK, "c3-e5 > wn")
    assert at(after, "e6") == 1 and at(after, "d5") == 1 and at(after, "c3") == 0


def test_moves_are_unique_and_listed_in_blocks() -> None:
    state = engine.new(2, engine.options.load({}), 3)
    moves = engine.moves(state, DARK)
    assert len(moves) == len(set(moves)) > 100
    plain = [m for m in moves if not m.startswith("^")]
    assert plain == sorted(plain) and moves[: len(plain)] == plain


# ------------------------------------------------------------------------------------------- rendering


def test_render_text() -> None:
    state = position_state(tiles(7, c3="l"), "c3=d2 e5=l3 a8=l1", DARK)
    text = engine.render_text(state)
    lines = text.splitlines()
    assert all(len(line) <= 72 and line.isascii() for line in lines)
    assert lines[0].split() == list("abcdefgh")
    assert lines[1].startswith("  8  L1  +   -") and lines[1].endswith("  8")
    assert lines[2].endswith("    7")  # The tile rank, in its own column.
    assert lines[1 + 2 * 7].startswith("  1  +   -") and lines[2 + 2 * 7].split() == list("abcdefg")
    assert re.search(r"^  3  .*D2", text, re.M) and re.search(r"^  5  .*L3", text, re.M)
    assert "Dark (seat 1) to move" in text and "D2 = Dark 2-stack" in text
    # Tile a1 (Dark band) joins the Dark junctions a1 and b2: a / between them.
    rank2 = lines.index(next(line for line in lines if line.startswith("  2  ")))
    assert lines[rank2 + 1][5:9] == "  / "
    # Tile c3 (Light band) joins the Light junctions c4 and d3: a backslash.
    rank4 = lines.index(next(line for line in lines if line.startswith("  4  ")))
    assert lines[rank4 + 1][13:17] == "  \\ "
    # Every tile row has exactly one band per tile.
    assert all(len(re.findall(r"[/\\]", lines[2 + 2 * r])) == 7 for r in range(7))


def test_render_text_nine_fits_a_mail() -> None:
    state = engine.new(2, engine.options.load({"size": 9}), 2)
    assert max(len(line) for line in engine.render_text(state).splitlines()) <= 72


def fragments(moves: list[str]) -> set[str]:
    out: set[str] = set()
    for m in moves:
        out.update(re.findall(r"\^[a-z]\d+|(?<!\^)\b[a-z]\d+", m.split("=")[0]))
    return out


def test_render_svg_marks_exactly_the_legal_fragments() -> None:
    state = engine.new(2, engine.options.load({"size": 5}), 4)
    svg = engine.render_svg(state, DARK)
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg" and root.get("role") == "img"
    title = root.find(SVG + "title")
    assert title is not None and "Truchet" in (title.text or "")
    assert root.get("aria-labelledby") == title.get("id")
    marked = [el for el in root.iter() if el.get("data-move")]
    assert all(el.get("class") == "target" for el in marked)
    # The fragments the moves name, and the merges' source stacks, which they do not (clicked as spelled).
    moves = engine.moves(state, DARK)
    spelled = engine.click_spellings(state, DARK, moves)
    assert {el.get("data-move") for el in marked} == fragments([*moves, *spelled.values()])
    assert spelled and all("<" in move and ">" in spelled[move] for move in spelled)
    assert len(marked) == len({el.get("data-move") for el in marked})
    for other in (None, LIGHT):
        quiet = ET.fromstring(engine.render_svg(state, other))
        assert not [el for el in quiet.iter() if el.get("data-move")]
    arcs = [el for el in root.iter(SVG + "path") if " A30.0 30.0 0 0 " in (el.get("d") or "")]
    assert len(arcs) == 4 * 25  # two quarter-circle caps per tile, each filled and inked


def test_render_svg_setting_phase_marks_tiles() -> None:
    state = engine.new(2, engine.options.load({"size": 3, "tiles": "alternate"}), 0)
    root = ET.fromstring(engine.render_svg(state, LIGHT))
    marked = {el.get("data-move") for el in root.iter() if el.get("data-move")}
    assert marked == {"a1", "b1", "c1", "a2", "c2", "a3", "b3", "c3"}


# ------------------------------------------------------------------------------------------ properties


def regions(state: TruchetState) -> list[set[int]]:
    """Regions found independently: same-colour tile corners joined through bands of their colour."""
    geo = geometry(state.size)
    parent = list(range(geo.width ** 2))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for t, (light_pair, dark_pair) in enumerate(geo.pairs):
        a, b = light_pair if state.tiles[t] == "l" else dark_pair
        parent[find(a)] = find(b)
    found: dict[int, set[int]] = {}
    for i in range(len(parent)):
        found.setdefault(find(i), set()).add(i)
    return list(found.values())


def check_invariants(before: TruchetState, after: TruchetState, seat: int) -> None:
    geo = geometry(after.size)
    assert len(after.stacks) == geo.width ** 2  # every stack is on a junction
    assert all(abs(v) <= 4 for v in after.stacks)
    assert pieces(after, seat) == pieces(before, seat)
    captured = sum(
        abs(b) for b, a in zip(before.stacks, after.stacks, strict=True) if b * a < 0
    )
    assert pieces(after, 1 - seat) == pieces(before, 1 - seat) - captured
    found = regions(after)
    assert sum(len(r) for r in found) == geo.width ** 2
    assert set().union(*found) == set(range(geo.width ** 2))
    assert all(len({geo.light[i] for i in r}) == 1 for r in found)


@pytest.mark.parametrize("size", [3, 5])
@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=8, deadline=None)
def test_playout_small(size: int, seed: int) -> None:
    check_playout(engine, 2, {"size": size}, seed)
    check_playout(engine, 2, {"size": size, "tiles": "alternate"}, seed)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=3, deadline=None)
def test_playout_seven(seed: int) -> None:
    check_playout(engine, 2, {}, seed)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=1, deadline=None)
def test_playout_nine_alternate(seed: int) -> None:
    check_playout(engine, 2, {"size": 9, "tiles": "alternate"}, seed, refuse_every=50)


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=6, deadline=None)
def test_invariants_after_every_move(seed: int) -> None:
    rng = random.Random(seed)
    state = engine.new(2, engine.options.load({"size": rng.choice([3, 5, 7])}), seed)
    while engine.outcome(state) is None:
        seat = state.turn
        moves = engine.moves(state, seat)
        move = rng.choice(moves)
        after = engine.play(state, seat, move)
        assert after.last == move
        check_invariants(state, after, seat)
        state = after


def candidate_moves(state: TruchetState, rng: random.Random, prefix: str) -> list[str]:
    """Well-formed move strings, legal or not: every step, split and merge, and pre-steps of two stacks."""
    geo = geometry(state.size)
    sign = 1 if state.turn == DARK else -1
    own = [i for i, v in enumerate(state.stacks) if v * sign > 0]
    subsets = ["".join(c) for k in range(1, 5) for c in combinations("nesw", k)]

    def splits(h: int) -> list[str]:
        return ["".join(c) for c in combinations_with_replacement("nesw", h)]

    out = []
    for s in own:
        out += [f"{geo.names[s]}-{t}" for t in geo.names]
        out += [f"{geo.names[s]}>{x}" for x in splits(abs(state.stacks[s]))]
    out += [f"{d}<{x}" for d in geo.names for x in subsets]
    for s in rng.sample(own, min(2, len(own))):
        for t in geo.names:
            head = f"{geo.names[s]}-{t}"
            out += [f"{head}>{x}" for x in splits(abs(state.stacks[s]))]
            out += [f"{head},{geo.names[d]}<{x}" for _, d in geo.orth[geo.index[t]] for x in subsets]
    return [prefix + m for m in out]


def random_position(rng: random.Random, n: int) -> TruchetState:
    """Random tiles and a random scatter of stacks of both sides, heights 1 to 4."""
    layout = "/".join("".join(rng.choice("ld") for _ in range(n)) for _ in range(n))
    geo = geometry(n)
    spots = rng.sample(geo.names, rng.randrange(6, 16))
    stacks = " ".join(f"{name}={'dl'[k % 2]}{rng.choice([1, 1, 2, 2, 3, 4])}" for k, name in enumerate(spots))
    return position_state(layout, stacks, rng.choice([DARK, LIGHT]))


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=6, deadline=None)
def test_play_accepts_exactly_the_listed_moves(seed: int) -> None:
    rng = random.Random(seed)
    state = random_position(rng, 5)
    if engine.outcome(state) is not None:
        return
    seat = state.turn
    legal = engine.moves(state, seat)
    for move in legal:
        assert engine.play(state, seat, move).last == move
    listed = set(legal)
    flips = sorted({m.split()[0] for m in legal if m.startswith("^")})
    for prefix in ["", *(f"{f} " for f in rng.sample(flips, min(1, len(flips))))]:
        for text in candidate_moves(state, rng, prefix):
            try:
                engine.play(state, seat, text)
            except IllegalMove as exc:
                assert text not in listed, (text, exc.message)
                assert exc.message
            else:
                assert text in listed, text


def test_merges_are_spelled_as_clicked_on_their_sources_and_target() -> None:
    state = engine.new(2, engine.options.load({"size": 5}), 1)
    spelled = engine.click_spellings(state, DARK, engine.moves(state, DARK))
    assert spelled["b1<ew"] == "c1,a1>b1"  # a1 and c1, which can step nowhere, merge onto b1
    assert spelled["b2-c3,c2<ne"] == "b2-c3,d2>c2"  # b2 steps to c3, the landing first
    assert spelled["^a3 b1<new"] == "^a3 b2,c1,a1>b1"
    assert all("<" in move for move in spelled)
