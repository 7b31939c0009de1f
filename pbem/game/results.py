"""A game's result in words for people: one sentence, a ranking, and each player's own result.

Every page and mail that shows a result takes its words from here.  An engine's
:class:`games.Outcome` names the seats by their side ("Red wins by joining …", from ``engine.sides``)
or, in games without sides, as "seat 1"; the server's own outcomes (resignations, draws by agreement,
timeouts: :func:`resignation` and the others below, by which :mod:`pbem.game.play` ends a game and
:mod:`pbem.game.replay` replays its record) do the same.  This module puts the players' handles in:
"alice (Red) wins by joining all 12 red tiles into one group."  Results stored before the engines
wrote them this way (a handle, or "O (seat 1)") read correctly too.

The public functions:

- :func:`sentence`: the result as one sentence (mails, the game page);
- :func:`ranking`: the places of a game whose seats are ranked (Box Off and Easy Slider with
  several players): "1st=: alice, bob (cleared); 3rd: carol (10 tiles left)";
- :func:`summary`: what a list of games shows, the ranking where there is one, else the sentence;
- :func:`seat_result` and :func:`user_result`: one player's result in a word or two ("won", "drew",
  "2nd of 3"), :func:`seat_words` with how the seat finished ("won (cleared)"), :func:`headline` for
  a mail's subject ("you won", "alice wins");
- :func:`handle_or_seat`, :func:`player_name`, :func:`side`, :func:`reason_name`: how a seat is named;
- :func:`opponents`, :func:`players`: the people of a game, for lists;
- :func:`seat_states`: each seat of a game still gathering players, with who is challenged;
- :func:`resignation`, :func:`draw_agreed`, :func:`draw_on_time`, :func:`loss_on_time` (and
  :func:`scores_timeout`: whether the game deals with a timeout itself): the server's outcomes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy import select

import games
from games import DRAW, LOSS, WIN, Outcome
from games.words import join_words
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, User

# One player's result in a game of two, by the engine's per-seat result.
RESULT_WORDS = {WIN: "won", LOSS: "lost", DRAW: "drew"}

# A seat named by its number in a stored reason: "seat 2" (or "Seat 2" starting a sentence).
_SEAT_NUMBER = r"[Ss]eat (?P<number>\d+)"


def engine_of(game: Game) -> games.Engine | None:
    """The engine of ``game``, or None if it is no longer installed (its results still read)."""
    try:
        return games.get(game.engine)
    except games.UnknownGame:
        return None


def _sides(game: Game) -> tuple[str, ...]:
    """The sides the seats of ``game`` play, one per seat; none in games without sides, or whose engine is
    no longer installed."""
    engine = engine_of(game)
    return engine.sides if engine is not None else ()


def side(game: Game, number: int) -> str | None:
    """The side seat ``number`` plays ("Red", "X", "Dark"), in games whose seats have one."""
    sides = _sides(game)
    return sides[number] if 0 <= number < len(sides) else None


def reason_name(engine: games.Engine, number: int) -> str:
    """How an outcome's reason names seat ``number``: its side, or "seat N" in games without sides.

    :mod:`pbem.game.play` writes the server's outcomes with it, so that they read like the engines' own."""
    sides = engine.sides
    return sides[number] if 0 <= number < len(sides) else f"seat {number + 1}"


def handle_or_seat(game: Game, number: int) -> str:
    """The player at seat ``number`` by handle ("alice"), or the seat's label while nobody holds it
    ("seat 2"): how a page, a mail or a refusal names who moved or is to move."""
    seat = next((s for s in game.seats if s.number == number), None)
    return seat.user.handle if seat is not None and seat.user is not None else f"seat {number + 1}"


def marked_name(game: Game, number: int) -> str:
    """The player at seat ``number`` as :func:`handle_or_seat` names them, a computer player marked as
    lichess marks them: "BOT easybot"."""
    seat = next((s for s in game.seats if s.number == number), None)
    if seat is not None and seat.user is not None:
        return user_name(seat.user)
    return f"seat {number + 1}"


def user_name(user: User) -> str:
    """A player's handle, a computer player's marked "BOT easybot": how lists and rosters name them."""
    return f"BOT {user.handle}" if user.is_bot else user.handle


def player_name(game: Game, number: int) -> str:
    """Seat ``number`` named with its side, for results and rosters: "alice (Red)", "alice" where seats
    have no side, "seat 2 (Blue)" while nobody holds it; a computer player as "BOT easybot (Blue)"."""
    name, colour = marked_name(game, number), side(game, number)
    return f"{name} ({colour})" if colour else name


def outcome_of(game: Game) -> Outcome | None:
    """The stored outcome of a finished (or abandoned) game, else None."""
    return Outcome.from_dict(game.result) if game.result else None


def _with_names(game: Game, text: str) -> str:
    """``text`` with every seat named by side or number replaced by the player's name, in one pass (so
    that a handle which happens to be a side's name is never replaced again)."""
    sides = [s for s in _sides(game) if s]
    patterns = [_SEAT_NUMBER]
    if sides:
        # An older reason wrote "O (seat 1)"; the seat number goes, since the name says it.
        alternatives = "|".join(re.escape(s) for s in sides)
        patterns.insert(0, rf"\b(?P<side>{alternatives})\b(?: \([Ss]eat \d+\))?")

    def name(found: re.Match[str]) -> str:
        if found.groupdict().get("side"):
            return player_name(game, sides.index(found["side"]))
        number = int(found["number"]) - 1
        if not 0 <= number < game.players:
            return found[0]
        return player_name(game, number)

    return re.sub("|".join(f"(?:{p})" for p in patterns), name, text)


