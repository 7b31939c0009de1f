"""Reading a command: the first line of a reply, or a pbmserv-style subject.  The words each command
takes after its verb are read by the command itself (``MailCommand.parse_subject``)."""

from __future__ import annotations

from games.words import quoted
from pbem.mailin import parse
from pbem.mailin.commands.base import Command, CommandError, split_expect
from pbem.mailin.commands.registry import GAME_VERBS, GENERAL_VERBS, REPLY_VERBS, engine_named, find


def parse_reply(line: str, conditionals: list[str] | None = None) -> Command:
    """The command on the first line of a reply: a verb, or else a move (with an optional ``#N``).

    ``conditionals`` are the reply's ``if`` lines: alone they are queued, with a move they are queued
    with it; with any other command they are refused."""
    words = line.split()
    if not words and conditionals:
        return Command("conditionals", "if …", args=["add"], conditionals=conditionals)
    if not words:
        raise CommandError(
            "I found no command in your reply (or could not read its text): write your move (or resign, "
            "draw offer, show, help) on the first line, above the quoted mail, as plain text."
        )
    verb = words[0].lower()
    command = find(verb) if verb in REPLY_VERBS else None
    if command is not None and command.name != "move":
        if conditionals:
            raise CommandError(
                "'if' lines queue conditional moves: send them alone, or with your move, not with "
                f"{quoted(verb)}."
            )
        return Command(command.name, line, args=[w.lower() for w in words[1:]])
    text = " ".join(words[1:]) if command is not None else line
    move, expect = split_expect(text)
    if not move:
        raise CommandError("Write the move after 'move', e.g. 'move b3' or 'move b3 #7'.")
    return Command("move", line, move=move, expect=expect, conditionals=list(conditionals or []))


def strip_subject(subject: str) -> str:
    """The subject without "Re:", "Fwd:" and "[pbem]" prefixes."""
    return parse.strip_prefixes(subject)


def looks_like_command(line: str) -> bool:
    """Whether ``line`` starts like a pbmserv-style command (a command word or a game's name)."""
    words = strip_subject(line).split()
    if not words:
        return False
    first = words[0].lower()
    return first in GENERAL_VERBS or engine_named(first) is not None


def parse_subject(line: str) -> Command:
    """A pbmserv-style command: ``help [game]``, ``games [handle]``, ``vacation HANDLE KEY on|off``, or
    ``GAME VERB …`` (see the help mail for every form)."""
    text = strip_subject(line)
    words = text.split()
    if not words or not looks_like_command(text):
        first_word = quoted(words[0], 40) if words else "''"
        raise CommandError(
            f"I found no command in your subject (it begins {first_word}). Put a command in the subject, "
            "e.g. 'help', 'games alice' or 'cambio show 12'; send 'help' for the list."
        )
    first, rest = words[0].lower(), words[1:]
    general = find(first) if first in GENERAL_VERBS else None
    if general is not None:
        return general.parse_subject(text, None, rest)
    slug = first
    if not rest or rest[0].lower() == "help":
        return Command("help", text, args=[slug])
    verb = rest[0].lower()
    command = find(verb) if verb in GAME_VERBS else None
    if command is None:
        raise CommandError(
            f"{quoted(verb)} is not a command. After the game's name comes one of: "
            f"{', '.join(GAME_VERBS)}; "
            f"e.g. '{slug} show 12'. Send 'help' for the list."
        )
    return command.parse_subject(text, slug, rest[1:])


def redact(line: str) -> str:
    """``line`` as it may be shown or kept: a command with its mail key blanked out, or, for a command
    that cannot be read (where the key may sit anywhere), only its first two words."""
    if not looks_like_command(line):
        return line
    try:
        return parse_subject(line).said
    except CommandError:
        words = strip_subject(line).split()
        return " ".join(words[:2]) + (" …" if len(words) > 2 else "")
