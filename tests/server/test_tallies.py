"""Each player's tallies of finished games: kept by every way a game ends, equal to a count of the seats,
read by the standings, the directory and the API's player, and rebuilt by `pbem verify`; a player's
pages read as much however many games they have finished."""

from __future__ import annotations

from datetime import datetime

import pytest
import sqlalchemy as sa
from flask import Flask
from flask.testing import FlaskCliRunner
from sqlalchemy import delete, insert, update

from pbem.api import present
from pbem.archive import directory, standings
from pbem.cli import main
from pbem.core.extensions import db
from pbem.core.models import Tally
from pbem.game import play, tallies
from pbem.lobby import challenges
from pbem.present import dashboard
from pbem.web import players as player_pages
from tests.server.archived import finished
from tests.server.test_results import rows
from tests.server.test_web_games import signed_in


def end_games_every_way(players) -> None:
    """A resignation, a draw, a loss on time (alone and in the sweep's batch), an abandoned solitaire
    game, an unrated private game and a game called off before it began."""
    alice, bob, carol = players
    finished("cambio", [alice, bob], end="resign")                  # bob wins
    finished("cambio", [alice, carol], end="draw")                  # drawn
    # Both sides move before a time-out: a game timed out on a player who never moved is aborted, unrated.
    finished("cambio", [bob, carol], end="time", moves=2)           # carol wins on time
    finished("cambio", [carol, alice], end="time", moves=2, public=False, rated=False)  # alice wins
    finished("boxoff", [alice], end="time")                         # abandoned: a loss
    batch = [play.create_game("cambio", [bob, alice], {"size": 3, "placements": 2}) for _ in range(2)]
    db.session.commit()
    for game in batch:
        play.submit(game.id, bob, "b3", "web")
        play.submit(game.id, alice, "a2", "web")
    play.time_out_batch([play.DueTimeout(game.id, 0) for game in batch])  # alice wins both
    called_off = play.create_game("cambio", [alice, None], created_by=alice)
    db.session.commit()
    challenges.withdraw(called_off.id, alice)


def test_every_ending_keeps_the_tallies_equal_to_the_seats(ctx: Flask, players) -> None:
    alice = players[0]
    end_games_every_way(players)
    db.session.rollback()
    assert tallies.stored() == tallies.counted()

    # What a reader sees: alice's rated Cambio games are the lost resignation, the draw and two wins
    # on time; the private unrated win and the solitaire game are not rated.
    table = {row.user.handle: (row.played, row.wins, row.draws, row.losses)
             for row in standings.table("cambio")}
    assert table == {"alice": (4, 2, 1, 1), "bob": (4, 1, 0, 3), "carol": (2, 1, 1, 0)}
    assert {p.handle: p.played for p in directory.search().players} == {"alice": 6, "bob": 4, "carol": 3}
    assert present.player(alice)["record"] == [
        {"game": "boxoff", "wins": 0, "draws": 0, "losses": 1},
        {"game": "cambio", "wins": 2, "draws": 1, "losses": 1},
    ]


def test_verify_rebuilds_tallies_put_wrong(ctx: Flask, runner: FlaskCliRunner, players) -> None:
    alice, bob, carol = players
    finished("cambio", [alice, bob], end="resign")
    finished("cambio", [alice, carol], end="draw")
    db.session.rollback()
    right = tallies.stored()
    assert runner.invoke(main, ["verify"]).exit_code == 0

    db.session.execute(update(Tally).where(Tally.user_id == bob.id).values(wins=7))
    db.session.execute(delete(Tally).where(Tally.user_id == carol.id))
    db.session.execute(insert(Tally).values(user_id=carol.id, engine="truchet", public=True, rated=False,
                                            wins=0, draws=0, losses=3))
    db.session.commit()
    assert standings.table("cambio")[0].user.handle in {"alice", "bob"}
    assert {r.user.handle: r.wins for r in standings.table("cambio")}["bob"] == 7

    caught = runner.invoke(main, ["verify"])
    assert caught.exit_code == 1
    assert f"user #{bob.id}'s tally of public rated cambio games was wrong" in caught.stdout
    assert "3 tallies did not match the games; rebuilt from them." in caught.stdout
    db.session.rollback()
    assert tallies.stored() == right
    assert {r.user.handle: r.wins for r in standings.table("cambio")}["bob"] == 1
    again = runner.invoke(main, ["verify"])
    assert again.exit_code == 0 and "Every player's tallies match their games." in again.stdout


def test_a_players_pages_read_as_much_however_many_games_they_finished(
        app: Flask, ctx: Flask, players, monkeypatch: pytest.MonkeyPatch) -> None:
    """The player page lists the latest games (in play and finished together, newest first) and My
    games the latest finished, each in statements that do not grow with the games behind them."""
    alice, bob, _carol = players
    monkeypatch.setattr(player_pages, "GAMES_SHOWN", 3)
    monkeypatch.setattr(dashboard, "FINISHED_SHOWN", 2)
    web, = signed_in(app, alice)

    def statements(path: str) -> tuple[list[str], int]:
        sent: list[str] = []
        listen = lambda *args: sent.append(args[2])  # noqa: E731  (before_cursor_execute's statement)
        sa.event.listen(db.engine, "before_cursor_execute", listen)
        try:
            page = web.get(path)
        finally:
            sa.event.remove(db.engine, "before_cursor_execute", listen)
        return rows(page, "player-games" if "players" in path else "finished"), len(sent)

    ended = [finished("cambio", [alice, bob], end="resign", seed=0, at=datetime(2026, 5, 1))]
    few, few_mine = statements("/players/alice")[1], statements("/dashboard")[1]
    ended += [finished("cambio", [alice, bob], end="resign", seed=n, at=datetime(2026, 5, 1 + n))
              for n in range(1, 5)]
    in_play = play.create_game("cambio", [bob, alice], {"size": 3, "placements": 2})
    db.session.commit()
    listed, many = statements("/players/alice")
    assert [row[0] for row in listed[1:]] == [f"Cambio #{in_play.id}", f"Cambio #{ended[4].id}",
                                              f"Cambio #{ended[3].id}"]
    mine, many_mine = statements("/dashboard")
    assert [row[0] for row in mine[1:]] == [f"Cambio #{ended[4].id}", f"Cambio #{ended[3].id}"]
    # Three games listed cost what one did (no statement a game), and so do two on My games; a game in
    # play among them adds the one statement that reads the seats of every game in play.
    assert many == few + 1  # (The seats of the game in play, read with the game.)
    assert many_mine <= few_mine + 1
