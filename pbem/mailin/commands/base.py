"""What every mail command is made of: the command as parsed, the request to run it, its answer, and
:class:`MailCommand`, the class each command of the registry is an instance of."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from games.words import quoted
from pbem.core.models import MAX_COMMENT, Game, Seat, User
from pbem.core.redaction import blank_key

# The game the help mail writes its examples with.
EXAMPLE_GAME = "cambio"
# The width the help mail's text is wrapped to.
HELP_WIDTH = 100


class CommandError(Exception):
    """A command that cannot be done; the message says what was wrong and what would be accepted.

    ``game`` and ``seat``, when set, ask the answer to show that game's position for that seat (the
    board and the legal moves), which is what a player needs after a refused move; ``extra`` is shown
    under the message, as an :class:`Answer`'s is.
    """

    def __init__(self, message: str, game: Game | None = None, seat: Seat | None = None,
                 extra: str = "") -> None:
        super().__init__(message)
        self.message, self.game, self.seat, self.extra = message, game, seat, extra


@dataclass
class Command:
    """A parsed command.  ``said`` is how it was written, with any mail key blanked out."""

    verb: str
    said: str
    args: list[str] = field(default_factory=list)
    move: str = ""
    expect: int | None = None
    slug: str | None = None
    game_id: int | None = None
    handle: str | None = None
    key: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    # Conditional lines sent with the command ("if c4 then d4"), each as written.
    conditionals: list[str] = field(default_factory=list)


@dataclass
class Answer:
    """What to tell the player: the words, and optionally a game position to show under them."""

    message: str
    game: Game | None = None
    seat: Seat | None = None
    extra: str = ""
    state: Any = None  # The engine's state of ``game`` to show, when the command has it (a move's result).


@dataclass
class Request:
    """A command to run, and for whom.

    ``user`` is the player it acts for: the reply token's, or the one whose mail key the subject command
    carries (None for a subject command without a key).  ``game`` and ``seat_number`` are the game it is
    about (the reply token's, or the one the subject names) and, in a reply, the seat the token names.
    ``comment`` is what the mail says under the command, already cut to the longest a comment may be
    (``cut`` says whether it was longer); ``via`` is how the command came: "mail" for a reply, "command"
    for a subject command.
    """

    command: Command
    sender: str
    user: User | None
    game: Game | None = None
    seat_number: int | None = None
    comment: str = ""
    cut: bool = False
    via: str = "mail"

    @property
    def seat(self) -> Seat | None:
        """The asking player's seat in the game (the token's, in a reply), if they have one."""
        return seat_of(self.game, self.user, self.seat_number)

    def player(self) -> User:
        """The player the command acts for (every command that acts for one has one)."""
        assert self.user is not None, f"{self.command.verb} ran for nobody"
        return self.user

    def the_game(self) -> Game:
        """The game the command is about (every command about a game has one)."""
        assert self.game is not None, f"{self.command.verb} ran without its game"
        return self.game

    def passed_on(self, words: str = "goes to the other players") -> str:
        """What the answer says of the comment: that it is passed on, and, when it was cut to the longest
        a comment may be, that only its beginning is ('' for no comment)."""
        if not self.comment.strip():
            return ""
        if self.cut:
            return f" Your comment {words} (its first {MAX_COMMENT} characters: it was longer)."
        return f" Your comment {words}."


@dataclass(frozen=True)
class Usage:
    """One line of the help mail: a form of a command, and what it does.  ``{game}`` in the form stands
    for a game's name."""

    form: str
    does: str

    def written(self, game: str = EXAMPLE_GAME) -> str:
        """The form with a game's name in it."""
        return self.form.format(game=game)


def usage_table(usages: Iterable[Usage], column: int | None = None) -> str:
    """The usages as the help mail lists them: each form, then what it does, wrapped in a column of its
    own (at ``column``, or two characters after the longest form)."""
    rows = [(usage.written(), usage.does) for usage in usages]
    if not rows:
        return ""
    column = column or 2 + max(len(form) for form, _ in rows) + 2
    lines = []
    for form, does in rows:
        wrapped = textwrap.wrap(does, HELP_WIDTH - column) or [""]
        lines.append(f"  {form}".ljust(column) + wrapped[0])
        lines += [" " * column + more for more in wrapped[1:]]
    return "\n".join(line.rstrip() for line in lines)


