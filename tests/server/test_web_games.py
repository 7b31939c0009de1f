"""Playing on the web: the new-game form, challenges and the lobby, the game page and its refusals."""

from __future__ import annotations

import html
import json
import re

from flask import Flask

from pbem.core.extensions import db
from pbem.core.models import Game, Move
from pbem.game import play, queries
from pbem.lobby import challenges
from tests.server.webclient import WebClient


def text_of(response) -> str:
    """A page's text with entities decoded, as a reader sees it."""
    return html.unescape(response.get_data(as_text=True))


def signed_in(app: Flask, *users) -> list[WebClient]:
    """One signed-in browser per user."""
    clients = []
    for user in users:
        web = WebClient(app)
        web.sign_in(user)
        clients.append(web)
    return clients


def new_game_form(**fields) -> dict:
    form = {"create": "1", "game": "cambio", "players": "2", "seat-0": "alice", "seat-1": "bob",
            "public": "1", "time": "days:3"}
    form.update(fields)
    return form


def test_the_form_shows_the_engines_options_with_their_defaults(app: Flask, ctx: Flask, players) -> None:
    (web,) = signed_in(app, players[0])
    page = text_of(web.get("/games/new?game=truchet"))
    size = re.search(r'id="opt-size" name="opt-size" value="(\d+)"\s+min="3" max="11"', page)
    assert size and size.group(1) == "7"
    assert re.search(r'<select id="opt-tiles".*?<option value="random" selected>random \(usual\)', page, re.S)
    assert "Rules of Truchet" in page and "Notation" in page  # The help is a click away.
    cambio = text_of(web.get("/games/new?game=cambio"))
    assert '<option value="5" selected>5 (usual)</option>' in cambio
    # Box Off and Easy Slider can be started by one player.
    slider = text_of(web.get("/games/new?game=easyslider"))
    assert '<option value="1" >1</option>' in slider


def test_invalid_options_and_players_are_refused_field_by_field(app: Flask, ctx: Flask, players) -> None:
    (web,) = signed_in(app, players[0])
    page = web.post("/games/new", new_game_form(game="truchet", **{"opt-size": "12", "opt-tiles": "stripes"}))
    text = text_of(page)
    assert page.status_code == 400
    assert re.search(r'id="error-opt-size">The board size must be from 3 to 11 tiles a side.<', text)
    assert "Tiles must be 'random' or 'alternate'." in text
    assert 'value="12"' in text  # What was typed stays.
    cases = [
        ({"seat-1": "zed"}, "error-seat-1", "There is no player called 'zed'."),
        ({"seat-0": "bob", "seat-1": "carol"}, "error-seat-0", "Put yourself in one of the seats"),
        ({"seat-1": "", "public": ""}, "error-public", "A private game cannot have open seats"),
        ({"time": "days:4"}, "error-time", "'days:4' is not a time control offered here"),
        ({"players": "3"}, "error-players", "Cambio is for 2 players."),
        ({"opt-size": "x"}, "error-opt-size", "Not a valid integer."),
    ]
    for fields, where, message in cases:
        page = web.post("/games/new", new_game_form(**fields))
        assert page.status_code == 400 and re.search(f'id="{where}">{re.escape(message)}', text_of(page)), \
            (fields, text_of(page))
    assert db.session.scalar(db.select(db.func.count(Game.id))) == 0


