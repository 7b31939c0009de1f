"""Chess-like coordinates shared by every board: files a, b, c… left to right, ranks 1, 2, 3… upwards.

Cells are ``(file, rank)`` pairs counted from 0, so ``a1`` is ``(0, 0)``, the bottom-left cell.
"""

from __future__ import annotations

import re

from games import IllegalMove
from games.words import quoted

Cell = tuple[int, int]

_CELL = re.compile(r"^([a-z])(\d{1,2})$")


def cell_name(cell: Cell) -> str:
    """``(0, 0)`` -> ``"a1"``."""
    file, rank = cell
    return f"{chr(ord('a') + file)}{rank + 1}"


def parse_cell(text: str, width: int, height: int) -> Cell:
    """``"B3"`` -> ``(1, 2)``; raises IllegalMove for anything that is not a cell of this board."""
    word = text.strip().lower()
    match = _CELL.match(word)
    if not match:
        raise IllegalMove(
            f"{quoted(text.strip())} is not a cell: write a file letter and a rank number, like b3.")
    cell = (ord(match.group(1)) - ord("a"), int(match.group(2)) - 1)
    if not (0 <= cell[0] < width and 0 <= cell[1] < height):
        last = cell_name((width - 1, height - 1))
        raise IllegalMove(f"{word} is off the board: cells run from a1 to {last}.")
    return cell


def file_letters(width: int) -> str:
    """The file letters of a board ``width`` cells wide: ``"abcdef"``."""
    return "".join(chr(ord("a") + f) for f in range(width))


def parse_position(text: str, alphabet: str) -> list[list[str]]:
    """A written position (ranks top to bottom, ``/`` between them) as rows indexed ``[rank][file]``.

    Row 0 of the result is rank 1, so ``rows[rank][file]`` matches the ``(file, rank)`` cell order.
    Every character must be in ``alphabet``; all ranks must have the same length.
    """
    ranks = [r.strip() for r in text.strip().lower().split("/")]
    if not ranks or not ranks[0]:
        raise ValueError("A position lists the ranks from top to bottom separated by '/'.")
    width = len(ranks[0])
    for r in ranks:
        if len(r) != width:
            raise ValueError(f"Every rank must have {width} cells; {r!r} has {len(r)}.")
        bad = set(r) - set(alphabet)
        if bad:
            raise ValueError(f"Unknown piece letters {''.join(sorted(bad))!r}; use only {alphabet!r}.")
    return [list(r) for r in reversed(ranks)]
