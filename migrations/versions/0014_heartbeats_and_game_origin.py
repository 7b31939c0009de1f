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
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('origin_game_id', sa.Integer(), nullable=True))
        batch_op.create_unique_constraint('uq_game_origin', ['origin', 'origin_game_id'])


def downgrade():
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_constraint('uq_game_origin', type_='unique')
        batch_op.drop_column('origin_game_id')
        batch_op.drop_column('origin')
    op.drop_table('heartbeat')
