"""Carreaux games created before the options when_stuck and group_value keep the sheet's rules

Revision ID: 0008
Revises: 0006
Create Date: 2026-11-22 21:00:00

A game is replayed from its stored options (``pbem verify``, ``pbem.game.play.replay``), and the options
schema fills in a missing option with today's default, ``when_stuck=least-rise``.  Games created before
the option existed were played under the sheet's rule, so their options are written out in full:
``when_stuck=draw`` and ``group_value=smallest``.  Their stored states need nothing: a state without
the options loads as a ``when_stuck=draw`` game.
"""
from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision = '0008'
down_revision = '0006'
branch_labels = None
depends_on = None

SHEET_RULES = {"when_stuck": "draw", "group_value": "smallest"}

game = sa.table("game", sa.column("id", sa.Integer), sa.column("engine", sa.String),
                sa.column("options", sa.JSON))


def _carreaux_games(conn):
    return conn.execute(sa.select(game.c.id, game.c.options).where(game.c.engine == "carreaux")).all()


def upgrade():
    conn = op.get_bind()
    for game_id, options in _carreaux_games(conn):
        options = dict(options or {})
        if "when_stuck" in options:
            continue
        options.update(SHEET_RULES)
        conn.execute(sa.update(game).where(game.c.id == game_id).values(options=options))


def downgrade():
    # The code before this revision refuses options it does not know; a game created since under
    # least-rise or spanning would be replayed there under the sheet's rules, which is all it can do.
    conn = op.get_bind()
    for game_id, options in _carreaux_games(conn):
        options = {k: v for k, v in (options or {}).items() if k not in SHEET_RULES}
        conn.execute(sa.update(game).where(game.c.id == game_id).values(options=options))
