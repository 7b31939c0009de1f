"""One-click move links: GET only shows (mail scanners open links), POST plays that move for that seat
and move number, and a link from an old mail says the game has moved on."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct

from flask import Flask
from flask.testing import FlaskClient
from itsdangerous import URLSafeSerializer

from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, User
from pbem.game import play
from pbem.mailout import tokens
from tests.server.test_mail_play import moves_of
from tests.server.webclient import WebClient


def cambio(alice: User, bob: User) -> Game:
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2})
    db.session.commit()
    return game


def link(game: Game, seat: int, user: User, number: int, move: str | None = None) -> str:
    return "/m/" + tokens.move_link_token(game.id, seat, user, number, move)


def csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found, "no form on the page"
    return found[1]


def test_a_link_shows_on_get_and_plays_on_post(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    client: FlaskClient = ctx.test_client()
    url = link(game, 0, alice, 1, "b3")
    for _ in range(3):  # A mail scanner opening the link plays nothing.
        page = client.get(url)
        assert page.status_code == 200 and "Confirm b3" in page.text and "<svg" in page.text
    assert moves_of(game.id) == []

    form_token = csrf(page.text)
    page = client.post(url, data={"csrf_token": form_token, "comment": "from the link"})
    assert page.status_code == 200 and "Your move <strong>b3</strong> is played" in page.text
    assert moves_of(game.id) == ["b3"]
    db.session.rollback()
    assert db.session.get(Game, game.id).moves[0].via == "link"
    requests = [r for r in db.session.query(OutboxMail).filter_by(to_addr=bob.email, kind="your-move")]
    assert "alice says: from the link" in requests[-1].body_text

    # The same link again, and every link for move 1: the game has moved on; nothing more is played.
    again = client.post(url, data={"csrf_token": form_token})
    assert again.status_code == 409 and "has moved on" in again.text
    stale = client.get(link(game, 0, alice, 1, "c2"))
    assert "the game has moved on to move 2" in stale.text and "Confirm" not in stale.text
    assert moves_of(game.id) == ["b3"]


def test_the_choose_page_plays_the_move_picked(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    client = ctx.test_client()
    url = link(game, 0, alice, 1)
    page = client.get(url)
    assert 'value="a2"' in page.text and 'value="c2"' in page.text
    refused = client.post(url, data={"csrf_token": csrf(page.text), "move": "a1"})
    assert refused.status_code == 422 and "a1 is a corner" in refused.text
    assert moves_of(game.id) == []
    played = client.post(url, data={"csrf_token": csrf(page.text), "move": "c2"})
    assert "Your move <strong>c2</strong> is played" in played.text and moves_of(game.id) == ["c2"]


def test_a_move_by_link_answered_at_once_by_a_conditional_line_says_the_answer(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    play.submit(game.id, alice, "b3", "web", conditionals=["if a2 then c2"])
    client = ctx.test_client()
    url = link(game, 1, bob, 2, "a2")
    played = client.post(url, data={"csrf_token": csrf(client.get(url).text)})
    assert ("Your move <strong>a2</strong> is played. Answered at once by conditional move: alice c2."
            in played.text)
    assert moves_of(game.id) == ["b3", "a2", "c2"]


def test_forged_and_foreign_links_are_not_found_and_revoked_ones_say_so(ctx: Flask, players) -> None:
    alice, bob, carol = players
    game = cambio(alice, bob)
    client = ctx.test_client()
    good = link(game, 0, alice, 1, "b3")
    assert client.get(good[:-3] + "xyz").status_code == 404  # tampered
    assert client.get(link(game, 0, carol, 1, "b3")).status_code == 404  # not carol's seat
    tokens.renew(db.session.get(User, alice.id))
    db.session.commit()
    # Revoked with the token secret: refused, saying why and where a working link is.
    revoked = client.get(good)
    assert revoked.status_code == 410 and "The latest mail about the game carries a working link" in \
        revoked.get_data(as_text=True)
    assert moves_of(game.id) == []


def test_the_mailed_one_click_links_share_one_token(ctx: Flask, players) -> None:
    """Every listed move's link in a move request is the mail's one signed link with the move added,
    so a request costs one signature however many moves it lists; each link still plays its move."""
    alice, bob, _ = players
    game = cambio(alice, bob)
    request = db.session.query(OutboxMail).filter_by(to_addr=alice.email, kind="your-move").one()
    hrefs = re.findall(r'href="([^"]*/m/[^"]+)"', request.body_html)
    one_click = {h.split("?move=")[1]: h for h in hrefs if "?move=" in h}
    assert "b3" in one_click and len(one_click) > 3
    assert len({h.split("?")[0] for h in hrefs}) == 1

    client: FlaskClient = ctx.test_client()
    path = one_click["b3"].split("127.0.0.1:5000", 1)[1].replace("&amp;", "&")
    page = client.get(path)
    assert "Confirm b3" in page.text and moves_of(game.id) == []
    page = client.post(path, data={"csrf_token": csrf(page.text)})
    assert "Your move <strong>b3</strong> is played" in page.text
    assert moves_of(game.id) == ["b3"]


def test_a_move_put_into_a_link_by_hand_is_judged_by_the_engine(ctx: Flask, players) -> None:
    alice, bob, _ = players
    game = cambio(alice, bob)
    client: FlaskClient = ctx.test_client()
    path = link(game, 0, alice, 1) + "?move=a1"  # A corner: never a legal placement.
    page = client.get(path)
    assert "Confirm a1" in page.text
    page = client.post(path, data={"csrf_token": csrf(page.text)})
    assert page.status_code == 422 and "corner" in page.text.lower()
    assert moves_of(game.id) == []


def test_a_single_legal_move_is_picked_already(ctx: Flask, players) -> None:
    """With one legal move (O can only push b1 up here) the choose page has it picked: Confirm plays it."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"position": "x.x/x.x/xxx"})
    db.session.commit()
    client = ctx.test_client()
    url = link(game, 0, alice, 1)
    page = client.get(url)
    assert re.search(r'<input type="radio" name="move" value="b1\^" checked>', page.text)
    # A browser sends a checked radio button with the form.
    played = client.post(url, data={"csrf_token": csrf(page.text), "move": "b1^"})
    assert "Your move <strong>b1^</strong> is played" in played.text and moves_of(game.id) == ["b1^"]


