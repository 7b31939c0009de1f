"""The rule engines and their registry: pure Python, no Flask, no database, no email.

An engine is an object registered under a slug and found with :func:`get`; :func:`all` lists them.
Engines shipped here are registered below; third-party engines register through the ``pbem.games``
entry-point group.  The protocol every engine follows is :class:`Engine` (see ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from marshmallow import Schema

__all__ = [
    "DRAW",
    "LOSS",
    "WIN",
    "Engine",
    "IllegalMove",
    "Outcome",
    "UnknownGame",
    "all",
    "get",
]

WIN, LOSS, DRAW = "win", "loss", "draw"

# The engines that ship with pbem, by slug.  They are imported lazily so that importing ``games``
# stays cheap and one broken engine cannot stop the others from loading.
BUILTIN: dict[str, str] = {
    "boxoff": "games.boxoff:engine",
    "cambio": "games.cambio:engine",
    "carreaux": "games.carreaux:engine",
    "easyslider": "games.easyslider:engine",
    "truchet": "games.truchet:engine",
}


class IllegalMove(Exception):
    """A move the rules refuse.  The message is written for a person reading it in a mail."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownGame(LookupError):
    """No engine is registered under the slug asked for."""


@dataclass(frozen=True)
class Outcome:
    """How a finished game ended, per seat (0-based), with the reason in words.

    ``results`` holds ``"win"``, ``"loss"`` or ``"draw"`` per seat.  ``ranks`` orders the seats
    (1 is best; equal results share a rank).  ``scores`` carries points or tiles left where the game
    counts them, and is None otherwise.  ``notes`` says in a few words how each seat finished where the
    game ranks them ("cleared", "10 tiles left", "12 points"), and is None otherwise.

    ``reason`` is a sentence naming the seats by their side (``engine.sides``: "Red wins by …") or, in
    games without sides, as "seat 1"; the server puts the players' handles in (``pbem.game.results``).
    """

    results: tuple[str, ...]
    reason: str
    ranks: tuple[int, ...] = ()
    scores: tuple[float, ...] | None = None
    notes: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.ranks:
            order = {WIN: 1, DRAW: 1, LOSS: 2}
            object.__setattr__(self, "ranks", tuple(order[r] for r in self.results))

    @classmethod
    def win(cls, winner: int, players: int, reason: str) -> Outcome:
        """One seat wins, every other seat loses."""
        return cls(tuple(WIN if s == winner else LOSS for s in range(players)), reason)

    @classmethod
    def draw(cls, players: int, reason: str) -> Outcome:
        """Every seat draws."""
        return cls(tuple(DRAW for _ in range(players)), reason)

    @classmethod
    def ranked(cls, scores: tuple[float, ...], reason: str, higher_is_better: bool = True,
               notes: tuple[str, ...] | None = None) -> Outcome:
        """Seats ranked by score; the best score wins (shared best scores draw)."""
        key = [(-s if higher_is_better else s) for s in scores]
        ranks = tuple(1 + sum(1 for other in key if other < mine) for mine in key)
        best = sum(1 for r in ranks if r == 1)
        results = tuple(
            (WIN if best == 1 else DRAW) if r == 1 else LOSS for r in ranks
        ) if len(scores) > 1 else (WIN,)
        return cls(results, reason, ranks, scores, notes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form, for storing with the game."""
        return {
            "results": list(self.results),
            "reason": self.reason,
            "ranks": list(self.ranks),
            "scores": None if self.scores is None else list(self.scores),
            "notes": None if self.notes is None else list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Outcome:
        """The inverse of :meth:`to_dict`."""
        scores, notes = d.get("scores"), d.get("notes")
        return cls(
            tuple(d["results"]),
            d["reason"],
            tuple(d.get("ranks") or ()),
            None if scores is None else tuple(scores),
            None if notes is None else tuple(notes),
        )


@runtime_checkable
class Engine(Protocol):
    """The engine protocol.  States are immutable values; ``play`` returns a new one.

    ``simultaneous`` is True for games where several seats move at once, each on their own (Easy
    Slider); the server then numbers moves per seat rather than per game.  An engine whose seats play
    a side or colour names them in ``sides`` (optional: ``("Red", "Blue")``, one per seat), and its
    outcome reasons name the seats by those words.

    Optional methods, looked up with ``getattr``: ``time_out(state, seat)`` (a simultaneous game scores
    an absent seat and goes on), ``group_values(state)`` (Carreaux, for its page), ``clearable(state,
    seat)`` (Box Off's hint) and ``turn_note(state, seat) -> str | None``: a sentence for the player asked
    to move when a ruling shapes that move (Carreaux: "No slide lowers the total group value (36), so
    the slides that raise it least are allowed: c3."; Cambio: the phase, and whose cube a placement puts
    down), shown on the game page and in the move-request mail (unless its text board says it already);
    None when there is nothing to say; and ``notation(state, seat, text) -> str``: a move the engine
    accepts in more than one spelling, as the record writes it (Box Off: ``B1 a1`` is ``a1-b1``), which
    ``play`` must accept as the same move; without it the record keeps the move as typed, in lower case.
    Optional attribute: ``summary``, the game in a sentence
    (for the rules index).
    """

    slug: str
    title: str
    players: range
    options: Schema
    simultaneous: bool
    help: str

    def new(self, players: int, options: dict[str, Any], seed: int) -> Any:
        """The starting state for ``players`` seats, validated ``options`` and ``seed``."""

    def to_move(self, state: Any) -> frozenset[int]:
        """The seats (0-based) that may move now; empty when the game is over."""

    def moves(self, state: Any, seat: int) -> list[str]:
        """Every legal move of ``seat``, in canonical notation."""

    def play(self, state: Any, seat: int, text: str) -> Any:
        """Parse, validate and apply a move; raise :class:`IllegalMove` with a reason if refused."""

    def outcome(self, state: Any) -> Outcome | None:
        """The result once the game is over, else None."""

    def render_text(self, state: Any, seat: int | None = None, *, over: bool = False) -> str:
        """A fixed-width board for mail, with coordinates.

        With ``over`` True the game has ended whatever the state says: the server ended it (a
        resignation, a loss on time, a draw agreed, a solitaire game abandoned) and left a state in
        which the engine still has a player to move.  The board, its legend and the counts or scores
        are shown as ever, but nothing only a position with a mover has: whose move it is, what may be
        played, the hints that go with them.  The server gives the reason, so the engine names none."""

    def render_svg(self, state: Any, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """An SVG board for the web; legal move targets of ``seat`` carry ``data-move`` attributes.

        With ``targets`` False the board is drawn as it stands, with no targets: the server asks for
        that when the seat cannot move on the page (a replayed position, the others' turn).  With
        ``over`` True the game has ended though the state has a mover (see :meth:`render_text`): no
        targets, and the board's title names no mover."""

    def dump(self, state: Any) -> dict[str, Any]:
        """A JSON-safe form of ``state``."""

    def load(self, data: dict[str, Any]) -> Any:
        """The inverse of :meth:`dump`."""


@dataclass
class _Registry:
    engines: dict[str, Engine] = field(default_factory=dict)
    loaded: bool = False

    def load(self) -> None:
        if self.loaded:
            return
        found: dict[str, str] = dict(BUILTIN)
        for ep in entry_points(group="pbem.games"):
            found.setdefault(ep.name, ep.value)
        for slug, target in sorted(found.items()):
            module_name, _, attr = target.partition(":")
            try:
                module = importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                # An engine that is not written yet is simply absent; any other import error is a bug
                # in the engine and must be seen.
                if exc.name == module_name:
                    continue
                raise
            self.engines[slug] = getattr(module, attr or "engine")
        self.loaded = True


_registry = _Registry()


def get(slug: str) -> Engine:
    """The engine registered under ``slug``; raises :class:`UnknownGame` if there is none."""
    _registry.load()
    try:
        return _registry.engines[slug.lower()]
    except KeyError:
        known = ", ".join(sorted(_registry.engines)) or "none"
        raise UnknownGame(f"There is no game called {slug!r}. The games are: {known}.") from None


def all() -> list[Engine]:
    """Every registered engine, ordered by slug."""
    _registry.load()
    return [_registry.engines[s] for s in sorted(_registry.engines)]
