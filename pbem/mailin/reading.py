"""Step 2 of reading a reply: the move as a person reads it, and the comment that goes with it.

The player's own words (step 1, :mod:`pbem.mailin.quotes`, with the ``if`` lines already taken out) are
read as a person would read them:

- a line that is a command (``resign``, ``draw offer``, ``show`` …) or a move (``b3``, ``b3 #4``,
  ``move b3``, ``^c3 d4<ws``, decorated as ``*b3*``, ``"b3"``, ``(b3)``, ``b3!`` or ``b3 :)``, in
  full-width letters or not) is the command, among the first ``WINDOW`` lines with anything on them;
- otherwise the legal moves of the position are looked for as words in those lines ("I'll play b3, good
  game");
- one legal move found (on a line, or as words) is played; two or more different ones are not: the
  player is asked which they meant;
- commands are only ever whole lines, never words in a sentence;
- the comment is the player's own words without the line that held the move (or command) when that line
  held nothing else; a line with other words in it stays as it was written.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import games
from games.words import join_words
from pbem.core.models import MAX_COMMENT, Game
from pbem.game import queries
from pbem.mailin.commands.registry import REPLY_ALONE, REPLY_WITH_A_WORD
from pbem.mailin.quotes import INVISIBLE

# Moves are looked for in the first WINDOW lines that have anything on them.
WINDOW = 5
# A comment is read up to one character more than it may hold, so that the command it goes with knows
# whether it was longer (and says so) while what is read stays bounded.
COMMENT_READ = MAX_COMMENT + 1
# Only this much of a line is read for a move: a move is never longer (see pbem.game.play.MAX_MOVE_TEXT).
_LONGEST_LINE = 300
# A move of several words ("d2 e2 e1", "^c3 d4<ws") is at most this many.
_MOST_WORDS = 12

# Marks around a move that are no part of it: emphasis, quotes, brackets.
_AROUND = "*_~`\"'“”„‘’«»‹›()[]{}"
# Marks after a move: punctuation, and an emoticon written after it, with or without a space.
_AFTER = ".,;:!?…"
_SPACES = " \t" + INVISIBLE
_EMOTICON = re.compile(r"(?:[:;=][-'^o]?[)(\]\[DPpOo3/\\|*]{1,3}|<3|\^\^|\^_\^|(?<![^\s])[xX]D)$")
_EXPECT = re.compile(r"#(\d{1,9})")
# The commands a line may be, by their verb (the registry's): those that act at once are the verb alone;
# the others take one word more (what is wrong with a wrong one is said when the command is read: "draw
# please").
_ALONE = REPLY_ALONE
_WITH_A_WORD = REPLY_WITH_A_WORD


def take_conditionals(words: list[str]) -> tuple[list[str], list[str]]:
    """The conditional lines among a mail's own words (see :mod:`pbem.mailin.quotes`), and the other words.

    A line of the sender's own words is a conditional line when its first word is ``if`` and it has the
    word ``then`` (``if c4 then d4 then e3 then f5``), wherever it stands: such a line must never reach
    the opponent as part of a comment.  Each line is read once, word by word."""
    lines, rest = [], []
    for line in words:
        command = command_line(line)
        found = command.lower().split()
        if found and found[0] == "if" and "then" in found:
            lines.append(command)
        else:
            rest.append(line)
    return lines, rest


def command_line(line: str) -> str:
    """``line`` as a command: its words separated by single spaces, without invisible marks at its ends."""
    return " ".join(line.strip(INVISIBLE).split()).strip(INVISIBLE)


def _compatible(text: str) -> str:
    """``text`` in Unicode's compatible form (full-width ``ｂ３`` is ``b3``)."""
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def _undecorated(text: str) -> str:
    """``text`` without the marks a person puts around a move: ``*b3*``, ``"b3"``, ``(b3)``, ``b3!``,
    ``b3,``, ``b3 :)``, ``b3 👍``."""
    for _ in range(len(text) + 1):  # Each pass takes something off, or ends.
        before = text
        text = text.strip(_SPACES)
        text = _EMOTICON.sub("", text) if len(text) > 1 else text
        while text and (text[-1] in _AFTER or _emoji_part(text[-1])):
            text = text[:-1]
        text = text.strip(_AROUND)
        if text == before:
            return text
    return text


def _emoji_part(char: str) -> bool:
    """Whether ``char`` is (part of) an emoji or pictograph, never a mark of a game's notation (``^``)."""
    return not char.isascii() and unicodedata.category(char) in ("So", "Sk", "Mn", "Cf")


