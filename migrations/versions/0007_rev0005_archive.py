"""archive: endings, seat results, placeholder accounts, rating history, archive indexes

Revision ID: 0005
Revises: 0006a
Create Date: 2026-11-22 21:00:00

"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0005'
down_revision = '0006a'
branch_labels = None
depends_on = None


def upgrade():
    # Plain ALTER TABLE ADD COLUMN and CREATE INDEX: SQLite's batch mode would copy the tables, which
    # other tables' foreign keys forbid once they hold rows.
    op.add_column('user', sa.Column('placeholder', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('game', sa.Column('ending', sa.String(length=16), nullable=True))
    op.add_column('game', sa.Column('import_key', sa.String(length=64), nullable=True))
    op.create_index(op.f('ix_game_import_key'), 'game', ['import_key'], unique=True)
    op.create_index('ix_game_archive', 'game', ['status', 'public', 'finished_at', 'id'], unique=False)
    op.create_index('ix_game_archive_engine', 'game', ['engine', 'status', 'public', 'finished_at', 'id'],
                    unique=False)
    op.add_column('seat', sa.Column('result', sa.String(length=8), nullable=True))
    op.add_column('seat', sa.Column('finished_at', sa.DateTime(), nullable=True))
    op.create_index('ix_seat_archive', 'seat', ['user_id', 'finished_at', 'game_id'], unique=False)
    op.create_index('ix_rating_standings', 'rating', ['engine', 'rating'], unique=False)
    op.create_table('rating_history',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('engine', sa.String(length=32), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('rating', sa.Float(), nullable=False),
    sa.Column('deviation', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], name=op.f('fk_rating_history_game_id_game'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], name=op.f('fk_rating_history_user_id_user'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_rating_history'))
    )
    with op.batch_alter_table('rating_history', schema=None) as batch_op:
        batch_op.create_index('ix_rating_history_user', ['user_id', 'engine', 'id'], unique=False)
    _backfill()


def _backfill():
    """Games finished before this revision get their ending and their seats' results."""
    import games
    from pbem.game.endings import ending_of

    bind = op.get_bind()
    game = sa.table('game', sa.column('id', sa.Integer), sa.column('engine', sa.String),
                    sa.column('status', sa.String), sa.column('result', sa.JSON),
                    sa.column('finished_at', sa.DateTime), sa.column('ending', sa.String))
    seat = sa.table('seat', sa.column('game_id', sa.Integer), sa.column('number', sa.Integer),
                    sa.column('result', sa.String), sa.column('finished_at', sa.DateTime))
    move = sa.table('move', sa.column('game_id', sa.Integer), sa.column('number', sa.Integer),
                    sa.column('kind', sa.String))
    server_endings = {'resign': 'resignation', 'draw-accept': 'agreement', 'timeout': 'time'}
    rows = bind.execute(sa.select(game.c.id, game.c.engine, game.c.result, game.c.finished_at)
                        .where(game.c.result.is_not(None))).all()
    for game_id, engine, result, finished_at in rows:
        outcome = games.Outcome.from_dict(result)
        last = bind.execute(sa.select(move.c.kind).where(move.c.game_id == game_id)
                            .order_by(move.c.number.desc()).limit(1)).scalar()
        ending = server_endings.get(last) or ending_of(engine, outcome)
        bind.execute(game.update().where(game.c.id == game_id).values(ending=ending))
        for number, seat_result in enumerate(outcome.results):
            bind.execute(seat.update().where(seat.c.game_id == game_id, seat.c.number == number)
                         .values(result=seat_result, finished_at=finished_at))


def downgrade():
    with op.batch_alter_table('rating_history', schema=None) as batch_op:
        batch_op.drop_index('ix_rating_history_user')
    op.drop_table('rating_history')
    with op.batch_alter_table('rating', schema=None) as batch_op:
        batch_op.drop_index('ix_rating_standings')
    with op.batch_alter_table('seat', schema=None) as batch_op:
        batch_op.drop_index('ix_seat_archive')
        batch_op.drop_column('finished_at')
        batch_op.drop_column('result')
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_index('ix_game_archive_engine')
        batch_op.drop_index('ix_game_archive')
        batch_op.drop_index(batch_op.f('ix_game_import_key'))
        batch_op.drop_column('import_key')
        batch_op.drop_column('ending')
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_column('placeholder')
