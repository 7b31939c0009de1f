"""The refusal every service raises: a request the server will not carry out, said for the player."""

from __future__ import annotations


class PlayError(Exception):
    """A request the server refuses; ``message`` is written for the player, ``code`` for programs."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    @property
    def http_status(self) -> int:
        """The HTTP status that answers this refusal on the web and in the API."""
        return HTTP_STATUS.get(self.code, 400)


# Most refusals are the player's to fix (400); these say the request came too late, from an out-of-date
# view, or from someone who has no part in the game.
HTTP_STATUS = {"not-seated": 403, "hidden": 403, "stale": 409, "conflict": 409, "not-your-turn": 409,
               "over": 409, "no-game": 404, "out-of-range": 403}
