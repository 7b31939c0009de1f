"""Conditional moves: lines a player queues while the opponent is to move, played the moment they apply.

A line alternates between the opponent's moves and the player's answers, starting with the opponent's
next move: ``if c4 then d4 then e3 then f5`` answers c4 with d4 and then e3 with f5.  A player's lines
are kept on their seat (``Seat.conditionals``); lines sharing a beginning form a tree, in which each of
the opponent's moves has one answer.  Every move of a new line is checked on the engine when it is
queued: the opponent's first move must be legal now, and each later move legal in the position the line
reaches.

Lines are only for two-player games where the players take turns, and only the waiting player has any:
when the opponent moves, :mod:`pbem.game.play` asks :func:`reply_to` in the same transaction, plays the
answer through the move path (``via="conditional"``) and shortens the lines with :func:`answered`; lines
that did not expect the move are dropped.  A draw offer cancels every line of the game, and the game's
end forgets them.  Nothing but the opponent's move ever plays a line, and only the owner ever sees it.

This module is the part of them inside the move path, below it: it never takes a game's lock itself.
Queueing, deleting and previewing lines are entry points above the move path (:mod:`pbem.game.queueing`).
"""

from __future__ import annotations

from typing import Any

import games
from games import IllegalMove
from games.words import quoted
from pbem.core.errors import PlayError
from pbem.core.models import Game, Move, Seat, User
from pbem.game import results

# Bounds on what one player may queue in one game: every line is checked move by move on the engine
# when it is queued, and every move of the opponent is compared with the lines' first moves.
MAX_LINES = 20
MAX_MOVES = 12
MAX_MOVE_TEXT = 60
MAX_LINE_TEXT = 1000

# Each conditional answer uses up two moves of its player's lines, and no line is longer than
# MAX_MOVES, so the two players together can answer at most MAX_MOVES times in a row: the chain of
# answers in one transaction ends by itself.  The move path still stops there, should stored lines
# ever say otherwise.
MAX_ANSWERS = MAX_MOVES

Line = list[str]


# Words ---------------------------------------------------------------------------------------------------


def describe(line: Line) -> str:
    """A line as the player writes it: ``if c4 then d4 then e3 then f5``."""
    return "if " + " then ".join(line)


# What the offerer of a draw is told when the offer cancelled their own conditional lines (every line of
# the game goes: an answer to a draw offer should be thought over), on the page and in the mail answer.
OWN_LINES_CANCELLED = ("Your conditional moves in this game are cancelled by the offer, as every line is; "
                       "queue them again once it is answered, if you still want them.")


def answers_words(game: Game, answers: list[Move], reader: int) -> str:
    """What the player of seat ``reader`` is told of the conditional answers their move set off, on
    every way they moved (the page, a move link, a mail): "Answered at once by conditional moves: bob
    c4, then you d5." (empty for none)."""
    if not answers:
        return ""
    said = [f"{'you' if m.seat == reader else results.handle_or_seat(game, m.seat)} {m.text}"
            for m in answers]
    return f"Answered at once by conditional move{'s' if len(said) > 1 else ''}: {', then '.join(said)}."


def parse_line(text: str, partial: bool = False) -> Line:
    """The moves of a typed line, ``if c4 then d4 [then e3 then f5]`` (the ``if`` may be left out).

    Reads the words once, so any length is read in linear time; raises PlayError saying what is wrong.
    A ``partial`` line, one still being built, may be empty or end with the opponent's move.
    """
    if len(text) > MAX_LINE_TEXT:
        raise PlayError(f"That conditional line is too long: at most {MAX_LINE_TEXT} characters.",
                        "conditional")
    words = text.split()
    if words and words[0].lower() == "if":
        words = words[1:]
    moves: Line = []
    current: list[str] = []
    if partial and not words:
        return []
    for word in [*words, "then"]:
        if word.lower() != "then":
            current.append(word)
            continue
        if not current:
            raise PlayError(
                f"{quoted(text.strip(), 100)} is not a conditional line: a move is missing. Write it like "
                "'if c4 then d4', or longer: 'if c4 then d4 then e3 then f5'.", "conditional"
            )
        moves.append(games.as_typed(" ".join(current)))
        current = []
    if not partial and (len(moves) < 2 or len(moves) % 2):
        raise PlayError(
            f"{quoted(text.strip(), 100)} does not end with your answer: a conditional line names your "
            "opponent's move, then yours, and so on, like 'if c4 then d4' or "
            "'if c4 then d4 then e3 then f5'.",
            "conditional",
        )
    if len(moves) > MAX_MOVES:
        raise PlayError(f"A conditional line may have at most {MAX_MOVES} moves; this one has {len(moves)}.",
                        "conditional")
    long = next((m for m in moves if len(m) > MAX_MOVE_TEXT), None)
    if long is not None:
        raise PlayError(f"{quoted(long, 40)} is too long for a move.", "conditional")
    return moves


