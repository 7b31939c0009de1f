"""The mail commands: one small class per command, in a registry, in the style of Mailman 3's ``commands/``.

A reply to a game mail names its game, seat and player by the reply token, so its command is short:
``b3 #7``, ``resign``, ``draw offer``, ``accept``.  A mail to ``pbem@<mail domain>`` carries a
pbmserv-style command in its subject, with the player's handle and mail key where it acts for them:
``cambio move 12 alice KEY a3v#7``.

- :mod:`.base`: the parsed :class:`Command`, the :class:`Request` to run it, its :class:`Answer` (or
  :class:`CommandError`), and :class:`MailCommand`, the class of every command: name, aliases, a line of
  help and a longer one, its forms in a reply and by subject, whether it needs the mail key, ``run``;
- :mod:`.ingame` (move, show, resign, draw, accept, decline, conditionals), :mod:`.lobby` (challenge,
  join), :mod:`.watch` (watch, unwatch), :mod:`.general` (games, vacation): the commands;
- :mod:`.registry`: one instance of each, in order, and ``help``, whose mail is made from them;
- :mod:`.grammar`: reading a reply's line or a subject into a :class:`Command`;
- :mod:`.who`: the player by handle and mail key (or by address), the game named, and the mail keys a
  mail holds (blanked from everything made of it).

Here: running a command, the same way for both (:func:`run_reply`, :func:`run_subject`).  The work is
done by the one move path (:mod:`pbem.game.play`) or :mod:`pbem.lobby.challenges`.
"""

from __future__ import annotations

from games.words import quoted
from pbem.core.models import MAX_COMMENT, Game, User
from pbem.core.redaction import blank_key
from pbem.game.play import PlayError
from pbem.mailin.commands.base import Answer, Command, CommandError, MailCommand, Request
from pbem.mailin.commands.grammar import looks_like_command, parse_reply, parse_subject, redact, strip_subject
from pbem.mailin.commands.registry import COMMANDS, find
from pbem.mailin.commands.who import keys_in_mail, named_game, player_by_address, player_by_key

__all__ = [
    "COMMANDS", "Answer", "Command", "CommandError", "blank_key", "comment_for", "keys_in_mail",
    "looks_like_command", "parse_reply", "parse_subject", "player_by_address", "player_by_key", "redact",
    "run_reply", "run_subject", "strip_subject",
]


def _command(command: Command, in_reply: bool) -> MailCommand:
    """The registry's command for a parsed one, if it may be used this way."""
    found = find(command.verb)
    if found is None or not (found.in_reply if in_reply else found.by_subject):
        raise CommandError(f"{quoted(command.verb)} cannot be used here; send 'help' for the commands.")
    return found


def run_reply(command: Command, user: User, game: Game, seat_number: int, comment: str) -> Answer:
    """Do a command from a reply to a mail about ``game``, whose token named ``seat_number``."""
    handler = _command(command, in_reply=True)
    return _run(handler, Request(command, user.email, user, game, seat_number, comment, via="mail"))


def run_subject(command: Command, sender: str, comment: str) -> Answer:
    """Do a pbmserv-style command from a mail whose From address is ``sender``: as the player whose
    handle and mail key it carries, when the command needs them (or carries them: ``show`` of a private
    game), on the game it names."""
    handler = _command(command, in_reply=False)
    user = None
    if handler.needs_key or command.key is not None:
        user = player_by_key(command.handle, command.key, sender)
    game = named_game(command, user) if command.game_id is not None else None
    return _run(handler, Request(command, sender, user, game, None, comment, via="command"))


def _run(handler: MailCommand, request: Request) -> Answer:
    """Run ``handler``.  A command about a game takes what fits of the comment (the answer says when it
    was cut), and its refusal by the move path shows the position to the player."""
    if not handler.about_a_game:
        return handler.run(request)
    request.cut = len(request.comment) > MAX_COMMENT
    request.comment = request.comment[:MAX_COMMENT]
    try:
        return handler.run(request)
    except PlayError as exc:
        raise CommandError(exc.message, request.game, request.seat) from None


def comment_for(command: Command, comment: str) -> str:
    """The comment that goes with ``command``: none for a command that passes none on, and never the
    sender's mail key, wherever they wrote it (keys are read in any case)."""
    handler = find(command.verb)
    if handler is None or not handler.passes_comment:
        return ""
    return blank_key(comment, command.key) if command.key else comment
