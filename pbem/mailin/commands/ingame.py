"""The commands about one game: ``move``, ``show``, ``resign``, ``draw``, ``accept``, ``decline`` and
``conditionals``.  Each is done by the one move path (:mod:`pbem.game.play`), by
:mod:`pbem.game.queueing` for conditional lines, or by :mod:`pbem.lobby.challenges`."""

from __future__ import annotations

import games
from games.words import quoted
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.core.redaction import blank_key
from pbem.game import conditional, play, queries, queueing, results
from pbem.game.play import PlayError
from pbem.lobby import challenges
from pbem.mailin.commands.base import (
    Answer,
    ByKey,
    Command,
    CommandError,
    MailCommand,
    Request,
    Usage,
    game_number,
    split_expect,
)
from pbem.mailout import notify

DRAW_ANSWERS = ("offer", "accept", "decline")


class Move(ByKey):
    """A move, with the move number the player saw (``b3 #7``)."""

    name = "move"
    summary = "play a move"
    details = ("A move is written in the game's notation ('help GAME' describes it). '#N' after it plays it "
               "only if the game is still at move N (pbmserv's safety check): the same mail sent again, or "
               "a move made meanwhile on the web, plays nothing by mistake. The words under it go to the "
               "other players as a comment. In a reply the word 'move' may be left out; 'if' lines sent "
               "with the move are queued as conditional moves, starting from the answer to it.")
    in_reply = (
        Usage("b3", "play the move b3 (write moves as the game's help describes them; a full stop or an ! "
                    "or ? after the move is read as no part of it)"),
        Usage("b3 #7", "the same, but only if the game is still at move 7"),
        Usage("move b3 #7", "the same"),
    )
    by_subject = (Usage("{game} move 12 alice MAILKEY a3v#7",
                        "play a3v in game 12 (#7: only if it is still at move 7)"),)
    passes_comment = True
    reply_words = None
    words_after_key = 1

    def with_tail(self, command: Command, tail: list[str], form: str) -> Command:
        """The move and its ``#N``."""
        command.move, command.expect = split_expect(" ".join(tail))
        return command

    def run(self, request: Request) -> Answer:
        """Play the move, and say what came of it."""
        command, user, game = request.command, request.player(), request.the_game()
        try:
            played = play.submit(game.id, user, command.move, request.via, expect=command.expect,
                                 comment=request.comment or None, seat=request.seat_number,
                                 conditionals=command.conditionals)
        except PlayError as exc:
            raise _refused(exc, command, request) from None
        return _played(played, request)


def _refused(exc: PlayError, command: Command, request: Request) -> CommandError:
    """What a refused move is answered: why, in the player's words, with the position."""
    message, said = exc.message, quoted(command.move)
    if exc.code == "illegal":
        message = f"{said} was not played: {exc.message}"
    elif exc.code == "conditional":
        message = f"{said} was not played, because of your 'if' lines: {exc.message}"
    elif exc.code == "not-your-turn" and command.conditionals:
        message += (f" Nothing was queued either: {said} was read as a move. Send the "
                    "'if' lines alone to queue them.")
    elif exc.code == "stale" and not isinstance(exc, play.AlreadyPlayed):
        message = f"{said} was not played. {exc.message}"
    return CommandError(message, request.game, request.seat)


def comment_goes(game: Game) -> str:
    """Where a move's comment goes, in the words of the answer to the move: to the others at once, to
    them only at the end where moves stay hidden till then, or only into the record in a game of one."""
    if game.players == 1:
        return "is kept in the game's record"
    if queries.comments_held_back(game):
        return ("goes to the other players when the game ends: until then your moves and comments "
                "stay hidden from them")
    return "goes to the other players"


