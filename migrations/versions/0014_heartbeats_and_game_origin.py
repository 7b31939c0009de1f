"""heartbeats of the listeners and schedulers; where an imported game was played

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 09:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'heartbeat',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('name', sa.String(length=200), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('started_at', sa.DateTime(), nullable=False),
        sa.Column('beat_at', sa.DateTime(), nullable=False),
        sa.Column('stopped_at', sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_heartbeat')),
        sa.UniqueConstraint('kind', 'name', name='uq_heartbeat_kind_name'),
    )
    # Plain ALTER TABLE ADD COLUMN and CREATE INDEX: SQLite's batch mode would copy the game table, and
    # with foreign keys on, dropping the old copy would take every game's seats and moves with it.
    op.add_column('game', sa.Column('origin', sa.String(length=200), nullable=True))
    op.add_column('game', sa.Column('origin_game_id', sa.Integer(), nullable=True))
    op.create_index('ix_game_origin', 'game', ['origin', 'origin_game_id'], unique=True)


def downgrade():
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_index('ix_game_origin')
        batch_op.drop_column('origin_game_id')
        batch_op.drop_column('origin')
    op.drop_table('heartbeat')
