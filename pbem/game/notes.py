"""Private notes: each player of a game may keep a note on it (Dragon Go Server's game notes), which only
they ever read.  A note is no part of the game: it is not in its record, its mails, its feeds or its
exports, and writing one changes nothing of the game (not even its version, which others' pages follow).
It stays after the game ends."""

from __future__ import annotations

from sqlalchemy import delete, select

from pbem.core.database import insert_with_conflicts
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import MAX_NOTE, Game, GameNote, User, utcnow
from pbem.core.unit_of_work import unit_of_work


def may_keep_notes(game: Game, user: User | None) -> bool:
    """Whether ``user`` may keep a note on ``game``: they hold a seat of it."""
    return user is not None and any(s.user_id == user.id for s in game.seats)


def note_of(game: Game, user: User) -> str:
    """``user``'s own note on ``game`` ("" for none).  Nobody else's note is ever read."""
    return db.session.scalar(
        select(GameNote.text).where(GameNote.game_id == game.id, GameNote.user_id == user.id)) or ""


def save(game: Game, user: User, text: str) -> str:
    """Keep ``text`` as ``user``'s note on ``game`` (an empty one deletes the note); commits and returns
    what is kept.  PlayError for someone who does not play in the game, or a note longer than
    :data:`~pbem.core.models.MAX_NOTE` characters (nothing is changed)."""
    if not may_keep_notes(game, user):
        raise PlayError(f"Only the players of game #{game.id} keep notes on it.", "not-seated")
    text = text.replace("\r\n", "\n").strip()
    if len(text) > MAX_NOTE:
        raise PlayError(f"The note is too long: at most {MAX_NOTE} characters ({len(text)} written).", "note")
    with unit_of_work() as uow:
        mine = (GameNote.game_id == game.id) & (GameNote.user_id == user.id)
        if not text:
            db.session.execute(delete(GameNote).where(mine))
        else:
            # One statement whether or not there is a note yet: two tabs saving at once cannot both insert.
            insert = insert_with_conflicts()
            db.session.execute(
                insert(GameNote.__table__)
                .values(game_id=game.id, user_id=user.id, text=text, updated_at=utcnow())
                .on_conflict_do_update(index_elements=["game_id", "user_id"],
                                       set_={"text": text, "updated_at": utcnow()}))
        uow.commit()
    return text
