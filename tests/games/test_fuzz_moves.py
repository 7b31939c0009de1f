"""Every engine's move parser, fed any text: only IllegalMove may escape, and no call takes a second.

The positions are reached by a few random legal moves from a random seed; the texts are anything
hypothesis draws, move-like strings built from the engine's own legal moves, and long runs of the
characters move parsers split on, up to the longest move the server hands to an engine.
"""

from __future__ import annotations

import functools
import random
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import games
from games import IllegalMove
from pbem.game.play import MAX_MOVE_TEXT

ENGINES = [engine.slug for engine in games.all()]
ALPHABET = "abcdefghxyz0123456789 #<>^v-+=:,.;()[]/\\'\"\t\n\x00é"


@functools.cache
def _position(slug: str, seed: int, steps: int) -> tuple[Any, int, list[str]]:
    """A position some random legal moves into a game, a seat to move in it, and its legal moves (a few
    positions per engine, made once: some engines take a while to deal a new game)."""
    engine = games.get(slug)
    state = engine.new(engine.players.start, engine.options.load({}), seed)
    rng = random.Random(seed)
    for _ in range(steps):
        movers = sorted(engine.to_move(state))
        if not movers:
            break
        seat = rng.choice(movers)
        state = engine.play(state, seat, rng.choice(engine.moves(state, seat)))
    movers = sorted(engine.to_move(state))
    seat = movers[0] if movers else 0
    return state, seat, engine.moves(state, seat) if movers else []


def _texts(legal: list[str]) -> st.SearchStrategy[str]:
    words = st.sampled_from(legal) if legal else st.just("a1")
    return st.one_of(
        st.text(max_size=MAX_MOVE_TEXT),
        st.text(alphabet=ALPHABET, max_size=MAX_MOVE_TEXT),
        st.lists(st.one_of(words, st.text(alphabet=ALPHABET, max_size=4)), max_size=12).map(" ".join),
        st.tuples(st.sampled_from(list(ALPHABET)), st.integers(1, MAX_MOVE_TEXT)).map(lambda t: t[0] * t[1]),
    )


@pytest.mark.parametrize("slug", ENGINES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 3), steps=st.sampled_from([0, 3, 12]))
def test_any_text_is_a_move_or_an_illegal_move(slug: str, data: st.DataObject, seed: int, steps: int) -> None:
    engine = games.get(slug)
    state, seat, legal = _position(slug, seed, steps)
    text = data.draw(_texts(legal))
    started = time.thread_time()
    try:
        engine.play(state, seat, text)
    except IllegalMove as exc:
        assert exc.message.strip()
    assert time.thread_time() - started < 1.0
