"""The second stage of inbound mail: act on stored messages.

Turning a stored message into a move, a command or an answer is built by the play-by-email work; until
then stored messages wait with status "received", and nothing is lost.
"""

from __future__ import annotations


def after_store() -> None:
    """Hook run after each stored message; processing arrives with the play-by-email issue."""
