"""`pbem import` of hostile and broken records: every record is checked completely before anything of it
is written, a bad one is refused by its line with the reason (never a traceback), nothing of it is stored
(no game, no placeholder account), and every good record after it is imported; an imported game's pages
answer.  The fuzz test mutates good records at random, anywhere, with any JSON."""

from __future__ import annotations

import copy
import itertools
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from pbem.archive import records
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, User
from tests.server.archived import finished
from tests.server.webclient import WebClient

ELSEWHERE = "https://elsewhere.example"


@pytest.fixture
def template(ctx: Flask, players) -> dict[str, Any]:
    """The record of a finished game of Cambio, as another server would have written it."""
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], seed=3, comment="well played", at=datetime(2026, 2, 1))
    data = records.record(game)
    data["origin"] = ELSEWHERE
    return data


def good(template: dict[str, Any], n: int) -> dict[str, Any]:
    """A good record of its own: game ``n`` of the other server, between two players new here."""
    data = copy.deepcopy(template)
    data["id"] = n
    data["players"] = [{"seat": 1, "handle": f"north{n}"}, {"seat": 2, "handle": f"south{n}"}]
    return data


# Nested deeper than any JSON library writes: put in a record's text in place of these words.
DEEP = {'"@deep-list"': "[" * 3000 + "]" * 3000, '"@deep-object"': '{"a":' * 3000 + "1" + "}" * 3000}


def line_of(data: dict[str, Any]) -> str:
    """The record as a line of an import file, with whatever is too deep to write put in."""
    text = json.dumps(data)
    for word, deep in DEEP.items():
        text = text.replace(word, deep)
    return text


def stored(n: int) -> tuple[Game | None, list[str]]:
    """Game ``n`` of the other server as imported (or None), and the handles of its players here."""
    db.session.rollback()
    game = db.session.scalar(select(Game).where(Game.origin == ELSEWHERE, Game.origin_game_id == n))
    handles = db.session.scalars(select(User.handle).where(User.handle.in_([f"north{n}", f"south{n}"]))).all()
    return game, sorted(handles)


# Each breaks a good record as the issue found it broken; the reason the import gives names it.
BROKEN: dict[str, tuple[Any, str]] = {
    "an array nested 3,000 deep": (lambda d: d | {"moves": "@deep-list"}, "nested"),
    "an object nested 3,000 deep": (lambda d: d | {"result": "@deep-object"}, "nested"),
    "options nested 3,000 deep": (lambda d: d | {"options": d["options"] | {"size": "@deep-list"}}, "nested"),
    "options nested 20 deep": (
        lambda d: d | {"options": d["options"] | {"size": json.loads("[" * 20 + "]" * 20)}}, "nested"),
    "a seed of 2^63": (lambda d: d | {"seed": 2**63}, "seed"),
    "a seed below -2^70": (lambda d: d | {"seed": -(2**71)}, "seed"),
    "a start in year 1": (lambda d: d | {"started": "0001-01-01T00:00:00Z"}, "start"),
    "an end in year 9999": (lambda d: d | {"finished": "9999-12-31T23:59:59Z"}, "end"),
    "a move in year 9999, east of UTC": (
        lambda d: d | {"moves": [d["moves"][0] | {"time": "9999-12-31T23:59:59-05:00"}, *d["moves"][1:]]},
        "time"),
    "a move in year 1, west of it": (
        lambda d: d | {"moves": [d["moves"][0] | {"time": "0001-01-01T00:00:00+05:00"}, *d["moves"][1:]]},
        "time"),
    "junk in the time control": (
        lambda d: d | {"time_control": {"kind": "bank", "initial_days": "x", "increment_days": 1,
                                        "max_days": 14}}, "time control"),
    "a NUL in a comment": (
        lambda d: d | {"moves": [d["moves"][0] | {"comment": "gg\x00"}, *d["moves"][1:]]}, "control"),
    "a look-alike of alice": (
        lambda d: d | {"players": [{"seat": 1, "handle": "A1ICE"}, d["players"][1]]}, "too like 'alice'"),
    "public as a word": (lambda d: d | {"public": "no"}, "public"),
}


