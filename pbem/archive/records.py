"""Game records: the JSON record (format described in docs/RECORDS.md), the plain-text record, and the
export and import of records as JSON lines.

An import replays every entry of a record through the game's engine and refuses the record, naming the
first entry that does not fit, unless it replays to the result the record states.  A record names the
server the game was played on (``origin``, its base URL) and its number there (``id``): a game of
this server's own, or one imported before from the same origin, is "already here" and not added again.
Each imported game also keeps the digest of what it was replayed from (``Game.import_key``), for records
that name no origin.  Players unknown here become placeholder accounts (``User.placeholder``): they have
no address and cannot sign in until someone signs up with the handle and confirms their address (see
:func:`pbem.accounts.accounts.sign_up`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from marshmallow import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import selectinload

import games
from games import IllegalMove, Outcome
from pbem.accounts import accounts
from pbem.core import inputs
from pbem.core.extensions import db
from pbem.core.models import MAX_COMMENT, Game, Move, Seat, User, utcnow
from pbem.core.redaction import blank_secrets
from pbem.core.site import base_url
from pbem.core.unit_of_work import unit_of_work
from pbem.game import clock, endings, results
from pbem.game.replay import Replay, move_numbers

log = logging.getLogger(__name__)

FORMAT = 1
# Bounds on what an import reads: a line of the file, and the entries of one record.
MAX_LINE = 2_000_000
MAX_ENTRIES = 20_000
MAX_TEXT = 500
KINDS = ("move", "resign", "draw-offer", "draw-accept", "draw-decline", "timeout")
VIA = ("web", "mail", "link", "command", "api", "conditional", "server", "cli", "import")
MAX_ORIGIN = 200
# The seeds a database column holds (a signed 64-bit integer), and the times a record's game may have
# been played in: from 1970 (no server of this kind is older) to a day from now (clocks differ).
MIN_SEED, MAX_SEED = -(2**63), 2**63 - 1
EARLIEST = datetime(1970, 1, 1)
# How the plain-text record names the server's actions.
ACTION_WORDS = {
    "resign": "resigns",
    "draw-offer": "offers a draw",
    "draw-accept": "accepts the draw",
    "draw-decline": "declines the draw",
    "timeout": "runs out of time",
}


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


def own_origin() -> str:
    """This server's name in the records it writes: its base URL, without a trailing slash."""
    return base_url()[:MAX_ORIGIN]


def record(game: Game) -> dict[str, Any]:
    """The JSON-safe record of a started game (format :data:`FORMAT`, see docs/RECORDS.md).  A game
    imported from elsewhere keeps the origin and number it was played under."""
    outcome = Outcome.from_dict(game.result) if game.result else None
    return {
        "format": FORMAT,
        "origin": game.origin or own_origin(),
        "id": game.origin_game_id if game.origin else game.id,
        "game": game.engine,
        "options": game.options,
        "seed": game.seed,
        "players": [{"seat": s.number + 1, "handle": s.user.handle if s.user else None} for s in game.seats],
        "public": game.public,
        "rated": game.rated,
        "time_control": game.time_control,
        "status": game.status,
        "started": _time(game.started_at),
        "finished": _time(game.finished_at),
        "moves": [
            {"number": m.number, "move": n if m.kind == "move" else None, "seat": m.seat + 1, "kind": m.kind,
             "text": m.text, "via": m.via, "time": _time(m.created_at), "comment": m.comment}
            for m, n in zip(game.moves, move_numbers(game.moves), strict=True)
        ],
        "result": None if outcome is None else {
            "results": list(outcome.results),
            "ranks": list(outcome.ranks),
            "scores": None if outcome.scores is None else list(outcome.scores),
            "notes": None if outcome.notes is None else list(outcome.notes),
            "reason": outcome.reason,
            "ending": game.ending,
        },
    }


