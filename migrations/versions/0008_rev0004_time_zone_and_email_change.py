"""players' time zones, and a new mail address waiting for its confirmation

Revision ID: 0004
Revises: 0005
Create Date: 2026-11-22 21:20:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0004'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('time_zone', sa.String(length=64), nullable=False, server_default='UTC'))
        batch_op.add_column(sa.Column('pending_email', sa.String(length=254), nullable=True))


def downgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('pending_email')
        batch_op.drop_column('time_zone')
