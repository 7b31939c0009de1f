"""Wording shared by the engines' messages for people."""

from __future__ import annotations

from collections.abc import Sequence


def join_words(words: Sequence[str], conjunction: str = "or") -> str:
    """``a, b or c`` (or ``a, b and c``); a single word alone; empty for none."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"
