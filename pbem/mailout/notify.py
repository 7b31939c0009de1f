"""The mails a game sends: move requests, move notices, challenges, draw offers, results.

Each function is called inside the move path's transaction and only writes outbox rows; the words are
in ``templates/mail/`` (a ``.txt`` template per mail, and an ``.html`` one where the mail has more than
text to show), composed by :func:`pbem.mailout.compose.compose`.  Every mail to a player carries a
Reply-To of ``play+TOKEN@<mail domain>`` naming the game, the seat and the player, so that answering the
mail is how one plays.  A player who chose the daily digest gets no per-move request.
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape
from sqlalchemy import select

import games
from games.words import join_words
from pbem.core.extensions import db
from pbem.core.models import Challenge, Game, Move, Seat, User
from pbem.core.site import base_url
from pbem.game import clock, conditional, events, queries, ratings, results
from pbem.game.watching import watchers
from pbem.mailout import outbox, tokens
from pbem.mailout.compose import compose, kind_of

# Legal moves are listed in a move request only when there are this few; longer lists help nobody.
MAX_LISTED_MOVES = 30


def game_url(game: Game) -> str:
    """The absolute address of the game's page."""
    return f"{base_url()}/games/{game.id}"


def move_link(game: Game, seat: Seat, number: int, move: str | None = None) -> str:
    """A signed one-click link for ``seat``'s player: confirm ``move`` (or choose one) as move ``number``."""
    assert seat.user is not None
    return f"{base_url()}/m/{tokens.move_link_token(game.id, seat.number, seat.user, number, move)}"


def subject(game: Game, engine: games.Engine, what: str) -> str:
    """The subject of a mail about ``game``: ``[pbem] Cambio #12: what``."""
    return outbox.subject(f"{engine.title} #{game.id}: {what}")


def seat_names(game: Game, numbers: frozenset[int] | set[int]) -> str:
    """The players of these seats, in words ("alice", "alice and bob"; "nobody" for none)."""
    names = [results.handle_or_seat(game, n) for n in sorted(numbers)]
    if not names:
        return "nobody"
    return join_words(names, "and")


def position_basics(game: Game, engine: games.Engine, state: Any, seat: Seat | None) -> dict[str, Any]:
    """What every mail showing a game to one seat (or a watcher) shows of it: board, turn, legal moves and
    the link to play them.  An answer to a mail command shows this much (``mail/answer.txt``);
    :func:`position` adds what a move request shows besides."""
    number = seat.number if seat is not None else None
    movers = engine.to_move(state) if game.status == "active" else frozenset()
    mover = number if number is not None and number in movers else None
    legal = engine.moves(state, mover) if mover is not None else []
    move_number = queries.next_move_number(game, seat) if seat is not None else game.ply + 1
    return {
        "game": game,
        "engine": engine,
        "seat": seat,
        # A game no longer active may still have a mover in the engine's eyes (the server ended it).
        "board": engine.render_text(state, number, over=game.status != "active"),
        "to_move": mover is not None,
        "whose": seat_names(game, movers),
        "legal": legal if len(legal) <= MAX_LISTED_MOVES else None,
        "legal_count": len(legal),
        "move_number": move_number,
        "url": game_url(game),
        "link": move_link(game, seat, move_number)
        if mover is not None and seat is not None and seat.user is not None else None,
        "example": legal[0] if legal else None,
        # Whether the mail may offer "draw offer" among the answers: not where there are no draws.
        "draws": queries.draws_allowed(game),
        # Whether what the reader writes under a move reaches the others only at the game's end.
        "comments_held_back": queries.comments_held_back(game),
    }