def _played(played: play.Played, request: Request) -> Answer:
    """The answer to a move played: the move as the record writes it, its number, the comment, what
    conditional moves answered it, the player's conditional lines still queued, and the result if it ended
    the game.  (All read from what submit returned, not read again: over plain rows, from those.)"""
    user = request.player()
    game, seat = played.as_left()
    engine = games.get(game.engine)
    # The move's own number, not the game's next: conditional answers may have followed it at once.
    done = f"Your move {played.text} (move {played.number}) in {engine.title} #{game.id} is played."
    done += request.passed_on(comment_goes(game))
    answered = conditional.answers_words(game, list(played.answers), seat.number)
    if answered:
        done += " " + answered
    queued = conditional.lines_of(game, user, seat.number)
    if queued:
        done += f" Your conditional moves queued: {'; '.join(map(conditional.describe, queued))}."
    if game.status != "active":
        return Answer(f"{done} The game is over. {results.sentence(game)}", game, seat, state=played.state)
    return Answer(done, game, seat, state=played.state)


class Show(MailCommand):
    """The position now (of a public game, or, with the player's key, of their private one)."""

    name = "show"
    summary = "the position of a game now"
    details = ("Shows the board, whose move it is, the clocks, and the legal moves when they are few. By "
               "subject it shows a public game to anyone; a private game only to its players, with their "
               "handle and mail key.")
    in_reply = (Usage("show", "the position now"),)
    by_subject = (
        Usage("{game} show 12", "the position of game 12 (public games)"),
        Usage("{game} show 12 alice MAILKEY", "the same, for your own private game"),
    )
    needs_key = False  # Only a private game's position needs it (see run_subject).

    def parse_subject(self, text: str, slug: str | None, words: list[str]) -> Command:
        """``GAME show NUMBER [HANDLE MAILKEY]``."""
        example = self.by_subject[0].written(slug or "GAME")
        if not words:
            raise CommandError(f"Name the game to show: '{example}'.")
        game_id = game_number(words[0], example)
        handle, key = (words[1], words[2]) if len(words) >= 3 else (None, None)
        said = blank_key(text, key) if key else text
        return Command(self.name, said, slug=slug, game_id=game_id, handle=handle, key=key)

    def run(self, request: Request) -> Answer:
        """Show the game, from the asker's seat when they have one."""
        game = request.the_game()
        engine = games.get(game.engine)
        if game.state is None:
            waiting = ", ".join(s.user.handle for s in game.seats if s.user is not None)
            return Answer(f"{engine.title} #{game.id} is waiting for players (seated so far: {waiting}).")
        status = {"active": "in play", "finished": "over", "abandoned": "abandoned"}.get(game.status,
                                                                                         game.status)
        words = f"{engine.title} #{game.id} is {status}."
        if game.result:
            words += f" {results.sentence(game)}"
        return Answer(words, game, request.seat)


class Resign(ByKey):
    """Giving up the game."""

    name = "resign"
    summary = "give up a game"
    details = "Ends the game as lost for you; the words under it go to the other players as a comment."
    in_reply = (Usage("resign", "give up the game"),)
    by_subject = (Usage("{game} resign 12 alice MAILKEY", "resign game 12"),)
    passes_comment = True

    def run(self, request: Request) -> Answer:
        """Resign, and say how the game ended."""
        game = request.the_game()
        play.resign(game.id, request.player(), request.via, request.comment or None)
        over = db.session.get_one(Game, game.id)
        return Answer(f"You resigned {games.get(game.engine).title} #{game.id}. {results.sentence(over)}"
                      f"{request.passed_on(comment_goes(over))}")


class Draw(ByKey):
    """Offering a draw, or answering an offer."""

    name = "draw"
    summary = "offer a draw, or accept or decline one"
    details = ("Draws are offered and answered in games of two players on one board, not in Box Off or "
               "Easy Slider. Play goes on until the offer is answered; making a move declines it, and an "
               "offer cancels your conditional moves. The words under it go to the other players.")
    in_reply = (Usage("draw offer", "offer a draw (draw accept / draw decline answer an offer); only in "
                                    "games of two players on one board, not in Box Off or Easy Slider"),)
    by_subject = (Usage("{game} draw 12 alice MAILKEY offer", "offer a draw (or accept / decline an offer)"),)
    passes_comment = True
    reply_words = 1
    words_after_key = 1

    def with_tail(self, command: Command, tail: list[str], form: str) -> Command:
        """``offer``, ``accept`` or ``decline``."""
        if tail[0].lower() not in DRAW_ANSWERS:
            raise CommandError(f"A draw command ends with offer, accept or decline: {form}")
        command.args = [tail[0].lower()]
        return command

    def run(self, request: Request) -> Answer:
        """Offer, accept or decline."""
        return draw(request.command.args[:1], request)


