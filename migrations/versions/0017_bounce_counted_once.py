"""a delivery report on one mail counts once: when its bounce was counted

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 02:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('outbox_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('bounced_at', sa.DateTime(), nullable=True))


def downgrade():
    with op.batch_alter_table('outbox_mail', schema=None) as batch_op:
        batch_op.drop_column('bounced_at')
