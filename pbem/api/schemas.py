"""The API's requests and answers as marshmallow schemas: the views load and dump through them, and the
OpenAPI document is generated from them, so the two cannot drift apart."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from marshmallow import Schema, fields, validate

from pbem.archive.archive import MAX_MOVES, MAX_PAGE_SIZE, PAGE_SIZE
from pbem.archive.directory import PAGE_SIZE as DIRECTORY_PAGE_SIZE
from pbem.core.models import MAX_COMMENT, MAX_NOTE
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


class SeatNumber(fields.Integer):
    """A seat as people, the web pages and the JSON record number it, from 1; the server counts from 0
    inside, so the number is turned one way when read and the other when written."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> Any:
        return None if value is None else super()._serialize(value + 1, attr, obj, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        return super()._deserialize(value, attr, data, **kwargs) - 1


def your_seat(description: str, *, in_body: bool = True) -> SeatNumber:
    """The optional field naming one of the caller's seats, for a player who holds several (a whole
    number in a JSON body; a query parameter is text)."""
    numbered = validate.Range(min=0, max=MAX_SEATS - 1, error=f"Seats are numbered from 1 to {MAX_SEATS}.")
    return SeatNumber(strict=in_body, validate=numbered,
                      metadata={"description": f"{description} Seats are numbered from 1."})


class Flag(fields.Boolean):
    """A body's true or false: JSON's own, not 1, "yes" or "on" (1 == True in Python, so the truthy
    sets of marshmallow's Boolean cannot tell them apart)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


def whole_number(**kwargs: Any) -> fields.Integer:
    """A body's whole number: JSON's own, not 1.5 (read as 1), "1" or true."""
    return fields.Integer(strict=True, **kwargs)


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

    seat = SeatNumber(required=True, metadata={"description": "The seat number, from 1."})
    player = fields.String(allow_none=True, required=True)
    bot = fields.Boolean(metadata={"description": "Whether the seat's player is a computer player (BOT)."})
    challenged = fields.String(allow_none=True, metadata={
        "description": "While the game waits: the player challenged to this seat, who has not answered."})
    to_move = fields.Boolean(required=True)
    deadline = UtcDateTime(allow_none=True, metadata={
        "description": "When this seat's time runs out (UTC)."})
    clock = fields.String(metadata={"description": "The seat's clock in words while the game goes on: the "
                                                   "mover's time left with its deadline in the caller's time "
                                                   "zone (UTC without a token), the others' at rest (what a "
                                                   "bank holds, or the time per move); empty once over."})
    bank_seconds = fields.Float(allow_none=True, metadata={
        "description": "With a bank clock, what the seat's bank holds now (counting seconds), running or "
                       "not; null without a bank or once the game is over."})
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
    min_rating = fields.Integer(allow_none=True, required=True, metadata={
        "description": "Only a player rated at least this (in this game) may take an open seat; "
                       "null: no bound."})
    max_rating = fields.Integer(allow_none=True, required=True, metadata={
        "description": "Only a player rated at most this may take an open seat; null: no bound."})


class RecordEntrySchema(Schema):
    """One entry of a game's record: a move, or what a player did (resign, draw offer, timeout)."""

    number = fields.Integer(required=True, metadata={
        "description": "The entry's place in the record (1, 2, … in order), as the JSON record numbers it."})
    move = fields.Integer(allow_none=True, required=True, metadata={
        "description": "The move's number as players count moves (the game's moves; in Easy Slider and Box "
                       "Off while they run, the caller's own), the `#N` of a mail; null for an action "
                       "(a draw offer, a resignation, a timeout)."})
    seat = SeatNumber(required=True, metadata={"description": "The seat number, from 1."})
    player = fields.String(required=True)
    kind = fields.String(required=True, metadata={
        "description": "move, resign, draw-offer, draw-accept, draw-decline or timeout."})
    text = fields.String(required=True)
    via = fields.String(required=True, metadata={
        "description": "How it was made: web, mail, link, command, api, conditional, server, cli or import."})
    conditional = fields.Boolean(required=True, metadata={
        "description": "Whether a conditional line of its player played it."})
    comment = fields.String(allow_none=True)
    at = UtcDateTime(required=True)


class GameSchema(GameSummarySchema):
    """A game as the caller sees it."""

    options = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True)
    time_control = fields.String(required=True, metadata={"description": "The time control, in words."})
    board = fields.String(allow_none=True, required=True, metadata={
        "description": "The board as fixed-width text, from the caller's seat."})
    your_seat = SeatNumber(allow_none=True, required=True, metadata={"description": "From 1."})
    your_turn = fields.Boolean(required=True)
    legal_moves = fields.List(fields.String(), allow_none=True, required=True, metadata={
        "description": "Your legal moves when it is your turn, else null."})
    draw_offered_by = SeatNumber(allow_none=True, required=True, metadata={
        "description": "The seat (from 1) that offers a draw, if any."})
    record = fields.List(fields.Nested(RecordEntrySchema), required=True)
    hidden_moves = fields.Integer(required=True, metadata={
        "description": "Moves not shown to you (the other boards of a game played on a shared deal)."})
    position = fields.Dict(keys=fields.String(), values=fields.Raw(), allow_none=True, metadata={
        "description": "While the game is on, for its player: the position as your seat may know it, in "
                       "the engine's own form (games.Engine.seat_view, which engine.load reads back), for "
                       "programs that search it; null for others, or for a game whose engine gives none."})


