"""Wording shared by the engines' messages for people."""

from __future__ import annotations

from collections.abc import Sequence


def join_words(words: Sequence[str], conjunction: str = "or") -> str:
    """``a, b or c`` (or ``a, b and c``); a single word alone; empty for none."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


# How much of a player's own text a message quotes back.
QUOTED_LENGTH = 200


def quoted(text: str, limit: int = QUOTED_LENGTH) -> str:
    """``text`` as a message quotes it to the player who wrote it: between single quotes, cut to
    ``limit`` characters (then "…"), with every character that cannot be seen or printed shown as
    U+FFFD, so that an invisible character in a move is seen for what it is, without Python's escapes."""
    shown = "".join(c if c.isprintable() else "\ufffd" for c in text[:limit])
    return f"'{shown}{'…' if len(text) > limit else ''}'"
