"""comments already recorded lose any link, address, token or mail key of ours (issue #27)

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 10:00:00

Before comments were guarded, a reply quoted in a way the server did not read as a quote was kept whole
as the player's comment: their one-click link and reply address went into the public record.  Every
recorded comment is passed through the guard a comment goes through now
(pbem.core.redaction.blank_secrets, with the mail keys of the game's players); the rest of it stays as it
was.  Nothing to undo on downgrade: what was blanked is not kept anywhere.
"""
from alembic import op
import sqlalchemy as sa

from pbem.core.redaction import blank_secrets


# revision identifiers, used by Alembic.
revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

# Comments are read and written back this many at a time, so a large record is never held at once.
_BATCH = 1000


class _Player:
    """What the guard reads of a player: the hash of their mail key."""

    def __init__(self, mail_key_hash: str) -> None:
        self.mail_key_hash = mail_key_hash


def upgrade():
    bind = op.get_bind()
    move = sa.table('move', sa.column('id', sa.Integer), sa.column('game_id', sa.Integer),
                    sa.column('comment', sa.Text))
    seat = sa.table('seat', sa.column('game_id', sa.Integer), sa.column('user_id', sa.Integer))
    user = sa.table('user', sa.column('id', sa.Integer), sa.column('mail_key_hash', sa.String))
    keys_of_game = (
        sa.select(user.c.mail_key_hash).select_from(seat.join(user, user.c.id == seat.c.user_id))
        .where(seat.c.game_id == sa.bindparam('game'))
    )
    last = 0
    while True:
        rows = bind.execute(
            sa.select(move.c.id, move.c.game_id, move.c.comment)
            .where(move.c.comment.is_not(None), move.c.id > last).order_by(move.c.id).limit(_BATCH)
        ).all()
        if not rows:
            break
        players: dict[int, list[_Player]] = {}
        for row_id, game_id, comment in rows:
            if game_id not in players:
                players[game_id] = [_Player(h) for (h,) in bind.execute(keys_of_game, {'game': game_id})]
            guarded = blank_secrets(comment, players[game_id]) or None
            if guarded != comment:
                bind.execute(move.update().where(move.c.id == row_id).values(comment=guarded))
        last = rows[-1][0]


def downgrade():
    pass