def test_an_old_link_is_spent_once_its_seat_has_moved_and_hands_out_no_new_one(app: Flask, ctx: Flask,
                                                                                 players) -> None:
    """Issue #27: alice's link for her move 1 leaked (quoted into her comment, so into the public
    record).  After she moved and bob answered, a stranger opening it was offered "choose your move 3"
    (a fresh link for her current move) and played d4 for her.  The old link now shows the game and
    says it is spent, carries no link that acts, and plays nothing; the link of the move at hand still
    acts."""
    alice, bob, _ = players
    game = cambio(alice, bob)
    old = link(game, 0, alice, 1)  # The choose page of her move 1, as every move request carries.
    stranger = WebClient(app)
    page = stranger.get(old)
    assert page.status_code == 200 and "Your move 1" in page.text  # Still hers to act on: it acts.

    play.submit(game.id, alice, "b3", "mail", expect=1)
    play.submit(game.id, bob, "a2", "web", expect=2)
    page = stranger.get(old)
    text = page.get_data(as_text=True)
    assert "/m/" not in text and "choose your move" not in text  # No working link is handed out…
    assert page.status_code == 200 and "<svg" in text  # …the game is shown…
    assert "This link was for move 1" in text and "it acts no more" in text  # …and the link is spent.
    assert 'name="move"' not in text and notify_url(game) in text  # No form; the game page instead.

    # Posted all the same (a form kept from before, a script): nothing is played, for no move number.
    for move in ("c2", "b2"):
        refused = stranger.post(old, {"move": move, "csrf_token": stranger.token("/login")})
        assert refused.status_code == 409 and "it acts no more" in refused.get_data(as_text=True)
    assert moves_of(game.id) == ["b3", "a2"]

    # The link mailed for move 3 acts for move 3, once.
    current = link(game, 0, alice, 3, "c2")
    played = stranger.post(current, {"csrf_token": stranger.token("/login")})
    assert "Your move <strong>c2</strong> is played" in played.get_data(as_text=True)
    assert moves_of(game.id) == ["b3", "a2", "c2"]


def notify_url(game: Game) -> str:
    """The game page's address as the pages write it."""
    from pbem.mailout import notify

    return notify.game_url(game)


def test_a_link_is_signed_as_itsdangerous_signs_it(ctx: Flask, players) -> None:
    """Move links are written without itsdangerous's per-call set-up (tokens.move_link_token), byte for
    byte as its serializer writes them: links already mailed read as before, and every link it reads back
    (tokens.load_move_link) says what was signed; a claim of another secret is refused."""
    alice, _bob, _ = players
    serializer = URLSafeSerializer(ctx.config["SECRET_KEY"], salt="move-link")
    claims = [(1, 0, None, 1), (12345678, 7, "c3", 42), (5, 1, "a1-b2", 3), (9, 0, "é5" * 3, 2),
              (3, 1, "x" * 150, 8)]  # (The last one compresses: itsdangerous writes it.)
    for game_id, seat, move, number in claims:
        token = tokens.move_link_token(game_id, seat, alice, number, move)
        data = {"g": game_id, "s": seat, "u": alice.id, "n": number, "t": alice.token_secret[:8]}
        if move is not None:
            data["m"] = move
        assert token == serializer.dumps(data)
        assert tokens.load_move_link(token) == data
    forged = URLSafeSerializer("another-secret", salt="move-link").dumps({"g": 1, "s": 0, "u": alice.id})
    assert tokens.load_move_link(forged) is None


def test_a_reply_address_is_the_one_mailed_before(ctx: Flask, players) -> None:
    """A reply token is the game, seat and player with their HMAC-SHA256 under the server secret and the
    player's token secret (tokens, its MAC made from a keyed HMAC kept per key): the address of a mail
    sent earlier, or by another process, still names its player; a renewed secret gives another."""
    alice, bob, _ = players

    def mailed(game_id: int, seat: int, user: User) -> str:
        payload = struct.pack(">IBI", game_id, seat, user.id)
        key = f"{ctx.config['SECRET_KEY']}:{user.token_secret}".encode()
        mac = hmac.new(key, b"reply:" + payload, hashlib.sha256).digest()[:10]
        token = base64.b32encode(payload + mac).decode().rstrip("=").lower()
        return f"play+{token}@{ctx.config['PBEM']['mail']['domain']}"

    for game_id, seat, user in [(1, 0, alice), (1, 1, bob), (4242, 3, alice), (1, 0, alice)]:
        assert tokens.reply_address(game_id, seat, user) == mailed(game_id, seat, user)
    before = tokens.reply_address(1, 0, alice)
    tokens.renew(alice)
    assert tokens.reply_address(1, 0, alice) == mailed(1, 0, alice) != before
