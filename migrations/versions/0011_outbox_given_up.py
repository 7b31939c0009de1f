"""outbox mails given up: refused for good, or failing for too long

Revision ID: 0011
Revises: 0003
Create Date: 2026-11-25 12:20:00

A mail the receiving server refuses with a 5xx answer, or that cannot be sent for longer than
mail.give_up_after_hours, is marked failed_at and no longer tried; the index of the mails due leaves
them out.
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0011'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('outbox_mail', schema=None) as batch_op:
        batch_op.add_column(sa.Column('failed_at', sa.DateTime(), nullable=True))
        batch_op.drop_index('ix_outbox_mail_due')
        batch_op.create_index('ix_outbox_mail_due', ['sent_at', 'failed_at', 'next_attempt_at'], unique=False)


def downgrade():
    with op.batch_alter_table('outbox_mail', schema=None) as batch_op:
        batch_op.drop_index('ix_outbox_mail_due')
        batch_op.create_index('ix_outbox_mail_due', ['sent_at', 'next_attempt_at'], unique=False)
        batch_op.drop_column('failed_at')