def draw(args: list[str], request: Request) -> Answer:
    """Offer a draw (``["offer"]``), or accept or decline the offer; the comment goes with it."""
    user, game_id, via = request.player(), request.the_game().id, request.via
    comment, passed_on = request.comment or None, request.passed_on()
    if args == ["offer"]:
        cancelled = play.offer_draw(game_id, user, via, comment)
        return Answer(f"Your draw offer in game #{game_id} is sent; play goes on until it is answered."
                      f"{passed_on}{' ' + conditional.OWN_LINES_CANCELLED if cancelled else ''}")
    if args == ["accept"]:
        play.accept_draw(game_id, user, via, comment)
        finished = db.session.get_one(Game, game_id)
        return Answer(f"You accepted the draw: game #{game_id} is over. {results.sentence(finished)}"
                      f"{passed_on}")
    if args == ["decline"]:
        play.decline_draw(game_id, user, via, comment)
        return Answer(f"You declined the draw offer in game #{game_id}; play goes on.{passed_on}")
    raise CommandError("Write 'draw offer', 'draw accept' or 'draw decline'.")


class _Answering(ByKey):
    """``accept`` and ``decline``: the answer to a challenge, or else to a draw offer."""

    passes_comment = True

    def run(self, request: Request) -> Answer:
        """Answer the challenge the game waits for, or else the draw offer."""
        game = request.the_game()
        if game.status == "waiting":
            return self.answer_challenge(request)
        if game.draw_offered_by is not None:
            return draw([self.name], request)
        raise CommandError(
            f"There is nothing to {self.name} in {games.get(game.engine).title} #{game.id}: no challenge or "
            "draw offer is waiting for your answer."
        )

    def answer_challenge(self, request: Request) -> Answer:
        """Answer the challenge to the game."""
        raise NotImplementedError


class Accept(_Answering):
    """Accepting a challenge (or a draw offer)."""

    name = "accept"
    summary = "accept a challenge (or a draw offer)"
    details = ("Takes your seat in the game you were challenged to; it starts when every seat is filled. "
               "In a game in play, accepts the draw offered to you. The words under it go to the "
               "challenger (or the other players).")
    in_reply = (Usage("accept", "accept the challenge (or the draw offer) the mail is about"),)
    by_subject = (Usage("{game} accept 15 bob MAILKEY", "accept the challenge to game 15"),)

    def answer_challenge(self, request: Request) -> Answer:
        """Take the seat; say whether the game has started."""
        user, game_id = request.player(), request.the_game().id
        challenges.accept(game_id, user, request.comment)
        game = db.session.get_one(Game, game_id)
        engine = games.get(game.engine)
        passed_on = request.passed_on("is passed on")
        if game.status == "active":
            movers = queries.seats_to_move(game)
            seat = game.seat_of(user)
            started = (f"You accepted: {engine.title} #{game.id} has started, and it is "
                       f"{notify.seat_names(game, movers)}'s move.")
            if seat is not None and seat.number in movers and user.notify != "digest":
                # The move request, written with the game's start, shows the position: this answer need
                # not show it again (Box Off and Easy Slider start with everyone to move).
                return Answer(f"{started} Your move request comes in a mail of its own.{passed_on}")
            return Answer(f"{started} Whoever is to move gets a mail asking for it.{passed_on}", game, seat)
        return Answer(f"You accepted: {engine.title} #{game.id} starts when every seat is filled."
                      + passed_on)


