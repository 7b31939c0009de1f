"""The commands about a player rather than one game: ``games`` and ``vacation``.  (``help``, which lists
every command, is with the registry.)"""

from __future__ import annotations

from typing import ClassVar

from sqlalchemy import select

import games
from games.words import quoted
from pbem.accounts import vacation
from pbem.accounts.accounts import find_user
from pbem.core.extensions import db
from pbem.core.models import Game, Seat, User
from pbem.core.redaction import blank_key
from pbem.game import queries
from pbem.lobby import challenges
from pbem.mailin.commands.base import Answer, Command, CommandError, MailCommand, Request, Usage
from pbem.mailin.commands.who import player_by_address
from pbem.mailout import notify


class Games(MailCommand):
    """``games [HANDLE]``: a player's games in play."""

    name = "games"
    summary = "a player's games in play (yours, when you name nobody)"
    details = ("Lists the games in play of the player named, or yours: whose move it is in each. Your own "
               "list also shows your private games and the challenges waiting for your answer.")
    in_reply = (Usage("games", "your games in play"),)
    by_subject = (Usage("games alice", "alice's games in play"),)
    about_a_game = False
    needs_key = False
    reply_words = 1

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """``games [HANDLE]``."""
        return Command(self.name, text, handle=words[0] if words else None)

    def run(self, request: Request) -> Answer:
        """List the games; the asker is the reply's player, or whoever's registered address sent it."""
        command = request.command
        handle = command.handle or (command.args[0] if command.args else None)
        asker = request.user if request.user is not None else player_by_address(request.sender)
        return games_of(handle, asker)


def games_of(handle: str | None, asker: User | None) -> Answer:
    """The games in play of the player ``handle`` (``asker`` when None), as ``asker`` may see them."""
    user = find_user(handle) if handle else asker
    if user is None:
        if handle:
            raise CommandError(f"There is no player called {quoted(handle)}.")
        raise CommandError("Name the player: 'games alice'.")
    mine = asker is not None and asker.id == user.id
    seats = db.session.scalars(
        select(Seat).join(Game).where(Seat.user_id == user.id, Game.status.in_(("waiting", "active")))
        .order_by(Game.id)
    ).all()
    lines = []
    for seat in seats:
        game = seat.game
        if not game.public and not mine:
            continue
        engine = games.get(game.engine)
        if game.status == "waiting":
            state = "waiting for players"
        else:
            movers = queries.seats_to_move(game)
            state = f"{notify.seat_names(game, movers)} to move"
            if mine and seat.number in movers:
                state = "your move"
        others = [s.user.handle for s in game.seats if s.user is not None and s.user_id != user.id]
        against = f" against {', '.join(others)}" if others else ""
        lines.append(f"  #{game.id} {engine.title}, {seat.label}{against}: {state}")
    pending = challenges.pending_challenges(user) if mine else []
    for challenge in pending:
        engine = games.get(challenge.game.engine)
        lines.append(f"  #{challenge.game_id} {engine.title}: {challenge.challenger.handle} challenges you "
                     f"(answer '{engine.slug} accept {challenge.game_id} {user.handle} MAILKEY')")
    if not lines:
        return Answer(f"{user.handle} has no games in play.")
    return Answer(f"{user.handle}'s games in play:", extra="\n".join(lines))


class Vacation(MailCommand):
    """``vacation on|off``: stop the player's clocks, or start them again."""

    name = "vacation"
    summary = "stop your clocks while you are away, or start them again"
    details = ("While vacation is on, your clocks stop and you get no reminders or digests; when you are "
               "back, every deadline of yours moves later by the time you were away. The days come from a "
               "yearly allowance: when it runs out, the vacation ends by itself and you get a mail. Your "
               "opponents see on the game page that you are away.")
    in_reply = (Usage("vacation on", "stop your clocks (vacation off when you are back)"),)
    by_subject = (Usage("vacation alice MAILKEY on", "stop your clocks (off when you are back)"),)
    about_a_game = False
    reply_words = 1
    _SWITCH: ClassVar[tuple[str, str]] = ("on", "off")

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """``vacation HANDLE MAILKEY on|off``, the switch anywhere."""
        switch = [w.lower() for w in words if w.lower() in self._SWITCH]
        others = [w for w in words if w.lower() not in self._SWITCH]
        if len(switch) != 1 or len(others) != 2:
            raise CommandError(
                "Write vacation commands like this: 'vacation alice MAILKEY on' or "
                "'vacation alice MAILKEY off'."
            )
        return Command(self.name, blank_key(text, others[1]), args=switch, handle=others[0], key=others[1])

    def run(self, request: Request) -> Answer:
        """Turn vacation on or off."""
        user = request.player()
        if request.command.args == ["on"]:
            return Answer(vacation.turn_on(user))
        if request.command.args == ["off"]:
            return Answer(vacation.turn_off(user))
        raise CommandError("Write 'vacation on' to stop your clocks, or 'vacation off' when you are back.")
