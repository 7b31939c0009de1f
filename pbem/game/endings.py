"""How a game ended, as the archive files it: the kind of ending, and each seat's result and finish time.

The move path copies them onto the game and its seats in the transaction that ends it
(:func:`record_finish`), so that the archive's pages read them from indexes; the archive's filters offer
the kinds of ending a game's rules allow (:func:`endings_for`).
"""

from __future__ import annotations

from games import Outcome
from pbem.core.models import Game
from pbem.game import tallies

# How a game can end, as the archive filters it, with the words the filter shows.  The engines say how a
# game ended in a sentence of their own; :func:`ending_of` sorts those sentences into these kinds.
ENDINGS: dict[str, str] = {
    "line": "a full line",
    "connection": "a connected group",
    "capture": "no pieces left",
    "blocked": "no move left",
    "repetition": "repetition",
    "score": "points",
    "resignation": "resignation",
    "time": "time",
    "agreement": "agreement",
}
# The endings each game's rules allow, besides resignation, time and agreement, which every game has.
ENGINE_ENDINGS: dict[str, tuple[str, ...]] = {
    "cambio": ("line", "blocked", "repetition"),
    "carreaux": ("connection", "blocked"),
    "truchet": ("capture", "blocked", "repetition"),
    "boxoff": ("score",),
    "easyslider": ("score",),
}
SERVER_ENDINGS = ("resignation", "time", "agreement")

# What the engines' sentences say, in the order they are tried.
_REASON_WORDS: tuple[tuple[str, str], ...] = (
    ("full line", "line"),
    ("one group", "connection"),
    ("repetition", "repetition"),
    ("occurred three times", "repetition"),
    ("third time", "repetition"),
    ("no pieces left", "capture"),
    ("no legal", "blocked"),
    ("cannot move", "blocked"),
)


def ending_of(engine: str, outcome: Outcome) -> str:
    """The kind of ending (a key of :data:`ENDINGS`) of a game the engine itself ended."""
    if ENGINE_ENDINGS.get(engine) == ("score",):
        return "score"
    reason = outcome.reason.lower()
    return next((kind for words, kind in _REASON_WORDS if words in reason), "score")


def endings_for(engine: str | None) -> dict[str, str]:
    """The endings (and their words) a game's rules allow, or every ending when no game is named."""
    if engine not in ENGINE_ENDINGS:
        return ENDINGS
    return {kind: ENDINGS[kind] for kind in ENGINE_ENDINGS[engine] + SERVER_ENDINGS}


def record_finish(game: Game, outcome: Outcome, ending: str | None) -> None:
    """Copy a game's end onto it and its seats for the archive: the kind of ending (``ending`` when
    the server ended it, else read from the engine's reason) and each seat's result and time, and add
    the results to the players' tallies (:mod:`pbem.game.tallies`)."""
    game.ending = ending or ending_of(game.engine, outcome)
    for seat in game.seats:
        seat.result = outcome.results[seat.number] if seat.number < len(outcome.results) else None
        seat.finished_at = game.finished_at
    tallies.count_finish(game)