# Who may queue lines ---------------------------------------------------------------------------------------


def allowed(game: Game, engine: games.Engine) -> bool:
    """Whether ``game`` takes conditional moves: two players who take turns."""
    return game.players == 2 and not engine.simultaneous


def opponent_of(game: Game, seat: Seat) -> Seat:
    """The other seat of a two-player game."""
    return next(s for s in game.seats if s.number != seat.number)


def owner_seat(game: Game, user: User, seat_number: int | None = None) -> Seat:
    """The user's seat in ``game`` (``seat_number`` picks among several), whose lines they manage; a
    PlayError when they do not play in it."""
    mine = [s for s in game.seats
            if s.user_id == user.id and (seat_number is None or s.number == seat_number)]
    if not mine:
        raise PlayError(f"You are not playing in game #{game.id}.", "not-seated")
    return mine[0]


def check_can_queue(game: Game, engine: games.Engine, seat: Seat, state: Any) -> None:
    """Refuse, with the reason, when ``seat`` cannot queue lines in ``game`` now."""
    if not allowed(game, engine):
        raise PlayError(
            f"{engine.title} #{game.id} takes no conditional moves: they are for games of two players who "
            "take turns.", "conditional"
        )
    if game.status != "active":
        raise PlayError(f"Game #{game.id} is not in play; no conditional moves can be queued.", "over")
    if seat.number in engine.to_move(state):
        raise PlayError(
            "It is your move: conditional moves answer your opponent's next move. Play your move first, or "
            "send it together with your 'if' lines.", "conditional"
        )
    if game.draw_offered_by is not None:
        who = "You have" if game.draw_offered_by == seat.number else "Your opponent has"
        raise PlayError(
            f"{who} offered a draw in game #{game.id}; conditional moves can be queued once it is answered.",
            "conditional",
        )


# Checking and keeping lines ------------------------------------------------------------------------------


def check(engine: games.Engine, state: Any, seat: Seat, opponent: Seat, line: Line) -> Any:
    """Replay ``line`` on the engine from ``state``: each move must be legal where the line reaches.

    Returns the position the line reaches."""
    for i, text in enumerate(line):
        mover = opponent if i % 2 == 0 else seat
        where = "now" if i == 0 else f"after {' '.join(line[:i])}"
        if mover.number not in engine.to_move(state):
            over = engine.outcome(state)
            why = f"the game is over ({over.reason})" if over is not None else "it is not their turn"
            raise PlayError(f"In '{describe(line)}': {where} {why}, so {text} cannot follow.", "conditional")
        try:
            state = engine.play(state, mover.number, text)
        except IllegalMove as exc:
            if mover is opponent:
                why = _opponents_refusal(engine, state, opponent.number, exc.message)
                whose = "your opponent's move"
            else:
                why, whose = exc.message, "your answer"
            raise PlayError(f"In '{describe(line)}', {whose} {text} is not legal {where}: {why}",
                            "conditional") from None
    return state


# The most moves of the opponent a refusal lists.
LISTED_OPPONENT_MOVES = 12


def _opponents_refusal(engine: games.Engine, state: Any, opponent: int, message: str) -> str:
    """Why a move of the opponent's is refused, for the player writing the line: the engine speaks to the
    mover ("…; you can slide a5 or b6"), and those moves are not the writer's to play, so its advice is
    replaced by the moves the opponent has there."""
    reason = message
    for advice in ("; you can ", ". You can ", " You can "):
        reason = reason.split(advice, 1)[0]
    legal = engine.moves(state, opponent)
    listed = ", ".join(legal[:LISTED_OPPONENT_MOVES]) + (" …" if len(legal) > LISTED_OPPONENT_MOVES else "")
    return f"{reason.rstrip('.')}. Your opponent's moves there: {listed}." if legal else reason