class GameListSchema(Schema):
    """A page of games, newest first; ask for the next with ``after``."""

    games = fields.List(fields.Nested(GameSummarySchema), required=True)
    next = fields.Integer(allow_none=True, required=True, metadata={
        "description": "Pass this as after for the next page; null on the last page."})


class LobbyGameSchema(Schema):
    """A game of the lobby: a public game with an open seat."""

    game = fields.Nested(GameSummarySchema, required=True)
    creator = fields.String(allow_none=True, required=True, metadata={"description": "Who started it."})
    creator_rating = fields.String(required=True, metadata={
        "description": 'The creator\'s rating in this game, e.g. "1520", or "1500?" while provisional.'})
    rating_range = fields.String(required=True, metadata={
        "description": 'Who may take a seat by rating: "1400–1700", "1400 or more", "up to 1700"; '
                       '"" for anyone.'})


class LobbySchema(Schema):
    """The lobby: public games with an open seat, newest first."""

    games = fields.List(fields.Nested(LobbyGameSchema), required=True)


class TurnListSchema(Schema):
    """The games awaiting the caller's move, the soonest deadline first."""

    games = fields.List(fields.Nested(GameSummarySchema), required=True)


class ChallengeSchema(Schema):
    """A challenge waiting for the caller's answer."""

    game = fields.Nested(GameSummarySchema, required=True)
    seat = SeatNumber(required=True, metadata={"description": "The seat you are challenged to, from 1."})
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


class ListedRatingSchema(Schema):
    """A player's rating in one game, as people read it."""

    game = fields.String(required=True)
    display = fields.String(required=True, metadata={
        "description": 'e.g. "1520", or "1520?" while provisional.'})


class ListedPlayerSchema(Schema):
    """A player of the directory."""

    handle = fields.String(required=True)
    ratings = fields.List(fields.Nested(ListedRatingSchema), required=True)
    played = fields.Integer(required=True, metadata={"description": "Games they have finished."})


class DirectorySchema(Schema):
    """A page of the player directory, in handle order; ask for the next with ``after``."""

    players = fields.List(fields.Nested(ListedPlayerSchema), required=True)
    next = fields.String(allow_none=True, required=True, metadata={
        "description": "Pass this as after for the next page; null on the last page."})


class DirectoryQuerySchema(Schema):
    """A search of the player directory."""

    q = fields.String(load_default="", validate=validate.Length(max=MAX_HANDLE), metadata={
        "description": "The beginning of the handle, in any case; empty for everyone."})
    after = fields.String(validate=validate.Length(max=MAX_HANDLE), metadata={
        "description": "The next page: the players after this handle (the previous page's next)."})
    limit = fields.Integer(load_default=DIRECTORY_PAGE_SIZE,
                           validate=validate.Range(min=1, max=DIRECTORY_PAGE_SIZE))


class NoteSchema(Schema):
    """Your private note on a game: nobody else can read it, by any way."""

    note = fields.String(required=True, validate=validate.Length(max=MAX_NOTE), metadata={
        "description": "The note; empty deletes it."})
class BotSchema(Schema):
    """What a computer player plays."""

    games = fields.List(fields.String(), required=True, metadata={"description": "The games it plays."})
    strength = fields.String(required=True, metadata={"description": "easy, medium or hard."})


class PlayerSchema(Schema):
    """A player: ratings per game and record."""

    handle = fields.String(required=True)
    bot = fields.Nested(BotSchema, allow_none=True, metadata={
        "description": "For a computer player (marked BOT), what it plays; null for a person."})
    since = UtcDateTime(required=True)
    on_vacation = fields.Boolean(required=True)
    ratings = fields.List(fields.Nested(RatingSchema), required=True)
    record = fields.List(fields.Nested(GameRecordSchema), required=True)


class BotListSchema(Schema):
    """The computer players, by handle."""

    bots = fields.List(fields.Nested(lambda: BotEntrySchema()), required=True)


class BotEntrySchema(BotSchema):
    """A computer player: its handle, games and strength."""

    handle = fields.String(required=True)


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
    min_rating = whole_number(allow_none=True, load_default=None, validate=validate.Range(min=0, max=4000),
                                metadata={"description": "Open seats only for players rated at least this "
                                                         "in the game."})
    max_rating = whole_number(allow_none=True, load_default=None, validate=validate.Range(min=0, max=4000),
                                metadata={"description": "Open seats only for players rated at most this."})