def test_each_broken_record_is_refused_and_the_good_ones_after_it_are_imported(
        template: dict[str, Any], runner: FlaskCliRunner, tmp_path: Path) -> None:
    lines = []
    for n, (_name, (breaking, _reason)) in enumerate(BROKEN.items(), 1):
        lines.append(line_of(breaking(good(template, 2 * n))))
        lines.append(line_of(good(template, 2 * n + 1)))
    path = tmp_path / "games.jsonl"
    path.write_text("\n".join(lines) + "\n")
    ran = runner.invoke(main, ["import", str(path)])
    assert ran.exit_code == 65, ran.output
    assert f"{len(BROKEN)} game(s) imported, 0 already here, {len(BROKEN)} refused." in ran.stdout
    refusals = [line for line in ran.stderr.splitlines() if line]
    assert len(refusals) == len(BROKEN), ran.stderr
    web = WebClient(runner.app)
    for n, (name, (_breaking, reason)) in enumerate(BROKEN.items(), 1):
        assert refusals[n - 1].startswith(f"line {2 * n - 1}: refused: ") and reason in refusals[n - 1], name
        assert stored(2 * n) == (None, []), name  # Nothing of it: no game, no placeholder.
        game, handles = stored(2 * n + 1)
        assert game is not None and handles == [f"north{2 * n + 1}", f"south{2 * n + 1}"], name
    # The pages of an imported game answer (a junk time control once made them 500).
    for path in (f"/games/{game.id}", f"/games/{game.id}?move=1", f"/api/v1/games/{game.id}"):
        assert web.get(path).status_code == 200, path


# The fuzz: good records, each kept or broken at one place (a key of the record, of an entry or of a
# player, or of the options, time control or result) by any JSON value, hostile ones weighted in.
_HOSTILE = st.sampled_from([
    None, "", "x\x00", "\ud800", 2**63, -(2**71), 1.5, float("inf"), True, "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59-05:00", "A1ICE", "me", {"kind": "bank", "initial_days": "x"}, [[[[[[[[[[1]]]]]]]]]],
    "@deep-list", "@deep-object",
])
_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                    max_size=3),
                       max_leaves=8)
_PLACES = st.sampled_from([
    ("format",), ("game",), ("options",), ("options", "size"), ("seed",), ("players",), ("players", 0),
    ("players", 0, "handle"), ("players", 1, "seat"), ("public",), ("rated",), ("time_control",),
    ("time_control", "days"), ("started",), ("finished",), ("moves",), ("moves", 0), ("moves", 0, "text"),
    ("moves", 1, "seat"), ("moves", 0, "time"), ("moves", 2, "number"), ("moves", 1, "comment"),
    ("moves", 0, "kind"), ("moves", 0, "via"), ("result",), ("result", "results"), ("result", "reason"),
    ("origin",), ("id",),
])
_PLAN = st.lists(st.none() | st.tuples(_PLACES, _HOSTILE | _VALUES), min_size=1, max_size=4)


def _break(data: dict[str, Any], place: tuple, value: Any) -> None:
    """Set ``value`` at ``place`` in ``data`` (where the place exists)."""
    *path, last = place
    for key in path:
        data = data[key]
    if isinstance(data, list) and last >= len(data):
        return
    data[last] = value


def test_imports_fuzzed_never_half_write_and_never_stop_at_a_bad_record(
        template: dict[str, Any], ctx: Flask) -> None:
    numbers = itertools.count(1)
    web = WebClient(ctx)

    @given(plan=_PLAN)
    @settings(max_examples=25, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    def run(plan: list) -> None:
        sent = []
        for mutation in plan:
            n = next(numbers)
            data = good(template, n)
            if mutation is not None:
                _break(data, *mutation)
            sent.append((n, mutation, line_of(data)))
        games_before = db.session.scalar(select(func.count(Game.id)))
        report = records.import_lines(line for _n, _m, line in sent)
        refused = {line for line, _reason in report.refused}
        for line, (n, mutation, _text) in enumerate(sent, 1):
            game, handles = stored(n)
            if mutation is None:
                assert line not in refused and game is not None, report.refused
            if line in refused:
                assert (game, handles) == (None, []), mutation  # Nothing of a refused record.
            else:
                assert game is not None and handles == [f"north{n}", f"south{n}"], (mutation, report)
                if mutation is not None:
                    for path in (f"/games/{game.id}", f"/api/v1/games/{game.id}"):
                        assert web.get(path).status_code == 200, (mutation, path)
        db.session.rollback()
        assert db.session.scalar(select(func.count(Game.id))) == games_before + report.added
        assert report.added + len(report.refused) == len(sent)

    run()
