"""Results in words for people: a sentence naming players by handle and side, a ranking for shared
results, each player's own result; the same words on the game page, in the lists of games (home, My
games, player pages) and in mail.  And the seats of a game gathering players say who is challenged."""

from __future__ import annotations

import html
import re

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail
from pbem.game import play, queries, results
from pbem.lobby import challenges
from pbem.mailout import outbox
from tests.server.test_web_games import signed_in


def text(response) -> str:
    """A page's text without its tags, with entities decoded and white space collapsed."""
    page = re.sub(r"</?(a|strong|span|em|small)\b[^>]*>", "", response.get_data(as_text=True))
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def rows(response, table_id: str) -> list[list[str]]:
    """The cells of each row of the table ``table_id`` of a page, as text."""
    page = response.get_data(as_text=True)
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert table is not None, f"no table {table_id}"
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        found.append([" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in cells])
    return found


def fresh(game: Game) -> Game:
    db.session.rollback()
    found = db.session.get(Game, game.id)
    assert found is not None
    return found


def test_a_win_reads_as_a_sentence_everywhere(app: Flask, ctx: Flask, players, sink) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"position": "o.o/.../xx."})
    db.session.commit()
    for mover, move in ((alice, "c3v"), (bob, "a3v"), (alice, "c3v")):
        play.submit(game.id, mover, move, "web")
    game = fresh(game)
    expected = "alice (O) wins with a full line on file c."
    assert results.sentence(game) == expected
    assert (results.seat_result(game, 0), results.seat_result(game, 1)) == ("won", "lost")

    web_a, web_b = signed_in(app, alice, bob)
    assert f"Game over: {expected}" in text(web_b.get(f"/games/{game.id}"))
    home = text(web_b.get("/"))
    assert f"Cambio #{game.id}: alice vs bob — {expected} Your result: lost." in home
    assert rows(web_b.get("/dashboard"), "finished")[1] == [f"Cambio #{game.id}", "alice", "lost", expected]
    assert rows(web_a.get("/players/bob"), "player-games")[1] == [
        f"Cambio #{game.id}", "alice", "lost", expected]

    outbox.deliver_due()
    [to_alice] = [m for m in sink.messages(alice.email) if "game over" in m["Subject"]]
    [to_bob] = [m for m in sink.messages(bob.email) if "game over" in m["Subject"]]
    assert to_alice["Subject"] == f"[pbem] Cambio #{game.id}: game over, you won"
    assert to_bob["Subject"] == f"[pbem] Cambio #{game.id}: game over, you lost"
    body = to_bob.get_payload()[0].get_payload()[0].get_payload(decode=True).decode()
    assert f"Cambio #{game.id} is over. {expected}\nYour result: lost." in body
    assert ".." not in body and "seat 1)" not in body.split("\n\n")[0]


