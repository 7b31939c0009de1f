"""The mail commands: their grammar (in a reply, or pbmserv-style in a subject) and what each one does.

A reply to a game mail names its game, seat and player by the reply token, so its command is short:
``b3 #7``, ``resign``, ``draw offer``, ``accept``.  A mail to ``pbem@<mail domain>`` carries a
pbmserv-style command in its subject, with the player's handle and mail key where it acts for them:
``cambio move 12 alice KEY a3v#7``.  Either way the work is done by the one move path
(:mod:`pbem.game.play`) or :mod:`pbem.lobby.challenges`, and the result is an :class:`Answer` for the player.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import render_template
from marshmallow import ValidationError, missing
from sqlalchemy import select

import games
from games.words import quoted
from pbem.accounts import mailkeys, vacation
from pbem.accounts.accounts import check_mail_key, find_user
from pbem.core.extensions import db
from pbem.core.models import MAX_COMMENT, Game, Seat, User
from pbem.core.redaction import blank_key
from pbem.game import clock, conditional, play, queries, queueing, results
from pbem.game.play import PlayError
from pbem.lobby import challenges
from pbem.mailin import parse, reading
from pbem.mailout import notify

REPLY_VERBS = (
    "move", "resign", "draw", "accept", "decline", "show", "help", "games", "vacation", "conditionals",
)
GAME_VERBS = ("move", "show", "challenge", "accept", "decline", "resign", "draw", "help", "conditionals")
DRAW_ANSWERS = ("offer", "accept", "decline")


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


# Grammar ---------------------------------------------------------------------------------------------


# A move written as a sentence ("b3.") or marked as over the board ("b3!", "c4?!") is read without the
# marks: no game's notation ends in one, and a refusal for a full stop would only puzzle the player.
_SENTENCE_MARKS = ".!?"


def _without_marks(text: str) -> str:
    """``text`` without the full stops, exclamation and question marks at its end (unless that is all)."""
    bare = text.rstrip().rstrip(_SENTENCE_MARKS).rstrip()
    return bare or text.strip()


def _split_expect(text: str) -> tuple[str, int | None]:
    """"b3 #7", "a3v#7", "b3! #7.": the move, and the move number the player saw after the last "#", if
    any."""
    text = _without_marks(text)
    move, hash_sign, number = text.rpartition("#")
    number = number.strip()
    if not hash_sign or not number.isascii() or not number.isdigit() or len(number) > 9:
        return text, None
    return _without_marks(move), int(number)


def take_conditionals(words: list[str]) -> tuple[list[str], list[str]]:
    """The conditional lines among a mail's own words (see :mod:`pbem.mailin.quotes`), and the other words.

    A line of the sender's own words is a conditional line when its first word is ``if`` and it has the
    word ``then`` (``if c4 then d4 then e3 then f5``), wherever it stands: such a line must never reach
    the opponent as part of a comment.  Each line is read once, word by word."""
    lines, rest = [], []
    for line in words:
        command = reading.command_line(line)
        found = command.lower().split()
        if found and found[0] == "if" and "then" in found:
            lines.append(command)
        else:
            rest.append(line)
    return lines, rest


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
    if verb in REPLY_VERBS and verb != "move":
        if conditionals:
            raise CommandError(
                "'if' lines queue conditional moves: send them alone, or with your move, not with "
                f"{quoted(verb)}."
            )
        return Command(verb, line, args=[w.lower() for w in words[1:]])
    text = " ".join(words[1:]) if verb == "move" else line
    move, expect = _split_expect(text)
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
    return first in ("help", "games", "vacation") or _engine(first) is not None


def _engine(slug: str) -> games.Engine | None:
    try:
        return games.get(slug.lower())
    except games.UnknownGame:
        return None


def _game_number(word: str, example: str) -> int:
    number = word.lstrip("#")
    if not number.isascii() or not number.isdigit() or len(number) > 9:
        raise CommandError(f"{quoted(word)} is not a game number. Write it like this: {example}")
    return int(number)


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
    if first == "help":
        return Command("help", text, args=[w.lower() for w in rest[:1]])
    if first == "games":
        return Command("games", text, handle=rest[0] if rest else None)
    if first == "vacation":
        switch = [w.lower() for w in rest if w.lower() in ("on", "off")]
        others = [w for w in rest if w.lower() not in ("on", "off")]
        if len(switch) != 1 or len(others) != 2:
            raise CommandError(
                "Write vacation commands like this: 'vacation alice MAILKEY on' or "
                "'vacation alice MAILKEY off'."
            )
        return Command("vacation", blank_key(text, others[1]), args=switch, handle=others[0], key=others[1])
    slug = first
    if not rest:
        return Command("help", text, args=[slug])
    verb, rest = rest[0].lower(), rest[1:]
    if verb not in GAME_VERBS:
        raise CommandError(
            f"{quoted(verb)} is not a command. After the game's name comes one of: "
            f"{', '.join(GAME_VERBS)}; "
            f"e.g. '{slug} show 12'. Send 'help' for the list."
        )
    if verb == "help":
        return Command("help", text, args=[slug])
    if verb == "challenge":
        handles = [w for w in rest if "=" not in w]
        options = dict(w.split("=", 1) for w in rest if "=" in w)
        if not handles:
            raise CommandError(f"Name the players to challenge: '{slug} challenge alice bob size=4'.")
        return Command("challenge", text, slug=slug, args=handles, options=options)
    if verb == "show":
        if not rest:
            raise CommandError(f"Name the game to show: '{slug} show 12'.")
        game_id = _game_number(rest[0], f"{slug} show 12")
        handle, key = (rest[1], rest[2]) if len(rest) >= 3 else (None, None)
        said = blank_key(text, key) if key else text
        return Command("show", said, slug=slug, game_id=game_id, handle=handle, key=key)
    forms = {
        "move": f"{slug} move 12 alice MAILKEY a3v#7",
        "accept": f"{slug} accept 15 bob MAILKEY",
        "decline": f"{slug} decline 15 bob MAILKEY",
        "resign": f"{slug} resign 12 alice MAILKEY",
        "draw": f"{slug} draw 12 alice MAILKEY offer",
        "conditionals": f"{slug} conditionals 12 alice MAILKEY [clear | if c4 then d4]",
    }
    needed = 4 if verb in ("move", "draw") else 3
    if len(rest) < needed:
        raise CommandError(f"That {verb} command is short of words. Write it like this: {forms[verb]}")
    game_id = _game_number(rest[0], forms[verb])
    handle, key, tail = rest[1], rest[2], rest[3:]
    said = blank_key(text, key)
    if verb == "move":
        move, expect = _split_expect(" ".join(tail))
        return Command("move", said, slug=slug, game_id=game_id, handle=handle, key=key, move=move,
                       expect=expect)
    if verb == "conditionals":
        clear = [w.lower() for w in tail] == ["clear"]
        queued = [] if clear or not tail else [" ".join(tail)]
        return Command("conditionals", said, slug=slug, game_id=game_id, handle=handle, key=key,
                       args=["clear"] if clear else ["add"] if queued else [], conditionals=queued)
    if verb == "draw":
        if tail[0].lower() not in DRAW_ANSWERS:
            raise CommandError(f"A draw command ends with offer, accept or decline: {forms['draw']}")
        return Command("draw", said, slug=slug, game_id=game_id, handle=handle, key=key,
                       args=[tail[0].lower()])
    return Command(verb, said, slug=slug, game_id=game_id, handle=handle, key=key)


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


# Who is asking -----------------------------------------------------------------------------------------


def player_by_key(handle: str | None, key: str | None, sender: str) -> User:
    """The player named by ``handle`` whose mail key is ``key``, or a CommandError saying which is wrong.

    Wrong keys are counted per account and per sender (see :mod:`pbem.accounts.mailkeys`): past the limits,
    commands with a key are refused for a while, even with the right key.
    """
    if mailkeys.sender_blocked(sender):
        raise CommandError(
            "Too many mail commands with wrong mail keys have come from your address, so commands with a "
            "mail key are refused from it for a while (an hour at most). Play on the web meanwhile."
        )
    user = find_user(handle or "")
    if user is None:
        raise CommandError(f"There is no player called {quoted(handle or '', 40)}.")
    mailkeys.hold_account(user)
    paused = mailkeys.paused_until(user)
    if paused is not None:
        raise CommandError(
            f"Mail commands with a mail key for {user.handle} are paused until {clock.format_time(paused)}, "
            "because of too many wrong mail keys. Replies to game mails and the web work as usual; a new "
            "mail key (on your settings page) ends the pause."
        )
    if not check_mail_key(user, key):
        mailkeys.record_failure(user, sender)
        raise CommandError(
            f"The mail key for {user.handle} is wrong. Your mail key was mailed to you when you confirmed "
            "your address (and again whenever you made a new one); if you have lost it, make a new one on "
            "your settings page. A subject command reads 'GAME VERB GAME-NUMBER HANDLE MAILKEY …'."
        )
    if not user.verified:
        raise CommandError(
            f"{user.handle} has not confirmed their address yet; follow the link in the confirmation mail."
        )
    return user


def player_by_address(address: str) -> User | None:
    """The verified player whose registered address is ``address``."""
    user = db.session.scalar(select(User).where(db.func.lower(User.email) == address.lower()))
    return user if user is not None and user.verified else None


# Doing it ---------------------------------------------------------------------------------------------


def _game(command: Command, user: User | None = None) -> Game:
    """The game a command names.  A private game is told apart from no game at all only for its own
    players: to anyone else (``user`` not seated, or None) it does not exist."""
    game = db.session.get(Game, command.game_id)
    if game is None or (not game.public and (user is None or game.seat_of(user) is None)):
        raise CommandError(
            f"There is no game #{command.game_id} that you can see. (A private game is shown only to its "
            f"players: 'GAME show {command.game_id} HANDLE MAILKEY'.)"
        )
    if command.slug and game.engine != command.slug.lower():
        engine = games.get(game.engine)
        raise CommandError(
            f"Game #{game.id} is a game of {engine.title}; write '{engine.slug} …' rather than "
            f"'{command.slug} …'."
        )
    return game


def _seat(game: Game, user: User, number: int | None) -> Seat | None:
    seats = [s for s in game.seats if s.user_id == user.id and (number is None or s.number == number)]
    return seats[0] if seats else None


def run_reply(command: Command, user: User, game: Game, seat_number: int, comment: str) -> Answer:
    """Do a command from a reply to a mail about ``game``, whose token named ``seat_number``."""
    if command.verb in ("help", "games", "vacation"):
        return _run_general(command, user)
    return _run_in_game(command, user, game, seat_number, comment, via="mail")


def run_subject(command: Command, sender: str, comment: str) -> Answer:
    """Do a pbmserv-style command from a mail whose From address is ``sender``."""
    if command.verb == "help":
        return _help(command.args[0] if command.args else None)
    if command.verb == "games":
        return _games(command.handle, player_by_address(sender))
    if command.verb == "challenge":
        return _challenge(command, sender)
    if command.verb == "show" and command.key is None:
        return _show(_game(command), None)
    user = player_by_key(command.handle, command.key, sender)
    if command.verb == "vacation":
        return _run_general(command, user)
    game = _game(command, user)
    return _run_in_game(command, user, game, None, comment, via="command")


def _run_general(command: Command, user: User) -> Answer:
    if command.verb == "help":
        return _help(command.args[0] if command.args else None)
    if command.verb == "games":
        target = find_user(command.args[0]) if command.args else user
        if target is None:
            raise CommandError(f"There is no player called {quoted(command.args[0])}.")
        return _games(target.handle, user)

    if command.args == ["on"]:
        return Answer(vacation.turn_on(user))
    if command.args == ["off"]:
        return Answer(vacation.turn_off(user))
    raise CommandError("Write 'vacation on' to stop your clocks, or 'vacation off' when you are back.")


def _passed_on(comment: str, cut: bool, words: str = "goes to the other players") -> str:
    """What the answer to a command says of its comment (the lines under it): that it is passed on, and
    when it was ``cut`` to the longest a comment may be, that only its beginning is."""
    if not comment.strip():
        return ""
    if cut:
        return f" Your comment {words} (its first {MAX_COMMENT} characters: it was longer)."
    return f" Your comment {words}."


def _comment_goes(game: Game) -> str:
    """Where a move's comment goes, in the words of the answer to the move: to the others at once, to
    them only at the end where moves stay hidden till then, or only into the record in a game of one."""
    if game.players == 1:
        return "is kept in the game's record"
    if queries.comments_held_back(game):
        return ("goes to the other players when the game ends: until then your moves and comments "
                "stay hidden from them")
    return "goes to the other players"


def _run_in_game(
    command: Command, user: User, game: Game, seat_number: int | None, comment: str, via: str
) -> Answer:
    engine = games.get(game.engine)
    verb = command.verb
    # A mail's comment may be longer than a comment may be: what fits goes on, and the answer says so.
    cut = len(comment) > MAX_COMMENT
    comment = comment[:MAX_COMMENT]
    try:
        if verb == "show":
            return _show(game, _seat(game, user, seat_number))
        if verb == "move":
            return _move(command, user, game, seat_number, comment, via, cut)
        if verb == "conditionals":
            return _conditionals(command, user, game, seat_number)
        if verb == "resign":
            play.resign(game.id, user, via, comment or None)
            over = db.session.get(Game, game.id)
            assert over is not None
            return Answer(f"You resigned {engine.title} #{game.id}. {results.sentence(over)}"
                          f"{_passed_on(comment, cut, _comment_goes(over))}")
        if verb in ("accept", "decline") and game.status == "waiting":
            return _answer_challenge(verb, user, game, comment, cut)
        if verb in ("accept", "decline") and game.draw_offered_by is not None:
            verb, command.args = "draw", [verb]
        if verb == "draw":
            return _draw(command.args, user, game, via, comment, cut)
        if verb in ("accept", "decline"):
            raise CommandError(
                f"There is nothing to {verb} in {engine.title} #{game.id}: no challenge or draw offer is "
                "waiting for your answer."
            )
    except PlayError as exc:
        raise CommandError(exc.message, game, _seat(game, user, seat_number)) from None
    raise CommandError(f"{quoted(verb)} cannot be used here; send 'help' for the commands.")


def _move(
    command: Command, user: User, game: Game, seat_number: int | None, comment: str, via: str, cut: bool
) -> Answer:
    engine = games.get(game.engine)
    try:
        move = play.submit(game.id, user, command.move, via, expect=command.expect, comment=comment or None,
                           seat=seat_number, conditionals=command.conditionals)
    except PlayError as exc:
        seat = _seat(game, user, seat_number)
        message, said = exc.message, quoted(command.move)
        if exc.code == "illegal":
            message = f"{said} was not played: {exc.message}"
        elif exc.code == "conditional":
            message = f"{said} was not played, because of your 'if' lines: {exc.message}"
        elif exc.code == "not-your-turn" and command.conditionals:
            message += (f" Nothing was queued either: {said} was read as a move. Send the "
                        "'if' lines alone to queue them.")
        elif exc.code == "stale" and not isinstance(exc, play.AlreadyPlayed):
            message = f"{said} was not played. {exc.message}"
        raise CommandError(message, game, seat) from None
    game = db.session.get_one(Game, game.id)
    seat = _seat(game, user, move.seat)
    # The move's own number, not the game's next: conditional answers may have followed it at once.
    number = queries.number_of(move)
    done = f"Your move {move.text} (move {number}) in {engine.title} #{game.id} is played."
    done += _passed_on(comment, cut, _comment_goes(game))
    answered = conditional.answers_words(game, play.answers_to(move), move.seat)
    if answered:
        done += " " + answered
    queued = conditional.lines_of(game, user, move.seat)
    if queued:
        done += f" Your conditional moves queued: {'; '.join(map(conditional.describe, queued))}."
    if game.status != "active":
        return Answer(f"{done} The game is over. {results.sentence(game)}", game, seat)
    return Answer(done, game, seat)


def _conditionals(command: Command, user: User, game: Game, seat_number: int | None) -> Answer:
    """List, queue or clear the player's conditional lines in ``game``; only they ever see them."""
    engine = games.get(game.engine)
    where = f"{engine.title} #{game.id}"
    if _seat(game, user, seat_number) is None:
        raise CommandError(f"You are not playing in {where}, so you have no conditional moves there.")
    if command.args == ["clear"]:
        gone = queueing.delete(game.id, user, seat=seat_number)
        return Answer(f"Your conditional moves in {where} are deleted ({gone} line{'s' * (gone != 1)}).")
    if command.args == ["add"]:
        try:
            queueing.queue(game.id, user, command.conditionals, seat=seat_number)
        except PlayError as exc:
            raise CommandError(
                f"{exc.message} Nothing was queued. (A line of your mail that starts with 'if' and has "
                "'then' is read as a conditional move.)", game, _seat(game, user, seat_number)
            ) from None
        game = db.session.get(Game, game.id) or game
        lines = conditional.lines_of(game, user, seat_number)
        return Answer(
            f"Queued in {where}: they are played the moment your opponent's move matches. 'conditionals' "
            "lists them, 'conditionals clear' deletes them.",
            extra="Your conditional moves:\n" + _listed(lines),
        )
    if command.args:
        raise CommandError("Write 'conditionals' to list your conditional moves, or 'conditionals clear'.")
    lines = conditional.lines_of(game, user, seat_number)
    if not lines:
        return Answer(f"You have no conditional moves queued in {where}. Queue one by replying "
                      "'if c4 then d4' (your opponent's move, then yours; longer lines go on with 'then').")
    return Answer(f"Your conditional moves in {where}:", extra=_listed(lines))


