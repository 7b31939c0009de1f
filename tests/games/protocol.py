"""Checks every engine must pass, shared by the per-game test modules.

Each game's tests call :func:`check_playout` with its own sizes and options, usually from a
hypothesis test that draws the seed.  One playout checks the whole protocol at every step: listed
moves are accepted, an unlisted move is refused with a message, ``dump``/``load`` round-trips through
JSON, and at the end the game has an outcome and replaying the moves from ``new`` gives the same state.
"""

from __future__ import annotations

import json
import random
from typing import Any

import games
from games import Engine, IllegalMove, Outcome

# Strings no engine should ever accept as a move.
NONSENSE = ["", "   ", "zz99", "a0", "resign please", "-", "#7", "\x00"]


def dumped(engine: Engine, state: Any) -> str:
    """A state's dump as canonical JSON text, for comparing states."""
    return json.dumps(engine.dump(state), sort_keys=True)


def check_round_trip(engine: Engine, state: Any) -> None:
    """``load(dump(state))`` is the same state, and the dump survives JSON."""
    text = dumped(engine, state)
    again = engine.load(json.loads(text))
    assert dumped(engine, again) == text
    assert engine.to_move(again) == engine.to_move(state)


def check_answers_follow_the_stored_state(engine: Engine, state: Any, players: int) -> None:
    """What the server keeps per position, under the stored state (``pbem.game.boards``: the boards and
    the legal moves), is what the engine answers for the state loaded from it, from every seat."""
    again = engine.load(json.loads(dumped(engine, state)))
    for seat in [None, *range(players)]:
        assert engine.render_svg(again, seat) == engine.render_svg(state, seat), f"{engine.slug}: board"
        assert engine.render_text(again, seat) == engine.render_text(state, seat), f"{engine.slug}: text"
        if seat is not None:
            assert engine.moves(again, seat) == engine.moves(state, seat), f"{engine.slug}: moves"


def check_refuses(engine: Engine, state: Any, seat: int, legal: list[str]) -> None:
    """Moves that are not listed are refused with a message a person can read."""
    for text in NONSENSE:
        if text.strip().lower() in legal:
            continue
        try:
            engine.play(state, seat, text)
        except IllegalMove as exc:
            assert exc.message.strip(), f"{engine.slug}: empty message refusing {text!r}"
        else:
            raise AssertionError(f"{engine.slug} accepted the nonsense move {text!r}")


def check_playout(
    engine: Engine,
    players: int,
    options: dict[str, Any],
    seed: int,
    max_plies: int = 5000,
    refuse_every: int = 7,
) -> tuple[Any, list[tuple[int, str]]]:
    """Play random legal moves until the game ends, checking the protocol at every step.

    Returns the final state and the moves played as ``(seat, text)`` pairs.
    """
    rng = random.Random(seed)
    options = engine.options.load(options)
    state = engine.new(players, options, seed)
    assert dumped(engine, state) == dumped(engine, engine.new(players, options, seed)), "same seed, same deal"
    record: list[tuple[int, str]] = []
    for ply in range(max_plies):
        movers = engine.to_move(state)
        if not movers:
            break
        assert engine.outcome(state) is None, f"{engine.slug}: an outcome while seats are still to move"
        seat = rng.choice(sorted(movers))
        legal = engine.moves(state, seat)
        assert legal, f"{engine.slug}: seat {seat} is to move but has no legal move"
        assert len(set(legal)) == len(legal), f"{engine.slug}: moves() lists a move twice"
        if ply == 0:
            check_answers_follow_the_stored_state(engine, state, players)
        if ply % refuse_every == 0:
            check_round_trip(engine, state)
            check_refuses(engine, state, seat, legal)
        move = rng.choice(legal)
        state = engine.play(state, seat, move)
        record.append((seat, move))
    else:
        raise AssertionError(f"{engine.slug}: no outcome after {max_plies} plies")
    outcome = engine.outcome(state)
    assert isinstance(outcome, Outcome), f"{engine.slug}: the game is over but has no outcome"
    assert len(outcome.results) == players and outcome.reason
    check_round_trip(engine, state)
    check_answers_follow_the_stored_state(engine, state, players)
    replay = engine.new(players, options, seed)
    for seat, move in record:
        replay = engine.play(replay, seat, move)
    assert dumped(engine, replay) == dumped(engine, state), "replaying the moves gives the same state"
    return state, record


def check_metadata(engine: Engine) -> None:
    """The registry finds the engine, and its descriptive attributes are filled in."""
    assert games.get(engine.slug) is engine
    assert engine.title and engine.help.strip()
    assert isinstance(engine.players, range) and len(engine.players) >= 1
    assert isinstance(engine.simultaneous, bool)
    engine.options.load({})  # Every option has a default.
