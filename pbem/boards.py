"""Boards drawn once: the engines' SVG boards kept per process by what they show.

Drawing a board is most of the work of a game page, and the same position is asked for again and again:
by both players, by watchers, by the page's own updates after each move, by everyone stepping through a
finished game.  A board is kept under a key naming its position exactly (the stored state, or a game's
version and the entry of its record) and the seat it is seen from, so a board served from here is the
one the engine would draw.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

from markupsafe import Markup

# How many boards each process keeps: a few hundred positions of some 40 kB each at most.
KEPT = 256

_kept: OrderedDict[Hashable, Markup] = OrderedDict()
_lock = threading.Lock()


def drawn(key: Hashable, draw: Callable[[], str]) -> Markup:
    """The board kept under ``key``, drawn by ``draw`` the first time it is asked for."""
    with _lock:
        svg = _kept.get(key)
        if svg is not None:
            _kept.move_to_end(key)
            return svg
    svg = Markup(draw())
    with _lock:
        _kept[key] = svg
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return svg
