"""Glicko-2 ratings, and rated games

Existing Elo ratings are kept as the Glicko-2 rating with the deviation of a new player (350) and the
usual starting volatility; a rating's last game is taken to be its last change.  Every existing
two-player game counted for ratings before this, so those are marked rated.

Revision ID: 0006
Revises: 0007
Create Date: 2026-11-22 21:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0006'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('rating', schema=None) as batch_op:
        batch_op.add_column(sa.Column('deviation', sa.Float(), nullable=False, server_default='350.0'))
        batch_op.add_column(sa.Column('volatility', sa.Float(), nullable=False, server_default='0.06'))
        batch_op.add_column(sa.Column('last_game_at', sa.DateTime(), nullable=True))
    op.execute("UPDATE rating SET last_game_at = updated_at WHERE games > 0")
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rated', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute(sa.text("UPDATE game SET rated = :yes WHERE players = 2").bindparams(yes=True))


def downgrade():
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_column('rated')
    with op.batch_alter_table('rating', schema=None) as batch_op:
        batch_op.drop_column('last_game_at')
        batch_op.drop_column('volatility')
        batch_op.drop_column('deviation')