def position(game: Game, engine: games.Engine, state: Any, seat: Seat | None) -> dict[str, Any]:
    """What a mail or answer shows of a game for one seat (or a watcher): board, turn, clock, legal moves.

    The keys are the template variables of ``mail/your_move.txt`` and the answers of the mail commands:
    :func:`position_basics`' and the clocks, the players, the last move, the turn's note and a link for
    each listed move.
    """
    shown = position_basics(game, engine, state, seat)
    number = seat.number if seat is not None else None
    links = Markup()
    if shown["link"] is not None:
        # One signed token serves every listed move: the move rides in the query, since the token
        # already binds game, seat, player and move number, and the engine judges the move anyway.
        href = escape(shown["link"])
        links = Markup("".join(f'\n<a href="{href}{_move_link_tail(m)}' for m in shown["legal"] or []))
    # Where moves stay hidden until the end, the player's own last move, never another's.
    last = queries.last_move_seen_by(game, number)
    note = engine.turn_note(state, number) if shown["to_move"] and number is not None else None
    shown.update({
        "time_left": clock.describe(clock.time_left(seat)) if seat is not None else None,
        "clocks": clocks(game, number, seat.user.time_zone if seat is not None and seat.user else None),
        "move_links": links,
        "side": results.side(game, number) if number is not None else None,
        "players": [(s.label, results.player_name(game, s.number) if s.user else "(open)")
                    for s in game.seats],
        "turn_note": None if note is not None and _said_in(note, shown["board"]) else note,
        "last": last,
        "last_by": name_for(game, last.seat, number) if last is not None else None,
    })
    return shown


def clocks(game: Game, reader: int | None, zone: str | None) -> list[tuple[str, str]]:
    """Every seat's clock as a mail to the player of seat ``reader`` shows it, in their time zone: the
    running ones and those at rest (a bank's balance), each named as the reader calls its player."""
    if game.status != "active":
        return []
    return [(name_for(game, s.number, reader), clock.status(s, zone)) for s in game.seats]


def name_for(game: Game, seat_number: int, reader: int | None) -> str:
    """How a mail to the player of seat ``reader`` (None: a watcher) names the player of
    ``seat_number``: "You" for the reader themself, else by handle."""
    return "You" if seat_number == reader else results.handle_or_seat(game, seat_number)


def played_as_read_by(game: Game, moves: list[Move], reader: int | None) -> list[tuple[str, Move]]:
    """The moves of a chain (a move and its conditional answers) with each player's name as the reader
    of the mail calls them."""
    return [(name_for(game, m.seat, reader), m) for m in moves]


def _said_in(note: str, board: str) -> bool:
    """Whether the text board says the turn note already: the boards of Cambio and Truchet word their
    phase under them, which the game page (with no text board) gives as the note, and a mail need not
    say twice."""
    return " ".join(note.rstrip(".").split()) in " ".join(board.split())


@functools.lru_cache(maxsize=4096)
def _move_link_tail(move: str) -> str:
    """The end of the HTML link to one listed move, after its signed link: the move's query and text.

    The links are written here rather than by a loop in ``mail/your_move.html``: Jinja's loop (five
    pieces and two escapes a move) was a third of rendering that part.  What follows the recipient's
    own link depends on the move alone, and the same moves (cells, mostly) come back position after
    position, so it is kept.
    """
    style = "font-family: monospace; margin-right: .6em;"
    return f'?move={escape(quote(move))}" style="{style}">{escape(move)}</a>'




def _reply_address(game: Game, user: User) -> str | None:
    """``play+TOKEN@…`` for ``user``'s seat in ``game``, or the seat they are challenged to."""
    seat = game.seat_of(user)
    if seat is not None:
        return tokens.reply_address(game.id, seat.number, user)
    challenge = db.session.scalar(
        select(Challenge).where(Challenge.game_id == game.id, Challenge.challenged_id == user.id)
        .order_by(Challenge.id.desc())
    )
    return tokens.reply_address(game.id, challenge.seat, user) if challenge is not None else None


def _mail(to: User, game: Game, what: str, template: str, kind: str, /, **context: Any) -> None:
    """One game mail to a player: text and HTML from ``template``, the reply token, the game's thread."""
    context.pop("game", None)
    engine = context.pop("engine", None) or games.get(game.engine)
    if "url" not in context:  # (A move request's position has it already.)
        context["url"] = game_url(game)
    context.setdefault("time_zone", to.time_zone)  # Times in the mail in the reader's zone.
    reply_to = _reply_address(game, to)
    outbox.enqueue(
        to,
        subject(game, engine, what),
        compose(template, html=True, game=game, engine=engine, reply_to=reply_to, **context),
        kind=kind,
        game=game,
        reply_to=reply_to,
    )


