"""What the game page shows a given viewer: boards, seats and clocks, the record, the actions open to
them.  Read-only: every change goes through :mod:`pbem.game.play` or :mod:`pbem.lobby.challenges`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup
from sqlalchemy import select
from sqlalchemy.orm import joinedload, selectinload

import games
from games.words import join_words
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, Move, Seat, User
from pbem.game import analysis, boards, clock, conditional, queries, ratings, results, watching
from pbem.game import replay as replay_service

# The most legal moves the game page lists (a disclosure under the move form, readable without script);
# past this it gives their number only, so that a position of many moves does not swell the page.
LISTED_MOVES = 100

# How the record names the server's actions.
ACTION_WORDS = {
    "resign": "resigned",
    "draw-offer": "offered a draw",
    "draw-accept": "accepted the draw",
    "draw-decline": "declined the draw",
    "timeout": "ran out of time",
}


# What :func:`build` reads of a game, in two statements whatever the number of seats and moves: the game
# joined with its seats and their players, then its record (read one by one when first touched, they
# would cost a statement per player).  The game page and the API's game load a game with these.
PAGE_LOADS = (joinedload(Game.seats).joinedload(Seat.user), selectinload(Game.moves))


def visible(game: Game, user: User | None) -> bool:
    """Whether ``user`` may see ``game``: public games to everyone, private ones to their players and
    the players challenged to them."""
    if game.public:
        return True
    if user is None or not user.is_authenticated:
        return False
    if game.seat_of(user) is not None or game.created_by_id == user.id:
        return True
    return db.session.scalar(
        select(Challenge.id).where(Challenge.game_id == game.id, Challenge.challenged_id == user.id)
    ) is not None


@dataclass
class SeatView:
    """One seat as the page shows it."""

    number: int
    user: User | None
    to_move: bool
    clock: str
    challenged: User | None = None
    waiting_words: str | None = None
    result: str | None = None
    group_value: int | None = None
    side: str | None = None
    # How the finished game moved the player's rating: "1500 → 1532 (+32)".
    rating_change: str | None = None

    @property
    def label(self) -> str:
        """The seat as people number it."""
        return f"Seat {self.number + 1}"


@dataclass
class Board:
    """One SVG board and whose it is."""

    caption: str
    svg: Markup
    clickable: bool = False


@dataclass
class GameView:
    """Everything the game page and its live fragment present."""

    game: Game
    engine: games.Engine
    status: str
    seats: list[SeatView]
    boards: list[Board]
    # The record as the viewer may see it: each entry, its player's name, and its move number (see
    # :func:`pbem.game.replay.move_numbers`; an action carries the number of the move it follows).
    moves: list[tuple[Move, str, int]]
    viewer_seat: Seat | None = None
    my_turn: bool = False
    expect: int | None = None
    legal: list[str] = field(default_factory=list)
    # The legal moves the board's clicks spell otherwise than their notation, with that spelling.
    spellings: dict[str, str] = field(default_factory=dict)
    draw_offered_by: int | None = None
    can_offer_draw: bool = False
    can_answer_draw: bool = False
    can_resign: bool = False
    my_challenge: Challenge | None = None
    my_challenge_side: str | None = None
    can_withdraw: bool = False
    can_take_seat: bool = False
    can_watch: bool = False
    can_hint: bool = False
    turn_note: str | None = None
    watching: bool = False
    hidden_moves: int = 0
    # Whether the others see the viewer's moves and comments only when the game ends.
    comments_held_back: bool = False
    time_control: str = ""
    # The viewer's own conditional lines (None: the game takes none from them now), and whether they
    # may queue more now (only while the opponent is to move).
    conditionals: list[str] | None = None
    can_queue: bool = False
    opponent: str = ""
    # The replay: the position shown when the game is over or a past move is asked for (``?move=N``).
    replay: replay_service.Position | None = None
    replay_links: bool = False
    # Whether the analysis board is offered (see pbem.game.analysis: what the viewer may see).
    analysable: bool = False

    @property
    def my_side(self) -> str | None:
        """The side the viewer plays (Cambio's X, Carreaux's Red), if the game has sides."""
        return results.side(self.game, self.viewer_seat.number) if self.viewer_seat is not None else None

    @property
    def legal_listed(self) -> list[str] | None:
        """The legal moves as the page lists them: all of them, or None when there are too many."""
        return self.legal if len(self.legal) <= LISTED_MOVES else None

    @property
    def waiting(self) -> bool:
        """Whether the game still waits for players."""
        return self.game.status == "waiting"


def build(game: Game, viewer: User | None, seat_number: int | None = None,
          replay_at: int | None = None) -> GameView:
    """The page of ``game`` for ``viewer`` (None for a visitor); ``seat_number`` picks among several
    seats of one player; ``replay_at`` asks for the position after that entry of the record."""
    engine = queries.engine_of(game)
    state = queries.state_of(game) if game.state is not None else None
    movers = engine.to_move(state) if state is not None and game.status == "active" else frozenset()
    reader = viewer if viewer is not None and viewer.is_authenticated else None
    mine = [s for s in game.seats if reader is not None and s.user_id == reader.id]
    viewer_seat = next((s for s in mine if s.number == seat_number), None) or next(
        (s for s in mine if s.number in movers), mine[0] if mine else None)
    pending = _pending_challenges(game) if game.status == "waiting" else {}
    # Who was asked to each empty seat, while the game gathers players or after it was called off.
    asked = dict(results.seat_states(game)) if game.state is None else {}
    # Carreaux shows each side's group value next to the players.
    group_values = engine.group_values(state) if state is not None else None

    moved = ratings.changes(game) if game.status == "finished" else {}
    seats = []
    for seat in game.seats:
        seats.append(SeatView(
            number=seat.number,
            user=seat.user,
            to_move=seat.number in movers,
            # Every seat's clock while the game goes on: the mover's running, the others' at rest.
            clock=clock.status(seat, clock.zone_of(viewer)) if game.status == "active" else "",
            challenged=pending[seat.number].challenged if seat.number in pending else None,
            waiting_words=asked.get(seat.number) if seat.user is None else None,
            result=results.seat_words(game, seat.number) or None if game.result else None,
            group_value=group_values[seat.number]
            if group_values and seat.number < len(group_values) else None,
            side=results.side(game, seat.number),
            rating_change=ratings.change_words(moved[seat.number]) if seat.number in moved else None,
        ))

    my_turn = viewer_seat is not None and viewer_seat.number in movers
    view = GameView(
        game=game,
        engine=engine,
        status=_status(game, movers),
        seats=seats,
        boards=[],
        moves=[],
        viewer_seat=viewer_seat,
        my_turn=my_turn,
        expect=queries.next_move_number(game, viewer_seat) if my_turn and viewer_seat else None,
        legal=legal_moves(engine, state, viewer_seat.number, game.state)
        if my_turn and viewer_seat and game.state is not None else [],
        draw_offered_by=game.draw_offered_by,
        time_control=clock.describe_time_control(game.time_control),
    )
    if view.legal and viewer_seat is not None and game.state is not None:
        view.spellings = click_spellings(engine, state, viewer_seat.number, game.state)
    view.moves, view.hidden_moves = _record(game, engine, viewer_seat)
    view.comments_held_back = queries.comments_held_back(game)
    view.replay_links = replay_service.replayable(game)
    view.analysable = analysis.available(game)
    if view.replay_links and (game.status != "active" or replay_at is not None):
        view.replay = replay_service.position(game, replay_at)
    else:
        # The page shows the replay's boards in place of these, so they are drawn only when shown.
        view.boards = _boards(game, engine, state, viewer_seat, my_turn)
    player_seat = viewer_seat if game.status == "active" else None  # The viewer's seat in a game going on.
    active_player = player_seat is not None
    view.can_resign = active_player
    # Box Off's hint, only when asked for: whether the board can still be cleared.
    view.can_hint = my_turn and engine.offers_clearable_hint
    view.turn_note = engine.turn_note(state, viewer_seat.number) if my_turn and viewer_seat else None
    view.can_offer_draw = active_player and queries.draws_allowed(game) and game.draw_offered_by is None
    view.can_answer_draw = (player_seat is not None and game.draw_offered_by is not None
                            and game.draw_offered_by != player_seat.number)
    if player_seat is not None and conditional.allowed(game, engine):
        # Only ever the viewer's own lines: the opponent's are never read here.
        view.conditionals = [conditional.describe(line) for line in player_seat.conditionals or []]
        view.can_queue = not my_turn and game.draw_offered_by is None
        view.opponent = results.handle_or_seat(game, 1 - player_seat.number)
    if view.replay is not None and game.status == "active":
        # A past position of a running game is only looked at: the live turn's prompts (whose move it
        # is, the lines to queue for the opponent's next move) belong to the game, not to it.
        view.conditionals, view.can_queue = None, False
    if reader is not None and game.status == "waiting":
        view.my_challenge = next((c for c in pending.values() if c.challenged_id == reader.id), None)
        view.my_challenge_side = results.side(game, view.my_challenge.seat) if view.my_challenge else None
        view.can_withdraw = game.created_by_id == reader.id
        open_seats = [s for s in game.seats if s.user_id is None and s.number not in pending]
        view.can_take_seat = bool(open_seats) and not mine and game.public
    # A player challenged to the game answers the challenge rather than watching it.
    if (reader is not None and not mine and view.my_challenge is None and game.public
            and game.status in ("waiting", "active")):
        view.watching = watching.is_watching(game, reader)
        view.can_watch = not view.watching
    return view


def _pending_challenges(game: Game) -> dict[int, Challenge]:
    rows = db.session.scalars(
        select(Challenge).where(Challenge.game_id == game.id, Challenge.status == "pending")
    )
    return {c.seat: c for c in rows}


def _status(game: Game, movers: frozenset[int]) -> str:
    if game.status == "waiting":
        return "Waiting for players."
    if game.status == "abandoned" and game.state is None:
        return results.sentence(game)
    if results.is_aborted(game):
        return results.sentence(game)  # "Aborted: … never moved …"
    if game.result:
        over = "Abandoned" if game.status == "abandoned" else "Game over"
        return f"{over}: {results.sentence(game)}"
    names = [results.handle_or_seat(game, n) for n in sorted(movers)]
    return f"{join_words(names, 'and')} to move." if names else "Nobody can move."


def _boards(game: Game, engine: games.Engine, state: Any, viewer_seat: Seat | None,
            my_turn: bool) -> list[Board]:
    """The viewer's own board; in a game where everyone solves the same deal at once, the other boards
    stay hidden until the end (they would give the solution away)."""
    if state is None:
        return []
    over = game.status != "active"
    if engine.simultaneous and over:
        return [Board(results.handle_or_seat(game, s.number),
                      board_svg(engine, state, s.number, stored=game.state, over=over))
                for s in game.seats]
    if viewer_seat is not None:
        caption = "Your board" if engine.simultaneous else ""
        svg = board_svg(engine, state, viewer_seat.number, targets=my_turn, stored=game.state, over=over)
        return [Board(caption, svg, clickable=my_turn)]
    return [Board("", board_svg(engine, state, None, stored=game.state, over=over))]


def position_key(stored: dict[str, Any]) -> str:
    """A stored state as one string, naming its position exactly (for what is kept per position)."""
    return json.dumps(stored, sort_keys=True, separators=(",", ":"))


def legal_moves(engine: games.Engine, state: Any, seat: int, stored: dict[str, Any]) -> list[str]:
    """``seat``'s legal moves in ``state``, which was loaded from the stored state ``stored``: listed by the
    engine once per position and process (see :mod:`pbem.game.boards`), since the page asks again and
    again."""
    return list(boards.kept(("moves", engine.slug, position_key(stored), seat),
                            lambda: tuple(engine.moves(state, seat))))


def click_spellings(engine: games.Engine, state: Any, seat: int, stored: dict[str, Any]) -> dict[str, str]:
    """``seat``'s legal moves in ``state`` that the board's clicks spell otherwise than their notation, with
    that spelling (see ``games.Engine.click_spellings``), kept per position as :func:`legal_moves` is."""
    def spell() -> dict[str, str]:
        return engine.click_spellings(state, seat, legal_moves(engine, state, seat, stored))

    return dict(boards.kept(("spellings", engine.slug, position_key(stored), seat), spell))


def board_svg(engine: games.Engine, state: Any, seat: int | None, targets: bool = False,
              stored: dict[str, Any] | None = None, over: bool = False) -> Markup:
    """The engine's SVG board seen from ``seat``, with move targets only when asked for: a board
    nobody can click on (a game over, a position replayed, the others' turn) shows none, whatever the
    engine would still allow in that state.

    ``stored`` is the game's stored state that ``state`` was loaded from: given, it names the position,
    and a board drawn once serves every page that shows the same position (drawing is most of a game
    page's work, and players, watchers and the page's own updates ask for the same position again and
    again).

    ``over`` says the game is no longer active: a game the server ended (a resignation, time, a draw
    agreed) leaves a state with a mover, which its board must not name.  A resignation leaves the stored
    state as it was, so ``over`` is part of what names the board kept."""
    if stored is None:
        return Markup(engine.render_svg(state, seat, targets=targets, over=over))
    return boards.drawn(("position", engine.slug, position_key(stored), seat, targets, over),
                        lambda: engine.render_svg(state, seat, targets=targets, over=over))


def _record(game: Game, engine: games.Engine,
            viewer_seat: Seat | None) -> tuple[list[tuple[Move, str, int]], int]:
    """The moves with their player's name and move number; in a simultaneous game still running, only
    the viewer's own moves are listed (with a count of the others'), numbered as the viewer's form
    numbers them: their own moves."""
    shown, hidden, own = [], 0, 0
    reader = viewer_seat.number if viewer_seat is not None else None
    own_count = queries.comments_held_back(game)
    for move, number in zip(game.moves, replay_service.move_numbers(game.moves), strict=True):
        if queries.hidden_from(game, move, reader):
            hidden += 1
            continue
        if own_count:
            own += move.kind == "move"
            number = own
        shown.append((move, results.handle_or_seat(game, move.seat), number))
    return shown, hidden


def action_words(move: Move) -> str:
    """A record entry in words: the move itself, or what the player did."""
    return move.text if move.kind == "move" else ACTION_WORDS.get(move.kind, move.text)
