"""The deadline sweep on an injected clock: reminders at their points once each, timeouts for every kind
of game, correspondence banks, the weekend pause, vacation in the sweep, and `pbem sweep --at`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import event, select
from sqlalchemy.orm.exc import StaleDataError

from pbem.accounts import vacation
from pbem.archive import archive, records
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Game, Move, OutboxMail, RatingHistory, User, set_clock, utcnow
from pbem.core.unit_of_work import current, unit_of_work
from pbem.game import clock, play, queries, replay, results
from pbem.mailout import outbox, tokens
from pbem.schedule import sweep

T0 = datetime(2025, 3, 3, 12, 0)  # a Monday
CAMBIO = {"size": 3, "placements": 2}


@pytest.fixture
def at() -> Iterator:
    """Set the server's clock for the test: ``at(datetime)``."""
    yield set_clock
    set_clock(None)


def sweep_at(moment: datetime) -> sweep.SweepReport:
    set_clock(moment)
    return sweep.sweep()


def new_game(engine: str, users: list[User], options: dict | None = None, **control) -> Game:
    game = play.create_game(engine, users, options or {}, time_control=control or None)
    db.session.commit()
    return game


def fresh(game: Game) -> Game:
    db.session.rollback()  # See what the sweep committed.
    return db.session.get(Game, game.id)


def opened(game: Game) -> Game:
    """Both players of a Cambio game have moved (b3, then a2): the first mover is to move again, on a clock
    begun now, and running out of time from here on loses the game (before, it aborts it)."""
    first, second = (s.user for s in fresh(game).seats)
    play.submit(game.id, first, "b3", "web")
    play.submit(game.id, second, "a2", "web")
    return fresh(game)


def text_of(message) -> str:
    """The plain-text part of a received mail."""
    part = next(p for p in message.walk() if p.get_content_type() == "text/plain")
    return part.get_payload(decode=True).decode(part.get_content_charset() or "utf-8")


def mails(user: User, kind: str) -> list[OutboxMail]:
    db.session.rollback()
    query = select(OutboxMail).where(OutboxMail.to_addr == user.email, OutboxMail.kind == kind)
    return list(db.session.scalars(query.order_by(OutboxMail.id)))


def test_reminders_come_48_and_12_hours_before_the_deadline_once_each(ctx: Flask, players, at, sink) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3)  # deadline Thu 12:00
    assert sweep_at(T0 + timedelta(hours=23, minutes=59)).reminded == 0
    assert sweep_at(T0 + timedelta(hours=24)).reminded == 1
    assert sweep_at(T0 + timedelta(hours=25)).reminded == 0
    assert sweep_at(T0 + timedelta(hours=59)).reminded == 0
    assert sweep_at(T0 + timedelta(hours=60)).reminded == 1
    assert sweep_at(T0 + timedelta(hours=71)).reminded == 0
    assert len(mails(alice, "reminder")) == 2 and mails(bob, "reminder") == []

    outbox.deliver_due()
    first, second = [m for m in sink.messages(alice.email) if "reminder" in m["Subject"]]
    assert first["Subject"] == f"[pbem] Cambio #{game.id}: reminder: your move (move 1), 2 days left"
    assert "12 hours left" in second["Subject"]
    body = text_of(first)
    assert "it is still your move in Cambio #" in body
    # The clock's words end in "left" already: the line must not say it twice.
    assert "Your clock: 2 days left (until Thu 6 Mar 2025 12:00 UTC)." in body and "left left" not in body
    assert ("If you have not moved by Thu 6 Mar 2025 12:00 UTC, the game is aborted, since you have not "
            "moved in it yet, and it is not rated") in body
    assert tokens.reply_address(game.id, 0, alice) in body
    assert "Legal moves: " in body and "b3" in body  # The board's legal placements.
    assert "30 days of vacation left" in body


