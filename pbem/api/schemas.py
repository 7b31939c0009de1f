"""The API's requests and answers as marshmallow schemas: the views load and dump through them, and the
OpenAPI document is generated from them, so the two cannot drift apart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, fields, validate

from pbem.archive.archive import MAX_MOVES, MAX_PAGE_SIZE, PAGE_SIZE
from pbem.core.models import MAX_COMMENT
from pbem.game.conditional import MAX_LINE_TEXT, MAX_LINES
from pbem.game.endings import ENDINGS

MAX_MOVE = 500
MAX_SEATS = 8
MAX_HANDLE = 32

STATUSES = ("waiting", "active", "finished", "abandoned")
RESULTS = ("win", "draw", "loss")


class UtcDateTime(fields.DateTime):
    """A time in ISO 8601 with its zone, as RFC 3339 wants: the server keeps naive UTC times."""

    def _serialize(
        self, value: datetime | None, attr: str | None, obj: Any, **kwargs: Any
    ) -> str | float | None:
        if value is not None and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return super()._serialize(value, attr, obj, **kwargs)


def your_seat(description: str, *, in_body: bool = True) -> fields.Integer:
    """The optional field naming one of the caller's seats, for a player who holds several (a whole
    number in a JSON body; a query parameter is text)."""
    return fields.Integer(strict=in_body, validate=validate.Range(min=0, max=MAX_SEATS - 1),
                          metadata={"description": description})


class Flag(fields.Boolean):
    """A body's true or false: JSON's own, not 1, "yes" or "on" (1 == True in Python, so the truthy
    sets of marshmallow's Boolean cannot tell them apart)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def flag(default: bool, description: str = "") -> Flag:
    """A body's optional true or false, with its default."""
    return Flag(load_default=default, metadata={"description": description} if description else {})


class ErrorSchema(Schema):
    """A refused request: ``error`` is for people, ``code`` for programs."""

    error = fields.String(required=True, metadata={"description": "What was wrong, written for a person."})
    code = fields.String(required=True, metadata={
        "description": "A stable machine code: e.g. illegal, stale, not-your-turn, invalid, unauthorized."})
    legal_moves = fields.List(fields.String(), metadata={
        "description": "With a refused move (illegal): the moves that are legal now."})
    fields_ = fields.Dict(data_key="fields", keys=fields.String(), values=fields.Raw(), metadata={
        "description": "With code invalid: the message for each field or parameter that was refused."})


# Answers ---------------------------------------------------------------------------


class OutcomeSchema(Schema):
    """How a game ended."""

    words = fields.String(required=True, metadata={
        "description": 'The result for people, naming the players: "alice (O) wins with a full line."'})
    reason = fields.String(required=True, metadata={
        "description": "The rules' reason, naming sides or seats."})
    results = fields.List(fields.String(validate=validate.OneOf(RESULTS)), required=True,
                          metadata={"description": "Each seat's result, in seat order."})
    scores = fields.List(fields.Float(), allow_none=True)


class SeatSchema(Schema):
    """A seat of a game: its player (null while open), whether it is to move, its clock and result."""

    seat = fields.Integer(required=True, metadata={"description": "The seat number, from 0."})
    player = fields.String(allow_none=True, required=True)
    challenged = fields.String(allow_none=True, metadata={
        "description": "While the game waits: the player challenged to this seat, who has not answered."})
    to_move = fields.Boolean(required=True)
    deadline = UtcDateTime(allow_none=True, metadata={
        "description": "When this seat's time runs out (UTC)."})
    clock = fields.String(metadata={"description": "The seat's time left, in words, its deadline in the "
                                                   "caller's time zone (UTC without a token)."})
    result = fields.String(allow_none=True, validate=validate.OneOf(RESULTS))


class GameSummarySchema(Schema):
    """A game in a list."""

    id = fields.Integer(required=True)
    game = fields.String(required=True, metadata={"description": "The game's type, e.g. cambio."})
    title = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(STATUSES))
    public = fields.Boolean(required=True)
    rated = fields.Boolean(required=True)
    players = fields.List(fields.Nested(SeatSchema), required=True)
    move_number = fields.Integer(required=True, metadata={
        "description": "The number of the next move (per seat in games where seats move at once); send it "
                       "as expect with your move."})
    result = fields.Nested(OutcomeSchema, allow_none=True, required=True)
    created_at = UtcDateTime(required=True)
    finished_at = UtcDateTime(allow_none=True, required=True)
    url = fields.String(required=True, metadata={"description": "The game's page on the web."})


