"""Bot accounts: computer players that play through the API like any program (``pbem bots``).

A bot is an account with ``is_bot`` set, the games it plays and its strength (one of
:data:`games.players.STRENGTHS`).  It has no password (it cannot sign in on the web) and an address that
is never delivered: the server writes no mail to a bot, which learns everything through the API.  It is
rated like anyone, and named BOT wherever it is named.
"""

from __future__ import annotations

from sqlalchemy import select

import games
from pbem.accounts import apitokens
from pbem.accounts.accounts import AccountError, create_user, handle_key
from pbem.core.extensions import db
from pbem.core.models import User
from pbem.core.unit_of_work import unit_of_work

TOKEN_NAME = "pbem bots"


def address(handle: str) -> str:
    """A bot's address: unique, and in the reserved domain ``.invalid``, so never delivered."""
    return f"{handle_key(handle)}@bot.invalid"


def check_games(slugs: list[str]) -> list[str]:
    """The games' slugs as the registry names them; AccountError for one unknown or that no computer
    player plays."""
    # The computer players are imported where they are asked about, here and below: their search and
    # the solitaire engines it imports are 6 MB of memory that most web workers never need.
    from games import players

    found = []
    for slug in slugs:
        try:
            engine = games.get(slug)
        except games.UnknownGame as exc:
            raise AccountError(str(exc)) from None
        if not any(players.plays(engine, n) for n in engine.players):
            raise AccountError(f"No computer player plays {engine.title}.")
        found.append(engine.slug)
    if not found:
        raise AccountError("Name at least one game the bot plays.")
    return sorted(set(found))


def add(handle: str, slugs: list[str], strength: str) -> tuple[User, str]:
    """Make a bot account playing ``slugs`` at ``strength``, with an API token for ``pbem bots``; returns
    the account and the token (shown once: only its hash is kept).  Commits; AccountError for a handle
    that cannot be had, an unknown game or strength."""
    from games import players

    if strength not in players.STRENGTHS:
        raise AccountError(f"There is no strength {strength!r}: the strengths are "
                           f"{', '.join(players.STRENGTHS)}.")
    played = check_games(slugs)
    with unit_of_work() as uow:
        bot = create_user(handle, address(handle), verified=True)
        bot.is_bot, bot.bot_games, bot.bot_strength = True, " ".join(played), strength
        uow.commit()
    _row, token = apitokens.create(bot, TOKEN_NAME)
    return bot, token


def games_of(bot: User) -> list[str]:
    """The slugs of the games a bot plays."""
    return bot.bot_games.split() if bot.is_bot else []


def all_bots() -> list[User]:
    """Every bot account, by handle."""
    return list(db.session.scalars(select(User).where(User.is_bot.is_(True)).order_by(User.handle_key)))


def strengths_for(slug: str) -> list[str]:
    """The strengths at which some bot plays the game ``slug``, weakest first."""
    from games import players

    have = {bot.bot_strength for bot in all_bots() if slug in games_of(bot)}
    return [strength for strength in players.STRENGTHS if strength in have]


def computer_for(slug: str, strength: str) -> User | None:
    """The bot that plays ``slug`` at ``strength`` (the first by handle), if there is one."""
    return next((bot for bot in all_bots() if slug in games_of(bot) and bot.bot_strength == strength), None)