def test_a_short_clock_skips_reminder_points_before_the_turn_began(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=1)
    assert sweep_at(T0 + timedelta(hours=11)).reminded == 0  # No 48-hour reminder for a 24-hour clock.
    assert sweep_at(T0 + timedelta(hours=12)).reminded == 1
    assert len(mails(alice, "reminder")) == 1


def test_a_sweep_after_a_long_stop_sends_one_reminder_not_a_burst(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3)
    assert sweep_at(T0 + timedelta(hours=65)).reminded == 1  # Both points passed while nobody swept.
    assert sweep_at(T0 + timedelta(hours=70)).reminded == 0
    assert fresh(game).seats[0].next_event_at == T0 + timedelta(days=3)


def test_a_move_stops_the_reminders_and_starts_the_opponents_clock(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3)
    at(T0 + timedelta(hours=20))
    play.submit(game.id, alice, "b3", "web")
    assert sweep_at(T0 + timedelta(hours=30)).reminded == 0
    report = sweep_at(T0 + timedelta(hours=44))  # Bob's 48-hour point.
    assert report.reminded == 1 and mails(alice, "reminder") == [] and len(mails(bob, "reminder")) == 1


def test_two_player_timeout_is_a_loss_on_time_and_everyone_is_told(ctx: Flask, players, at, sink) -> None:
    alice, bob, _ = players
    at(T0)
    game = opened(new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=2))
    assert sweep_at(T0 + timedelta(days=2, seconds=-1)).timed_out == 0
    assert sweep_at(T0 + timedelta(days=2)).timed_out == 1
    over = fresh(game)
    assert over.status == "finished" and over.result["results"] == ["loss", "win"]
    assert results.sentence(over) == "bob (X) wins on time: alice (O) did not move in time."
    assert [(m.kind, m.via) for m in over.moves] == [("move", "web"), ("move", "web"), ("timeout", "server")]
    assert sweep_at(T0 + timedelta(days=9)).timed_out == 0  # Once.
    outbox.deliver_due()
    for player in (alice, bob):
        [result] = [m for m in sink.messages(player.email) if "game over" in m["Subject"]]
        words = "lost" if player is alice else "won"
        assert result["Subject"] == f"[pbem] Cambio #{game.id}: game over, you {words}"
        assert "bob (X) wins on time: alice (O) did not move in time." in text_of(result)


def test_a_game_one_side_never_moved_in_is_aborted_unrated_at_its_deadline(
    ctx: Flask, players, at, sink
) -> None:
    alice, bob, _ = players
    at(T0)
    never = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=2)  # Alice never moves.
    answered = new_game("cambio", [bob, alice], CAMBIO, kind="per_move", days=2)
    play.submit(answered.id, bob, "b3", "web")  # Bob moved; alice never answers.
    assert sweep_at(T0 + timedelta(days=2)).timed_out == 2
    for game in (never, answered):
        over = fresh(game)
        assert over.status == "abandoned" and over.rated is False and over.ending == "aborted"
        assert results.sentence(over) == (
            f"Aborted: alice ({'O' if game is never else 'X'}) never moved before their time ran out, so "
            "the game is not rated.")
        assert [results.seat_result(over, n) for n in (0, 1)] == ["aborted", "aborted"]
    # No rating moved, and the archive does not list them.
    assert db.session.scalars(select(RatingHistory)).all() == []
    assert archive.search(archive.Filters()).games == []
    outbox.deliver_due()
    over = [m for m in sink.messages(bob.email) if "game over" in m["Subject"]]
    assert [m["Subject"] for m in over] == [f"[pbem] Cambio #{never.id}: game over, aborted, not rated",
                                           f"[pbem] Cambio #{answered.id}: game over, aborted, not rated"]
    assert "Your rating" not in text_of(over[0])