class MailCommand:
    """One mail command, in the style of Mailman 3's ``commands/``: its name (and aliases), a line of
    help and a longer one, the forms it takes in a reply and in a subject, whether it needs the mail key
    when it comes by subject, and what it does (:meth:`run`).  Each is an instance in the registry
    (:mod:`pbem.mailin.commands.registry`), from which the grammar, the dispatch and the help mail are
    all made."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    # One line of help, and the longer help of 'help NAME'.
    summary: ClassVar[str]
    details: ClassVar[str] = ""
    # The forms it takes in a reply to a game mail (none: it cannot be used there), and by subject.
    in_reply: ClassVar[tuple[Usage, ...]] = ()
    by_subject: ClassVar[tuple[Usage, ...]] = ()
    # A command about one game is written 'GAME VERB …' by subject; the others 'VERB …'.
    about_a_game: ClassVar[bool] = True
    # Whether a subject command must carry the player's handle and mail key (a command that acts for a
    # player always does: a From address is easily forged).
    needs_key: ClassVar[bool] = True
    # Whether the words under the command go with it, to the other players and into the record.
    passes_comment: ClassVar[bool] = False
    # How a line of a reply is this command: the verb alone (0), or the verb and at most one word more
    # (1); None when the line is read otherwise (a move is read by its shape, not by its verb).
    reply_words: ClassVar[int | None] = 0

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases."""
        return (self.name, *self.aliases)

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """The command from a subject ``text`` whose words after the verb (and after the game's name
        ``slug``, for a command about a game) are ``words``.  CommandError for a wrong form."""
        raise CommandError(f"{quoted(self.name)} cannot be sent by subject; send 'help' for the commands.")

    def run(self, request: Request) -> Answer:
        """Do the command; CommandError (or PlayError, for a command about a game) when it cannot be done."""
        raise NotImplementedError

    def help_text(self) -> str:
        """The longer help of 'help NAME': the forms, then the details."""
        parts = []
        if self.in_reply:
            parts.append("In a reply to a game mail:\n" + usage_table(self.in_reply))
        if self.by_subject:
            parts.append("By subject, in a mail to the server's own address:\n"
                         + usage_table(self.by_subject))
        if self.aliases:
            parts.append(f"Also written: {', '.join(self.aliases)}.")
        if self.details:
            parts.append(textwrap.fill(self.details, HELP_WIDTH))
        return "\n\n".join(parts)


class ByKey(MailCommand):
    """A command about a game that acts for a player: ``GAME VERB NUMBER HANDLE MAILKEY …`` by subject,
    its first form (``by_subject[0]``) showing how.  ``words_after_key`` words must follow the key."""

    words_after_key: ClassVar[int] = 0

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """The game number, handle and mail key, then what the command takes after them."""
        form = self.by_subject[0].written(slug or "GAME")
        if len(words) < 3 + self.words_after_key:
            raise CommandError(f"That {self.name} command is short of words. Write it like this: {form}")
        game_id = game_number(words[0], form)
        handle, key, tail = words[1], words[2], words[3:]
        command = Command(self.name, blank_key(text, key), slug=slug, game_id=game_id, handle=handle, key=key)
        return self.with_tail(command, tail, form)

    def with_tail(self, command: Command, tail: list[str], form: str) -> Command:
        """``command`` with what was written after the key (nothing, unless the command takes it)."""
        return command


# Words of the grammar ---------------------------------------------------------------------------------


# A move written as a sentence ("b3.") or marked as over the board ("b3!", "c4?!") is read without the
# marks: no game's notation ends in one, and a refusal for a full stop would only puzzle the player.
_SENTENCE_MARKS = ".!?"


def _without_marks(text: str) -> str:
    """``text`` without the full stops, exclamation and question marks at its end (unless that is all)."""
    bare = text.rstrip().rstrip(_SENTENCE_MARKS).rstrip()
    return bare or text.strip()


def split_expect(text: str) -> tuple[str, int | None]:
    """"b3 #7", "a3v#7", "b3! #7.": the move, and the move number the player saw after the last "#", if
    any."""
    text = _without_marks(text)
    move, hash_sign, number = text.rpartition("#")
    number = number.strip()
    if not hash_sign or not number.isascii() or not number.isdigit() or len(number) > 9:
        return text, None
    return _without_marks(move), int(number)


def game_number(word: str, example: str) -> int:
    """The game number ``word`` ("12" or "#12"), or a CommandError showing ``example``."""
    number = word.lstrip("#")
    if not number.isascii() or not number.isdigit() or len(number) > 9:
        raise CommandError(f"{quoted(word)} is not a game number. Write it like this: {example}")
    return int(number)


def seat_of(game: Game | None, user: User | None, number: int | None) -> Seat | None:
    """``user``'s seat in ``game`` (the seat ``number``, when given), or None."""
    if game is None or user is None:
        return None
    seats = [s for s in game.seats if s.user_id == user.id and (number is None or s.number == number)]
    return seats[0] if seats else None
