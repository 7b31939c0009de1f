"""front page index: active public games by their last change

Revision ID: 0010
Revises: 0004
Create Date: 2026-11-22 22:00:00

The front page lists the active public games most recently moved first; without this index the
database reads and sorts every active game for each visit.
"""
from alembic import op


# revision identifiers, used by Alembic.
revision = '0010'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    op.create_index('ix_game_front', 'game', ['status', 'public', 'updated_at'], unique=False)


def downgrade():
    op.drop_index('ix_game_front', table_name='game')