class Decline(_Answering):
    """Declining a challenge (or a draw offer)."""

    name = "decline"
    summary = "decline a challenge (or a draw offer)"
    details = ("Calls off the game you were challenged to; in a game in play, declines the draw offered to "
               "you. The words under it go to the challenger (or the other players).")
    in_reply = (Usage("decline", "decline it"),)
    by_subject = (Usage("{game} decline 15 bob MAILKEY", "decline it"),)

    def answer_challenge(self, request: Request) -> Answer:
        """Call the game off."""
        game = request.the_game()
        challenges.decline(game.id, request.player(), request.comment)
        return Answer(f"You declined the challenge to {games.get(game.engine).title} #{game.id}; the game is "
                      "called off." + request.passed_on("is passed on"))


class Conditionals(ByKey):
    """Listing, queueing and clearing conditional moves ("if c4 then d4")."""

    name = "conditionals"
    aliases = ("conditional",)
    summary = "list, queue or delete your conditional moves in a game"
    details = ("A conditional line 'if c4 then d4' plays d4 for you the moment your opponent plays c4, in "
               "games of two players; a longer line goes on with 'then'. Each move is checked when you "
               "send it. Only you ever see your lines; a draw offer cancels them.")
    in_reply = (
        Usage("if c4 then d4", "a conditional move, in games of two players: if your opponent plays c4, d4 "
                               "is played for you at once; a longer line goes on with 'then' (if c4 then d4 "
                               "then e3 then f5). Put 'if' lines alone in a reply, or with your move (they "
                               "then start from your opponent's answer to it); several lines may share a "
                               "beginning. Each move is checked when you send it."),
        Usage("conditionals", "the conditional moves you have queued (only you ever see them); "
                              "'conditionals clear' deletes them; a draw offer cancels them"),
    )
    by_subject = (Usage("{game} conditionals 12 alice MAILKEY",
                        "the conditional moves you have queued in game 12; add 'clear' to delete them, or "
                        "'if c4 then d4' to queue one"),)
    reply_words = 1

    def with_tail(self, command: Command, tail: list[str], form: str) -> Command:
        """``clear``, or a line to queue, or nothing (to list them)."""
        clear = [w.lower() for w in tail] == ["clear"]
        queued = [] if clear or not tail else [" ".join(tail)]
        command.args = ["clear"] if clear else ["add"] if queued else []
        command.conditionals = queued
        return command

    def run(self, request: Request) -> Answer:
        """List, queue or clear the player's conditional lines in the game; only they ever see them."""
        command, user, game = request.command, request.player(), request.the_game()
        where = f"{games.get(game.engine).title} #{game.id}"
        if request.seat is None:
            raise CommandError(f"You are not playing in {where}, so you have no conditional moves there.")
        if command.args == ["clear"]:
            gone = queueing.delete(game.id, user, seat=request.seat_number)
            return Answer(f"Your conditional moves in {where} are deleted ({gone} line{'s' * (gone != 1)}).")
        if command.args == ["add"]:
            try:
                queueing.queue(game.id, user, command.conditionals, seat=request.seat_number)
            except PlayError as exc:
                raise CommandError(
                    f"{exc.message} Nothing was queued. (A line of your mail that starts with 'if' and has "
                    "'then' is read as a conditional move.)", game, request.seat
                ) from None
            game = db.session.get(Game, game.id) or game
            lines = conditional.lines_of(game, user, request.seat_number)
            return Answer(
                f"Queued in {where}: they are played the moment your opponent's move matches. 'conditionals' "
                "lists them, 'conditionals clear' deletes them.",
                extra="Your conditional moves:\n" + _listed(lines),
            )
        if command.args:
            raise CommandError(
                "Write 'conditionals' to list your conditional moves, or 'conditionals clear'.")
        lines = conditional.lines_of(game, user, request.seat_number)
        if not lines:
            return Answer(f"You have no conditional moves queued in {where}. Queue one by replying 'if c4 "
                          "then d4' (your opponent's move, then yours; longer lines go on with 'then').")
        return Answer(f"Your conditional moves in {where}:", extra=_listed(lines))


def _listed(lines: list[list[str]]) -> str:
    """Conditional lines, one a line, as the player wrote them."""
    return "\n".join(f"  {conditional.describe(line)}" for line in lines)
