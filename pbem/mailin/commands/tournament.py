"""The command of tournaments: ``tournament join|withdraw|show NUMBER …`` (see :mod:`pbem.tournament`)."""

from __future__ import annotations

from typing import ClassVar

from pbem.core.extensions import db
from pbem.core.models import Tournament as TournamentRow
from pbem.core.redaction import blank_key
from pbem.game import clock
from pbem.game.play import PlayError
from pbem.mailin.commands.base import Answer, Command, CommandError, MailCommand, Request, Usage, game_number
from pbem.tournament import organise, rounds, standings


class Tournament(MailCommand):
    """``tournament join|withdraw NUMBER HANDLE MAILKEY``, ``tournament show NUMBER``."""

    name = "tournament"
    summary = "enter or leave a tournament, or see its standings"
    details = ("'join' enters the tournament (as its page does): its games start by themselves, and each "
               "round's pairings come to you by mail. 'withdraw' leaves it: the games you have in play are "
               "lost by resignation (or struck out, as its settings say). 'show' sends the standings.")
    by_subject = (
        Usage("tournament join 5 alice MAILKEY", "enter tournament 5"),
        Usage("tournament withdraw 5 alice MAILKEY", "leave it"),
        Usage("tournament show 5", "its standings"),
    )
    about_a_game = False
    # 'show' needs no key; 'join' and 'withdraw' carry one, and act only with it (see run).
    needs_key = False
    reply_words = None
    _FORMS: ClassVar[dict[str, str]] = {
        "join": "tournament join 5 alice MAILKEY",
        "withdraw": "tournament withdraw 5 alice MAILKEY",
        "show": "tournament show 5",
    }

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """``tournament VERB NUMBER [HANDLE MAILKEY]``."""
        verb = words[0].lower() if words else ""
        if verb not in self._FORMS:
            raise CommandError(f"After 'tournament' comes one of: {', '.join(self._FORMS)}; e.g. "
                               f"'{self._FORMS['join']}'.")
        needed = 2 if verb == "show" else 4
        if len(words) < needed:
            raise CommandError("That tournament command is short of words. Write it like this: "
                               f"{self._FORMS[verb]}")
        number = str(game_number(words[1], self._FORMS[verb]))
        if verb == "show":
            return Command(self.name, text, args=["show", number])
        handle, key = words[2], words[3]
        return Command(self.name, blank_key(text, key), args=[verb, number], handle=handle, key=key)

    def run(self, request: Request) -> Answer:
        """Join, withdraw, or show the standings."""
        verb, number = request.command.args[0], int(request.command.args[1])
        if verb == "show":
            return _standings(number)
        user = request.player()
        try:
            tournament = organise.join(number, user) if verb == "join" else organise.withdraw(number, user)
        except PlayError as exc:
            raise CommandError(exc.message) from None
        name = rounds.title(tournament)
        if verb == "withdraw":
            return Answer(f"You have left {name}. Games you had in play were lost by resignation (or "
                          "struck out, as its settings say), and you are paired no more.")
        if tournament.status == "running":
            return Answer(f"You are in {name}, and it has started: your pairings come in a mail of their "
                          f"own, and each game asks you for your moves. Standings: "
                          f"{rounds.tournament_url(tournament)}")
        start = (f"it starts {clock.format_time(tournament.start_at, user.time_zone)}" if tournament.start_at
                 else f"it starts when {tournament.max_players} players have joined")
        return Answer(f"You are in {name}; {start}. Leave it with 'tournament withdraw {tournament.id} "
                      f"{user.handle} MAILKEY'.")


def _standings(number: int) -> Answer:
    """A tournament's standings by mail."""
    tournament = db.session.get(TournamentRow, number)
    if tournament is None:
        raise CommandError(f"There is no tournament #{number}.")
    ranked = standings.standings(tournament)
    lines = [f"{e.place:>3}. {e.handle}  {e.points_words}" for e in ranked[:50]]
    return Answer(f"{rounds.title(tournament)}, {organise.status_words(tournament)}:\n" + "\n".join(lines)
                  + f"\n{rounds.tournament_url(tournament)}")
