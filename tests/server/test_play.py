"""The one move path: turns, seats, stale moves, refusals, draws, resignation, and what it records."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select, update

from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, Seat, User
from pbem.game import play, queries, results
from pbem.game.play import PlayError

# Cambio 3x3 with two placements each (docs/RULES.md): O places b3, X a2, O c2, X b1, then O pushes.
OPENING = ["b3", "a2", "c2", "b1"]


def cambio(alice: User, bob: User, **options) -> Game:
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2, **options})
    db.session.commit()
    return game


def mails_to(user: User, kind: str | None = None) -> list[OutboxMail]:
    query = select(OutboxMail).where(OutboxMail.to_addr == user.email).order_by(OutboxMail.id)
    rows = db.session.scalars(query).all()
    return [r for r in rows if kind is None or r.kind == kind]


def test_a_game_starts_and_asks_the_first_player(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    assert game.status == "active"
    assert queries.seats_to_move(game) == {0}
    [request] = mails_to(alice, "your-move")
    assert request.subject == f"[pbem] Cambio #{game.id}: your move (move 1)"
    assert "b3" in request.body_text  # The legal placements are listed.
    assert mails_to(bob) == []


def test_moves_alternate_and_are_recorded(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    for i, text in enumerate(OPENING):
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
    play.submit(game.id, alice, "B3V", "mail", comment="down it goes")
    game = db.session.get(Game, game.id)
    assert [m.text for m in game.moves] == [*OPENING, "b3v"]
    assert game.moves[-1].comment == "down it goes" and game.moves[-1].via == "mail"
    assert game.ply == 5
    assert queries.seats_to_move(game) == {1}
    assert mails_to(bob, "your-move")[-1].subject.endswith("your move (move 6)")
    assert "b3v" in mails_to(bob, "your-move")[-1].body_text


def test_every_move_is_stored_and_raises_the_game_version(ctx: Flask, players) -> None:
    """What a move changes in the game and its seats reaches the database, and the game row's version
    goes up by one with each move (the page cache's stamps and the optimistic lock rely on it)."""
    alice, bob, _ = players
    game = cambio(alice, bob)
    columns = (Game.version, Game.ply, Game.state, Game.updated_at)

    def stored() -> tuple:
        db.session.rollback()
        row = db.session.execute(select(*columns).where(Game.id == game.id)).one()
        seats = db.session.execute(select(Seat.moves_made, Seat.deadline).where(Seat.game_id == game.id)
                                   .order_by(Seat.number)).all()
        return (*row, [tuple(seat) for seat in seats])

    before = stored()
    for i, text in enumerate(OPENING[:2]):
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
        after = stored()
        assert after[0] == before[0] + 1 and after[1] == before[1] + 1
        assert after[2] != before[2] and after[3] >= before[3]
        assert [made for made, _deadline in after[4]] == [1, i]
        # The clock moved to the other seat: the mover's deadline is cleared, the other's set.
        assert (after[4][i % 2][1] is None) and (after[4][1 - i % 2][1] is not None)
        before = after


def test_a_game_changed_behind_its_lock_is_refused_as_a_conflict(ctx: Flask, players) -> None:
    """Should the game row change between the locked read and the write (nothing in the server lets it),
    the write matches no row and the whole transaction is refused rather than overwrite it."""
    alice, bob, _ = players
    game = cambio(alice, bob)
    version = game.version
    table = Game.__table__
    with pytest.raises(PlayError) as refused, play.locked_game(game.id) as locked:
        locked.ply += 1
        # Another writer's UPDATE, sent as a plain statement that the session does not see.
        db.session.connection().execute(update(table).where(table.c.id == game.id)
                                        .values(version=table.c.version + 1))
    assert refused.value.code == "conflict"
    db.session.rollback()
    assert db.session.execute(select(Game.ply, Game.version).where(Game.id == game.id)).one() == (0, version)


def test_not_your_turn_is_refused_and_changes_nothing(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    with pytest.raises(PlayError, match="not your move") as caught:
        play.submit(game.id, bob, "b3", "web")
    assert caught.value.code == "not-your-turn"
    assert db.session.get(Game, game.id).ply == 0


def test_a_move_sent_again_for_a_passed_move_number_is_stale_not_out_of_turn(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b3", "mail", expect=1)
    # The same mail again: it is bob's turn now, but what matters is that move 1 is played, and how.
    with pytest.raises(PlayError) as caught:
        play.submit(game.id, alice, "B3", "mail", expect=1)
    assert caught.value.code == "stale"
    assert caught.value.message.startswith(f"Your b3 was already played as move 1 of game #{game.id};")
    with pytest.raises(PlayError) as caught:
        play.submit(game.id, alice, "c2", "mail", expect=1)
    assert caught.value.code == "stale" and caught.value.message.startswith("Your move was for move 1, but")
    assert db.session.get(Game, game.id).ply == 1


def test_a_stranger_cannot_move(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = cambio(alice, bob)
    with pytest.raises(PlayError, match="not playing") as caught:
        play.submit(game.id, carol, "b3", "web")
    assert caught.value.code == "not-seated"


def test_an_illegal_move_says_why(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    with pytest.raises(PlayError) as caught:
        play.submit(game.id, alice, "a1", "web")  # A corner: never a placement cell.
    assert caught.value.code == "illegal"
    assert "a1" in caught.value.message
    assert db.session.scalars(select(Move)).all() == []


def test_a_stale_move_number_is_refused(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b3", "web", expect=1)
    with pytest.raises(PlayError, match=r"move 1, but .* at move 2") as caught:
        play.submit(game.id, bob, "a2", "mail", expect=1)
    assert caught.value.code == "stale"
    play.submit(game.id, bob, "a2", "mail", expect=2)
    assert db.session.get(Game, game.id).ply == 2


def test_the_same_move_sent_twice_is_applied_once(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b3", "web", expect=1)
    with pytest.raises(PlayError):
        play.submit(game.id, alice, "b3", "web", expect=1)
    assert [m.text for m in db.session.get(Game, game.id).moves] == ["b3"]


def test_a_win_ends_the_game_rates_it_and_tells_both(ctx: Flask, players) -> None:
    alice, bob, _ = players
    # O to push on a board where pushing a1> completes O's bottom row... use the RULINGS position:
    game = play.create_game("cambio", [alice, bob], {"position": "o.o/.../xx."})
    db.session.commit()
    play.submit(game.id, alice, "a1>", "web")  # Not a win (pushes onto the bottom row only).
    game = db.session.get(Game, game.id)
    while game.status == "active":
        seat = next(iter(queries.seats_to_move(game)))
        mover = alice if seat == 0 else bob
        legal = queries.engine_of(game).moves(queries.state_of(game), seat)
        play.submit(game.id, mover, legal[0], "web")
        game = db.session.get(Game, game.id)
    assert game.status == "finished" and game.result["reason"]
    assert all(s.deadline is None for s in game.seats)
    assert len(mails_to(alice, "game-over")) == 1 and len(mails_to(bob, "game-over")) == 1
    with pytest.raises(PlayError, match="over"):
        play.submit(game.id, alice, "a1>", "web")


def test_resignation_ends_the_game_for_the_opponent(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    outcome = play.resign(game.id, bob, "web")
    assert outcome.results == ("win", "loss")
    game = db.session.get(Game, game.id)
    assert game.status == "finished" and results.sentence(game) == "alice (O) wins: bob (X) resigned."
    assert game.moves[-1].kind == "resign"
    from pbem.game.ratings import rating_of

    assert rating_of(alice.id, "cambio").rating > 1500 > rating_of(bob.id, "cambio").rating


def test_draw_offer_decline_and_accept(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.offer_draw(game.id, alice, "web")
    assert mails_to(bob, "draw-offered")
    with pytest.raises(PlayError, match="already offered"):
        play.offer_draw(game.id, alice, "web")
    with pytest.raises(PlayError, match="no draw offer"):
        play.accept_draw(game.id, alice, "web")  # One cannot accept one's own offer.
    play.decline_draw(game.id, bob, "web")
    assert mails_to(alice, "draw-declined")
    with pytest.raises(PlayError, match="no draw offer"):
        play.accept_draw(game.id, bob, "web")
    play.offer_draw(game.id, bob, "web")
    outcome = play.accept_draw(game.id, alice, "web")
    assert outcome.results == ("draw", "draw")
    assert db.session.get(Game, game.id).status == "finished"


def test_a_move_declines_a_pending_draw_offer(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.offer_draw(game.id, bob, "web")
    play.submit(game.id, alice, "b3", "web")
    with pytest.raises(PlayError, match="no draw offer"):
        play.accept_draw(game.id, alice, "web")


def test_timeout_loses_on_time_or_accepts_a_pending_draw(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b3", "web")
    play.submit(game.id, bob, "a2", "web")  # Both have moved: running out of time loses.
    assert play.time_out(game.id, 1) is None  # Bob is not on the clock.
    outcome = play.time_out(game.id, 0)
    assert outcome is not None and outcome.results == ("loss", "win")
    other = cambio(alice, bob)
    play.offer_draw(other.id, bob, "web")
    outcome = play.time_out(other.id, 0)
    assert outcome is not None and outcome.results == ("draw", "draw")


def test_options_are_validated_by_the_engine(ctx: Flask, players) -> None:
    from marshmallow import ValidationError

    alice, bob, _ = players
    with pytest.raises(ValidationError):
        play.create_game("cambio", [alice, bob], {"size": 7})
    with pytest.raises(PlayError, match="2 players"):
        play.create_game("cambio", [alice], {})


def test_an_open_seat_waits(ctx: Flask, players) -> None:
    alice, _, _ = players
    game = play.create_game("cambio", [alice, None])
    db.session.commit()
    assert game.status == "waiting" and game.state is None
    with pytest.raises(PlayError, match="not started"):
        play.submit(game.id, alice, "b3", "web")
