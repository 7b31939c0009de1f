"""tournaments: round-robins, Swiss, knockouts and ladders, their entries and pairings

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 02:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'tournament',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sa.String(length=80), nullable=False),
        sa.Column('engine', sa.String(length=32), nullable=False),
        sa.Column('options', sa.JSON(), nullable=False),
        sa.Column('time_control', sa.JSON(), nullable=False),
        sa.Column('rated', sa.Boolean(), nullable=False),
        sa.Column('format', sa.String(length=16), nullable=False),
        sa.Column('settings', sa.JSON(), nullable=False),
        sa.Column('min_players', sa.Integer(), nullable=False),
        sa.Column('max_players', sa.Integer(), nullable=False),
        sa.Column('start_at', sa.DateTime(), nullable=True),
        sa.Column('min_rating', sa.Integer(), nullable=True),
        sa.Column('max_rating', sa.Integer(), nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('round', sa.Integer(), nullable=False),
        sa.Column('organiser_id', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('started_at', sa.DateTime(), nullable=True),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Column('version', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['organiser_id'], ['user.id'], name=op.f('fk_tournament_organiser_id_user')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tournament')),
    )
    op.create_index(op.f('ix_tournament_status'), 'tournament', ['status'], unique=False)
    op.create_table(
        'tournament_player',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('tournament_id', sa.Integer(), nullable=False),
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('seed', sa.Integer(), nullable=True),
        sa.Column('position', sa.Integer(), nullable=True),
        sa.Column('joined_at', sa.DateTime(), nullable=False),
        sa.Column('left_at', sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(['tournament_id'], ['tournament.id'],
                                name=op.f('fk_tournament_player_tournament_id_tournament'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_tournament_player_user_id_user')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tournament_player')),
        sa.UniqueConstraint('tournament_id', 'user_id', name='uq_tournament_player_entry'),
    )
    op.create_index(op.f('ix_tournament_player_user_id'), 'tournament_player', ['user_id'], unique=False)
    op.create_table(
        'tournament_game',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('tournament_id', sa.Integer(), nullable=False),
        sa.Column('round', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('game_id', sa.Integer(), nullable=True),
        sa.Column('first_id', sa.Integer(), nullable=False),
        sa.Column('second_id', sa.Integer(), nullable=True),
        sa.Column('result', sa.String(length=8), nullable=True),
        sa.Column('how', sa.String(length=16), nullable=True),
        sa.Column('void', sa.Boolean(), nullable=False),
        sa.Column('expires_at', sa.DateTime(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['first_id'], ['user.id'], name=op.f('fk_tournament_game_first_id_user')),
        sa.ForeignKeyConstraint(['game_id'], ['game.id'], name=op.f('fk_tournament_game_game_id_game'),
                                ondelete='SET NULL'),
        sa.ForeignKeyConstraint(['second_id'], ['user.id'], name=op.f('fk_tournament_game_second_id_user')),
        sa.ForeignKeyConstraint(['tournament_id'], ['tournament.id'],
                                name=op.f('fk_tournament_game_tournament_id_tournament'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_tournament_game')),
    )
    op.create_index(op.f('ix_tournament_game_game_id'), 'tournament_game', ['game_id'], unique=False)
    op.create_index('ix_tournament_game_round', 'tournament_game', ['tournament_id', 'round', 'id'],
                    unique=False)


def downgrade():
    op.drop_index('ix_tournament_game_round', table_name='tournament_game')
    op.drop_index(op.f('ix_tournament_game_game_id'), table_name='tournament_game')
    op.drop_table('tournament_game')
    op.drop_index(op.f('ix_tournament_player_user_id'), table_name='tournament_player')
    op.drop_table('tournament_player')
    op.drop_index(op.f('ix_tournament_status'), table_name='tournament')
    op.drop_table('tournament')
