"""The rule engines and their registry: pure Python, no Flask, no database, no email.

An engine is an object registered under a slug and found with :func:`get`; :func:`all` lists them.
Engines shipped here are registered below; third-party engines register through the ``pbem.games``
entry-point group.  The protocol every engine follows is :class:`Engine` (see ``docs/ARCHITECTURE.md``).
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

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
    "as_typed",
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


def as_typed(text: str) -> str:
    """A move as typed, in lower case with single spaces: how a record writes a move the game has no
    notation of its own for."""
    return " ".join(text.split()).lower()


class Engine(ABC):
    """The engine protocol, with a default for every optional part: every engine the server sees is one.

    The engines shipped here derive from it; a third party's engine may too, or may follow the protocol
    without deriving from it (then :func:`get` hands the server an adapter that gives it the defaults).
    States are immutable values; ``play`` returns a new one.

    Every engine has ``slug``, ``title``, ``players`` (the seat counts allowed), ``options`` (a marshmallow
    schema), ``help`` (rules, notation and rulings) and ``simultaneous``: True for games where several
    seats move at once, each on their own (Easy Slider, Box Off); the server then numbers moves per seat
    rather than per game.  The methods without a default below are the rules themselves.

    The optional parts, with what an engine that leaves them out gets:

    - ``summary``: the game in a sentence, for the rules index (``""``);
    - ``sides``: the side or colour each seat plays (``("Red", "Blue")``), by which the outcome reasons
      name the seats (``()``: seats have no side, and reasons name them "seat 1");
    - :meth:`notation`: a move the engine reads in several spellings, as the record writes it (the move
      as typed, in lower case with single spaces);
    - :meth:`turn_note`: a sentence for the player asked to move when a ruling shapes the move (None);
    - :meth:`group_values`: each side's group value, for the game page (None: the page shows none);
    - ``scores_absent_players`` with :meth:`time_out`: the game itself deals with a seat whose time ran
      out (False: the server's own rule ends the game, see ``pbem.play.time_out``);
    - ``offers_clearable_hint`` with :meth:`clearable`: the player may ask whether their board can still
      be cleared (False: no such hint);
    - :meth:`click_spellings`: moves whose board clicks spell them otherwise than their notation (Truchet's
      merges, clicked on their source stacks and target; none);
    - ``open_information``: every seat may see the whole state and :meth:`play` draws no chance, so moves
      tried from a running game's position (the game page's analysis board) give nothing away (False:
      moves are tried only once the game is over).
    - :meth:`evaluate`: a quick estimate of a seat's chances, for a computer player's search (None: the
      search judges positions by the protocol alone);
    - :meth:`seat_view`: what a seat may know of the state, as a state :meth:`load` reads, for a computer
      player of that seat to search from (None: the engine says nothing, and no computer plays it).

    The two flags say what the server must know before it asks: it calls :meth:`time_out` and
    :meth:`clearable` only of an engine that declares them.
    """

    slug: str
    title: str
    players: range
    options: Schema
    simultaneous: bool
    help: str
    summary: str = ""
    sides: tuple[str, ...] = ()
    scores_absent_players: bool = False
    offers_clearable_hint: bool = False
    open_information: bool = False

    @abstractmethod
    def new(self, players: int, options: dict[str, Any], seed: int) -> Any:
        """The starting state for ``players`` seats, validated ``options`` and ``seed``."""

    @abstractmethod
    def to_move(self, state: Any) -> frozenset[int]:
        """The seats (0-based) that may move now; empty when the game is over."""

    @abstractmethod
    def moves(self, state: Any, seat: int) -> list[str]:
        """Every legal move of ``seat``, in canonical notation."""

    @abstractmethod
    def play(self, state: Any, seat: int, text: str) -> Any:
        """Parse, validate and apply a move; raise :class:`IllegalMove` with a reason if refused."""

    @abstractmethod
    def outcome(self, state: Any) -> Outcome | None:
        """The result once the game is over, else None."""

    @abstractmethod
    def render_text(self, state: Any, seat: int | None = None, *, over: bool = False) -> str:
        """A fixed-width board for mail, with coordinates.

        With ``over`` True the game has ended whatever the state says: the server ended it (a
        resignation, a loss on time, a draw agreed, a solitaire game abandoned) and left a state in
        which the engine still has a player to move.  The board, its legend and the counts or scores
        are shown as ever, but nothing only a position with a mover has: whose move it is, what may be
        played, the hints that go with them.  The server gives the reason, so the engine names none."""

    @abstractmethod
    def render_svg(self, state: Any, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """An SVG board for the web; legal move targets of ``seat`` carry ``data-move`` attributes.

        With ``targets`` False the board is drawn as it stands, with no targets: the server asks for
        that when the seat cannot move on the page (a replayed position, the others' turn).  With
        ``over`` True the game has ended though the state has a mover (see :meth:`render_text`): no
        targets, and the board's title names no mover."""

    @abstractmethod
    def dump(self, state: Any) -> dict[str, Any]:
        """A JSON-safe form of ``state``."""

    @abstractmethod
    def load(self, data: dict[str, Any]) -> Any:
        """The inverse of :meth:`dump`."""

    # -- optional, with defaults ------------------------------------------------------------------------

    def notation(self, state: Any, seat: int, text: str) -> str:
        """The move ``text`` (one :meth:`play` accepts from ``seat`` in ``state``) as the record writes it,
        which :meth:`play` must accept as the same move (Box Off writes ``B1 a1`` as ``a1-b1``).  By
        default: as typed, in lower case with single spaces (:func:`as_typed`)."""
        return as_typed(text)

    def click_spellings(self, state: Any, seat: int, moves: list[str]) -> dict[str, str]:
        """The moves of ``moves`` (``seat``'s legal moves in ``state``) that a player makes on the board
        by clicking targets their notation does not name, each spelled as clicked: every target
        (``data-move``) the move involves, in an order a player clicks them, with punctuation between
        (Truchet's merge ``d4<ws`` is clicked on its source stacks c4 and d3 and its target d4:
        ``c4,d3>d4``).  The page matches clicks against the spelling and plays the move.  By default
        none: a move's notation names every target it involves."""
        return {}

    def turn_note(self, state: Any, seat: int) -> str | None:
        """A sentence for ``seat``, asked to move, when a ruling shapes the move (Carreaux: "No slide lowers
        the total group value (36), so the slides that raise it least are allowed: c3."), shown on the
        game page and in the move-request mail; None (the default) when there is nothing to say."""
        return None

    def group_values(self, state: Any) -> tuple[int, ...] | None:
        """Each seat's group value, shown next to the players on the game page (Carreaux); None (the
        default) in games that count none."""
        return None

    def time_out(self, state: Any, seat: int) -> Any:
        """The state once ``seat``'s time ran out, scored by the game as it goes on (Easy Slider: out of
        the round, as its last finisher).  Asked only of an engine whose ``scores_absent_players`` is
        True, in a game of more than one player; any other game is ended by the server's own rule."""
        raise NotImplementedError(f"{self.slug} does not score an absent player (scores_absent_players)")

    def clearable(self, state: Any, seat: int) -> bool | None:
        """Whether ``seat``'s board, as it stands, can still be cleared: a hint shown only when asked for
        (Box Off).  Asked only of an engine whose ``offers_clearable_hint`` is True; None otherwise."""
        return None

    def evaluate(self, state: Any, seat: int) -> float | None:
        """A quick estimate of ``seat``'s chances in ``state``, from 0 (lost) to 1 (won), by which a
        computer player's search judges a position it has no time to play out (Truchet: the pieces each
        side has left).  None (the default): the search judges it by the protocol alone."""
        return None

    def seat_view(self, state: Any, seat: int) -> dict[str, Any] | None:
        """What ``seat`` may know of ``state``, written as :meth:`dump` writes a state (so :meth:`load` reads
        it back): everything the rules show that seat and nothing they hide from it, such as the others'
        boards in a game where each plays their own.  A computer player of the seat searches from it
        (the API gives it to the seat's player).  None (the default): the engine does not say what it
        hides, so no view is given."""
        return None


# What an engine must have: a third party's engine lacking one of these is refused when it registers.
REQUIRED = ("slug", "title", "players", "options", "simultaneous", "help", "new", "to_move", "moves", "play",
            "outcome", "render_text", "render_svg", "dump", "load")


class _Adapted(Engine):
    """A third party's engine that follows the protocol without deriving from :class:`Engine`: the server
    sees it through this, with :class:`Engine`'s default for each optional part it leaves out.  What it
    has is looked up here, once, when the registry loads it, so that nothing else has to ask."""

    def __init__(self, engine: Any, target: str) -> None:
        missing = [name for name in REQUIRED if not hasattr(engine, name)]
        if missing:
            raise TypeError(f"the game engine {target} lacks {', '.join(missing)} (see games.Engine)")
        self.engine = engine
        self.slug, self.title, self.players = engine.slug, engine.title, engine.players
        self.options, self.simultaneous, self.help = engine.options, engine.simultaneous, engine.help
        self.summary = getattr(engine, "summary", None) or ""
        self.sides = tuple(getattr(engine, "sides", None) or ())
        self._notation: Callable[[Any, int, str], str] | None = getattr(engine, "notation", None)
        self._turn_note: Callable[[Any, int], str | None] | None = getattr(engine, "turn_note", None)
        self._click_spellings: Callable[[Any, int, list[str]], dict[str, str]] | None = getattr(
            engine, "click_spellings", None)
        self._group_values: Callable[[Any], tuple[int, ...] | None] | None = getattr(
            engine, "group_values", None)
        self._time_out: Callable[[Any, int], Any] | None = getattr(engine, "time_out", None)
        self._clearable: Callable[[Any, int], bool] | None = getattr(engine, "clearable", None)
        self._evaluate: Callable[[Any, int], float | None] | None = getattr(engine, "evaluate", None)
        self._seat_view: Callable[[Any, int], dict[str, Any] | None] | None = getattr(
            engine, "seat_view", None)
        self.scores_absent_players = self._time_out is not None
        self.offers_clearable_hint = self._clearable is not None
        self.open_information = bool(getattr(engine, "open_information", False))

    def new(self, players: int, options: dict[str, Any], seed: int) -> Any:
        """The engine's own."""
        return self.engine.new(players, options, seed)

    def to_move(self, state: Any) -> frozenset[int]:
        """The engine's own."""
        return frozenset(self.engine.to_move(state))

    def moves(self, state: Any, seat: int) -> list[str]:
        """The engine's own."""
        return list(self.engine.moves(state, seat))

    def play(self, state: Any, seat: int, text: str) -> Any:
        """The engine's own."""
        return self.engine.play(state, seat, text)

    def outcome(self, state: Any) -> Outcome | None:
        """The engine's own."""
        found: Outcome | None = self.engine.outcome(state)
        return found

    def render_text(self, state: Any, seat: int | None = None, *, over: bool = False) -> str:
        """The engine's own."""
        return str(self.engine.render_text(state, seat, over=over))

    def render_svg(self, state: Any, seat: int | None = None, targets: bool = True, *,
                   over: bool = False) -> str:
        """The engine's own."""
        return str(self.engine.render_svg(state, seat, targets, over=over))

    def dump(self, state: Any) -> dict[str, Any]:
        """The engine's own."""
        dumped: dict[str, Any] = self.engine.dump(state)
        return dumped

    def load(self, data: dict[str, Any]) -> Any:
        """The engine's own."""
        return self.engine.load(data)

    def notation(self, state: Any, seat: int, text: str) -> str:
        """The engine's own, else the default (as typed, in lower case)."""
        if self._notation is None:
            return super().notation(state, seat, text)
        return self._notation(state, seat, text)

    def click_spellings(self, state: Any, seat: int, moves: list[str]) -> dict[str, str]:
        """The engine's own, else none."""
        if self._click_spellings is None:
            return {}
        return dict(self._click_spellings(state, seat, moves))

    def turn_note(self, state: Any, seat: int) -> str | None:
        """The engine's own, else None."""
        return None if self._turn_note is None else self._turn_note(state, seat)

    def group_values(self, state: Any) -> tuple[int, ...] | None:
        """The engine's own, else None."""
        return None if self._group_values is None else self._group_values(state)

    def time_out(self, state: Any, seat: int) -> Any:
        """The engine's own (then ``scores_absent_players`` is True), else the default's refusal."""
        if self._time_out is None:
            return super().time_out(state, seat)
        return self._time_out(state, seat)

    def clearable(self, state: Any, seat: int) -> bool | None:
        """The engine's own (then ``offers_clearable_hint`` is True), else None."""
        return None if self._clearable is None else self._clearable(state, seat)

    def evaluate(self, state: Any, seat: int) -> float | None:
        """The engine's own, else None."""
        return None if self._evaluate is None else self._evaluate(state, seat)

    def seat_view(self, state: Any, seat: int) -> dict[str, Any] | None:
        """The engine's own, else None."""
        return None if self._seat_view is None else self._seat_view(state, seat)


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
            engine = getattr(module, attr or "engine")
            # A third party's engine that does not derive from Engine is adapted here, once.
            self.engines[slug] = engine if isinstance(engine, Engine) else _Adapted(engine, target)
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
