"""What a position shows, worked out once: the engines' SVG boards and legal-move lists kept per process.

Drawing a board is most of the work of a game page, and listing the legal moves (for the clickable
board and the move form) can cost as much in a game with many moves, such as Truchet.  The same
position is asked for again and again: by both players, by watchers, by the page's own updates after
each move, by everyone stepping through a finished game.  What is kept is kept under a key naming the
position exactly (the stored state, or a game's version and the entry of its record) and the seat it is
seen from, so what is served from here is what the engine would answer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar, cast

from markupsafe import Markup

# How many answers each process keeps: a few hundred positions' boards of some 40 kB each at most, and
# their move lists.
KEPT = 512

T = TypeVar("T")


class Kept:
    """Answers worked out once and kept, at most ``size`` of them (the least recently asked for goes
    first), shared by the threads of the process."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._answers: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, key: Hashable, work_out: Callable[[], T]) -> T:
        """The answer kept under ``key``, worked out by ``work_out`` the first time it is asked for.  The
        answer is shared by every caller: it must not be changed."""
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return cast(T, self._answers[key])
        answer = work_out()
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return answer


# The boards and move lists of positions: ``kept(key, work_out)``.
kept = Kept(KEPT)


def drawn(key: Hashable, draw: Callable[[], str]) -> Markup:
    """The board kept under ``key``, drawn by ``draw`` the first time it is asked for."""
    return kept(("board", key), lambda: Markup(draw()))