def _movish(word: str) -> bool:
    """Whether a word could name a move on a board: a letter and a digit (``b3``, ``a1-b1``, ``^c3``)."""
    return any(c.isascii() and c.isalpha() for c in word) and any(c.isascii() and c.isdigit() for c in word)


@dataclass
class Position:
    """The replying seat's position: which moves are legal now, by the engine."""

    engine: games.Engine
    state: Any
    seat: int
    legal: dict[str, str] = field(default_factory=dict)  # Lowercased move → as the engine lists it.

    @classmethod
    def of(cls, engine: games.Engine, state: Any, seat: int) -> Position:
        """The position of ``seat`` in ``state``: no legal moves unless it is to move."""
        movable = seat in engine.to_move(state)
        legal = {move.lower(): move for move in engine.moves(state, seat)} if movable else {}
        return cls(engine, state, seat, legal)

    @classmethod
    def in_game(cls, game: Game, seat: int) -> Position | None:
        """``seat``'s position in ``game`` as stored (None unless the game is in play)."""
        if game.status != "active" or game.state is None:
            return None
        return cls.of(queries.engine_of(game), queries.state_of(game), seat)

    def canonical(self, text: str) -> str | None:
        """``text`` as the record writes it when it is a legal move now (None when it is not)."""
        listed = self.legal.get(text.lower())
        if listed is not None or not self.legal or len(text) > _LONGEST_LINE:
            return listed
        try:
            self.engine.play(self.state, self.seat, text)
        except Exception:  # An illegal move, or words the engine cannot read at all.
            return None
        notation = getattr(self.engine, "notation", None)
        return notation(self.state, self.seat, text) if notation is not None else text.lower()


@dataclass
class Found:
    """A legal move found in the player's words: as the record writes it, and as it is to be played."""

    move: str
    command: str


@dataclass
class Reading:
    """What a reply says: the command line to run ('' for none) and the comment that goes with it; or,
    when the player named several legal moves, those (``moves``), and nothing is to be played."""

    command: str
    comment: str
    moves: list[str] = field(default_factory=list)

    def question(self) -> str:
        """The answer to a reply that named several moves: which one?"""
        count = {2: "two", 3: "three", 4: "four"}.get(len(self.moves), str(len(self.moves)))
        return (f"I found {count} moves in your reply, {join_words(self.moves, 'and')}; nothing was played. "
                "Reply with the one you mean on a line of its own (or play on the web).")


def _command_words(line: str) -> list[str]:
    """A line's words as a command reads them: compatible form, without marks after it."""
    return _undecorated(_compatible(line[:_LONGEST_LINE])).split()


def _verb_line(line: str) -> str | None:
    """The command when the whole line is one (``resign``, ``draw offer``, ``help cambio``), else None."""
    words = _command_words(line)
    if not words or len(words) > 2:
        return None
    verb = words[0].lower()
    if verb in _WITH_A_WORD or (verb in _ALONE and len(words) == 1):
        return " ".join(words)
    return None


def _starts_with_a_verb(line: str) -> bool:
    """Whether the line's first word is a command's, in a sentence ("resign? never")."""
    words = _command_words(line)
    return bool(words) and words[0].lower().rstrip(_AFTER) in (*_ALONE, *_WITH_A_WORD)


def _move_line(line: str, position: Position | None) -> tuple[str, str | None] | None:
    """When the whole line is a move (legal or not: a move is read as one by its shape), the move as it is
    to be played (with its ``#N``) and as the record writes it when legal now; else None."""
    if len(line) > _LONGEST_LINE:
        return None
    text = _undecorated(_compatible(line))
    words = text.split()
    if words and words[0].lower() == "move":
        words = words[1:]
    expect = None
    if words and (number := _EXPECT.fullmatch(words[-1])):
        expect, words = number.group(1), words[:-1]
    elif words and "#" in words[-1]:
        head, _, tail = words[-1].rpartition("#")
        if _EXPECT.fullmatch(f"#{tail}") and head:
            expect, words[-1] = tail, head
    move = _undecorated(" ".join(words))
    if not move or len(words) > _MOST_WORDS:
        return None
    canonical = position.canonical(move) if position is not None else None
    # Unless it is a legal move, a line is read as one by its shape: one word naming a square (a move
    # mistyped is refused with the engine's words); several such words are read one by one.
    if canonical is None and ((len(words) > 1 and position is not None) or not all(map(_movish, words))):
        return None
    return (f"{move} #{expect}" if expect else move), canonical


