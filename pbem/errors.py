"""The refusal every service raises: a request the server will not carry out, said for the player."""

from __future__ import annotations


class PlayError(Exception):
    """A request the server refuses; ``message`` is written for the player, ``code`` for programs."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.message = message
        self.code = code
