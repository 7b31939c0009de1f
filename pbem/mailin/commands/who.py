"""Who a mail command is from and what it names: the player by handle and mail key, or by address; the
game; and the mail keys the mail holds, so that none is ever repeated."""

from __future__ import annotations

from sqlalchemy import func, or_, select

import games
from games.words import quoted
from pbem.accounts import mailkeys
from pbem.accounts.accounts import check_mail_key, find_user, handle_key
from pbem.core.extensions import db
from pbem.core.models import Game, User
from pbem.core.redaction import KeysFound, key_shaped_words
from pbem.game import clock
from pbem.mailin.commands.base import Command, CommandError


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


def named_game(command: Command, user: User | None = None) -> Game:
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


# The words of a mail looked at for the handles it names: a command names its player among its first
# words, in the subject or on the body's first line.
_NAMING_WORDS = 12
_NAMING_CHARACTERS = 2000


def _first_words(text: str) -> list[str]:
    """The first words of ``text``, without the punctuation around them."""
    words = text[:_NAMING_CHARACTERS].split(maxsplit=_NAMING_WORDS)[:_NAMING_WORDS]
    return [word.strip(".,;:!?()[]<>'\"") for word in words]


def keys_in_mail(sender: str, subject: str, text: str) -> KeysFound:
    """The mail keys a mail holds of the accounts it concerns: its sender's (by their registered
    address) and those of the players named by handle among the first words of its subject or body,
    wherever a player mistook the key's place (as the handle, as a game's name, in a sentence).

    Each word that could be a key is hashed once, and the accounts are looked up only when there is one.
    What is found is blanked (:meth:`~pbem.core.redaction.KeysFound.blank`) from everything made of the
    mail: its answer and the answer's subject, the note kept and logged, the comment passed on."""
    words = key_shaped_words(subject) | key_shaped_words(text)
    if not words:
        return KeysFound((), ())
    handles = {handle_key(word) for word in (*_first_words(subject), *_first_words(text)) if word}
    hashes = db.session.scalars(
        select(User.mail_key_hash).where(or_(func.lower(User.email) == sender.lower(),
                                             User.handle_key.in_(handles)))
    ).all()
    return KeysFound(hashes, words)
