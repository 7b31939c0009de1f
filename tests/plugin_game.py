"""A third party's game engine, as a plug-in would ship it: written to the protocol, not deriving from
``games.Engine``, with none of its optional parts (no sides, notation, turn note, group values, time-out
rule, hint or summary).  :func:`install` registers it through a real ``pbem.games`` entry point.

The game is Take-away: two players take 1, 2 or 3 stones in turn from one pile; who takes the last wins.
A move is written ``take 2``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from marshmallow import Schema, fields, validate

import games
from games import IllegalMove, Outcome

SLUG = "takeaway"
_MOVE = re.compile(r"take\s*([123])", re.IGNORECASE)


class TakeAwayOptions(Schema):
    """The size of the pile."""

    pile = fields.Integer(load_default=7, validate=validate.Range(min=4, max=30))


@dataclass(frozen=True)
class Pile:
    """Stones left, whose turn it is, and the winner once someone took the last."""

    stones: int
    turn: int = 0
    winner: int | None = None


class TakeAway:
    """The engine: only what the protocol requires."""

    slug = SLUG
    title = "Take-away"
    players = range(2, 3)
    options = TakeAwayOptions()
    simultaneous = False
    help = "Take 1, 2 or 3 stones from the pile in turn (take 2); who takes the last stone wins."

    def new(self, players: int, options: dict[str, Any], seed: int) -> Pile:
        """The full pile, the first seat to move."""
        return Pile(options["pile"])

    def to_move(self, state: Pile) -> frozenset[int]:
        """The seat whose turn it is, until the pile is empty."""
        return frozenset() if state.winner is not None else frozenset({state.turn})

    def moves(self, state: Pile, seat: int) -> list[str]:
        """Take 1 to 3, no more than are left."""
        if seat not in self.to_move(state):
            return []
        return [f"take {n}" for n in range(1, min(3, state.stones) + 1)]

    def play(self, state: Pile, seat: int, text: str) -> Pile:
        """Take the stones, or say why not."""
        if seat not in self.to_move(state):
            raise IllegalMove("It is not your turn.")
        found = _MOVE.fullmatch(text.strip())
        if found is None or int(found[1]) > state.stones:
            raise IllegalMove(f"Take 1, 2 or 3 stones (there are {state.stones}), like 'take 2'.")
        stones = state.stones - int(found[1])
        return replace(state, stones=stones, turn=1 - seat, winner=seat if stones == 0 else None)

    def outcome(self, state: Pile) -> Outcome | None:
        """Who took the last stone wins."""
        if state.winner is None:
            return None
        return Outcome.win(state.winner, 2, f"Seat {state.winner + 1} wins by taking the last stone")

    def render_text(self, state: Pile, seat: int | None = None, *, over: bool = False) -> str:
        """The pile, as stones."""
        return f"Pile: {'o' * state.stones} ({state.stones})\n"

    def render_svg(self, state: Pile, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """The pile, with a target per legal take."""
        legal = self.moves(state, seat) if targets and not over and seat is not None else []
        marks = "".join(f'<circle cx="{10 + 20 * n}" cy="10" r="8" data-move="take {n + 1}"/>'
                        for n in range(len(legal)))
        return f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 80 20"><title>{state.stones} stones' \
               f'</title>{marks}</svg>'

    def dump(self, state: Pile) -> dict[str, Any]:
        """The pile as JSON."""
        return {"stones": state.stones, "turn": state.turn, "winner": state.winner}

    def load(self, data: dict[str, Any]) -> Pile:
        """The inverse of dump."""
        return Pile(data["stones"], data["turn"], data["winner"])


engine = TakeAway()


def install(directory: Path, monkeypatch: pytest.MonkeyPatch, target: str = f"{__name__}:engine") -> None:
    """Register ``target`` as the ``takeaway`` game the way an installed plug-in is: a distribution's
    metadata on the path, naming it in the ``pbem.games`` entry-point group; the registry reads the
    entry points afresh (and is put back after the test)."""
    dist = directory / "pbem_takeaway-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pbem-takeaway\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[pbem.games]\n{SLUG} = {target}\n")
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.setattr(games, "_registry", games._Registry())