def _full_stop(text: str) -> str:
    """``text`` on one line with one full stop at its end (reasons were written with and without)."""
    text = " ".join(text.split()).rstrip(" .")
    if not text:
        return ""
    return text + "."


def sentence(game: Game) -> str:
    """The result as one sentence naming the players: "alice (O) wins with a full line on file b.",
    "Called off: bob declined the challenge."; empty while the game is in play or waiting."""
    if game.status == "abandoned" and game.state is None:
        return _full_stop("Called off" + (f": {_called_off_why(game)}" if _called_off_why(game) else ""))
    outcome = outcome_of(game)
    if outcome is None:
        return ""
    return reason_sentence(game, outcome)


def reason_sentence(game: Game, outcome: Outcome) -> str:
    """``outcome``'s reason as a sentence naming the players of ``game``: "alice (O) wins with a full
    line on file b." (a stored result, or one reached on the analysis board)."""
    text = _with_names(game, outcome.reason)
    return _full_stop(text[:1].upper() + text[1:] if _starts_with_word(game, outcome.reason) else text)


def _starts_with_word(game: Game, reason: str) -> bool:
    """Whether a reason begins with an ordinary word (to capitalise), not with a seat's name or a
    handle (older reasons named players by handle)."""
    first = reason.split(maxsplit=1)[0] if reason.split() else ""
    handles = {s.user.handle for s in game.seats if s.user is not None}
    return first[:1].islower() and first not in handles and re.match(_SEAT_NUMBER, reason) is None


def _called_off_why(game: Game) -> str:
    answered = db.session.scalars(
        select(Challenge).where(Challenge.game_id == game.id, Challenge.status.in_(("declined", "withdrawn")))
        .order_by(Challenge.id)
    ).all()
    declined = [c.challenged.handle for c in answered if c.status == "declined"]
    if declined:
        return f"{join_words(declined, 'and')} declined the challenge"
    if any(c.status == "withdrawn" for c in answered):
        creator = game.created_by.handle if game.created_by is not None else "its creator"
        return f"{creator} withdrew it"
    return ""


def ordinal(place: int) -> str:
    """1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, … 21st."""
    if 10 <= place % 100 <= 20:
        return f"{place}th"
    return f"{place}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(place % 10, 'th')}"


def _places(outcome: Outcome) -> list[int]:
    """Each seat's place as in a race: 1 + the number of seats ranked better (ties share it)."""
    ranks = outcome.ranks or tuple({WIN: 1, DRAW: 1, LOSS: 2}[r] for r in outcome.results)
    return [1 + sum(1 for other in ranks if other < mine) for mine in ranks]


def _ranked(game: Game, outcome: Outcome | None) -> bool:
    """Whether the game's seats are ranked by the engine (scores), as in Box Off and Easy Slider."""
    return outcome is not None and outcome.scores is not None and len(outcome.results) > 1


def ranking(game: Game) -> str | None:
    """The places of a game whose seats are ranked by a score, best first, seats sharing a place named
    together: "1st=: alice, bob (cleared); 3rd: carol (10 tiles left)"; None for other games."""
    outcome = outcome_of(game)
    if not _ranked(game, outcome):
        return None
    assert outcome is not None
    places = _places(outcome)
    parts = []
    for place in sorted(set(places)):
        seats = [n for n, p in enumerate(places) if p == place]
        shared = "=" if len(seats) > 1 else ""
        notes = [outcome.notes[n] if outcome.notes and n < len(outcome.notes) else "" for n in seats]
        names = [player_name(game, n) for n in seats]
        if len(set(notes)) == 1:
            who = ", ".join(names) + (f" ({notes[0]})" if notes[0] else "")
        else:
            who = ", ".join(f"{name} ({note})" if note else name
                            for name, note in zip(names, notes, strict=True))
        parts.append(f"{ordinal(place)}{shared}: {who}")
    return "; ".join(parts)