def test_challenge_accept_on_the_web_and_play(app: Flask, ctx: Flask, players, sink) -> None:
    alice, bob, carol = players
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)
    created = web_a.post("/games/new", new_game_form(**{"opt-size": "3", "time": "bank:7+1/14",
                                                         "weekend_pause": "1"}))
    assert created.status_code == 302
    game = db.session.scalars(db.select(Game)).one()
    assert game.status == "waiting" and game.time_control == {
        "kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14, "weekend_pause": True}
    assert game.options["size"] == 3
    dashboard = text_of(web_b.get("/dashboard"))
    assert "Challenges for you" in dashboard and "from alice" in dashboard
    assert web_c.post(f"/games/{game.id}/accept").status_code == 303  # Not carol's: refused, told why.
    assert "no challenge for you" in text_of(web_c.get(f"/games/{game.id}"))
    assert web_b.post(f"/games/{game.id}/accept").status_code == 303
    page = text_of(web_a.get(f"/games/{game.id}"))
    assert "alice to move." in page and 'data-move="b2"' in page
    assert "Bank: 7 days, +1 per move, at most 14; weekends (Saturday and Sunday, UTC) do not count" in page
    legal = json.loads(re.search(r'id="legal-moves">(.*?)</script>', page).group(1))
    assert legal == queries.engine_of(game).moves(queries.state_of(db.session.get(Game, game.id)), 0)
    assert re.search(r"\d+ days?( \d+ hours?)? left", page)  # The clock of the seat to move.

    # The script's path: JSON answers, then the live fragment.
    played = web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1", "comment": "centre"},
                        json=True)
    assert played.status_code == 200
    assert played.json == {"ok": True, "message": "You played b2.", "move": "b2"}
    fragment = text_of(web_a.get(f"/games/{game.id}/live"))
    assert "bob to move." in fragment and "<code>b2</code>" in fragment and "centre" in fragment
    assert "Your move" not in fragment
    # Without the script: a plain form post and a redirect back to the page.
    moved = web_b.post(f"/games/{game.id}/move", {"move": "a2", "expect": "2"})
    assert moved.status_code == 303 and "You played a2." in text_of(web_b.get(f"/games/{game.id}"))
    assert [m.text for m in db.session.scalars(db.select(Move).order_by(Move.number))] == ["b2", "a2"]


def test_a_challenge_answered_on_the_web_passes_the_players_comment_on(app: Flask, ctx: Flask, players,
                                                                      sink) -> None:
    """Accepting (or declining) on the game page, a comment written with the answer reaches the
    challenger, as it does in an answer by mail; an answer without one sends none."""
    from pbem.mailout import outbox
    from tests.server.test_sweep import text_of as mail_text

    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3})
    other = challenges.new_game(alice, "truchet", [alice, carol])
    web_b, web_c = signed_in(app, bob, carol)
    page = text_of(web_b.get(f"/games/{game.id}"))
    assert 'id="challenge-comment" name="comment"' in page and "A word to alice" in page
    assert web_b.post(f"/games/{game.id}/accept", {"comment": "  Gladly!  "}).status_code == 303
    assert web_c.post(f"/games/{other.id}/decline").status_code == 303
    outbox.deliver_due()
    accepted = sink.messages(alice.email)[-2:]
    words = {m["Subject"].split(": ", 1)[1]: mail_text(m) for m in accepted}
    assert "bob says: Gladly!" in words["bob accepted your challenge"]
    assert "says:" not in words["carol declined your challenge"]
    assert db.session.get(Game, game.id).status == "active"


def start_cambio(alice, bob) -> Game:
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3})
    challenges.accept(game.id, bob)
    return db.session.get(Game, game.id)


def test_refused_moves_wrong_seat_stale_page_missing_csrf(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = start_cambio(alice, bob)
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)

    wrong_seat = web_b.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"}, json=True)
    assert wrong_seat.status_code == 409 and "It is not your move" in wrong_seat.json["message"]
    outsider = web_c.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"}, json=True)
    assert outsider.status_code == 403
    assert outsider.json["message"] == f"You are not playing in game #{game.id}."
    visitor = WebClient(app).post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"})
    assert visitor.status_code == 302 and "/login" in visitor.headers["Location"]

    no_token = web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"}, csrf=False)
    assert no_token.status_code == 400 and "did not come from this site" in text_of(no_token)
    forged = web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1", "csrf_token": "forged"})
    assert forged.status_code == 400
    assert db.session.get(Game, game.id).ply == 0

    # Alice's page showed move 1; meanwhile she moved from another tab, and bob answered.
    web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1"})
    web_b.post(f"/games/{game.id}/move", {"move": "a2", "expect": "2"})
    stale = web_a.post(f"/games/{game.id}/move", {"move": "c2", "expect": "1", "comment": "keep me"})
    text = text_of(stale)
    assert stale.status_code == 409
    assert "Your move was for move 1, but game" in text and "is at move 3" in text
    assert 'value="c2"' in text and "keep me</textarea>" in text  # What was typed is kept.
    illegal = web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "3"}, json=True)
    assert illegal.status_code == 400 and illegal.json["code"] == "illegal"
    empty = web_a.post(f"/games/{game.id}/move", {"move": " ", "expect": "3"}, json=True)
    assert empty.status_code == 400 and "Type a move" in empty.json["message"]
    assert db.session.get(Game, game.id).ply == 2


