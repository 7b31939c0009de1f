"""The rating change a game made, in its result mail and on its page: "Your rating: 1500 → 1662 (+162)"."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, Rating
from pbem.game import play
from pbem.mailout import outbox
from pbem.present import gameview
from tests.server.test_mail_play import GAME
from tests.server.test_sweep import text_of


def finished_cambio(alice, bob) -> Game:
    """A rated Cambio game that X (bob) wins."""
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    for number, move in enumerate(GAME):
        play.submit(game.id, (alice, bob)[number % 2], move, "web")
    db.session.rollback()
    return db.session.get_one(Game, game.id)


def rating(user) -> int:
    return round(db.session.scalar(select(Rating.rating).where(Rating.user_id == user.id)))


def test_the_result_mail_and_the_page_show_how_the_game_moved_each_rating(ctx: Flask, players, sink) -> None:
    alice, bob, carol = players
    first = finished_cambio(alice, bob)
    alice_after, bob_after = rating(alice), rating(bob)
    assert bob_after > 1500 > alice_after
    outbox.deliver_due()
    won = text_of(sink.messages(bob.email)[-1])
    assert f"Your rating: 1500 → {bob_after} (+{bob_after - 1500})." in won
    lost = text_of(sink.messages(alice.email)[-1])
    assert f"Your rating: 1500 → {alice_after} (−{1500 - alice_after})." in lost
    view = gameview.build(first, carol)
    assert [s.rating_change for s in view.seats] == [
        f"1500 → {alice_after} (−{1500 - alice_after})", f"1500 → {bob_after} (+{bob_after - 1500})"]

    # The next game starts from the ratings the first left, on the page read back from the histories.
    second = finished_cambio(alice, bob)
    change = gameview.build(second, None).seats[1].rating_change
    assert change is not None and change.startswith(f"{bob_after} → {rating(bob)} (+")
    # A game that does not count shows no change.
    unrated = play.create_game("cambio", [alice, bob], {"size": 3}, rated=False)
    db.session.commit()
    play.resign(unrated.id, alice, "web")
    db.session.rollback()
    assert [s.rating_change for s in gameview.build(db.session.get_one(Game, unrated.id), None).seats] == [
        None, None]