def test_a_resignation_among_three_shares_first_place(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = play.create_game("boxoff", [alice, bob, carol], {"position": "bbww/wwbb"})
    db.session.commit()
    play.resign(game.id, bob, "web")
    assert fresh(game).result["results"] == ["draw", "loss", "draw"]
    assert results.sentence(fresh(game)) == "bob resigned; alice and carol share first place."
    assert [results.seat_result(fresh(game), n) for n in range(3)] == ["1st= of 3", "3rd of 3", "1st= of 3"]


def test_a_shared_box_off_result_is_a_ranking(app: Flask, ctx: Flask, players, sink) -> None:
    alice, bob, carol = players
    game = play.create_game("boxoff", [alice, bob, carol], {"position": "bbww/wwbb"})
    db.session.commit()
    for player in (alice, bob):
        for move in ("a1-b1", "a2-b2", "c1-d1", "c2-d2"):
            play.submit(game.id, player, move, "web")
    play.time_out(game.id, 2)
    game = fresh(game)
    ranking = "1st=: alice, bob (cleared); 3rd: carol (out of time, 8 tiles left)"
    assert game.status == "finished" and results.ranking(game) == ranking
    assert results.summary(game) == ranking
    assert [results.seat_words(game, n) for n in range(3)] == [
        "1st= of 3 (cleared)", "1st= of 3 (cleared)", "3rd of 3 (out of time, 8 tiles left)"]

    (web,) = signed_in(app, carol)
    page = text(web.get(f"/games/{game.id}"))
    assert "1st= of 3 (cleared)" in page and "draw (0)" not in page
    assert rows(web.get("/dashboard"), "finished")[1] == [
        f"Box Off #{game.id}", "alice and bob", "3rd of 3", ranking]
    assert f"alice, bob and carol — {ranking} Your result: 3rd of 3." in text(web.get("/"))

    # The result mail: its subject in a few words, on one line (never folded), the ranking inside.
    outbox.deliver_due()
    for player, words in ((alice, "you are 1st= of 3"), (carol, "you are 3rd of 3")):
        [mail] = [m for m in sink.messages(player.email) if "game over" in m["Subject"]]
        lines = mail.as_bytes().decode().splitlines()
        at = next(n for n, line in enumerate(lines) if line.startswith("Subject:"))
        assert lines[at] == f"Subject: [pbem] Box Off #{game.id}: game over, {words}"
        assert not lines[at + 1][:1].isspace(), "the subject was folded"
        body = mail.get_payload()[0].get_payload()[0].get_payload(decode=True).decode()
        assert f"The places: {ranking}." in body


def test_two_cleared_boards_share_first_place(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("boxoff", [alice, bob], {"position": "bbww/wwbb"})
    db.session.commit()
    for player in (alice, bob):
        for move in ("a1-b1", "a2-b2", "c1-d1", "c2-d2"):
            play.submit(game.id, player, move, "web")
    game = fresh(game)
    assert results.ranking(game) == "1st=: alice, bob (cleared)"
    assert results.seat_words(game, 0) == "drew (cleared)"
    assert results.headline(game, 1) == "a draw" and results.headline(game) == "a draw"


def test_alone_the_result_says_how_the_board_ended(ctx: Flask, players) -> None:
    alice = players[0]
    game = play.create_game("boxoff", [alice], {"position": "bbww/wwbb"})
    db.session.commit()
    for move in ("a1-b1", "a2-b2", "c1-d1", "c2-d2"):
        play.submit(game.id, alice, move, "web")
    game = fresh(game)
    assert results.sentence(game) == "alice cleared the board."
    assert results.seat_result(game, 0) == "cleared" and results.ranking(game) is None


def test_a_shared_lead_at_easy_slider_names_the_players(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = play.create_game("easyslider", [alice, bob, carol], {"rounds": 1})
    db.session.commit()
    for _ in range(30):  # Everyone declares done at once, round after round, until the playoffs end.
        game = fresh(game)
        if game.status != "active":
            break
        for number in sorted(queries.seats_to_move(game)):
            play.submit(game.id, (alice, bob, carol)[number], "done", "web")
    sentence = results.sentence(fresh(game))
    assert sentence.startswith("alice, bob and carol share the lead after 1 round and "), sentence
    assert "Points: alice 0, bob 0, carol 0." in sentence and "eat" not in sentence


def test_carreaux_and_truchet_name_the_colours(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("carreaux", [alice, bob], {"position": "gggg/gbr./gggr/gggb"})
    db.session.commit()
    play.submit(game.id, alice, "c3", "web")
    assert results.sentence(fresh(game)) == "alice (Red) wins by joining all 2 red tiles into one group."
    truchet = play.create_game("truchet", [alice, bob], {})
    db.session.commit()
    play.resign(truchet.id, alice, "web")
    assert results.sentence(fresh(truchet)) == "bob (Light) wins: alice (Dark) resigned."
    assert results.player_name(fresh(truchet), 1) == "bob (Light)"


def test_results_stored_in_the_older_words_read_well(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3})
    db.session.commit()
    game.status = "finished"
    game.result = {"results": ["win", "loss"], "reason": "O (seat 1) wins with a full line on file b..",
                   "ranks": [1, 2], "scores": None}
    db.session.commit()
    assert results.sentence(game) == "alice (O) wins with a full line on file b."
    game.result = {"results": ["loss", "win"], "reason": "alice resigned", "ranks": [2, 1], "scores": None}
    assert results.sentence(game) == "alice resigned."
    game.result = {"results": ["draw", "draw"], "reason": "drawn by agreement"}
    assert results.sentence(game) == "Drawn by agreement."


def test_a_challenged_seat_says_who_is_challenged(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    declined = challenges.new_game(alice, "truchet", [alice, bob], public=False)
    withdrawn = challenges.new_game(alice, "truchet", [alice, carol])
    three = challenges.new_game(alice, "boxoff", [alice, bob, None])
    web_a, web_b = signed_in(app, alice, bob)

    gathering = text(web_a.get("/dashboard"))
    assert f"Truchet #{declined.id}: alice, bob (challenged)" in gathering
    assert f"Truchet #{withdrawn.id}: alice, carol (challenged)" in gathering
    assert f"Box Off #{three.id}: alice, bob (challenged), open seat" in gathering
    assert "bob (challenged)" in text(web_a.get(f"/games/{declined.id}"))
    assert "alice challenges you to take seat 2 (Light)" in text(web_b.get(f"/games/{declined.id}"))

    challenges.decline(declined.id, bob)
    challenges.withdraw(withdrawn.id, alice)
    finished = rows(web_a.get("/dashboard"), "finished")
    assert [f"Truchet #{withdrawn.id}", "carol (challenge withdrawn)", "called off",
            "Called off: alice withdrew it."] in finished
    assert [f"Truchet #{declined.id}", "bob (declined)", "called off",
            "Called off: bob declined the challenge."] in finished
    page = text(web_a.get(f"/games/{declined.id}"))
    assert "Called off: bob declined the challenge." in page and "bob (declined)" in page
    assert db.session.scalar(select(db.func.count(OutboxMail.id))) >= 3
