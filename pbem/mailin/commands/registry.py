"""The registry of mail commands: one instance of each, in the order the help mail lists them, and the
``help`` command, whose answer is made from the registry (so that a command added here is listed there,
in the README's words checked by a test)."""

from __future__ import annotations

from collections.abc import Iterable

import games
from games.words import quoted
from pbem.mailin.commands.base import (
    Answer,
    Command,
    CommandError,
    MailCommand,
    Request,
    Usage,
    usage_table,
)
from pbem.mailin.commands.general import Games, Vacation
from pbem.mailin.commands.ingame import Accept, Conditionals, Decline, Draw, Move, Resign, Show
from pbem.mailin.commands.lobby import Challenge, Join, options_help
from pbem.mailin.commands.tournament import Tournament
from pbem.mailin.commands.watch import Unwatch, Watch
from pbem.mailout.compose import compose


class Help(MailCommand):
    """``help``, ``help GAME``, ``help COMMAND``: the commands, a game's rules, or one command in full."""

    name = "help"
    summary = "the commands; a game's rules, notation and options; or one command in full"
    details = ("'help' alone sends this list; 'help' and a game's name sends its rules, notation and "
               "options; 'help' and a command's name sends that command in full. A subject that is only "
               "a game's name, or 'GAME help', is 'help GAME'.")
    in_reply = (Usage("help", "this text"),)
    by_subject = (
        Usage("help", "this text"),
        Usage("help truchet", "a game's rules, notation and options"),
        Usage("help move", "one command in full"),
    )
    about_a_game = False
    needs_key = False
    reply_words = 1

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """``help [GAME | COMMAND]``."""
        return Command(self.name, text, args=[w.lower() for w in words[:1]])

    def run(self, request: Request) -> Answer:
        """The help asked for."""
        topic = request.command.args[0] if request.command.args else None
        if topic is None:
            return Answer("The mail commands of pbem:", extra=help_mail())
        engine = engine_named(topic)
        if engine is not None:
            return Answer(f"The rules of {engine.title}:", extra=engine.help + "\n\n" + options_help(engine))
        command = find(topic)
        if command is not None:
            return Answer(f"The mail command '{command.name}': {command.summary}.", extra=command.help_text())
        names = ", ".join(e.slug for e in games.all())
        raise CommandError(f"There is no game called {quoted(topic)}. The games are: {names}. The commands "
                           f"are: {', '.join(c.name for c in COMMANDS)}.")


def engine_named(slug: str) -> games.Engine | None:
    """The game called ``slug`` (any case), or None."""
    try:
        return games.get(slug.lower())
    except games.UnknownGame:
        return None


# Every command, in the order the help mail lists them.
COMMANDS: tuple[MailCommand, ...] = (
    Move(), Show(), Resign(), Draw(), Accept(), Decline(), Conditionals(), Challenge(), Join(), Watch(),
    Unwatch(), Tournament(), Vacation(), Games(), Help(),
)
_BY_NAME = {name: command for command in COMMANDS for name in command.names}

# The commands a reply's line may be, by their verb (see pbem.mailin.reading): the verb alone, or the verb
# and one word more.
REPLY_ALONE = tuple(n for c in COMMANDS if c.in_reply and c.reply_words == 0 for n in c.names)
REPLY_WITH_A_WORD = tuple(n for c in COMMANDS if c.in_reply and c.reply_words == 1 for n in c.names)
# The verbs of a reply, and of a subject: after a game's name ('help' too: 'cambio help'), or alone.
REPLY_VERBS = tuple(n for c in COMMANDS if c.in_reply for n in c.names)
GAME_VERBS = (*(n for c in COMMANDS if c.by_subject and c.about_a_game for n in c.names), "help")
GENERAL_VERBS = tuple(n for c in COMMANDS if c.by_subject and not c.about_a_game for n in c.names)


def find(verb: str) -> MailCommand | None:
    """The command called ``verb`` (by its name or an alias, in lower case), or None."""
    return _BY_NAME.get(verb)


def commenting() -> list[str]:
    """The names of the commands whose comment goes with them to the other players."""
    return [c.name for c in COMMANDS if c.passes_comment]


def _all_usages(reply: bool) -> Iterable[Usage]:
    """Every form of every command, in a reply or by subject."""
    for command in COMMANDS:
        yield from command.in_reply if reply else command.by_subject


def help_mail() -> str:
    """The text of the help mail: the commands of a reply and by subject, made from the registry."""
    return compose(
        "mail/help.txt", games=games.all(), reply_commands=usage_table(_all_usages(reply=True)),
        subject_commands=usage_table(_all_usages(reply=False)), commenting=commenting(),
    ).text
