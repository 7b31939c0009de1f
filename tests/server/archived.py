"""Finished games for the archive tests, played through the one move path."""

from __future__ import annotations

import random
from datetime import datetime

from pbem.core.extensions import db
from pbem.core.models import Game, User, set_clock
from pbem.game import play, queries

SMALL = {"cambio": {"size": 3, "placements": 2}, "truchet": {"size": 3}, "carreaux": {}, "boxoff": {},
         "easyslider": {"rounds": 1}}


def finished(engine: str, users: list[User], *, seed: int = 1, at: datetime | None = None,
             end: str = "play", moves: int = 0, public: bool = True, comment: str | None = None,
             rated: bool = True) -> Game:
    """A game of ``users`` played to its end: by random legal moves (``end="play"``), or after
    ``moves`` random moves by a resignation of seat 1, a draw by agreement or seat 1's timeout.  The
    server's clock reads ``at`` meanwhile, so the game finishes then."""
    set_clock(at)
    try:
        game = play.create_game(engine, list(users), SMALL[engine], seed=seed, public=public, rated=rated)
        db.session.commit()
        rng = random.Random(seed)
        played = 0
        while game.status == "active" and (end == "play" or played < moves):
            state = queries.state_of(game)
            engine_ = queries.engine_of(game)
            seat = min(engine_.to_move(state))
            text = rng.choice(engine_.moves(state, seat))
            play.submit(game.id, game.seats[seat].user, text, "web",
                        comment=comment if played == 0 else None, seat=seat)
            played += 1
            game = db.session.get(Game, game.id)
        if game.status == "active":
            if end == "resign":
                play.resign(game.id, users[0], "web")
            elif end == "draw":
                play.offer_draw(game.id, users[0], "web")
                play.accept_draw(game.id, users[1], "web")
            elif end == "time":
                seat = min(queries.seats_to_move(game))
                play.time_out(game.id, seat)
        return db.session.get(Game, game.id)
    finally:
        set_clock(None)
