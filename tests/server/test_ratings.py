"""Glicko-2 ratings: the paper's worked example, the update at a game's end, inactivity, provisional
ratings, and the rated choice of the new-game form."""

from __future__ import annotations

from datetime import timedelta

import pytest
from flask import Flask

from pbem import create_app
from pbem.core.extensions import db
from pbem.core.models import Game, Rating, set_clock, utcnow
from pbem.game import play
from pbem.game.ratings import Glicko, deviation_now, display, glicko2, is_provisional
from pbem.lobby import challenges
from tests.server.test_web_games import new_game_form, signed_in


def test_glickmans_worked_example() -> None:
    """Mark Glickman, "Example of the Glicko-2 system": one player, three games, tau 0.5."""
    player = Glicko(1500, 200, 0.06)
    games = [(Glicko(1400, 30), 1.0), (Glicko(1550, 100), 0.0), (Glicko(1700, 300), 0.0)]
    after = glicko2(player, games, tau=0.5)
    # The paper rounds its intermediate values (mu' = -0.2069 gives 1464.06); unrounded it is 1464.0507.
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.deviation == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)  # 0.059996


def test_a_period_without_games_only_widens_the_deviation() -> None:
    after = glicko2(Glicko(1600, 50, 0.06), [], tau=0.5)
    # sqrt(50² + (0.06 × 173.7178)²): the volatility on the rating scale.
    assert after.rating == 1600 and after.deviation == pytest.approx(51.075, abs=1e-3)


def stored(user_id: int, engine: str = "cambio") -> Rating | None:
    db.session.rollback()
    return db.session.scalar(db.select(Rating).where(Rating.user_id == user_id, Rating.engine == engine))


def finish_by_resignation(winner, loser, rated: bool = True) -> Game:
    game = play.create_game("cambio", [winner, loser], rated=rated)
    db.session.commit()
    play.resign(game.id, loser, "web")
    return db.session.get(Game, game.id)


def test_a_rated_game_moves_both_ratings_at_its_end(ctx: Flask, players) -> None:
    alice, bob, _ = players
    finish_by_resignation(alice, bob)
    a, b = stored(alice.id), stored(bob.id)
    # Two new players (1500, deviation 350): the winner gains what the loser loses, and both ratings
    # become surer.
    assert a.rating == pytest.approx(1662.3, abs=0.1) and b.rating == pytest.approx(1337.7, abs=0.1)
    assert a.deviation == pytest.approx(290.3, abs=0.1) == b.deviation
    assert a.games == b.games == 1 and a.last_game_at is not None
    assert (display(a), display(b)) == ("1662?", "1338?")
    # A draw between them pulls them together again.
    won, lost = a.rating, b.rating
    game = play.create_game("cambio", [alice, bob])
    db.session.commit()
    play.offer_draw(game.id, alice, "web")
    play.accept_draw(game.id, bob, "web")
    a2, b2 = stored(alice.id), stored(bob.id)
    assert won > a2.rating > 1500 > b2.rating > lost and a2.games == 2


def test_unrated_games_and_games_against_oneself_leave_ratings_alone(ctx: Flask, players) -> None:
    alice, bob, carol = players
    finish_by_resignation(alice, bob, rated=False)
    finish_by_resignation(carol, carol)
    assert stored(alice.id) is None and stored(bob.id) is None and stored(carol.id) is None
    # A game of three players is never rated, whatever was asked.
    three = play.create_game("boxoff", [alice, bob, carol], rated=True)
    db.session.commit()
    assert three.rated is False


def test_deviation_grows_with_inactivity_and_the_rating_moves_faster(ctx: Flask, players) -> None:
    alice, bob, carol = players
    start = utcnow()
    try:
        set_clock(start)
        # Twenty games between alice and bob make both ratings sure.
        for n in range(20):
            finish_by_resignation(*((alice, bob) if n % 2 else (bob, alice)))
        settled = stored(alice.id)
        assert settled.deviation < 110 and display(settled) == f"{round(settled.rating)}"
        assert deviation_now(settled) == pytest.approx(settled.deviation)
        # A year away: the deviation has grown by 78 rating periods of the player's volatility.
        later = start + timedelta(days=365)
        grown = deviation_now(settled, later)
        assert grown > settled.deviation + 20
        assert grown < 350
        set_clock(later)
        assert display(stored(alice.id)).endswith("?")  # Provisional again.
        # Back after the year, alice's win moves her rating further than the same win would have
        # at once (carol is new, as she would have been then).
        before = stored(alice.id).rating
        finish_by_resignation(alice, carol)
        after_absence = stored(alice.id).rating - before
        same_at_once = glicko2(Glicko(before, settled.deviation, settled.volatility), [(Glicko(), 1.0)],
                               tau=0.75).rating - before
        assert after_absence > same_at_once > 0
        # The deviation never grows past a new player's.
        assert deviation_now(stored(bob.id), start + timedelta(days=365 * 50)) == 350
    finally:
        set_clock(None)


def test_the_provisional_threshold_is_a_setting(settings: dict, players) -> None:
    alice, bob, _ = players
    finish_by_resignation(alice, bob)
    alice_id = alice.id
    row = stored(alice_id)
    assert is_provisional(row) and display(row).endswith("?")
    relaxed = create_app({**settings, "ratings": {"provisional_deviation": 300.0}})
    with relaxed.app_context():
        row = stored(alice_id)
        assert not is_provisional(row) and display(row) == "1662"
        db.session.remove()
        db.engine.dispose()


def test_the_rated_choice_of_the_new_game_form(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    (web,) = signed_in(app, alice)
    page = web.get("/games/new?game=cambio").get_data(as_text=True)
    assert 'name="rated" value="1" checked' in page  # On by default for a two-player game.
    web.post("/games/new", new_game_form(rated="1"))
    web.post("/games/new", new_game_form())  # Unticked.
    rated = db.session.scalars(db.select(Game.rated).order_by(Game.id)).all()
    assert rated == [True, False]
    challenges.accept(1, bob)
    play.resign(1, bob, "web")
    assert stored(alice.id).rating > 1500
