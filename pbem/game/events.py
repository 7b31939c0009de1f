"""What happened in a game, as the move path tells it: events, and the one way to publish them.

The move path (:mod:`pbem.game.play`) writes no mail and imports nothing that does.  Where something
happens that people must hear of (a game started, a move played, a draw offered, the game over …), it
publishes an event saying so.  The app factory (:mod:`pbem.bootstrap`) gives each kind of event its
handlers — the mails of :mod:`pbem.mailout.notify` — and :func:`publish` calls them at once, in order,
inside the move path's transaction: the mails are written with the move and commit or roll back with it,
and each handler sees the game as it is at that moment (a game's end, say, before a solitaire game is
marked abandoned), exactly as when the move path called the mails itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

import games
from games import Outcome
from pbem.core.models import Game, Move, Seat


@dataclass(frozen=True)
class GameStarted:
    """The game was dealt (``state``): the first movers are to be asked for their moves."""

    game: Game
    engine: games.Engine
    state: Any


@dataclass(frozen=True)
class MovePlayed:
    """``move`` was played (or a timeout scored, in a game that goes on), reaching ``state``; ``before``
    is who was to move before it, ``notes`` sentences for single players (by seat number)."""

    game: Game
    engine: games.Engine
    state: Any
    move: Move
    before: frozenset[int]
    notes: dict[int, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class MovesPlayed:
    """A move and the conditional answers it set off (``moves``, in order), reaching ``state``."""

    game: Game
    engine: games.Engine
    state: Any
    moves: list[Move]
    notes: dict[int, list[str]]


@dataclass(frozen=True)
class ConditionalRefused:
    """The engine refused ``seat``'s conditional ``answer`` to ``expected`` for ``reason``; ``lines``
    (what followed the answer) are dropped."""

    game: Game
    seat: Seat
    expected: str
    answer: str
    reason: str
    lines: list[list[str]]


@dataclass(frozen=True)
class GameOver:
    """The game ended with ``outcome``; ``last_word`` is the record entry that ended it, if a player's."""

    game: Game
    outcome: Outcome
    last_word: Move | None = None


@dataclass(frozen=True)
class DrawOffered:
    """``seat`` offered a draw (with ``comment``); ``cancelled`` are the seats whose lines it cancelled."""

    game: Game
    seat: Seat
    cancelled: frozenset[int] | set[int]
    comment: str | None


@dataclass(frozen=True)
class DrawDeclined:
    """``seat`` declined the pending draw offer (with ``comment``)."""

    game: Game
    seat: Seat
    comment: str | None


@dataclass(frozen=True)
class TimedOut:
    """``seat`` ran out of time and the game goes on (a simultaneous game scores the absent seat)."""

    game: Game
    seat: Seat


@dataclass(frozen=True)
class GamesLocked:
    """A batch of games (``game_ids``) is locked for one transaction (the sweep's timeouts): a handler may
    read now, at once, what it will need of them, since a read in the middle of the batch would send its
    writes early, a statement a game."""

    game_ids: list[int]


Event = (GameStarted | MovePlayed | MovesPlayed | ConditionalRefused | GameOver | DrawOffered | DrawDeclined
         | TimedOut | GamesLocked)
Handlers = Mapping[type, Sequence[Callable[[Any], None]]]

_KEY = "pbem_event_handlers"


def init_app(app: Flask, handlers: Handlers) -> None:
    """Give ``app`` its handler map: for each kind of event, the handlers to call, in order."""
    app.extensions[_KEY] = handlers


def publish(event: Event) -> None:
    """Hand ``event`` to each of its handlers now, in the caller's transaction."""
    for handler in current_app.extensions[_KEY].get(type(event), ()):
        handler(event)