def test_private_games_are_seen_only_by_their_players(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = challenges.new_game(alice, "cambio", [alice, bob], {"size": 3}, public=False)
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)
    assert web_b.get(f"/games/{game.id}").status_code == 200  # Challenged: may see it to answer.
    challenges.accept(game.id, bob)
    for path in (f"/games/{game.id}", f"/games/{game.id}/live", f"/games/{game.id}/version"):
        assert web_c.get(path).status_code == 404
        assert WebClient(app).get(path).status_code == 404
        assert web_a.get(path).status_code == 200
    assert web_c.post(f"/games/{game.id}/draw", {"answer": "offer"}).status_code == 404
    assert f"#{game.id}" not in text_of(web_c.get("/players/alice"))
    assert f"/games/{game.id}" not in text_of(WebClient(app).get("/"))


def test_comments_and_names_are_escaped(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = start_cambio(alice, bob)
    (web_a,) = signed_in(app, alice)
    web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1",
                                           "comment": "<script>alert('x')</script>"})
    page = web_a.get(f"/games/{game.id}").get_data(as_text=True)
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page


def test_draw_offer_accept_and_resign_on_the_web(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = start_cambio(alice, bob)
    web_a, web_b = signed_in(app, alice, bob)
    assert web_b.post(f"/games/{game.id}/draw", {"answer": "accept"}, json=True).status_code == 400
    assert web_a.post(f"/games/{game.id}/draw", {"answer": "offer"}, json=True).json["ok"]
    page = text_of(web_b.get(f"/games/{game.id}"))
    assert "alice offers a draw." in page and 'id="accept-draw"' in page
    assert web_b.post(f"/games/{game.id}/draw", {"answer": "decline"}, json=True).json["ok"]
    assert web_a.post(f"/games/{game.id}/draw", {"answer": "offer"}, json=True).json["ok"]
    assert web_b.post(f"/games/{game.id}/draw", {"answer": "accept"}, json=True).json["ok"]
    assert "Game over: Drawn by agreement." in text_of(web_a.get(f"/games/{game.id}"))
    other = start_cambio(alice, bob)
    assert web_b.post(f"/games/{other.id}/resign").status_code == 303
    assert "Game over: alice (O) wins: bob (X) resigned." in text_of(web_a.get(f"/games/{other.id}"))


def test_an_overlong_resignation_or_draw_comment_is_refused_and_kept(app: Flask, ctx: Flask, players) -> None:
    """Over the move comment's bound, the resignation or draw offer is not made and the page (without
    the script) comes back with the refusal and the comment in its box; resigning without one works."""
    alice, bob, _ = players
    game = start_cambio(alice, bob)
    web_a, web_b = signed_in(app, alice, bob)
    long_comment = "Well played. " * 154 + "Bye"  # 2,005 characters
    resign = web_b.post(f"/games/{game.id}/resign", {"comment": long_comment})
    text = text_of(resign)
    assert resign.status_code == 400 and "The comment is too long: at most 2000 characters." in text
    assert re.search(r'<textarea id="action-comment"[^>]*>' + re.escape(long_comment) + "</textarea>", text)
    offer = web_a.post(f"/games/{game.id}/draw", {"answer": "offer", "comment": long_comment}, json=True)
    assert offer.status_code == 400 and offer.json["code"] == "comment"
    assert db.session.get(Game, game.id).status == "active"
    assert db.session.get(Game, game.id).draw_offered_by is None
    assert not db.session.scalars(db.select(Move).where(Move.game_id == game.id)).all()

    assert web_b.post(f"/games/{game.id}/resign").status_code == 303
    assert "Game over: alice (O) wins: bob (X) resigned." in text_of(web_a.get(f"/games/{game.id}"))
    [entry] = db.session.scalars(db.select(Move).where(Move.game_id == game.id)).all()
    assert entry.kind == "resign" and entry.comment is None


def test_a_comment_the_box_took_is_not_refused_for_its_line_breaks(app: Flask, ctx: Flask, players) -> None:
    """A browser sends each line break of a box as two characters (CRLF) but counts it as one against
    the box's maxlength: a comment within 2000 characters so counted is taken, with a move or a draw offer."""
    alice, bob, _ = players
    game = start_cambio(alice, bob)
    (web_a,) = signed_in(app, alice)
    lines = "\r\n".join(["x" * 99] * 20)  # 1,980 letters and 19 breaks: 1,999 in the box, 2,018 as sent
    played = web_a.post(f"/games/{game.id}/move", {"move": "b2", "expect": "1", "comment": lines}, json=True)
    assert played.status_code == 200, played.json
    offer = web_a.post(f"/games/{game.id}/draw", {"answer": "offer", "comment": lines}, json=True)
    assert offer.status_code == 200, offer.json
    entries = db.session.scalars(db.select(Move).where(Move.game_id == game.id).order_by(Move.number)).all()
    assert [entry.comment for entry in entries] == [lines.replace("\r\n", "\n")] * 2


def test_lobby_take_the_last_seat_and_withdraw(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)
    web_a.post("/games/new", new_game_form(**{"seat-1": "", "opt-size": "3"}))
    open_game = db.session.scalars(db.select(Game)).one()
    lobby = text_of(WebClient(app).get("/lobby"))
    assert f"Cambio #{open_game.id}" in lobby and "alice, open" in lobby
    # Before taking a seat, and on the game's page, a player sees what game it is to be.
    assert "size=3, placements=2" in lobby
    assert web_b.post(f"/games/{open_game.id}/take").status_code == 303
    assert db.session.get(Game, open_game.id).status == "active"
    page = text_of(web_b.get(f"/games/{open_game.id}"))
    assert "bob to move" not in page  # Seat 1 (alice) moves.
    assert "Options: size=3, placements=2" in page
    taken = web_c.post(f"/games/{open_game.id}/take", json=True)
    assert taken.status_code == 400 and "has started" in taken.json["message"]
    assert f"Cambio #{open_game.id}" not in text_of(web_c.get("/lobby"))

    web_a.post("/games/new", new_game_form(**{"seat-1": "carol"}))
    challenge = db.session.scalars(db.select(Game).where(Game.status == "waiting")).one()
    assert web_c.post(f"/games/{challenge.id}/withdraw", json=True).status_code == 400
    assert web_a.post(f"/games/{challenge.id}/withdraw", json=True).json["ok"]
    assert db.session.get(Game, challenge.id).status == "abandoned"


def test_a_challenged_player_is_offered_the_challenge_not_watching(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    web_a, web_b, web_c = signed_in(app, alice, bob, carol)
    web_a.post("/games/new", new_game_form(**{"seat-1": "bob"}))
    game = db.session.scalars(db.select(Game)).one()
    asked = web_b.get(f"/games/{game.id}").get_data(as_text=True)
    assert f'action="/games/{game.id}/accept"' in asked
    assert 'id="watch"' not in asked
    assert 'id="watch"' in web_c.get(f"/games/{game.id}").get_data(as_text=True)  # Anyone else may.


def test_dashboard_puts_my_moves_first(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    theirs = start_cambio(alice, carol)      # alice moves, then it is carol's move
    mine = start_cambio(alice, bob)          # alice to move
    (web_a,) = signed_in(app, alice)
    web_a.post(f"/games/{theirs.id}/move", {"move": "b2", "expect": "1"})
    page = text_of(web_a.get("/dashboard"))
    my_move, their_move = page.index('id="my-move"'), page.index('id="their-move"')
    assert my_move < their_move
    assert f"Cambio #{mine.id}" in page[my_move:their_move]
    assert f"Cambio #{theirs.id}" in page[their_move:] and "carol" in page[their_move:]


def test_solitaire_per_seat_boards_and_group_values(app: Flask, ctx: Flask, players) -> None:
    alice, bob, _ = players
    (web_a,) = signed_in(app, alice)
    web_a.post("/games/new", new_game_form(game="easyslider", players="1", **{"opt-rounds": "1"}))
    solo = db.session.scalars(db.select(Game)).one()
    assert solo.status == "active" and solo.players == 1
    page = text_of(web_a.get(f"/games/{solo.id}"))
    assert "Your board" in page and 'data-move="done"' in page and "Offer a draw" not in page
    carreaux = challenges.new_game(alice, "carreaux", [alice, bob])
    challenges.accept(carreaux.id, bob)
    page = text_of(web_a.get(f"/games/{carreaux.id}"))
    assert "group value 24" in page and "group value 48" in page


def test_box_off_hint_only_on_request(app: Flask, ctx: Flask, players) -> None:
    alice = players[0]
    (web,) = signed_in(app, alice)
    stuck = play.create_game("boxoff", [alice], {"position": "bwyy/wb.."})
    hopeful = play.create_game("boxoff", [alice], {"position": "bbww/yyrr"})
    db.session.commit()
    page = text_of(web.get(f"/games/{stuck.id}"))
    assert "Can my board still be cleared?" in page and "Hint:" not in page
    answer = text_of(web.get(f"/games/{stuck.id}/hint", follow_redirects=True))
    assert "your board can no longer be cleared" in answer
    answer = text_of(web.get(f"/games/{hopeful.id}/hint", follow_redirects=True))
    assert "your board can still be cleared" in answer
    cambio = play.create_game("cambio", [alice, players[1]], {"size": 3})
    db.session.commit()
    assert web.get(f"/games/{cambio.id}/hint").status_code == 404


def test_carreaux_says_when_the_least_rise_rule_applies(app: Flask, ctx: Flask, players, sink) -> None:
    """Red's move after a5 a4 a3 b3 b2 c2 is ruled by least-rise: the page and the mail say so."""
    from pbem.mailout import outbox

    alice, bob, _ = players
    game = play.create_game("carreaux", [alice, bob], {})
    db.session.commit()
    for i, text in enumerate(["a5", "a4", "a3", "b3", "b2", "c2"]):
        play.submit(game.id, alice if i % 2 == 0 else bob, text, "web")
    note = "No slide lowers the total group value (36), so the slides that raise it least are allowed: c3."
    web_a, web_b = signed_in(app, alice, bob)
    page = text_of(web_a.get(f"/games/{game.id}"))
    assert note in page and 'data-move="c3"' in page
    assert note not in text_of(web_b.get(f"/games/{game.id}"))  # only for the player asked to move
    outbox.deliver_due()
    [request] = [m for m in sink.messages(alice.email) if "your move (move 7)" in str(m["Subject"])]
    parts = {p.get_content_type(): p.get_payload(decode=True).decode() for p in request.walk()
             if not p.is_multipart()}
    assert note in " ".join(parts["text/plain"].split())
    assert note in " ".join(html.unescape(parts["text/html"]).split())
    # Blue's next move lowers the total again: no note.
    play.submit(game.id, alice, "c3", "web")
    assert "raise it least" not in text_of(web_b.get(f"/games/{game.id}"))
    outbox.deliver_due()
    [blue] = [m for m in sink.messages(bob.email) if "your move (move 8)" in str(m["Subject"])]
    assert "raise it least" not in blue.as_string()