def _moves_in_words(line: str, position: Position) -> list[Found]:
    """The legal moves named as words in ``line``: a word that is one (``b3,`` ``*b3*``), or several
    words in a row that make one (``d2 e2 e1``); a ``#N`` after a move goes with it."""
    words = [_undecorated(w) for w in _compatible(line[:_LONGEST_LINE]).split()]
    found: list[Found] = []
    i = whole = 0  # Words before ``whole`` were tried as part of a row of words already.
    while i < len(words):
        # A row of words that could be moves is tried as one move first, once.
        j = i
        while j < len(words) and j - i < _MOST_WORDS and (
                _movish(words[j]) or (j > i and words[j].lower() == "done")):
            j += 1
        if i >= whole and j - i >= 2:
            whole = j
            together = position.canonical(" ".join(words[i:j]))
            if together is not None:
                found.append(Found(together, " ".join(words[i:j]) + _expect_after(words, j)))
                i = j
                continue
        word = words[i].split("#", 1)[0] if "#" in words[i] else words[i]
        listed = position.legal.get(word.lower()) if _movish(word) else None
        if listed is not None:
            expect = words[i][len(word):] if "#" in words[i] else _expect_after(words, i + 1).strip()
            found.append(Found(listed, f"{word} {expect}".strip() if _EXPECT.fullmatch(expect) else word))
        i += 1
    return found


def _expect_after(words: list[str], i: int) -> str:
    """`` #N`` when the word at ``i`` is a move number, else ''."""
    return f" {words[i]}" if i < len(words) and _EXPECT.fullmatch(words[i]) else ""


def comment_without(words: list[str], dropped: int | None) -> str:
    """The comment: ``words`` without the line ``dropped`` (the blank lines around it one blank line),
    right-stripped, without blank lines at its ends, cut to COMMENT_READ characters."""
    lines = [w.rstrip() for w in words]
    if dropped is not None:
        before, after = lines[:dropped], lines[dropped + 1 :]
        gap = bool((before and not before[-1]) or (after and not after[0]))
        while before and not before[-1]:
            before.pop()
        while after and not after[0]:
            after.pop(0)
        lines = [*before, *([""] if gap and before and after else []), *after]
    return "\n".join(lines).strip("\n")[:COMMENT_READ]


def read_reply(words: list[str], position: Position | None) -> Reading:
    """The command and comment of a reply whose own words are ``words`` (see the module's docstring);
    ``position`` gives the legal moves (None: no game to read moves in, only whole-line commands)."""
    window = [i for i, line in enumerate(words[: 20 * WINDOW]) if line.strip(INVISIBLE + " \t")][:WINDOW]
    for i in window:
        verb = _verb_line(words[i])
        if verb is not None:
            return Reading(verb, comment_without(words, i))
        as_move = _move_line(words[i], position)
        if as_move is None:
            continue
        command, canonical = as_move
        if canonical is not None and position is not None:
            named = _distinct([Found(canonical, command), *_named(words, window, i, position)])
            if len(named) > 1:
                return Reading("", "", [f.move for f in named])
        return Reading(command, comment_without(words, i))
    if position is not None:
        named = _distinct(_named(words, window, None, position))
        if len(named) == 1:
            return Reading(named[0].command, comment_without(words, None))
        if named:
            return Reading("", "", [f.move for f in named])
    # No move found: the first line is read as the command, as it was written (and refused, if it is none);
    # but a command's word in a sentence is no command.
    if not window or _starts_with_a_verb(words[window[0]]):
        return Reading("", "")
    return Reading(command_line(words[window[0]]), comment_without(words, window[0]))


def _named(words: list[str], window: list[int], skip: int | None, position: Position) -> list[Found]:
    """The legal moves named in the lines ``window`` but ``skip``: whole lines that are moves, and words."""
    found: list[Found] = []
    for i in window:
        if i == skip:
            continue
        as_move = _move_line(words[i], position)
        if as_move is not None and as_move[1] is not None:
            found.append(Found(as_move[1], as_move[0]))
        else:
            found.extend(_moves_in_words(words[i], position))
    return found


def _distinct(found: list[Found]) -> list[Found]:
    """``found`` without the moves named again (the first naming kept)."""
    seen: dict[str, Found] = {}
    for f in found:
        seen.setdefault(f.move, f)
    return list(seen.values())


def first_line_and_rest(words: list[str]) -> tuple[str, str]:
    """The first line with anything on it, as a command reads it (single spaces), and the rest as the
    comment (for a command in a mail's subject, whose body is only a comment)."""
    for i, line in enumerate(words):
        command = command_line(line)
        if command:
            return command, comment_without(words[i + 1 :], None)
    return "", ""
