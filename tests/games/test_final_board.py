"""The final board of a game the server ended (a resignation, a loss on time, a draw agreed): the
engine's state still has a player to move, and drawn as over it must not say so.  For every engine, a
position with a mover drawn with ``over=True`` names no mover and offers no move, and keeps the board,
its legend and its counts; a game its own rules ended is drawn the same with or without it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

import games

SVG = "{http://www.w3.org/2000/svg}"

# What only a position with a mover says, in any engine: whose move it is, what may be played, and the
# hints on how to play it.
MOVER = re.compile(
    r"to move|to push|to place|sets a tile|may slide|can slide|Your move|To move|pairs can go|"
    r"Placements still|occurred twice|solving|Send one|This round|, playing"
)
# Status lines an over board words otherwise: the move count, the head of a game in progress.
REWORDED = re.compile(r"^Move \d+:|^Easy Slider - |^Others: ")


def position(slug: str, players: int, options: dict[str, Any], moves: int) -> tuple[games.Engine, Any]:
    """A game of ``slug`` after its first ``moves`` legal moves (the first listed, first mover first)."""
    engine = games.get(slug)
    state = engine.new(players, engine.options.load(options), 1)
    for _ in range(moves):
        seat = min(engine.to_move(state))
        state = engine.play(state, seat, engine.moves(state, seat)[0])
    assert engine.to_move(state) and engine.outcome(state) is None, "the position has a mover"
    return engine, state


POSITIONS = {
    "cambio placing": ("cambio", 2, {}, 1),
    "cambio pushing": ("cambio", 2, {"position": "o.o/.../xx."}, 1),
    "carreaux": ("carreaux", 2, {}, 1),
    "truchet moving": ("truchet", 2, {}, 1),
    "truchet setting tiles": ("truchet", 2, {"tiles": "alternate"}, 1),
    "box off alone": ("boxoff", 1, {}, 1),
    "box off with three": ("boxoff", 3, {}, 1),
    "easy slider alone": ("easyslider", 1, {}, 1),
    "easy slider with two": ("easyslider", 2, {}, 1),
}


@pytest.mark.parametrize("case", POSITIONS)
def test_a_board_drawn_as_over_names_no_mover(case: str) -> None:
    engine, state = position(*POSITIONS[case])
    for seat in (None, *range(POSITIONS[case][1])):
        playing = engine.render_text(state, seat)
        over = engine.render_text(state, seat, over=True)
        assert MOVER.search(playing), f"{case}, seat {seat}: the position shows no mover to leave out"
        assert not MOVER.search(over), f"{case}, seat {seat}:\n{over}"
        if seat is None and case == "box off with three":
            continue  # A spectator sees the deal while several play it, every board once it is over.
        # Everything else stays: the board with its coordinates, the legend, the counts, the last move.
        kept = [line for line in playing.splitlines() if not MOVER.search(line) and not REWORDED.search(line)]
        assert [line for line in over.splitlines() if line in kept] == kept, f"{case}, seat {seat}:\n{over}"


@pytest.mark.parametrize("case", POSITIONS)
def test_an_svg_board_drawn_as_over_names_no_mover_and_takes_no_move(case: str) -> None:
    engine, state = position(*POSITIONS[case])
    for seat in (None, *sorted(engine.to_move(state))):
        root = ET.fromstring(engine.render_svg(state, seat, over=True))
        assert not [e for e in root.iter() if e.get("data-move")], f"{case}, seat {seat}: a move target"
        words = " ".join(" ".join(e.itertext()) for e in root.iter(f"{SVG}title")) + " ".join(
            e.text or "" for e in root.iter(f"{SVG}text"))
        assert not MOVER.search(words), f"{case}, seat {seat}: {words}"


def ended(slug: str, players: int, options: dict[str, Any], moves: list[str]) -> tuple[games.Engine, Any]:
    """A game of ``slug`` its own rules ended, after ``moves`` (each by the seat to move)."""
    engine = games.get(slug)
    state = engine.new(players, engine.options.load(options), 1)
    for move in moves:
        state = engine.play(state, min(engine.to_move(state)), move)
    assert not engine.to_move(state) and engine.outcome(state) is not None
    return engine, state


ENDED = {
    "cambio": ("cambio", 2, {"position": "o.o/.../xx."}, ["c3v", "a3v", "c3v"]),
    "box off": ("boxoff", 1, {"position": "bbww/wwbb"}, ["a1-b1", "a2-b2", "c1-d1", "c2-d2"]),
    "easy slider": ("easyslider", 1, {"rounds": 1}, ["done"]),
}


@pytest.mark.parametrize("case", ENDED)
def test_a_game_its_rules_ended_is_drawn_the_same_as_over(case: str) -> None:
    engine, state = ended(*ENDED[case])
    for seat in (None, 0):
        assert engine.render_text(state, seat, over=True) == engine.render_text(state, seat)
        assert engine.render_svg(state, seat, over=True) == engine.render_svg(state, seat)
