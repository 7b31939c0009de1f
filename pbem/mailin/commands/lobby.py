"""The commands by which games begin: ``challenge`` (its answers, ``accept`` and ``decline``, are about
the game it made, with the others in :mod:`.ingame`) and ``join``, an open seat of the lobby taken."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, missing

import games
from games.words import quoted
from pbem.accounts.accounts import find_user
from pbem.core.extensions import db
from pbem.core.models import Game, User, is_key_shaped
from pbem.core.redaction import blank_key
from pbem.game import queries
from pbem.game.play import PlayError
from pbem.lobby import challenges
from pbem.mailin.commands.base import Answer, ByKey, Command, CommandError, MailCommand, Request, Usage
from pbem.mailout import notify


class Challenge(MailCommand):
    """``GAME challenge HANDLE MAILKEY PLAYER… [name=value…]``: a new game, and challenges to the players
    named.  It acts for the challenger, so it carries their mail key: a From address is easily forged."""

    name = "challenge"
    summary = "start a game and challenge the players named"
    details = ("The players are seated in the order named; you are seat 1 unless you name yourself among "
               "them or add seat=2. days=5 gives 5 days per move; the other name=value options are the "
               "game's own ('help GAME' lists them). Each player named gets a mail with the challenge, "
               "which they answer by replying 'accept' or 'decline'; the game starts when every seat is "
               "filled.")
    by_subject = (Usage("{game} challenge alice MAILKEY bob size=4",
                        "start a game, seats in the order named, and challenge bob (you are seat 1 unless "
                        "you name yourself elsewhere or add seat=2; days=5 sets 5 days per move; other "
                        "options are the game's, see 'help cambio')"),)

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """The challenger's handle and mail key, then the players and the options, in any order."""
        form = self.by_subject[0].written(slug or "GAME")
        if len(words) < 2 or not is_key_shaped(words[1]) or any("=" in w for w in words[:2]):
            raise CommandError(
                "A challenge carries your handle and your mail key (16 letters and digits), then the "
                f"players: '{form}'. (Before it carried no key: one is needed now, so that nobody can "
                "start games in your name.)"
            )
        handle, key, rest = words[0], words[1], words[2:]
        players = [w for w in rest if "=" not in w]
        if not players:
            raise CommandError(f"Name the players to challenge: '{form}'.")
        options = dict(w.split("=", 1) for w in rest if "=" in w)
        return Command(self.name, blank_key(text, key), slug=slug, handle=handle, key=key, args=players,
                       options=options)

    def run(self, request: Request) -> Answer:
        """Set the game up, seat the players and send the challenges."""
        challenger, command = request.player(), request.command
        engine = games.get(command.slug or "")
        seats: list[User | None] = []
        for handle in command.args:
            user = find_user(handle)
            if user is None:
                raise CommandError(
                    f"There is no player called {quoted(handle)}; check the spelling of the handles.")
            seats.append(user)
        options: dict[str, Any] = dict(command.options)
        seat_option = options.pop("seat", None)
        days = options.pop("days", None)
        if all(u is None or u.id != challenger.id for u in seats):
            # The challenger is seat 1 unless they name themselves elsewhere or ask with seat=N.
            where = 1
            if seat_option is not None:
                if not seat_option.isdigit() or not 1 <= int(seat_option) <= len(seats) + 1:
                    raise CommandError(
                        f"seat={seat_option} is not a seat of this game (1 to {len(seats) + 1}).")
                where = int(seat_option)
            seats.insert(where - 1, challenger)
        time_control = None
        if days is not None:
            if not days.isdigit() or not 1 <= int(days) <= 365:
                raise CommandError(f"days={days} must be a whole number of days per move, from 1 to 365.")
            time_control = {"kind": "per_move", "days": int(days)}
        try:
            game = challenges.new_game(challenger, engine.slug, seats, options, time_control=time_control)
        except ValidationError as exc:
            refused = _validation_words(exc).rstrip(".")
            raise CommandError(f"The options were not accepted: {refused}.\n{options_help(engine)}") from None
        others = [u.handle for u in seats if u is not None and u.id != challenger.id]
        order = ", ".join(f"seat {i + 1} {u.handle}" for i, u in enumerate(seats) if u is not None)
        return Answer(
            f"{engine.title} #{game.id} is set up ({order}). {' and '.join(others)} "
            f"{'has' if len(others) == 1 else 'have'} been sent the challenge; the game starts when "
            f"{'it is' if len(others) == 1 else 'they are'} accepted."
        )


class Join(ByKey):
    """``GAME join NUMBER HANDLE MAILKEY``: an open seat of a game in the lobby taken, as *Take a seat*
    does on the web."""

    name = "join"
    summary = "take the open seat of a game in the lobby"
    details = ("Takes the open seat of a game someone started for anyone to join (the lobby on the web "
               "lists them), as 'Take a seat' does on the web. A game that asks for a rating range takes "
               "only players within it; the answer says why it refused. The game starts when every seat "
               "is taken.")
    by_subject = (Usage("{game} join 15 bob MAILKEY", "take the open seat of game 15 (from the lobby)"),)

    def run(self, request: Request) -> Answer:
        """Take the seat; say whether the game has started."""
        user, game = request.player(), request.the_game()
        title = f"{games.get(game.engine).title} #{game.id}"
        try:
            challenges.take_seat(game.id, user)
        except PlayError as exc:
            raise CommandError(exc.message) from None
        game = db.session.get_one(Game, game.id)
        if game.status == "active":
            movers = notify.seat_names(game, queries.seats_to_move(game))
            return Answer(f"You took a seat: {title} has started, and it is {movers}'s move. Whoever is to "
                          "move gets a mail asking for it.", game, game.seat_of(user))
        return Answer(f"You took a seat in {title}; it starts when every seat is taken.")


def options_help(engine: games.Engine) -> str:
    """The options a challenge to ``engine`` takes, each with what it is and its default."""
    lines = [f"Options for '{engine.slug} challenge …' (name=value):"]
    for name, field_ in engine.options.fields.items():
        default = field_.load_default
        words = field_.metadata.get("description") or ""
        if default is not None and not callable(default) and default is not missing:
            words = f"{words} (default {default})".strip()
        lines.append(f"  {name}: {words}".rstrip(": ") if words else f"  {name}")
    lines.append("  days: days per move, a whole number (default: the server's)")
    lines.append("  seat: your seat, when you do not name yourself among the players (default 1)")
    return "\n".join(lines)


def _validation_words(exc: ValidationError) -> str:
    """marshmallow's messages as one sentence: "size: …; placements: …"."""
    messages = exc.messages
    if isinstance(messages, dict):
        parts = []
        for key, value in messages.items():
            text = " ".join(value) if isinstance(value, list) else str(value)
            parts.append(f"{key}: {text}" if key != "_schema" else text)
        return "; ".join(parts)
    return str(messages)