def request_move(game: Game, engine: games.Engine, state: Any, seat: Seat, **extra: Any) -> None:
    """Ask ``seat``'s player for their move in the position ``state``: the move request ("your move"),
    with ``extra`` for its template (a note, the moves just played).  Nothing for a digest player, whose
    daily digest lists the game instead."""
    user = seat.user
    if user is None or user.notify == "digest":
        return
    ctx = position(game, engine, state, seat)
    _mail(user, game, f"your move (move {ctx['move_number']})", "mail/your_move.txt", "your-move", **ctx,
          **extra)


def game_started(event: events.GameStarted) -> None:
    """Ask the first movers for their moves."""
    game, engine, state = event.game, event.engine, event.state
    movers = engine.to_move(state)
    for seat in game.seats:
        if seat.number in movers:
            request_move(game, engine, state, seat)


def move_played(event: events.MovePlayed) -> None:
    """After a move: seats that are newly to move get a request, the other players a notice.

    ``before`` is who was to move before it.  In a simultaneous game a player who is still solving
    gets no mail for their own moves, and nobody gets a notice of another player's moves.  ``notes``
    holds sentences for single players (by seat number), such as what became of their conditional moves.
    """
    game, engine, state, move, before, notes = (event.game, event.engine, event.state, event.move,
                                                event.before, event.notes)
    if game.status != "active":
        return  # game_over() has told everyone.
    notes = notes or {}
    after = engine.to_move(state)
    mover = results.handle_or_seat(game, move.seat)
    for seat in game.seats:
        if seat.user is None:
            continue
        mover_again = seat.number == move.seat and not engine.simultaneous
        if seat.number in after and (seat.number not in before or mover_again):
            request_move(game, engine, state, seat, note=notes.get(seat.number))
        elif seat.number != move.seat and not engine.simultaneous:
            ctx = position(game, engine, state, seat)
            _mail(seat.user, game, f"{mover} played {move.text}", "mail/move_notice.txt",
                  "move-notice", move=move, mover=mover, note=notes.get(seat.number), **ctx)
    if not engine.simultaneous:
        # Watchers follow each move; in a game where everyone solves the same deal at once, the moves
        # would give the solution away, so they only get the result.
        for user in watchers(game):
            ctx = position(game, engine, state, None)
            _mail(user, game, f"{mover} played {move.text}", "mail/move_notice.txt",
                  "move-notice", move=move, mover=mover, **ctx)


def moves_played(event: events.MovesPlayed) -> None:
    """After a move and the conditional answers it set off (two players who take turns): the player to
    move gets a request and the other player and the watchers a notice, each listing every move played.

    The player whose lines are still queued is reminded of them; nobody else ever hears of them."""
    game, engine, state, moves, notes = event.game, event.engine, event.state, event.moves, event.notes
    if game.status != "active":
        return  # game_over() has told everyone.
    after = engine.to_move(state)
    answers = " ".join(m.text for m in moves[1:])

    def what(reader: int | None) -> str:
        """The subject's words for the reader of seat ``reader`` (None: a watcher)."""
        first = "you" if reader == moves[0].seat else results.handle_or_seat(game, moves[0].seat)
        return f"{first} played {moves[0].text}, answered by {answers}"

    for seat in game.seats:
        if seat.user is None:
            continue
        note = list(notes.get(seat.number, []))
        if seat.conditionals:
            queued = "; ".join(conditional.describe(line) for line in seat.conditionals)
            note.append(f"Your conditional moves still queued: {queued}.")
        played = played_as_read_by(game, moves, seat.number)
        if seat.number in after:
            request_move(game, engine, state, seat, played=played, note=note)
        else:
            ctx = position(game, engine, state, seat)
            _mail(seat.user, game, what(seat.number), "mail/move_notice.txt", "move-notice", move=moves[-1],
                  mover=played[-1][0], played=played, note=note, **ctx)
    for user in watchers(game):
        ctx = position(game, engine, state, None)
        played = played_as_read_by(game, moves, None)
        _mail(user, game, what(None), "mail/move_notice.txt", "move-notice", move=moves[-1],
              mover=played[-1][0], played=played, **ctx)


def conditional_refused(event: events.ConditionalRefused) -> None:
    """A conditional answer the engine refused (its lines are dropped): its player is told why."""
    game, seat, expected, answer = event.game, event.seat, event.expected, event.answer
    if seat.user is None:
        return
    send(seat.user, game, f"your conditional move {answer} was not played", "mail/conditional_refused.txt",
         expected=expected, answer=answer, reason=event.reason,
         lines=[conditional.describe([expected, *line]) for line in event.lines])


