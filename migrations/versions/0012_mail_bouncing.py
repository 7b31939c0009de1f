"""players whose mail bounces: since when, why, and the bounces counted so far

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 12:40:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.add_column(sa.Column('mail_bouncing_since', sa.DateTime(), nullable=True))
        batch_op.add_column(sa.Column('mail_bounce_reason', sa.String(length=300), nullable=True))
        batch_op.add_column(sa.Column('mail_bounces', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('mail_bounced_at', sa.DateTime(), nullable=True))


def downgrade():
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('mail_bounced_at')
        batch_op.drop_column('mail_bounces')
        batch_op.drop_column('mail_bounce_reason')
        batch_op.drop_column('mail_bouncing_since')
