"""conditional moves: the lines a player has queued, kept with their seat

Revision ID: 0007
Revises: 0002
Create Date: 2026-11-22 20:50:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0007'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('seat', schema=None) as batch_op:
        batch_op.add_column(sa.Column('conditionals', sa.JSON(), nullable=True))


def downgrade():
    with op.batch_alter_table('seat', schema=None) as batch_op:
        batch_op.drop_column('conditionals')
