"""bot accounts: an account can be a computer player, with the games it plays and its strength

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01 12:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ADD COLUMN (no batch copy of the user table): each has a server default, which SQLite allows.
    op.add_column('user', sa.Column('is_bot', sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column('user', sa.Column('bot_games', sa.String(length=200), nullable=False, server_default=''))
    op.add_column('user', sa.Column('bot_strength', sa.String(length=16), nullable=False, server_default=''))


def downgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('bot_strength')
        batch_op.drop_column('bot_games')
        batch_op.drop_column('is_bot')
