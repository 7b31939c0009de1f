"""Every mail a few representative games write, byte for byte, against a golden file made from the
code before the move request's rendering was tuned (issue #33): the move requests (text and HTML), the
notices, the results, their subjects, Reply-To and thread headers.  Tuning may not change a character a
player receives.

Only what differs from run to run is written as a placeholder: the game's number (both databases share
a numbering across tests), the signed tokens (they name the game) and the Message-IDs.  To write the
golden file again from the code as it is: ``WRITE_GOLDEN_MAILS=1``.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from jinja2 import UndefinedError
from sqlalchemy import select

import games
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, User, set_clock
from pbem.game import play, watching
from pbem.mailout import compose, notify

GOLDEN = Path(__file__).parent / "golden" / "mails_of_games.json"
T0 = datetime(2025, 3, 3, 12, 0)
TOKENS = [(re.compile(r"/m/[^\s\"?<]+"), "/m/TOKEN"), (re.compile(r"play\+[^@\s]+@"), "play+TOKEN@")]


def _normal(text: str | None, game_ids: dict[int, tuple[str, str]]) -> str | None:
    """``text`` with the run's game numbers and tokens as placeholders."""
    if text is None:
        return None
    for pattern, placeholder in TOKENS:
        text = pattern.sub(placeholder, text)
    for game_id, (name, title) in game_ids.items():
        where = rf"({re.escape(title)} #|/games/|<game-|unwatch ){game_id}(?!\d)"
        text = re.sub(where, rf"\g<1>{name}", text)
    return text


def _first_moves(game_id: int, plies: int, comments: dict[int, str] | None = None, **extra: Any) -> None:
    """Play ``plies`` moves in ``game_id``: each time, the first legal move of the first seat to move,
    by its player, some with a comment; one day passes before each."""
    for ply in range(plies):
        db.session.rollback()
        game = db.session.get_one(Game, game_id)
        if game.status != "active":
            return
        engine = games.get(game.engine)
        state = engine.load(game.state)
        seat = next(s for s in game.seats if s.number == min(engine.to_move(state)))
        move = engine.moves(state, seat.number)[0]
        set_clock(T0 + timedelta(days=ply + 1, hours=ply))
        user = seat.user
        assert isinstance(user, User)
        play.submit(game_id, user, move, "mail", comment=(comments or {}).get(ply), **extra.get(str(ply), {}))
        db.session.commit()


def _games(players: tuple[User, User, User]) -> dict[int, tuple[str, str]]:
    """The games, played: by id, their names in the golden file and their engines' titles."""
    alice, bob, carol = players
    made: dict[int, tuple[str, str]] = {}

    def new(name: str, slug: str, seated: list[User], options: dict[str, Any], **kwargs: Any) -> int:
        set_clock(T0)
        game = play.create_game(slug, list(seated), options, **kwargs)
        db.session.commit()
        made[game.id] = (name, games.get(slug).title)
        return game.id

    cambio = new("CAMBIO", "cambio", [alice, bob], {"size": 5}, seed=11)
    watching.watch(db.session.get_one(Game, cambio), carol)
    db.session.commit()
    _first_moves(cambio, 4, {0: 'Good luck <3 & "fun"', 3: "hm"})
    _first_moves(new("CARREAUX", "carreaux", [bob, alice], {}, seed=3), 3, {1: "ok"})
    _first_moves(new("TRUCHET", "truchet", [alice, bob], {}, seed=5), 3)
    _first_moves(new("SLIDER", "easyslider", [alice, bob], {
        "position": "mam2m3m4m5/sas2s3s4s5/cac2c3c4c5/aaa2a3ana4/snmncn..a5", "pawns": "msca",
        "coins": "a2345", "rounds": 2}, seed=1), 3, {0: "secret plan"})
    _first_moves(new("BOXOFF", "boxoff", [alice, bob, carol], {}, seed=5), 3, {1: "slowly now"})
    _first_moves(new("BANK", "cambio", [alice, bob], {"size": 3, "placements": 2}, time_control={
        "kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14}), 2)
    # Alice queues lines with her first move; bob's answer sets one off.
    lined = new("LINES", "cambio", [alice, bob], {"size": 4})
    _first_moves(lined, 1, **{"0": {"conditionals": ["if b1 then c4 then c1 then d2", "if b2 then c4"]}})
    db.session.rollback()
    set_clock(T0 + timedelta(days=3))
    play.submit(lined, bob, "b1", "mail", comment="there")
    db.session.commit()
    return made


def test_the_mails_of_representative_games_are_the_golden_bytes(ctx: Flask, players) -> None:
    try:
        made = _games(players)
    finally:
        set_clock(None)
    db.session.rollback()
    rows = db.session.scalars(
        select(OutboxMail).where(OutboxMail.game_id.in_(made)).order_by(OutboxMail.id)
    ).all()
    mails = [
        {
            "game": made[row.game_id or 0][0],
            "kind": row.kind,
            "to": row.to_addr,
            "from": row.from_addr,
            "reply_to": _normal(row.reply_to, made),
            "subject": _normal(row.subject, made),
            "headers": {k: _normal(v, made) for k, v in sorted(row.headers.items())},
            "text": _normal(row.body_text, made),
            "html": _normal(row.body_html, made),
        }
        for row in rows
    ]
    if os.environ.get("WRITE_GOLDEN_MAILS"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(mails, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert {m["kind"] for m in golden} >= {"your-move", "move-notice"}
    assert len(mails) == len(golden)
    for mail, expected in zip(mails, golden, strict=True):
        assert mail == expected


HOSTILE = "<b>o'neil & \"co\"</b>"


def test_every_mail_template_renders_as_jinja_renders_it_with_hostile_words(ctx: Flask, players) -> None:
    """What compose compiles (pieces and layout written in) renders every mail template exactly as
    Jinja's own loading does, with names and words that HTML must escape (or, in a text piece of an
    HTML part, must not)."""
    alice, bob, _ = players
    game = play.create_game("cambio", [alice, bob], {"size": 5}, seed=11)
    db.session.commit()
    played = play.submit(game.id, alice, "a2", "web", comment=HOSTILE)
    db.session.commit()
    game = db.session.get_one(Game, game.id)
    engine = games.get(game.engine)
    seat = game.seat_of(bob)
    assert seat is not None
    position = notify.position(game, engine, engine.load(game.state), seat)
    context = dict(
        position, position=position, clocks=[(HOSTILE, HOSTILE), ("You", "1 day")], note=[HOSTILE],
        players=[("seat 1", HOSTILE), ("seat 2", "bob")], turn_note=HOSTILE, move=played.move, mover=HOSTILE,
        played=[(HOSTILE, played.move)], reply_to="play+x@example.org", message=HOSTILE, extra=HOSTILE,
        ok=True, comment=HOSTILE, actor=HOSTILE, time_zone="UTC", text=HOSTILE, user=bob,
    )
    environment = ctx.jinja_env
    names = sorted(n for n in environment.list_templates() if n.startswith("mail/"))
    assert "mail/your_move.html" in names
    compared = set()
    templates = compose._templates()
    for name in names:
        try:
            expected = environment.get_template(name).render(context)
        except UndefinedError:
            continue  # A mail whose template needs what this context lacks (a tournament, a reminder).
        assert templates.render(name, {**templates.globals, **context}) == expected, name
        compared.add(name)
    # Every template with a piece or a layout written in is among those compared.
    assert compared >= {"mail/your_move.txt", "mail/your_move.html", "mail/move_notice.txt",
                        "mail/answer.txt", "mail/plain.html"}
