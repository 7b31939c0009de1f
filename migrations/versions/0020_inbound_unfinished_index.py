"""inbound mail: indexes of the messages waiting or in hand, by sender, and of those waiting

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28 07:10:00

A processor claims a message only when no earlier one of its sender's is waiting or in hand
(pbem.mailin.process); without this index that condition walked every message stored before it (2.3 ms
of the database server's CPU a claim at 100,000 messages), and the look for the oldest waiting message
walked the table by id (8-12 ms).  Both partial: only the few unfinished messages are in them.
"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    if op.get_bind().dialect.name == 'postgresql':  # (On SQLite no claim asks it: see the model.)
        op.create_index(
            'ix_inbound_mail_unfinished', 'inbound_mail', [sa.text('lower(mail_from)'), 'id'], unique=False,
            postgresql_where=sa.text("status IN ('received', 'processing')"),
        )
    waiting = sa.text("status = 'received'")
    op.create_index('ix_inbound_mail_waiting', 'inbound_mail', ['id'], unique=False,
                    postgresql_where=waiting, sqlite_where=waiting)


def downgrade():
    op.drop_index('ix_inbound_mail_waiting', table_name='inbound_mail')
    if op.get_bind().dialect.name == 'postgresql':
        op.drop_index('ix_inbound_mail_unfinished', table_name='inbound_mail')