class MoveSchema(Schema):
    """A move, in the game's notation."""

    move = fields.String(required=True, validate=validate.Length(min=1, max=MAX_MOVE))
    expect = whole_number(validate=validate.Range(min=1, max=2**31 - 1), metadata={
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


# Tournaments ---------------------------------------------------------------------------


class NewTournamentSchema(Schema):
    """A new tournament, taking entries until it starts."""

    name = fields.String(required=True, validate=validate.Length(min=1, max=80))
    game = fields.String(required=True, validate=validate.Length(min=1, max=32))
    format = fields.String(required=True,
                           validate=validate.OneOf(("round_robin", "swiss", "knockout", "ladder")))
    options = fields.Dict(keys=fields.String(validate=validate.Length(max=64)), values=fields.Raw(),
                          load_default=dict, validate=validate.Length(max=32))
    time = fields.String(validate=validate.Length(max=32), metadata={
        "description": 'A time control, as for a new game: "days:N" or "bank:I+A/M".'})
    weekend_pause = flag(False)
    rated = flag(True)
    min_players = whole_number(load_default=2, validate=validate.Range(min=2, max=1000))
    max_players = whole_number(load_default=16, validate=validate.Range(min=2, max=1000))
    start_at = UtcDateTime(allow_none=True, load_default=None, metadata={
        "description": "When it starts (UTC); null: as soon as max_players have joined."})
    min_rating = whole_number(allow_none=True, load_default=None, validate=validate.Range(min=0, max=4000))
    max_rating = whole_number(allow_none=True, load_default=None, validate=validate.Range(min=0, max=4000))
    double = Flag(load_default=None, allow_none=True,
                            metadata={"description": "A round-robin played twice, on both sides."})
    rounds = whole_number(load_default=None, allow_none=True, validate=validate.Range(min=1, max=20),
                            metadata={"description": "A Swiss's rounds."})
    bye_points = fields.Float(load_default=None, allow_none=True, validate=validate.OneOf((0, 0.5, 1)),
                              metadata={"description": "What a Swiss bye scores."})
    draw_rule = fields.String(load_default=None, allow_none=True, validate=validate.OneOf(("replay", "seed")),
                              metadata={"description": "A drawn knockout game: replayed, or won by the "
                                                       "better seed."})
    leaving = fields.String(load_default=None, allow_none=True, validate=validate.OneOf(("forfeit", "void")),
                            metadata={"description": "A leaver's games: forfeited, or struck out."})
    reach = whole_number(load_default=None, allow_none=True, validate=validate.Range(min=1, max=50),
                           metadata={"description": "A ladder: how far above a player may challenge."})
    accept_days = whole_number(load_default=None, allow_none=True, validate=validate.Range(min=1, max=30),
                                 metadata={"description": "A ladder: days to accept a challenge."})


class TournamentStandingSchema(Schema):
    """A player's line of the standings."""

    place = fields.Integer()
    player = fields.String()
    status = fields.String(metadata={"description": "active, withdrawn, removed or out (knocked out)."})
    points = fields.Float()
    played = fields.Integer()
    wins = fields.Integer()
    draws = fields.Integer()
    losses = fields.Integer()
    position = fields.Integer(allow_none=True, metadata={"description": "A ladder's place."})
    tie_breaks = fields.Dict(keys=fields.String(), values=fields.Float(), metadata={
        "description": "sb (Sonneborn-Berger) in a round-robin; buchholz and median in a Swiss."})


class TournamentPairingSchema(Schema):
    """One pairing: first moves first; second is null for a bye."""

    first = fields.String()
    second = fields.String(allow_none=True)
    game = fields.Integer(allow_none=True)
    result = fields.String(allow_none=True, metadata={"description": 'The first player\'s score: "1", "½", '
                                                                     '"0"; null while in play.'})
    how = fields.String(allow_none=True, metadata={"description": "bye, forfeit or lapsed, when not played."})
    void = fields.Boolean()


class TournamentRoundSchema(Schema):
    """A round's pairings (round 0: a ladder's challenges)."""

    round = fields.Integer()
    pairings = fields.List(fields.Nested(TournamentPairingSchema))


class TournamentSummarySchema(Schema):
    """A tournament's settings and how it stands."""

    id = fields.Integer()
    name = fields.String()
    game = fields.String()
    format = fields.String()
    status = fields.String(metadata={"description": "open, running, paused, finished or cancelled."})
    status_words = fields.String()
    round = fields.Integer()
    options = fields.Dict()
    time_control = fields.String()
    rated = fields.Boolean()
    organiser = fields.String()
    min_players = fields.Integer()
    max_players = fields.Integer()
    start_at = UtcDateTime(allow_none=True)
    min_rating = fields.Integer(allow_none=True)
    max_rating = fields.Integer(allow_none=True)
    settings = fields.Dict()
    players = fields.Integer()


class TournamentSchema(TournamentSummarySchema):
    """A tournament: its settings, standings and rounds."""

    standings = fields.List(fields.Nested(TournamentStandingSchema))
    rounds = fields.List(fields.Nested(TournamentRoundSchema))


class TournamentListSchema(Schema):
    """Tournaments, those taking entries or running first."""

    tournaments = fields.List(fields.Nested(TournamentSummarySchema))


class TournamentPlayerSchema(Schema):
    """A player named by handle (to remove, or to challenge on a ladder)."""

    player = fields.String(required=True, validate=validate.Length(min=1, max=MAX_HANDLE))