def summary(game: Game) -> str:
    """What a list of games says of how one ended: the ranking where seats are ranked, else the
    sentence; empty while it is in play."""
    return ranking(game) or sentence(game)


def seat_result(game: Game, number: int) -> str:
    """Seat ``number``'s own result in a word or two: "won", "lost", "drew" in a game of two; its place
    with more players ("1st of 3", "2nd= of 4"); how it finished alone ("cleared", "abandoned");
    "called off" for a game that never started; empty while the game is in play."""
    if game.status == "abandoned" and game.state is None:
        return "called off"
    outcome = outcome_of(game)
    if outcome is None or not 0 <= number < len(outcome.results):
        return ""
    if is_aborted(game):
        return "aborted"
    seats = len(outcome.results)
    if seats == 1:
        if outcome.notes:
            return outcome.notes[0]
        return "abandoned" if outcome.results[0] != WIN else "won"
    if seats == 2:
        return RESULT_WORDS[outcome.results[number]]
    places = _places(outcome)
    shared = "=" if places.count(places[number]) > 1 else ""
    return f"{ordinal(places[number])}{shared} of {seats}"


def seat_words(game: Game, number: int) -> str:
    """Seat ``number``'s result with how it finished, for the game page: "won (cleared)", "1st= of 3
    (12 points)"; just :func:`seat_result` where the game gives no more."""
    words = seat_result(game, number)
    outcome = outcome_of(game)
    if not words or outcome is None or not outcome.notes or len(outcome.results) == 1:
        return words
    note = outcome.notes[number] if number < len(outcome.notes) else ""
    return f"{words} ({note})" if note else words


def headline(game: Game, number: int | None = None) -> str:
    """The result in a few words, for a mail's subject: for seat ``number``'s player "you won", "you
    lost", "a draw", "you are 2nd of 3", "cleared"; for anyone else "alice wins", "a draw", "alice and
    bob share first place"."""
    outcome = outcome_of(game)
    if outcome is None:
        return "called off" if game.status == "abandoned" else "in play"
    if is_aborted(game):
        return "aborted, not rated"
    seats = len(outcome.results)
    if number is not None and 0 <= number < seats:
        words = seat_result(game, number)
        if seats == 1:
            return words
        if seats == 2:
            return "a draw" if words == "drew" else f"you {words}"
        return f"you are {words}"
    if seats == 1:
        return f"{player_name(game, 0)}: {seat_result(game, 0)}"
    if all(r == DRAW for r in outcome.results):
        return "a draw"
    first = [handle_or_seat(game, n) for n, p in enumerate(_places(outcome)) if p == 1]
    if len(first) == 1:
        return f"{first[0]} wins"
    return f"{join_words(first, 'and')} share first place"


def user_result(game: Game, user: User) -> str:
    """``user``'s own result in ``game`` (their first seat's), as :func:`seat_result`; empty if they
    hold no seat or the game is in play."""
    seat = game.seat_of(user)
    return seat_result(game, seat.number) if seat is not None else ""


def players(game: Game, with_side: bool = False) -> str:
    """The game's players in words: "alice vs bob" for two, "alice, bob and carol" for more; an open
    seat is "an open seat"."""
    name = player_name if with_side else marked_name
    names = [name(game, s.number) if s.user is not None else "an open seat" for s in game.seats]
    if len(names) == 2:
        return " vs ".join(names)
    return join_words(names, "and")


def opponents(game: Game, user: User) -> str:
    """The other players of ``user``'s game, in words ("bob", "bob and carol"); "alone" in a game of one.

    In a game that has not begun (or was called off) a seat shows who was challenged to it: "bob
    (challenged)", "bob (declined)"."""
    # Only an empty seat of a game that never began is named by its challenge (read only then).
    empty = game.state is None and any(s.user is None for s in game.seats)
    states = dict(seat_states(game)) if empty else {}
    others = [
        user_name(s.user) if s.user is not None else states.get(s.number, "an open seat")
        for s in game.seats if s.user is None or s.user.id != user.id
    ]
    return join_words(others, "and") if others else "alone"


