"""each player's tallies of finished games (wins, draws, losses by game, public, rated), filled

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26 03:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'tally',
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('engine', sa.String(length=32), nullable=False),
        sa.Column('public', sa.Boolean(), nullable=False),
        sa.Column('rated', sa.Boolean(), nullable=False),
        sa.Column('wins', sa.Integer(), nullable=False),
        sa.Column('draws', sa.Integer(), nullable=False),
        sa.Column('losses', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_tally_user_id_user'),
                                ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('user_id', 'engine', 'public', 'rated', name=op.f('pk_tally')),
    )
    # The games finished so far, counted once here as pbem.game.tallies.counted() counts them.
    op.execute(
        "INSERT INTO tally (user_id, engine, public, rated, wins, draws, losses) "
        "SELECT seat.user_id, game.engine, game.public, game.rated, "
        "SUM(CASE WHEN seat.result = 'win' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN seat.result = 'draw' THEN 1 ELSE 0 END), "
        "SUM(CASE WHEN seat.result = 'loss' THEN 1 ELSE 0 END) "
        "FROM seat JOIN game ON game.id = seat.game_id "
        "WHERE seat.user_id IS NOT NULL AND seat.result IN ('win', 'draw', 'loss') "
        "GROUP BY seat.user_id, game.engine, game.public, game.rated"
    )


def downgrade():
    op.drop_table('tally')