def game_over(event: events.GameOver) -> None:
    """Everyone seated gets the result, and so does every watcher.  The subject says the result in a
    few words (the whole sentence is in the mail), so that it stays on one line.  ``last_word`` is the
    record entry that ended the game (a resignation, an accepted draw): its comment, if any, is passed
    on to everyone but its author."""
    game, outcome, last_word = event.game, event.outcome, event.last_word
    engine = games.get(game.engine)
    state = engine.load(game.state) if game.state else None
    # Drawn as over: when the server ended the game (a resignation, time, a draw agreed) the engine's
    # state still has someone to move, which the final board must not say.
    board = engine.render_text(state, None, over=True) if state is not None else ""
    last = queries.last_move(game)
    words = {"sentence": results.sentence(game), "ranking": results.ranking(game)}
    said_by = last_word.seat if last_word is not None and last_word.comment else None
    said = ({"said": last_word.comment, "said_by": results.handle_or_seat(game, last_word.seat)}
            if last_word is not None and last_word.comment else {})
    moved = ratings.changes(game)
    rated = [(results.handle_or_seat(game, n), ratings.change_words(c)) for n, c in sorted(moved.items())]
    for seat in game.seats:
        if seat.user is None:
            continue
        mine = ratings.change_words(moved[seat.number]) if seat.number in moved else None
        _mail(seat.user, game, f"game over, {results.headline(game, seat.number)}", "mail/game_over.txt",
              "game-over", engine=engine, outcome=outcome, result=results.seat_words(game, seat.number),
              board=board, last=last, rating_change=mine, **words,
              **(said if seat.number != said_by else {}))
    for user in watchers(game):
        _mail(user, game, f"game over, {results.headline(game)}", "mail/game_over.txt", "game-over",
              engine=engine, outcome=outcome, result=None, board=board, last=last, rating_changes=rated,
              **words, **said)


def send(to: User, game: Game, what: str, template: str, **context: Any) -> None:
    """A mail about ``game`` to one player: the subject says ``what``, the words come from ``template``
    (whose name, e.g. ``mail/draw_offered.txt``, also names the kind of mail).  Its Reply-To carries the
    player's token for the game, so it can be answered (``accept``, ``draw decline``…) by mail."""
    _mail(to, game, what, template, kind_of(template), **context)


def _tell_opponents(game: Game, actor: Seat, what: str, template: str, **context: Any) -> None:
    for seat in game.seats:
        if seat.user is not None and seat.number != actor.number:
            send(seat.user, game, what, template, actor=results.handle_or_seat(game, actor.number), **context)


def draw_offered(event: events.DrawOffered) -> None:
    """The opponents are asked to accept or decline, with the offerer's ``comment``; those whose
    conditional moves the offer cancelled (``cancelled``, seat numbers) are told so.  Only those whose
    move it is are told that moving declines the offer: the others cannot move now."""
    game, seat, cancelled, comment = event.game, event.seat, event.cancelled, event.comment
    actor = results.handle_or_seat(game, seat.number)
    movers = queries.seats_to_move(game)
    for other in game.seats:
        if other.user is not None and other.number != seat.number:
            send(other.user, game, f"{actor} offers a draw", "mail/draw_offered.txt", actor=actor,
                 lines_cancelled=other.number in cancelled, comment=comment, to_move=other.number in movers)


def draw_declined(event: events.DrawDeclined) -> None:
    """The offerer learns the answer, with the decliner's ``comment``."""
    game, seat = event.game, event.seat
    name = results.handle_or_seat(game, seat.number)
    _tell_opponents(game, seat, f"{name} declined the draw", "mail/draw_declined.txt", comment=event.comment)


def timed_out(event: events.TimedOut) -> None:
    """The others learn that a seat ran out of time while the game goes on, and so does its player."""
    game, seat = event.game, event.seat
    name = results.handle_or_seat(game, seat.number)
    _tell_opponents(game, seat, f"{name} ran out of time", "mail/timed_out.txt")
    if seat.user is not None:
        send(seat.user, game, "you ran out of time", "mail/you_timed_out.txt")