def merged(existing: list[Line], new: list[Line]) -> list[Line]:
    """``existing`` with the ``new`` lines added as a tree: a line that begins another is kept once, and
    two answers to the same move of the opponent are refused."""
    lines = [list(line) for line in existing]
    for line in new:
        for other in lines:
            for j in range(1, min(len(line), len(other)), 2):
                if line[:j] == other[:j] and line[j] != other[j]:
                    raise PlayError(
                        f"'{describe(line)}' answers {line[j - 1]} with {line[j]}, but your line "
                        f"'{describe(other)}' answers it with {other[j]}. Delete that line first to change "
                        "your answer.", "conditional"
                    )
        if any(other[: len(line)] == line for other in lines):
            continue  # Already queued, or the beginning of a longer line.
        lines = [other for other in lines if line[: len(other)] != other]
        lines.append(line)
    if len(lines) > MAX_LINES:
        raise PlayError(f"At most {MAX_LINES} conditional lines may be queued in a game.", "conditional")
    return lines


def add_lines(game: Game, engine: games.Engine, state: Any, seat: Seat, texts: list[str]) -> list[Line]:
    """Check the typed lines for ``seat`` in ``state`` and add them to its lines (the caller holds the
    game's lock).  Returns the lines added, as stored."""
    if len(texts) > MAX_LINES:
        raise PlayError(f"At most {MAX_LINES} conditional lines may be queued in a game.", "conditional")
    check_can_queue(game, engine, seat, state)
    opponent = opponent_of(game, seat)
    new = [parse_line(text) for text in texts]
    for line in new:
        check(engine, state, seat, opponent, line)
    seat.conditionals = merged(seat.conditionals or [], new) or None
    return new


def lines_of(game: Game, user: User, seat: int | None = None) -> list[Line]:
    """The lines ``user`` has queued in ``game`` (for showing to that user only)."""
    owner = next((s for s in game.seats if s.user_id == user.id and (seat is None or s.number == seat)), None)
    return list(owner.conditionals or []) if owner is not None else []


# In the move path (the caller holds the game's lock) -----------------------------------------------------


def reply_to(game: Game, engine: games.Engine, before: Any, after: Any, mover: Seat, played: str,
             notes: dict[int, list[str]]) -> tuple[Seat, str] | None:
    """After ``mover`` played ``played`` (from ``before`` to ``after``): the waiting player's answer, if
    one of their lines expected the move.  Their lines are cut down to those that did, each now starting
    with the answer; the others are dropped, and ``notes`` gets a sentence for that player naming them."""
    if not allowed(game, engine):
        return None
    owner = opponent_of(game, mover)
    lines = owner.conditionals or []
    if not lines:
        return None
    if game.status != "active" or owner.number not in engine.to_move(after):
        owner.conditionals = None
        return None
    same = _same_move_test(engine, before, mover.number, played, after)
    expected = [same(line[0]) for line in lines]  # Each line judged once (it may replay a move).
    kept = [line[1:] for line, hit in zip(lines, expected, strict=True) if hit]
    dropped = "; ".join(describe(line) for line, hit in zip(lines, expected, strict=True) if not hit)
    owner.conditionals = kept or None
    # The player hears of every line dropped, whether or not another one answered the move.
    if not kept:
        notes.setdefault(owner.number, []).append(
            f"Your conditional moves did not expect {played}, so they are dropped: {dropped}."
        )
        return None
    if dropped:
        notes.setdefault(owner.number, []).append(
            f"Your conditional moves that did not expect {played} are dropped: {dropped}."
        )
    return owner, kept[0][0]


def answered(seat: Seat, answer: str) -> None:
    """``seat``'s conditional answer was played: its lines go on from the opponent's next move."""
    lines = seat.conditionals or []
    seat.conditionals = [line[1:] for line in lines if line[0] == answer and len(line) > 1] or None


def broken(seat: Seat) -> list[Line]:
    """``seat``'s answer could not be played: drop the lines that gave it; returns them."""
    lines = list(seat.conditionals or [])
    seat.conditionals = None
    return lines


def cancel_all(game: Game) -> set[int]:
    """Forget every line of ``game`` (a draw offer, the game's end); returns the seats that had some."""
    had = set()
    for seat in game.seats:
        if seat.conditionals:
            had.add(seat.number)
            seat.conditionals = None
    return had


def _same_move_test(engine: games.Engine, before: Any, seat: int, played: str, after: Any) -> Any:
    """A test of whether a line's move is the move just played: the same words, or the same position
    reached (so ``C4`` or ``^c3d4<ws`` match ``c4`` and ``^c3 d4<ws``)."""
    target = engine.dump(after)
    seen: dict[str, bool] = {played: True}

    def same(text: str) -> bool:
        if text not in seen:
            try:
                seen[text] = engine.dump(engine.play(before, seat, text)) == target
            except IllegalMove:
                seen[text] = False
        return seen[text]

    return same