def _listed(lines: list[list[str]]) -> str:
    return "\n".join(f"  {conditional.describe(line)}" for line in lines)


def _draw(args: list[str], user: User, game: Game, via: str, comment: str = "", cut: bool = False) -> Answer:
    # What the player wrote under the command goes with it, as under a move.
    passed_on = _passed_on(comment, cut)
    if args[:1] == ["offer"]:
        cancelled = play.offer_draw(game.id, user, via, comment or None)
        return Answer(f"Your draw offer in game #{game.id} is sent; play goes on until it is answered."
                      f"{passed_on}{' ' + conditional.OWN_LINES_CANCELLED if cancelled else ''}")
    if args[:1] == ["accept"]:
        play.accept_draw(game.id, user, via, comment or None)
        finished = db.session.get(Game, game.id)
        assert finished is not None
        return Answer(f"You accepted the draw: game #{game.id} is over. {results.sentence(finished)}"
                      f"{passed_on}")
    if args[:1] == ["decline"]:
        play.decline_draw(game.id, user, via, comment or None)
        return Answer(f"You declined the draw offer in game #{game.id}; play goes on.{passed_on}")
    raise CommandError("Write 'draw offer', 'draw accept' or 'draw decline'.")


def _answer_challenge(verb: str, user: User, game: Game, comment: str = "", cut: bool = False) -> Answer:
    engine = games.get(game.engine)
    passed_on = _passed_on(comment, cut, "is passed on")
    if verb == "decline":
        challenges.decline(game.id, user, comment)
        return Answer(f"You declined the challenge to {engine.title} #{game.id}; the game is called off."
                      + passed_on)
    challenges.accept(game.id, user, comment)
    game = db.session.get_one(Game, game.id)
    if game.status == "active":
        movers = queries.seats_to_move(game)
        seat = game.seat_of(user)
        started = (f"You accepted: {engine.title} #{game.id} has started, and it is "
                   f"{notify.seat_names(game, movers)}'s move.")
        if seat is not None and seat.number in movers and user.notify != "digest":
            # The move request, written with the game's start, shows the position: this answer need not
            # show it again (Box Off and Easy Slider start with everyone to move).
            return Answer(f"{started} Your move request comes in a mail of its own.{passed_on}")
        return Answer(f"{started} Whoever is to move gets a mail asking for it.{passed_on}", game, seat)
    return Answer(f"You accepted: {engine.title} #{game.id} starts when every seat is filled." + passed_on)


