"""Game records: the JSON and text downloads, the replay on the game page, export and import."""

from __future__ import annotations

import email
import html
import json
import re
from datetime import datetime
from email.policy import default as default_policy

from flask import Flask

import games
from pbem.archive import records
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from tests.server.archived import finished
from tests.server.webclient import WebClient


def text_of(response) -> str:
    return html.unescape(response.get_data(as_text=True))


def test_the_json_record_has_every_documented_key(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("truchet", [alice, bob], end="resign", moves=4, comment="my first",
                    at=datetime(2026, 3, 1, 9, 30))
    response = WebClient(app).get(f"/games/{game.id}.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    data = json.loads(response.get_data(as_text=True))
    assert data["format"] == records.FORMAT and data["game"] == "truchet" and data["seed"] == game.seed
    assert data["options"] == game.options
    assert data["players"] == [{"seat": 1, "handle": "alice"}, {"seat": 2, "handle": "bob"}]
    moves = data["moves"]
    assert [m["number"] for m in moves] == [1, 2, 3, 4, 5]
    assert [m["seat"] for m in moves] == [1, 2, 1, 2, 1]
    assert moves[0]["comment"] == "my first" and moves[0]["via"] == "web"
    assert moves[0]["time"] == "2026-03-01T09:30:00Z"
    assert [m["move"] for m in moves] == [1, 2, 3, 4, None]
    assert moves[-1] | {"time": None} == {"number": 5, "move": None, "seat": 1, "kind": "resign",
                                          "text": "resign", "via": "web", "time": None, "comment": None}
    assert data["result"]["results"] == ["loss", "win"] and data["result"]["ending"] == "resignation"
    assert data["result"]["reason"] == "Light wins: Dark resigned"
    assert data["finished"] == "2026-03-01T09:30:00Z"


def test_the_text_record_shows_only_the_options_that_have_a_value(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("truchet", [alice, bob], end="resign", moves=2)
    assert game.options["position"] is None  # Truchet's set-up position, not given.
    text = WebClient(app).get(f"/games/{game.id}.txt").get_data(as_text=True)
    (options,) = [line for line in text.splitlines() if line.startswith("Options: ")]
    assert options == f"Options: size={game.options['size']}, tiles={game.options['tiles']}"


def test_the_text_record_has_header_moves_comments_and_final_board(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], seed=3, comment="here goes\nsecond line")
    text = WebClient(app).get(f"/games/{game.id}.txt").get_data(as_text=True)
    engine = games.get("cambio")
    assert text.startswith(f"Cambio #{game.id}\nSeat 1: alice\nSeat 2: bob\n")
    assert "Result: alice " in text and "Reason: " in text
    first = game.moves[0]
    assert f"   1. alice: {first.text}\n      here goes\n      second line\n" in text
    assert engine.render_text(engine.load(game.state), None).rstrip() in text
    assert text.rstrip().endswith(engine.render_text(engine.load(game.state), None).rstrip())


def test_the_text_record_marks_the_moves_conditional_lines_played(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    play.submit(game.id, alice, "b3", "web", conditionals=["if a2 then c2"])
    play.submit(game.id, bob, "a2", "web")
    text = WebClient(app).get(f"/games/{game.id}.txt").get_data(as_text=True)
    assert "   2. bob: a2\n   3. alice: c2 (conditional)\n" in text


def test_moves_are_numbered_as_players_count_them_everywhere(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    play.submit(game.id, alice, "b3", "web")
    play.offer_draw(game.id, bob, "web")
    play.decline_draw(game.id, alice, "web")
    play.submit(game.id, bob, "a2", "web", expect=2)  # The form's and the mail's "move 2".
    play.submit(game.id, alice, "c2", "web", expect=3)
    play.resign(game.id, bob, "web")
    web = WebClient(app)
    text = web.get(f"/games/{game.id}.txt").get_data(as_text=True)
    assert ("   1. alice: b3\n    - bob: offers a draw\n    - alice: declines the draw\n"
            "   2. bob: a2\n   3. alice: c2\n    - bob: resigns\n") in text
    page = text_of(web.get(f"/games/{game.id}"))
    assert "After move 3 of 3" in page and f'href="/games/{game.id}?move=3"' in page
    assert re.findall(r'<li value="(\d+)"', page) == ["1", "1", "1", "2", "3", "3"]
    second = text_of(web.get(f"/games/{game.id}?move=2"))
    assert "After move 2 of 3: <strong>bob</strong> a2" in second
    assert board_after(game, 4) in second  # The position after a2, the record's fourth entry.
    data = json.loads(web.get(f"/games/{game.id}.json").get_data(as_text=True))
    assert [m["move"] for m in data["moves"]] == [1, None, None, 2, 3, None]


def test_the_result_mail_links_both_records(app: Flask, ctx: Flask, players, sink) -> None:
    from pbem.mailout import outbox

    alice, bob, _ = players
    game = finished("cambio", [alice, bob], end="resign", moves=1)
    outbox.deliver_due()
    [over] = [email.message_from_bytes(m.as_bytes(), policy=default_policy)
              for m in sink.messages(to="bob@example.org") if "game over" in m["Subject"]]
    body = over.get_body(preferencelist=("plain",)).get_content()
    assert re.search(rf"http://\S+/games/{game.id}\.txt", body)
    assert re.search(rf"http://\S+/games/{game.id}\.json", body)


def test_a_running_game_of_hidden_moves_has_no_record_nor_replay(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = play.create_game("easyslider", [alice, bob], {"rounds": 1}, seed=4)
    db.session.commit()
    web = WebClient(app)
    for path in (f"/games/{game.id}.json", f"/games/{game.id}.txt", f"/games/{game.id}/replay/0"):
        assert web.get(path).status_code == 404, path
    page = web.get(f"/games/{game.id}?move=0").get_data(as_text=True)
    assert 'id="replay"' not in page and f"/games/{game.id}.txt" not in page


def board_after(game: Game, entries: int, seat: int | None = None) -> str:
    """The board after the first ``entries`` entries of the record, replayed here through the engine."""
    engine = games.get(game.engine)
    state = engine.new(game.players, engine.options.load(game.options), game.seed)
    for move in game.moves[:entries]:
        if move.kind == "move":
            state = engine.play(state, move.seat, move.text)
    return engine.render_svg(state, seat, targets=False)


def test_the_game_page_replays_any_position_without_javascript(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("truchet", [alice, bob], seed=2, comment="opening thoughts")
    last = len(game.moves)
    web = WebClient(app)
    page = text_of(web.get(f"/games/{game.id}?move=1"))
    assert f'href="/games/{game.id}.txt"' in page and f'href="/games/{game.id}.json"' in page
    assert 'id="replay-where" data-at="1"' in page
    assert board_after(game, 1) in page and board_after(game, 2) not in page
    assert "“opening thoughts”" in page
    for button, n in (("first", 0), ("prev", 0), ("next", 2), ("last", last)):
        assert re.search(rf'id="replay-{button}" href="/games/{game.id}\?move={n}"', page), button
    # Every move of the list is a link to the position after it.
    for move in game.moves:
        assert f'href="/games/{game.id}?move={move.number}"' in page
    # A finished game opens at its end; a number past the end is held to it.
    for path in (f"/games/{game.id}", f"/games/{game.id}?move=9999"):
        end = text_of(web.get(path))
        assert f'data-at="{last}"' in end and board_after(game, last) in end
    assert board_after(game, 0) in text_of(web.get(f"/games/{game.id}?move=0"))
    # The page's script fetches the same boards, one position at a time.
    fragment = text_of(web.get(f"/games/{game.id}/replay/3"))
    assert board_after(game, 3) in fragment and 'data-at="3"' in fragment


def test_simultaneous_games_replay_every_seats_board(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("easyslider", [alice, bob], seed=6)
    page = text_of(WebClient(app).get(f"/games/{game.id}?move=3"))
    for seat, name in ((0, "alice"), (1, "bob")):
        assert board_after(game, 3, seat) in page
        assert f"<figcaption>{name}</figcaption>" in page


def test_a_running_game_replays_the_moves_so_far_on_request(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], end="none", moves=3)
    assert game.status == "active"
    web = WebClient(app)
    web.sign_in(bob)
    current = text_of(web.get(f"/games/{game.id}"))
    assert 'id="replay"' not in current and 'id="my-board"' in current
    past = text_of(web.get(f"/games/{game.id}?move=1"))
    assert board_after(game, 1) in past and 'id="replay-exit"' in past
    assert 'id="play-button"' not in past  # The move form is for the position as it stands.
    # Nor do the live turn's prompts show on a past position: not the waiting words, not the lines.
    web_alice = WebClient(app)
    web_alice.sign_in(alice)  # Alice waits for bob: her page of the game offers lines for his move.
    assert 'id="conditionals"' in text_of(web_alice.get(f"/games/{game.id}"))
    for reader in (web, web_alice):
        start = text_of(reader.get(f"/games/{game.id}?move=0"))
        assert "Waiting for the other player" not in start and 'id="conditionals"' not in start
