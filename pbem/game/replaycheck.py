"""``pbem verify``: replay every game from its record and compare with the stored state; check the
players' tallies against their seats and rebuild them where they differ."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import select

from games import IllegalMove
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import queries, replay, tallies


@dataclass(frozen=True)
class Mismatch:
    """A game whose stored state is not what its record replays to."""

    game_id: int
    problem: str


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True)


def check_game(game: Game) -> Mismatch | None:
    """Replay one game; None when the stored state is what the moves give."""
    if game.state is None:
        return None
    engine = queries.engine_of(game)
    try:
        replayed = replay.final_state(game)
    except IllegalMove as exc:
        return Mismatch(game.id, f"its record does not replay: {exc.message}")
    if _canonical(engine.dump(replayed)) != _canonical(game.state):
        return Mismatch(game.id, "the stored state differs from the state its moves replay to")
    return None


def check_all(batch: int = 200) -> Iterator[Mismatch]:
    """Every game that does not replay to its stored state."""
    last = 0
    while True:
        rows = db.session.scalars(select(Game).where(Game.id > last).order_by(Game.id).limit(batch)).all()
        if not rows:
            return
        for game in rows:
            problem = check_game(game)
            if problem is not None:
                yield problem
        last = rows[-1].id
        db.session.expunge_all()


def fix_tallies() -> list[str]:
    """Rebuild the players' tallies from their seats where they differ; a line for each tally that
    was wrong (its player, game and kind), empty when all were right."""
    wrong = tallies.rebuild()
    return [f"user #{user_id}'s tally of {'public' if public else 'private'} "
            f"{'rated' if rated else 'unrated'} {engine} games was wrong"
            for user_id, engine, public, rated in wrong]