def _show(game: Game, seat: Seat | None) -> Answer:
    engine = games.get(game.engine)
    if game.state is None:
        waiting = ", ".join(s.user.handle for s in game.seats if s.user is not None)
        return Answer(f"{engine.title} #{game.id} is waiting for players (seated so far: {waiting}).")
    status = {"active": "in play", "finished": "over", "abandoned": "abandoned"}.get(game.status, game.status)
    words = f"{engine.title} #{game.id} is {status}."
    if game.result:
        words += f" {results.sentence(game)}"
    return Answer(words, game, seat)


def _help(slug: str | None) -> Answer:
    if slug:
        engine = _engine(slug)
        if engine is None:
            names = ", ".join(e.slug for e in games.all())
            raise CommandError(f"There is no game called {quoted(slug)}. The games are: {names}.")
        return Answer(f"The rules of {engine.title}:", extra=engine.help + "\n\n" + _options_help(engine))
    return Answer("The mail commands of pbem:", extra=render_template("mail/help.txt", games=games.all()))


def _options_help(engine: games.Engine) -> str:
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


def _games(handle: str | None, asker: User | None) -> Answer:
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


def _challenge(command: Command, sender: str) -> Answer:
    challenger = player_by_address(sender)
    if challenger is None:
        raise CommandError(
            f"Challenges by mail must come from a player's registered address; {sender} is not one. "
            "Sign up on the web first, or send the challenge from the address you registered."
        )
    engine = _engine(command.slug or "")
    assert engine is not None
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
                raise CommandError(f"seat={seat_option} is not a seat of this game (1 to {len(seats) + 1}).")
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
        raise CommandError(
            f"The options were not accepted: {_validation_words(exc).rstrip('.')}.\n{_options_help(engine)}"
        ) from None
    except PlayError as exc:
        raise CommandError(exc.message) from None
    others = [u.handle for u in seats if u is not None and u.id != challenger.id]
    order = ", ".join(f"seat {i + 1} {u.handle}" for i, u in enumerate(seats) if u is not None)
    return Answer(
        f"{engine.title} #{game.id} is set up ({order}). {' and '.join(others)} "
        f"{'has' if len(others) == 1 else 'have'} been sent the challenge; the game starts when "
        f"{'it is' if len(others) == 1 else 'they are'} accepted."
    )


def _validation_words(exc: ValidationError) -> str:
    messages = exc.messages
    if isinstance(messages, dict):
        parts = []
        for key, value in messages.items():
            text = " ".join(value) if isinstance(value, list) else str(value)
            parts.append(f"{key}: {text}" if key != "_schema" else text)
        return "; ".join(parts)
    return str(messages)
