"""open seats restricted to a rating range; a digest hour per player; private notes per game

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 02:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ALTER TABLE ADD COLUMN: SQLite's batch mode would copy the game table, and with foreign keys
    # on, dropping the old copy would take every game's seats and moves with it.
    op.add_column('game', sa.Column('min_rating', sa.Integer(), nullable=True))
    op.add_column('game', sa.Column('max_rating', sa.Integer(), nullable=True))
    op.add_column('user', sa.Column('digest_hour', sa.Integer(), nullable=True))
    op.create_table(
        'game_note',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('game_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['game_id'], ['game.id'], name=op.f('fk_game_note_game_id_game'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_game_note_user_id_user'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_game_note')),
        sa.UniqueConstraint('game_id', 'user_id', name='uq_game_note_game_user'),
    )
    op.create_index(op.f('ix_game_note_user_id'), 'game_note', ['user_id'], unique=False)


def downgrade():
    op.drop_index(op.f('ix_game_note_user_id'), table_name='game_note')
    op.drop_table('game_note')
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('digest_hour')
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_column('max_rating')
        batch_op.drop_column('min_rating')