class RecordEntrySchema(Schema):
    """One entry of a game's record: a move, or what a player did (resign, draw offer, timeout)."""

    number = fields.Integer(required=True)
    seat = fields.Integer(required=True)
    player = fields.String(required=True)
    kind = fields.String(required=True, metadata={
        "description": "move, resign, draw-offer, draw-accept, draw-decline or timeout."})
    text = fields.String(required=True)
    comment = fields.String(allow_none=True)
    at = UtcDateTime(required=True)


class GameSchema(GameSummarySchema):
    """A game as the caller sees it."""

    options = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True)
    time_control = fields.String(required=True, metadata={"description": "The time control, in words."})
    board = fields.String(allow_none=True, required=True, metadata={
        "description": "The board as fixed-width text, from the caller's seat."})
    your_seat = fields.Integer(allow_none=True, required=True)
    your_turn = fields.Boolean(required=True)
    legal_moves = fields.List(fields.String(), allow_none=True, required=True, metadata={
        "description": "Your legal moves when it is your turn, else null."})
    draw_offered_by = fields.Integer(allow_none=True, required=True, metadata={
        "description": "The seat that offers a draw, if any."})
    record = fields.List(fields.Nested(RecordEntrySchema), required=True)
    hidden_moves = fields.Integer(required=True, metadata={
        "description": "Moves not shown to you (the other boards of a game played on a shared deal)."})


class GameListSchema(Schema):
    """A page of games, newest first; ask for the next with ``after``."""

    games = fields.List(fields.Nested(GameSummarySchema), required=True)
    next = fields.Integer(allow_none=True, required=True, metadata={
        "description": "Pass this as after for the next page; null on the last page."})


class TurnListSchema(Schema):
    """The games awaiting the caller's move, the soonest deadline first."""

    games = fields.List(fields.Nested(GameSummarySchema), required=True)


class ChallengeSchema(Schema):
    """A challenge waiting for the caller's answer."""

    game = fields.Nested(GameSummarySchema, required=True)
    seat = fields.Integer(required=True)
    challenger = fields.String(required=True)
    created_at = UtcDateTime(required=True)


class ChallengeListSchema(Schema):
    """The challenges waiting for the caller's answer, newest first."""

    challenges = fields.List(fields.Nested(ChallengeSchema), required=True)


class MoveResultSchema(Schema):
    """A move accepted: the record entry, and the game after it."""

    move = fields.Nested(RecordEntrySchema, required=True)
    game = fields.Nested(GameSchema, required=True)


class RatingSchema(Schema):
    """A player's Glicko-2 rating in one game."""

    game = fields.String(required=True)
    rating = fields.Float(required=True)
    deviation = fields.Float(required=True, metadata={
        "description": "As of now: it grows while one does not play."})
    volatility = fields.Float(required=True)
    provisional = fields.Boolean(required=True)
    display = fields.String(required=True, metadata={
        "description": 'e.g. "1520", or "1520?" while provisional.'})
    games = fields.Integer(required=True, metadata={"description": "Rated games played."})


class GameRecordSchema(Schema):
    """A player's finished games of one type: wins, draws and losses."""

    game = fields.String(required=True)
    wins = fields.Integer(required=True)
    draws = fields.Integer(required=True)
    losses = fields.Integer(required=True)


class PlayerSchema(Schema):
    """A player: ratings per game and record."""

    handle = fields.String(required=True)
    since = UtcDateTime(required=True)
    on_vacation = fields.Boolean(required=True)
    ratings = fields.List(fields.Nested(RatingSchema), required=True)
    record = fields.List(fields.Nested(GameRecordSchema), required=True)


# Requests ---------------------------------------------------------------------------


