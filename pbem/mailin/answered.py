"""The server's own mails that a reply answers, whose copies in it are no part of the player's words."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, User
from pbem.mailin.htmltext import html_to_text
from pbem.mailin.parse import Incoming

# A reply names the mails it answers in In-Reply-To and References: the first few are looked up.
_MOST_REFERENCES = 20
# Without a reference to one of our mails (a program that keeps none), the latest game mails sent to the
# player for the game are taken: the one answered is among them.
_LATEST = 3


def texts(mail: Incoming, user: User | None = None, game: Game | None = None) -> list[str]:
    """The texts of the mails ``mail`` may answer, as sent (the plain part, and the HTML part as text):
    those its In-Reply-To and References name, and the latest sent to ``user`` about ``game``."""
    named = f"{mail.header('In-Reply-To')} {mail.header('References')}".split()
    ids = [ref for ref in named if ref.startswith("<") and ref.endswith(">") and len(ref) <= 255]
    rows: list[Any] = []
    if ids:
        rows += db.session.execute(
            select(OutboxMail.body_text, OutboxMail.body_html)
            .where(OutboxMail.message_id.in_(ids[:_MOST_REFERENCES])).limit(_MOST_REFERENCES)
        ).all()
    if user is not None and game is not None:
        rows += db.session.execute(
            select(OutboxMail.body_text, OutboxMail.body_html)
            .where(OutboxMail.game_id == game.id, OutboxMail.user_id == user.id)
            .order_by(OutboxMail.id.desc()).limit(_LATEST)
        ).all()
    found: dict[str, None] = {}
    for text, html in dict.fromkeys(rows):
        found[text] = None
        if html:
            found[html_to_text(html)] = None
    return list(found)
