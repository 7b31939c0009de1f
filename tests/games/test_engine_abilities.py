"""The optional parts of the engine protocol: each one's default, what the shipped engines declare, and a
third party's engine registered through an entry point, with or without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import games
from games import Engine
from tests import plugin_game


class Bare(Engine):
    """An engine deriving from Engine that gives only what it must (the rules of Take-away)."""

    slug, title, players = "bare", "Bare", range(2, 3)
    options, simultaneous, help = plugin_game.TakeAwayOptions(), False, "Take stones."
    _rules = plugin_game.engine

    def new(self, players: int, options: dict[str, Any], seed: int) -> Any:
        return self._rules.new(players, options, seed)

    def to_move(self, state: Any) -> frozenset[int]:
        return self._rules.to_move(state)

    def moves(self, state: Any, seat: int) -> list[str]:
        return self._rules.moves(state, seat)

    def play(self, state: Any, seat: int, text: str) -> Any:
        return self._rules.play(state, seat, text)

    def outcome(self, state: Any) -> games.Outcome | None:
        return self._rules.outcome(state)

    def render_text(self, state: Any, seat: int | None = None, *, over: bool = False) -> str:
        return self._rules.render_text(state, seat, over=over)

    def render_svg(self, state: Any, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        return self._rules.render_svg(state, seat, targets, over=over)

    def dump(self, state: Any) -> dict[str, Any]:
        return self._rules.dump(state)

    def load(self, data: dict[str, Any]) -> Any:
        return self._rules.load(data)


def check_defaults(engine: Engine) -> None:
    """``engine`` has every optional part's default, and still plays by its own rules."""
    state = engine.new(2, engine.options.load({}), 1)
    assert engine.summary == ""
    assert engine.sides == ()
    assert engine.notation(state, 0, "  TAKE   2 ") == "take 2"  # As typed, lower case, single spaces.
    assert engine.turn_note(state, 0) is None
    assert engine.group_values(state) is None
    assert engine.scores_absent_players is False
    assert engine.offers_clearable_hint is False
    assert engine.clearable(state, 0) is None
    with pytest.raises(NotImplementedError):
        engine.time_out(state, 0)  # The server's own rule applies: it never asks.
    state = engine.play(state, 0, engine.notation(state, 0, "TAKE 3"))
    assert engine.to_move(state) == {1} and engine.moves(state, 1) == ["take 1", "take 2", "take 3"]


def test_an_engine_deriving_from_engine_gets_every_default() -> None:
    check_defaults(Bare())


def test_an_engine_must_give_the_rules_themselves() -> None:
    class Half(Engine):
        slug = "half"

    with pytest.raises(TypeError, match="abstract"):
        Half()  # type: ignore[abstract]


@pytest.mark.parametrize("engine", games.all(), ids=lambda e: e.slug)
def test_a_shipped_engine_declares_exactly_the_abilities_it_has(engine: Engine) -> None:
    """A flag is set where the engine has the method the server then calls, and only there."""
    assert isinstance(engine, Engine)
    mine = type(engine).__dict__
    assert engine.scores_absent_players == ("time_out" in mine)
    assert engine.offers_clearable_hint == ("clearable" in mine)
    assert engine.summary


def test_the_shipped_engines_abilities() -> None:
    declared = {e.slug: (e.scores_absent_players, e.offers_clearable_hint, bool(e.sides))
                for e in games.all()}
    assert declared == {
        "boxoff": (True, True, False),
        "cambio": (False, False, True),
        "carreaux": (False, False, True),
        "easyslider": (True, False, False),
        "truchet": (False, False, True),
    }


def test_a_plug_in_without_the_optional_parts_is_registered_with_the_defaults(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_game.install(tmp_path, monkeypatch)
    engine = games.get("takeaway")
    assert engine in games.all() and isinstance(engine, Engine)
    assert engine.title == "Take-away" and engine.players == range(2, 3) and not engine.simultaneous
    check_defaults(engine)
    state = engine.new(2, engine.options.load({"pile": 4}), 1)
    with pytest.raises(games.IllegalMove, match="Take 1, 2 or 3"):
        engine.play(state, 0, "take 4")
    for seat, move in ((0, "take 3"), (1, "take 1")):
        state = engine.play(state, seat, move)
    assert engine.outcome(state) == games.Outcome(("loss", "win"), "Seat 2 wins by taking the last stone")
    assert engine.load(engine.dump(state)) == state
    assert "data-move" not in engine.render_svg(state, 0)


class WithHooks(plugin_game.TakeAway):
    """A plug-in that has some optional parts (not deriving from Engine): they are its own."""

    sides = ["Left", "Right"]
    summary = "Take stones; the last one wins."

    def notation(self, state: Any, seat: int, text: str) -> str:
        return "take " + text.split()[-1]

    def turn_note(self, state: Any, seat: int) -> str | None:
        return f"{state.stones} stones left."

    def time_out(self, state: Any, seat: int) -> Any:
        return state

    def clearable(self, state: Any, seat: int) -> bool:
        return state.stones % 4 != 0


with_hooks = WithHooks()


def test_a_plug_in_keeps_the_optional_parts_it_has(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_game.install(tmp_path, monkeypatch, f"{__name__}:with_hooks")
    engine = games.get("takeaway")
    state = engine.new(2, engine.options.load({}), 1)
    assert engine.sides == ("Left", "Right") and engine.summary == "Take stones; the last one wins."
    assert engine.notation(state, 0, "TAKE  2") == "take 2"
    assert engine.turn_note(state, 0) == "7 stones left."
    assert engine.scores_absent_players and engine.time_out(state, 0) == state
    assert engine.offers_clearable_hint and engine.clearable(state, 0) is True
    assert engine.group_values(state) is None


class Incomplete:
    """A plug-in that is missing parts every engine must have."""

    slug, title = "takeaway", "Incomplete"


incomplete = Incomplete()


def test_a_plug_in_missing_a_required_part_is_refused_by_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin_game.install(tmp_path, monkeypatch, f"{__name__}:incomplete")
    lacks = rf"{__name__}:incomplete lacks players, options, .*render_svg, dump, load"
    with pytest.raises(TypeError, match=lacks):
        games.get("takeaway")