def test_a_pending_draw_offer_is_accepted_at_the_deadline(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=2)
    play.offer_draw(game.id, bob, "web")
    assert sweep_at(T0 + timedelta(days=1, hours=12)).reminded == 1
    assert "the draw your opponent offered is accepted for you" in mails(alice, "reminder")[0].body_text
    sweep_at(T0 + timedelta(days=2))
    over = fresh(game)
    assert over.status == "finished" and over.result["results"] == ["draw", "draw"]


def test_easy_slider_absent_player_is_out_of_the_round_and_play_goes_on(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    at(T0)
    game = new_game("easyslider", [alice, bob, carol], {"rounds": 2}, kind="per_move", days=2)
    engine = queries.engine_of(game)
    at(T0 + timedelta(days=1))
    for player, seat in ((alice, 0), (carol, 2)):  # Each slide restarts that player's clock.
        play.submit(game.id, player, engine.moves(queries.state_of(fresh(game)), seat)[0], "web")
    assert mails(bob, "reminder") == [] and sweep_at(T0 + timedelta(days=1, hours=12)).reminded == 1
    report = sweep_at(T0 + timedelta(days=2))
    assert report.timed_out == 1
    going = fresh(game)
    assert going.status == "active"
    state = queries.state_of(going)
    assert state.seats[1].status == "timed out"
    assert engine.to_move(state) == {0, 2}
    assert going.seats[1].deadline is None and going.seats[0].deadline == T0 + timedelta(days=3)
    assert len(mails(alice, "timed-out")) == 1 and len(mails(carol, "timed-out")) == 1
    [told] = mails(bob, "you-timed-out")
    assert "you are out of this round, scored as its last finisher" in told.body_text


def test_a_timeout_that_ends_the_game_sends_the_result_alone(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("boxoff", [alice, bob], {"position": "bbww/wwbb"}, kind="per_move", days=2)
    for move in ("a1-b1", "a2-b2", "c1-d1", "c2-d2"):  # Alice clears her board; bob never moves.
        play.submit(game.id, alice, move, "web")
    assert fresh(game).status == "active"
    sweep_at(T0 + timedelta(days=2))
    over = fresh(game)
    assert over.status == "finished" and over.ending == "time"
    assert over.result["results"] == ["win", "loss"]
    # Bob hears that the game is over, not also that "the game goes on".
    assert len(mails(bob, "game-over")) == 1 and mails(bob, "you-timed-out") == []
    assert mails(alice, "timed-out") == []
    # Its record, read back (as an import does), is filed the same way.
    assert records.check(records.record(over)).ending == "time"


def test_a_solitaire_game_is_abandoned_at_the_deadline(ctx: Flask, players, at) -> None:
    alice, _, _ = players
    at(T0)
    game = new_game("easyslider", [alice], {}, kind="per_move", days=1)
    assert sweep_at(T0 + timedelta(hours=12)).reminded == 1
    assert "the game is abandoned" in mails(alice, "reminder")[0].body_text
    sweep_at(T0 + timedelta(days=1))
    over = fresh(game)
    assert over.status == "abandoned" and "abandoned" in over.result["reason"]
    assert len(mails(alice, "game-over")) == 1


def test_a_bank_keeps_what_is_left_plus_the_increment_up_to_its_cap(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    at(T0)
    game = new_game("cambio", [alice, bob], CAMBIO, kind="bank", initial_days=7, increment_days=2, max_days=8)
    assert fresh(game).seats[0].deadline == T0 + timedelta(days=7)
    at(T0 + timedelta(days=3))
    play.submit(game.id, alice, "b3", "web")  # 4 days left + 2 = 6.
    at(T0 + timedelta(days=3, hours=1))
    play.submit(game.id, bob, "a2", "web")  # 6 days 23 hours left + 2, capped at 8.
    seats = fresh(game).seats
    assert seats[0].deadline == T0 + timedelta(days=3, hours=1) + timedelta(days=6)
    assert seats[1].bank_seconds == 8 * clock.DAY
    assert sweep_at(T0 + timedelta(days=9, hours=1)).timed_out == 1
    assert fresh(game).result["results"] == ["loss", "win"]


def test_weekends_do_not_count_when_the_game_pauses_them(ctx: Flask, players, at) -> None:
    alice, bob, _ = players
    friday = datetime(2025, 3, 7, 12, 0)
    at(friday)
    paused = opened(new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=1, weekend_pause=True))
    plain = opened(new_game("cambio", [bob, alice], CAMBIO, kind="per_move", days=1))
    monday_noon = datetime(2025, 3, 10, 12, 0)
    assert fresh(paused).seats[0].deadline == monday_noon
    at(datetime(2025, 3, 8, 18, 0))  # Saturday: Alice's clock is not running.
    seat = fresh(paused).seats[0]
    assert clock.time_left(seat) == timedelta(hours=12) and "paused for the weekend" in clock.status(seat)
    report = sweep_at(datetime(2025, 3, 9, 23, 59))
    assert report.timed_out == 1 and fresh(plain).status == "finished" and fresh(paused).status == "active"
    assert mails(alice, "reminder") == []  # The 12-hour point is Monday 00:00, not Saturday noon.
    assert sweep_at(datetime(2025, 3, 10, 0, 0)).reminded == 1
    assert sweep_at(monday_noon).timed_out == 1 and fresh(paused).status == "finished"


def test_counting_time_skips_weekends_both_ways() -> None:
    friday_noon = datetime(2025, 3, 7, 12, 0)
    assert clock.after_counting(friday_noon, 12 * clock.HOUR, True) == datetime(2025, 3, 8, 0, 0)
    assert clock.after_counting(friday_noon, 13 * clock.HOUR, True) == datetime(2025, 3, 10, 1, 0)
    assert clock.after_counting(datetime(2025, 3, 10, 1, 0), -13 * clock.HOUR, True) == friday_noon
    saturday = datetime(2025, 3, 8, 9, 0)
    assert clock.after_counting(saturday, 3 * clock.DAY, True) == datetime(2025, 3, 13, 0, 0)
    assert clock.counting_seconds(friday_noon, datetime(2025, 3, 17, 12, 0), True) == 6 * clock.DAY
    assert clock.counting_seconds(friday_noon, datetime(2025, 3, 17, 12, 0), False) == 10 * clock.DAY


def test_vacation_in_the_sweep_stops_the_clock_and_runs_out(ctx: Flask, players, at, sink) -> None:
    alice, bob, _ = players
    at(T0)
    game = opened(new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3))
    at(T0 + timedelta(days=2))  # One day left.
    vacation.turn_on(alice)
    report = sweep_at(T0 + timedelta(days=20))
    assert (report.reminded, report.timed_out) == (0, 0) and fresh(game).status == "active"
    report = sweep_at(T0 + timedelta(days=32, hours=1))  # The 30 days ran out on day 32.
    assert (report.vacations_ended, report.reminded, report.timed_out) == (1, 1, 0)
    seat = fresh(game).seats[0]
    assert not seat.user.on_vacation and seat.deadline == T0 + timedelta(days=33)
    assert "23 hours left" in mails(alice, "reminder")[0].subject
    assert sweep_at(T0 + timedelta(days=33)).timed_out == 1
    assert results.sentence(fresh(game)) == "bob (X) wins on time: alice (O) did not move in time."
    outbox.deliver_due()
    [over] = [m for m in sink.messages(alice.email) if m["Subject"] == "[pbem] your vacation is over"]
    assert "used all 30 vacation days of 2025" in text_of(over)


def test_time_control_choices_and_refusals() -> None:
    values = [value for value, _ in clock.time_control_choices()]
    assert [v for v in values if v.startswith("days:")] == [f"days:{d}" for d in (1, 2, 3, 5, 7, 14, 21)]
    assert clock.time_control_from_choice("days:7", weekend_pause=True) == {
        "kind": "per_move", "days": 7, "weekend_pause": True}
    assert clock.time_control_from_choice("bank:7+1/14") == {
        "kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14}
    with pytest.raises(clock.TimeControlError, match="not a time control offered"):
        clock.time_control_from_choice("days:4")
    with pytest.raises(clock.TimeControlError, match="days must be a number of days from 1"):
        clock.check_time_control({"kind": "per_move", "days": 0})
    with pytest.raises(clock.TimeControlError, match="max_days must be at least initial_days"):
        clock.check_time_control({"kind": "bank", "initial_days": 9, "increment_days": 1, "max_days": 3})
    with pytest.raises(clock.TimeControlError, match="'per_move' or 'bank'"):
        clock.check_time_control({"kind": "hourglass"})
    assert clock.describe_time_control({"kind": "per_move", "days": 3, "weekend_pause": True}) == (
        "3 days per move; weekends (Saturday and Sunday, UTC) do not count")


def test_pbem_sweep_at_times_out_and_refuses_a_bad_time(ctx: Flask, runner: FlaskCliRunner, players) -> None:
    alice, bob, _ = players
    game = opened(new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3))
    deadline = fresh(game).seats[0].deadline
    result = runner.invoke(main, ["sweep", "--at", (deadline + timedelta(minutes=1)).isoformat()])
    assert result.exit_code == 0, result.output
    assert "Sweep: 0 reminded, 1 timed out" in result.stdout
    assert fresh(game).status == "finished"
    assert utcnow() < deadline  # The server's clock is the real one again once the command is over.
    bad = runner.invoke(main, ["sweep", "--at", "next tuesday"])
    assert bad.exit_code == 2 and "'next tuesday' is not a time" in bad.stderr


def test_one_broken_game_does_not_hold_back_the_other_reminders(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    at(T0)
    broken = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3)
    new_game("cambio", [carol, bob], CAMBIO, kind="per_move", days=3)
    fresh(broken).state = {"not": "a cambio position"}
    db.session.commit()
    report = sweep_at(T0 + timedelta(days=1))
    assert (report.reminded, report.failed) == (1, 1)
    assert len(mails(carol, "reminder")) == 1 and mails(alice, "reminder") == []


def test_one_broken_game_does_not_hold_back_the_other_timeouts(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    at(T0)
    broken = opened(new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=1))
    sound = opened(new_game("cambio", [carol, bob], CAMBIO, kind="per_move", days=1))
    fresh(broken).state = {"not": "a cambio position"}
    db.session.commit()
    report = sweep_at(T0 + timedelta(days=2))
    assert (report.timed_out, report.failed) == (1, 1)
    assert fresh(sound).status == "finished"
    assert results.sentence(fresh(sound)) == "bob (X) wins on time: carol (O) did not move in time."
    assert fresh(broken).status == "active"
    # Mended, the broken game is timed out by the next sweep, once.
    broken = fresh(broken)
    broken.state = queries.engine_of(broken).dump(replay.final_state(broken))
    db.session.commit()
    assert sweep_at(T0 + timedelta(days=2, minutes=1)).timed_out == 1
    assert sweep_at(T0 + timedelta(days=2, minutes=2)).timed_out == 0
    assert results.sentence(fresh(broken)) == "bob (X) wins on time: alice (O) did not move in time."


# The sweep's batches send their writes together (pbem.core.unit_of_work.UnitOfWork.batched): every
# record entry, mail and game change of a batch is committed with it, in order and once; a batch that
# fails leaves nothing;
# a read inside a batch sees what the batch wrote; and the statements a sweep sends do not grow with the
# games it times out.


def versions(game_ids: list[int]) -> list[int]:
    """The games' versions as committed, in the order of their ids."""
    db.session.rollback()
    return list(db.session.scalars(select(Game.version).where(Game.id.in_(game_ids)).order_by(Game.id)))


def outbox_rows() -> list[tuple[str, int | None, str]]:
    """Every queued mail as (kind, game id, recipient), in the order of the rows' ids."""
    db.session.rollback()
    query = select(OutboxMail.kind, OutboxMail.game_id, OutboxMail.to_addr).order_by(OutboxMail.id)
    rows = db.session.execute(query)
    return [tuple(row) for row in rows]


def record(game_id: int) -> list[tuple[int, int, str, str]]:
    """The game's record as (number, seat, kind, via), in the order of the entries' ids."""
    db.session.rollback()
    rows = db.session.execute(
        select(Move.number, Move.seat, Move.kind, Move.via).where(Move.game_id == game_id).order_by(Move.id)
    )
    return [tuple(row) for row in rows]


def test_a_batch_commits_every_entry_mail_and_game_change_in_order_once(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    at(T0)
    ending = [opened(new_game("cambio", pair, CAMBIO, kind="per_move", days=2)).id
              for pair in ([alice, bob], [carol, bob], [alice, carol])]
    at(T0 + timedelta(days=1))
    # Their 48-hour point: T0 + 2 days.
    reminded = [new_game("cambio", pair, CAMBIO, kind="per_move", days=3).id
                for pair in ([bob, carol], [carol, alice])]
    # A game whose record holds a move more: the timeout's entry follows it.
    play.submit(ending[2], alice, "c2", "web")
    at(T0 + timedelta(days=3, hours=1))  # Carol's clock in that game, restarted a day later, has run out.
    db.session.rollback()
    before = versions(ending)
    queued = len(outbox_rows())
    report = sweep.sweep()
    assert (report.timed_out, report.reminded, report.failed) == (3, 2, 0)
    # Each game changed once, its version raised once (what the pages' stamps rely on).
    assert versions(ending) == [v + 1 for v in before]
    assert [db.session.get(Game, g).status for g in ending] == ["finished"] * 3
    opening = [(1, 0, "move", "web"), (2, 1, "move", "web")]
    assert record(ending[0]) == [*opening, (3, 0, "timeout", "server")]
    assert record(ending[1]) == [*opening, (3, 0, "timeout", "server")]
    assert record(ending[2]) == [*opening, (3, 0, "move", "web"), (4, 1, "timeout", "server")]
    # Each rated game's end is in both its players' rating histories, in seat order.
    query = select(RatingHistory.game_id, RatingHistory.user_id).order_by(RatingHistory.id)
    assert list(db.session.execute(query)) == [
        (ending[0], alice.id), (ending[0], bob.id), (ending[1], carol.id), (ending[1], bob.id),
        (ending[2], alice.id), (ending[2], carol.id),
    ]
    # The mails in the order they were written: the games' ends in the order of the games, each to its
    # players in seat order; then the reminders.
    assert outbox_rows()[queued:] == [
        ("game-over", ending[0], alice.email), ("game-over", ending[0], bob.email),
        ("game-over", ending[1], carol.email), ("game-over", ending[1], bob.email),
        ("game-over", ending[2], alice.email), ("game-over", ending[2], carol.email),
        ("reminder", reminded[0], bob.email), ("reminder", reminded[1], carol.email),
    ]
    # Nothing is done twice.
    again = sweep.sweep()
    assert (again.timed_out, again.reminded) == (0, 0)
    assert len(outbox_rows()) == queued + 8 and len(record(ending[2])) == 4


def test_a_batch_that_fails_leaves_nothing_and_is_redone_game_by_game(ctx: Flask, players, at) -> None:
    alice, bob, carol = players
    at(T0)
    # First in the batch: its writes are kept when the next game fails.
    sound = new_game("cambio", [carol, bob], CAMBIO, kind="per_move", days=1).id
    broken = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=1).id
    db.session.get(Game, broken).state = {"not": "a cambio position"}
    db.session.commit()
    at(T0 + timedelta(days=2))
    queued = len(outbox_rows())
    report = sweep.sweep()
    assert (report.timed_out, report.failed) == (1, 1)
    # The sound game's end is written once, by its own transaction, not also by the failed batch's.
    assert record(sound) == [(1, 0, "timeout", "server")] and record(broken) == []
    assert outbox_rows()[queued:] == [("game-over", sound, carol.email), ("game-over", sound, bob.email)]


def test_kept_writes_go_with_a_rollback_and_a_stale_game_fails_the_batch(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game_id = new_game("cambio", [alice, bob], CAMBIO, kind="per_move", days=3).id
    (version,) = versions([game_id])
    queued = len(outbox_rows())
    with unit_of_work() as uow:
        with uow.batched():
            outbox.enqueue(alice, "[pbem] dropped", "rolled back", kind="test")
            uow.rollback()  # What was kept goes with its transaction...
            uow.begin()
            assert outbox.enqueue(bob, "[pbem] kept", "committed", kind="test") is None
        uow.commit()
    assert outbox_rows()[queued:] == [("test", None, bob.email)]  # ...and is not written by the next.
    # A game UPDATE kept against a version that is no longer the game's fails the batch when it is sent.
    with pytest.raises(StaleDataError), unit_of_work() as uow, uow.batched():
        outbox.enqueue(alice, "[pbem] lost", "with the stale batch", kind="test")
        stale = {"ply": 5, "version": version, "updated_at": T0, "locked_id": game_id,
                 "read_version": version - 1}
        uow.write(play._UPDATE_GAME, stale, rows=1)
    assert outbox_rows()[queued:] == [("test", None, bob.email)]
    assert versions([game_id]) == [version] and current() is None


def test_a_read_or_a_commit_inside_a_batch_sends_what_it_kept(ctx: Flask, players) -> None:
    alice, _, _ = players
    with unit_of_work() as uow, uow.batched():
        outbox.enqueue(alice, "[pbem] one", "first", kind="test")
        outbox.enqueue(alice, "[pbem] two", "second", kind="test")
        seen = db.session.scalars(select(OutboxMail.subject).order_by(OutboxMail.id)).all()
        assert seen[-2:] == ["[pbem] one", "[pbem] two"]
        outbox.enqueue(alice, "[pbem] three", "third", kind="test")
        uow.commit()
    subjects = db.session.scalars(select(OutboxMail.subject).order_by(OutboxMail.id)).all()
    assert subjects[-3:] == ["[pbem] one", "[pbem] two", "[pbem] three"]


def test_the_statements_of_a_sweep_do_not_grow_with_its_games(ctx: Flask, players, at) -> None:
    """Each batch sends its entries, mails and game and seat changes as one statement each (one
    executemany), not one a game: a sweep of three timeouts and three reminders sends as many statements
    as a sweep of one of each."""
    alice, bob, carol = players
    pairs = [[alice, bob], [bob, carol], [carol, alice]]

    def statements_of_a_sweep(count: int, start: datetime) -> int:
        at(start)
        for users in pairs[:count]:
            new_game("cambio", users, CAMBIO, kind="per_move", days=2)
        at(start + timedelta(days=1))
        for users in pairs[:count]:
            new_game("cambio", users, CAMBIO, kind="per_move", days=3)
        sent = []

        def listener(_connection, _cursor, statement: str, *_args) -> None:
            sent.append(statement)

        event.listen(db.engine, "before_cursor_execute", listener)
        try:
            report = sweep_at(start + timedelta(days=2))
        finally:
            event.remove(db.engine, "before_cursor_execute", listener)
        assert (report.timed_out, report.reminded, report.failed) == (count, count, 0)
        return len(sent)

    one = statements_of_a_sweep(1, T0)
    assert sweep_at(T0 + timedelta(days=10)).timed_out == 1  # The game reminded above, out of the way.
    assert statements_of_a_sweep(3, T0 + timedelta(days=30)) == one