class GameQuerySchema(Schema):
    """The filters of the game list: the archive's (see /archive), and the game's status."""

    game = fields.String(validate=validate.Length(max=32), metadata={
        "description": "A game type, e.g. cambio."})
    player = fields.String(validate=validate.Length(max=MAX_HANDLE), metadata={
        "description": "A player's handle: only their games."})
    opponent = fields.String(validate=validate.Length(max=MAX_HANDLE), metadata={
        "description": "With player: only the games of the two against each other."})
    status = fields.String(validate=validate.OneOf(STATUSES), metadata={
        "description": "finished lists the public archive (newest finish first); the other statuses "
                       "list the games newest first, public ones and private ones you play in."})
    rated = fields.String(validate=validate.OneOf(("yes", "no")))
    result = fields.String(validate=validate.OneOf(RESULTS), metadata={
        "description": "Finished games only: the player's result (with no player, win or loss asks for "
                       "games someone won, draw for drawn games)."})
    ending = fields.String(validate=validate.OneOf(tuple(ENDINGS)), metadata={
        "description": "Finished games only: how the game ended."})
    from_ = fields.Date(data_key="from", metadata={
        "description": "Finished games only: finished on or after."})
    to = fields.Date(metadata={"description": "Finished games only: finished on or before."})
    min_moves = fields.Integer(validate=validate.Range(min=0, max=MAX_MOVES), metadata={
        "description": "Finished games only: at least this many moves."})
    max_moves = fields.Integer(validate=validate.Range(min=0, max=MAX_MOVES), metadata={
        "description": "Finished games only: at most this many moves."})
    after = fields.Integer(validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "The next page: the games after this one (the previous page's next)."})
    limit = fields.Integer(load_default=PAGE_SIZE, validate=validate.Range(min=1, max=MAX_PAGE_SIZE))


class NewGameSchema(Schema):
    """A new game: you take a seat, named players are challenged, null seats are open."""

    game = fields.String(required=True, validate=validate.Length(min=1, max=32))
    options = fields.Dict(keys=fields.String(validate=validate.Length(max=64)), values=fields.Raw(),
                          load_default=dict, validate=validate.Length(max=32),
                          metadata={"description": "The game's options; omitted ones take the usual value."})
    seats = fields.List(
        fields.String(allow_none=True, validate=validate.Length(min=1, max=MAX_HANDLE)),
        required=True, validate=validate.Length(min=1, max=MAX_SEATS),
        metadata={"description":
                  'Handles in seat order: yours (or "me"), players to challenge, null for open.'},
    )
    time = fields.String(validate=validate.Length(max=32), metadata={
        "description": 'A time control: "days:N" per move, or "bank:I+A/M" (days at the start, added after '
                       "each move, at most); the server's usual when omitted."})
    weekend_pause = flag(False)
    public = flag(True)
    rated = flag(True, "Whether the result moves the ratings (two players with two accounts only).")


class MoveSchema(Schema):
    """A move, in the game's notation."""

    move = fields.String(required=True, validate=validate.Length(min=1, max=MAX_MOVE))
    expect = fields.Integer(strict=True, validate=validate.Range(min=1, max=2**31 - 1), metadata={
        "description": "The move_number you saw: if the game has moved on since, the move is refused "
                       "(stale) instead of played on a position you did not see."})
    comment = fields.String(validate=validate.Length(max=MAX_COMMENT))
    seat = your_seat("Which of your seats moves, when you hold several.")


class AnswerSchema(Schema):
    """An answer to a challenge, with an optional word to the challenger."""

    comment = fields.String(validate=validate.Length(max=MAX_COMMENT), metadata={
        "description": "Passed on to the challenger with your answer."})


class ResignSchema(Schema):
    """A resignation, with an optional word to the other players."""

    comment = fields.String(validate=validate.Length(max=MAX_COMMENT), metadata={
        "description": "Passed on to the other players with the result, and kept in the record."})


class DrawSchema(Schema):
    """Offer a draw, or answer the opponent's offer."""

    action = fields.String(required=True, validate=validate.OneOf(("offer", "accept", "decline")))
    comment = fields.String(validate=validate.Length(max=MAX_COMMENT), metadata={
        "description": "Passed on to the others with the offer or the answer, and kept in the record."})


class ConditionalLinesSchema(Schema):
    """Your conditional lines in a game: answers played for you the moment your opponent's move matches."""

    lines = fields.List(fields.String(), required=True, metadata={
        "description": 'Each line as written: "if c4 then d4 then e3 then f5" answers c4 with d4, then e3 '
                       "with f5. Only you ever see them."})


class ConditionalQueueSchema(Schema):
    """Lines to queue, each checked move by move in the position it reaches."""

    lines = fields.List(fields.String(validate=validate.Length(min=1, max=MAX_LINE_TEXT)), required=True,
                        validate=validate.Length(min=1, max=MAX_LINES), metadata={
                            "description": '"if c4 then d4 …" (the if may be left out); if one is '
                                           "refused, none is queued."})
    seat = your_seat("Which of your seats, when you hold several.")


class ConditionalDeleteSchema(Schema):
    """Which lines to delete: one and every line it begins, or all."""

    line = fields.String(validate=validate.Length(min=1, max=MAX_LINE_TEXT), metadata={
        "description": '"if c4" deletes every line beginning with c4; omitted, every line goes.'})
    seat = your_seat("Which of your seats, when you hold several.", in_body=False)