def seat_states(game: Game, challenges: Iterable[Challenge] | None = None) -> list[tuple[int, str]]:
    """Each seat of ``game`` with who holds it, for a game still gathering players (or called off):
    "alice", "bob (challenged)", "bob (declined)", "carol (challenge withdrawn)", "open seat".

    ``challenges`` are the game's challenges when the caller has read them already."""
    if challenges is None:
        challenges = db.session.scalars(select(Challenge).where(Challenge.game_id == game.id))
    latest = {c.seat: c for c in sorted(challenges, key=lambda c: c.id)}
    words = {"pending": "challenged", "declined": "declined", "withdrawn": "challenge withdrawn"}
    states = []
    for seat in game.seats:
        challenge = latest.get(seat.number)
        if seat.user is not None:
            states.append((seat.number, user_name(seat.user)))
        elif challenge is not None and challenge.status in words:
            states.append((seat.number, f"{user_name(challenge.challenged)} ({words[challenge.status]})"))
        else:
            states.append((seat.number, "open seat"))
    return states


# The server's outcomes: how its actions end a game.  The move path (pbem.play) ends games by them, and a
# replay of the record (pbem.replay) judges each action by them as the move path did when it was taken.

# The record's text of the draw accepted for a seat whose time ran out with its opponent's offer pending.
DRAW_ON_TIME = "draw accept (timeout)"


def resignation(engine: games.Engine, players: int, seat: int) -> Outcome:
    """How ``seat``'s resignation ends a game of ``players``: the opponent wins, or with more players the
    resigner loses and the others share first place; a solitaire game is abandoned."""
    name = reason_name(engine, seat)
    others = [reason_name(engine, n) for n in range(players) if n != seat]
    if players == 1:
        return Outcome(("loss",), f"{name} abandoned the game")
    if players == 2:
        return Outcome.win(1 - seat, 2, f"{others[0]} wins: {name} resigned")
    outcome_results = tuple("loss" if n == seat else "draw" for n in range(players))
    return Outcome(outcome_results, f"{name} resigned; {join_words(others, 'and')} share first place")


def draw_agreed(players: int) -> Outcome:
    """A draw offered and accepted."""
    return Outcome.draw(players, "Drawn by agreement")


def draw_on_time(engine: games.Engine, players: int, seat: int) -> Outcome:
    """``seat``'s time ran out with its opponent's draw offer pending: the offer is accepted for it."""
    name = reason_name(engine, seat)
    return Outcome.draw(players, f"Drawn: {name} ran out of time with a draw offer pending")


def scores_timeout(engine: games.Engine, players: int) -> bool:
    """Whether the game itself deals with a seat whose time ran out (``engine.time_out``: a game of more
    than one player whose engine scores absent players), rather than the server ending the game."""
    return engine.scores_absent_players and players > 1


# The ending (``Game.ending``) of a game aborted because a player never moved: not one of the archive's
# kinds, since an aborted game is not filed there (it is left "abandoned", like a solitaire game).
ABORTED = "aborted"


def aborts_on_time(engine: games.Engine, players: int, moved: bool) -> bool:
    """Whether a seat whose time ran out aborts the game rather than losing it: in a game of two players
    taking turns, a seat that never moved (as lichess aborts a game one side never began).  An aborted
    game is unrated and counts for nobody."""
    return players == 2 and not moved and not scores_timeout(engine, players)


def aborted_on_time(engine: games.Engine, players: int, seat: int) -> Outcome:
    """How the server ends a game of two when ``seat``'s time ran out before its first move."""
    name = reason_name(engine, seat)
    return Outcome(tuple(DRAW for _ in range(players)),
                   f"Aborted: {name} never moved before their time ran out, so the game is not rated")


def is_aborted(game: Game) -> bool:
    """Whether the game was aborted (see :func:`aborts_on_time`)."""
    return game.ending == ABORTED


def loss_on_time(engine: games.Engine, players: int, seat: int) -> Outcome:
    """How the server ends a game when ``seat``'s time ran out and the game does not deal with it itself:
    a solitaire game is abandoned, otherwise the seat loses and the others win."""
    name = reason_name(engine, seat)
    if players == 1:
        return Outcome(("loss",), f"{name} ran out of time; the game is abandoned")
    others = join_words([reason_name(engine, n) for n in range(players) if n != seat], "and")
    outcome_results = tuple("loss" if n == seat else "win" for n in range(players))
    win = "wins" if players == 2 else "win"
    return Outcome(outcome_results, f"{others} {win} on time: {name} did not move in time")