def to_json(data: dict[str, Any]) -> str:
    """A record as one line of JSON (the form of an export file's lines)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def text(game: Game) -> str:
    """The plain-text record: a header, the numbered moves with their comments, the board at the end."""
    engine = games.get(game.engine)
    lines = [f"{engine.title} #{game.id}"]
    for seat in game.seats:
        lines.append(f"Seat {seat.number + 1}: {results.handle_or_seat(game, seat.number)}")
    # An option left unset (a Truchet game without a set-up position, say) is not worth a line's
    # "position=None": only the options that have a value are shown.
    options = ", ".join(f"{k}={v}" for k, v in sorted(game.options.items()) if v is not None)
    if options:
        lines.append(f"Options: {options}")
    lines.append(f"Seed: {game.seed}")
    if game.started_at:
        lines.append(f"Started: {_time(game.started_at)}")
    if game.finished_at and game.result:
        lines.append(f"Finished: {_time(game.finished_at)}")
    if game.result:
        outcome = Outcome.from_dict(game.result)
        seats = range(len(outcome.results))
        lines.append("Result: " + "; ".join(
            f"{results.player_name(game, n)} {results.seat_words(game, n)}" for n in seats))
        lines.append(f"Reason: {results.sentence(game)}")
    lines.append("")
    for move, number in zip(game.moves, move_numbers(game.moves), strict=True):
        what = move.text if move.kind == "move" else ACTION_WORDS.get(move.kind, move.text)
        if move.via == "conditional":
            what += " (conditional)"  # Played at once by a line its player queued.
        # Moves numbered as players count them (the `#N` of a mail); an action after the move it follows.
        mark = f"{number:>4}." if move.kind == "move" else "    -"
        lines.append(f"{mark} {results.handle_or_seat(game, move.seat)}: {what}")
        if move.comment:
            lines.extend(f"      {line}" for line in move.comment.splitlines())
    if game.state is not None:
        lines.append("")
        lines.append("Final board:" if game.status != "active" else "Board now:")
        lines.append(engine.render_text(engine.load(game.state), None, over=game.status != "active").rstrip())
    return "\n".join(lines) + "\n"


# Export ---------------------------------------------------------------------------


def export(engine: str | None = None, since: date | None = None, batch: int = 200) -> Iterator[str]:
    """The records of finished games, oldest first, one JSON line each (``engine`` and ``since``
    narrow it).  Games are read in batches, so an export of any size uses little memory."""
    last_id = 0
    while True:
        query = (select(Game).where(Game.status == "finished", Game.id > last_id).order_by(Game.id)
                 .limit(batch).options(selectinload(Game.seats).joinedload(Seat.user),
                                       selectinload(Game.moves)))
        if engine:
            query = query.where(Game.engine == engine)
        if since:
            query = query.where(Game.finished_at >= datetime.combine(since, datetime.min.time()))
        found = list(db.session.scalars(query))
        if not found:
            return
        for game in found:
            yield to_json(record(game))
        last_id = found[-1].id
        db.session.expunge_all()


# Import ---------------------------------------------------------------------------


class RecordError(ValueError):
    """A record that cannot be imported; the message says why (naming the first bad move)."""


@dataclass
class Checked:
    """A record that replays to its stated result, ready to store."""

    data: dict[str, Any]
    engine: games.Engine
    options: dict[str, Any]
    state: Any
    outcome: Outcome
    ending: str
    key: str
    origin: str | None = None
    origin_game_id: int | None = None
    started: datetime | None = None
    finished: datetime | None = None
    time_control: dict[str, Any] = field(default_factory=dict)


def _field(data: dict[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise RecordError(f"the record's {name!r} must be {what}")
    return value


def _parse_time(value: Any, what: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise RecordError(f"{what} is not a time")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RecordError(f"{what} ({value!r}) is not a time") from None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:  # Year 1 or 9999, moved past the calendar's end.
            raise RecordError(f"{what} ({value!r}) is not a time a game was played at") from None
    if not EARLIEST <= parsed <= utcnow() + timedelta(days=1):
        raise RecordError(f"{what} ({value!r}) is not a time a game was played at: it must be between "
                          f"{EARLIEST.year} and now")
    return parsed


def check(data: Any) -> Checked:
    """Replay a record through its engine; :class:`RecordError` if it is malformed, a move is refused,
    or it does not end as it says."""
    if not isinstance(data, dict):
        raise RecordError("a record is a JSON object")
    try:
        inputs.check_json(data)
    except inputs.BadInput as exc:
        raise RecordError(f"the record's {exc.where or 'value'} {exc.message}") from None
    if data.get("format") != FORMAT:
        raise RecordError(f"the record's format is {data.get('format')!r}; this server reads format {FORMAT}")
    slug = _field(data, "game", str, "a game's name")
    try:
        engine = games.get(slug)
    except games.UnknownGame as exc:
        raise RecordError(str(exc)) from None
    try:
        options = engine.options.load(_field(data, "options", dict, "an object"))
    except ValidationError as exc:
        raise RecordError(f"the options do not fit {engine.title}: {exc.messages}") from None
    seed = _field(data, "seed", int, "a whole number")
    if not MIN_SEED <= seed <= MAX_SEED:
        raise RecordError(f"the record's seed {seed} is out of range (a signed 64-bit number)")
    for flag in ("public", "rated"):
        if data.get(flag) is not None and not isinstance(data[flag], bool):
            raise RecordError(f"the record's {flag!r} must be true or false")
    time_control = data.get("time_control") or {}
    if not isinstance(time_control, dict):
        raise RecordError("the record's 'time_control' must be an object")
    if time_control:
        try:
            time_control = clock.check_time_control(time_control)
        except clock.TimeControlError as exc:
            raise RecordError(f"the record's time control: {exc}") from None
    started = _parse_time(data.get("started"), "the start")
    finished = _parse_time(data.get("finished"), "the end")
    if started is not None and finished is not None and finished < started:
        raise RecordError("the game finished before it started")
    players = _field(data, "players", list, "a list")
    if len(players) not in engine.players:
        raise RecordError(f"{engine.title} is not for {len(players)} players")
    for n, player in enumerate(players, 1):
        if not isinstance(player, dict) or player.get("seat") != n:
            raise RecordError(f"player {n} must be {{\"seat\": {n}, \"handle\": ...}}")
        handle = player.get("handle")
        if not isinstance(handle, str) or not accounts.HANDLE.match(handle):
            raise RecordError(f"seat {n}'s handle {handle!r} is not a handle")
        known = accounts.find_user(handle)
        if known is None:
            # A new handle becomes a placeholder account, which someone may claim later: never one the
            # server reads as something else ("me").
            try:
                accounts.check_handle(handle)
            except accounts.AccountError as exc:
                raise RecordError(f"seat {n}'s handle: {exc}") from None
        elif known.handle.casefold() != handle.casefold():
            # Only the same handle (in any case) is the same player: a look-alike (A1ICE for alice) may be
            # anyone, and cannot have an account of its own here beside the one it looks like.
            raise RecordError(f"seat {n}'s handle {handle!r} is too like {known.handle!r}, a player here; "
                              "if it is the same player, write the handle as it is here")
    entries = _field(data, "moves", list, "a list")
    if len(entries) > MAX_ENTRIES:
        raise RecordError(f"the record has more than {MAX_ENTRIES} entries")
    stated = data.get("result")
    if not isinstance(stated, dict) or not isinstance(stated.get("results"), list):
        raise RecordError("the record has no result: only finished games are imported")

    replay = Replay(engine, len(players), options, seed)
    for index, entry in enumerate(entries, 1):
        where = f"entry {index}"
        if not isinstance(entry, dict):
            raise RecordError(f"{where} is not an object")
        kind, seat, move_text = entry.get("kind", "move"), entry.get("seat"), entry.get("text")
        if kind not in KINDS:
            raise RecordError(f"{where} has an unknown kind {kind!r}")
        if not isinstance(seat, int) or isinstance(seat, bool) or not 1 <= seat <= len(players):
            raise RecordError(f"{where} has no seat between 1 and {len(players)}")
        if not isinstance(move_text, str) or len(move_text) > MAX_TEXT:
            raise RecordError(f"{where} has no text")
        if entry.get("number") != index:
            raise RecordError(f"{where} is numbered {entry.get('number')!r}")
        comment = entry.get("comment")
        if comment is not None and (not isinstance(comment, str) or len(comment) > MAX_COMMENT):
            raise RecordError(f"{where}'s comment is not text of at most {MAX_COMMENT} characters")
        _parse_time(entry.get("time"), f"{where}'s time")
        where = f"move {index} ({move_text!r} by seat {seat})"
        if replay.outcome is not None:
            raise RecordError(f"{where} comes after the game ended")
        number = seat - 1
        if kind == "move" and number not in engine.to_move(replay.state):
            raise RecordError(f"{where}: it is not seat {seat}'s turn")
        if kind == "draw-accept" and replay.draw_offer is None and "timeout" not in move_text:
            raise RecordError(f"{where} accepts a draw nobody offered")
        try:
            replay.apply(number, kind, move_text)
        except IllegalMove as exc:
            raise RecordError(f"{where} is illegal: {exc.message}") from None
    outcome, ending, state = replay.outcome, replay.ending, replay.state
    if outcome is None:
        raise RecordError("the moves do not finish the game, but the record says it is finished")
    if list(outcome.results) != stated["results"]:
        raise RecordError(f"the moves end in {', '.join(outcome.results)}, but the record says "
                          f"{', '.join(map(str, stated['results']))}")
    if ending:
        # The server's own endings are worded by the server that wrote the record: its words are kept.
        reason = stated.get("reason")
        outcome = replace(outcome, reason=reason[:MAX_TEXT] if isinstance(reason, str) else ending)
    else:
        ending = endings.ending_of(engine.slug, outcome)
    origin, origin_game_id = _origin(data)
    return Checked(data, engine, options, state, outcome, ending, _content_key(data, options), origin,
                   origin_game_id, started, finished, time_control)


def _origin(data: dict[str, Any]) -> tuple[str | None, int | None]:
    """The server a record says its game was played on, and its number there (both, or neither)."""
    origin, number = data.get("origin"), data.get("id")
    if origin is None:
        return None, None
    if not isinstance(origin, str) or not origin.strip() or len(origin) > MAX_ORIGIN:
        raise RecordError(f"the record's 'origin' must be a server's address of at most {MAX_ORIGIN} "
                          "characters")
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**31:
        raise RecordError("a record with an 'origin' must give the game's number there as 'id'")
    return origin.strip().rstrip("/"), number


def _content_key(data: dict[str, Any], options: dict[str, Any]) -> str:
    """The digest of what a record is replayed from: the same game gives the same key."""
    canonical = {k: data[k] for k in ("game", "seed", "players")} | {
        "options": options,
        "moves": [[e.get("seat"), e.get("kind", "move"), e.get("text")] for e in data["moves"]]}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


def _already_here(checked: Checked) -> Game | None:
    """The game of this server that ``checked`` is a record of, if any: one imported before from the same
    origin and number, this server's own game of that number (when it is the same game: a server
    whose database was started afresh may have given the number to another), or one imported before
    from the same content."""
    if checked.origin is not None:
        found = db.session.scalar(select(Game).where(Game.origin == checked.origin,
                                                     Game.origin_game_id == checked.origin_game_id))
        if found is not None:
            return found
        if checked.origin == own_origin():
            own = db.session.get(Game, checked.origin_game_id)
            if own is not None and own.origin is None and own.status == "finished" \
                    and _content_key(record(own), checked.options) == checked.key:
                return own
    return db.session.scalar(select(Game).where(Game.import_key == checked.key))


def _player(handle: str) -> User:
    """The account with this handle, or a new placeholder account for it."""
    user = accounts.find_user(handle)
    if user is not None:
        return user
    user = User(handle=handle, handle_key=accounts.handle_key(handle), email=placeholder_address(handle),
                placeholder=True)
    db.session.add(user)
    db.session.flush()
    return user


def placeholder_address(handle: str) -> str:
    """The address a placeholder account holds until it is claimed: unique and never delivered
    (``.invalid`` is reserved for that)."""
    return f"{accounts.handle_key(handle)}@placeholder.invalid"


def store(checked: Checked) -> tuple[Game, bool]:
    """Add a checked record as a finished game, unless it was imported before; returns the game and
    whether it is new.  Takes the write lock and commits."""
    with unit_of_work() as uow:
        found = _already_here(checked)
        if found is not None:
            uow.rollback()
            return found, False
        data = checked.data
        started, finished = checked.started, checked.finished or utcnow()
        public = data.get("public", True) is not False
        time_control = checked.time_control
        users = [_player(p["handle"]) for p in data["players"]]
        game = Game(
            engine=checked.engine.slug, options=checked.options, seed=data["seed"],
            players=len(data["players"]),
            state=checked.engine.dump(checked.state), status="finished", result=checked.outcome.to_dict(),
            public=public, time_control=time_control, rated=data.get("rated") is True,
            ply=sum(1 for e in data["moves"] if e.get("kind", "move") == "move"),
            created_at=started or finished, started_at=started or finished, finished_at=finished,
            import_key=checked.key, origin=checked.origin, origin_game_id=checked.origin_game_id,
        )
        for number, user in enumerate(users):
            game.seats.append(Seat(number=number, user=user, joined_at=started))
        for entry in data["moves"]:
            game.moves.append(Move(
                number=entry["number"], seat=entry["seat"] - 1, kind=entry.get("kind", "move"),
                text=entry["text"], via=entry.get("via") if entry.get("via") in VIA else "import",
                # Public from now on, as a comment played here is: nothing of ours that acts goes in.
                comment=blank_secrets(entry.get("comment") or "", users) or None,
                created_at=_parse_time(entry.get("time"), "a time") or finished,
            ))
        db.session.add(game)
        db.session.flush()
        endings.record_finish(game, checked.outcome, checked.ending)
        uow.commit()
    return game, True


def _parsed(line: str) -> Any:
    """One line of an import file read as JSON; :class:`RecordError` if it is not."""
    if len(line) > MAX_LINE:
        raise RecordError(f"the line is longer than {MAX_LINE} characters")
    try:
        return json.loads(line)
    except ValueError as exc:
        raise RecordError(f"the line is not JSON: {exc}") from None
    except RecursionError:
        raise RecordError(f"the record is nested more than {inputs.MAX_JSON_DEPTH} levels deep") from None


@dataclass
class ImportReport:
    """What an import did: games added, records already here, and the refused ones with the reason."""

    added: int = 0
    already: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)


def import_lines(lines: Iterable[str]) -> ImportReport:
    """Import the records of a JSON-lines file (blank lines skipped); each record stands alone, checked
    completely before anything of it is written and stored in a transaction of its own, so a refused one
    does not stop the others.  ``refused`` holds (line number, reason)."""
    report = ImportReport()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            _game, new = store(check(_parsed(line)))
        except RecordError as exc:
            db.session.rollback()
            report.refused.append((number, str(exc)))
            continue
        except Exception as exc:  # A fault of ours (an engine's, the database's): this record only.
            db.session.rollback()
            log.exception("line %s of an import could not be imported", number)
            report.refused.append((number, f"it could not be imported ({type(exc).__name__}: {exc})"[:500]))
            continue
        if new:
            report.added += 1
        else:
            report.already += 1
    return report
