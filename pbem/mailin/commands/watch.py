"""The commands of a game's watchers: ``watch`` and ``unwatch`` (see :mod:`pbem.game.watching`)."""

from __future__ import annotations

import games
from pbem.game import watching
from pbem.game.play import PlayError
from pbem.mailin.commands.base import Answer, ByKey, CommandError, Request, Usage


class Watch(ByKey):
    """``GAME watch NUMBER HANDLE MAILKEY``: the game's move notices and result come to the player."""

    name = "watch"
    summary = "watch a game: its moves and result come to you by mail"
    details = ("Anyone may watch a public game (a private one only its players): each move comes to you "
               "by mail, with the board, and the result, until you stop with 'unwatch'. Games you watch "
               "are listed on My games.")
    by_subject = (Usage("{game} watch 12 carol MAILKEY", "watch game 12: its moves and result come to you"),)

    def run(self, request: Request) -> Answer:
        """Start watching, unless the player watches it already."""
        user, game = request.player(), request.the_game()
        title = f"{games.get(game.engine).title} #{game.id}"
        stop = f"Stop with '{game.engine} unwatch {game.id} {user.handle} MAILKEY'."
        if watching.is_watching(game, user):
            return Answer(f"You are watching {title} already. {stop}")
        try:
            watching.watch(game, user)
        except PlayError as exc:
            raise CommandError(exc.message) from None
        return Answer(f"You are watching {title}: its moves and result come to you by mail. {stop}", game)


class Unwatch(ByKey):
    """``GAME unwatch NUMBER HANDLE MAILKEY``: no more of the game's mails to a watcher."""

    name = "unwatch"
    summary = "stop watching a game"
    details = "Stops the move notices and the result of a game you watch (as 'Stop watching' on the web)."
    by_subject = (Usage("{game} unwatch 12 carol MAILKEY", "stop watching it"),)

    def run(self, request: Request) -> Answer:
        """Stop watching, if the player was."""
        user, game = request.player(), request.the_game()
        title = f"{games.get(game.engine).title} #{game.id}"
        if not watching.is_watching(game, user):
            return Answer(f"You were not watching {title}: nothing to stop.")
        watching.unwatch(game, user)
        return Answer(f"You no longer watch {title}: its moves and result stop coming to you.")
