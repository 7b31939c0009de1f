"""The mail reader and the command parsers, fed anything: they never raise past their boundary and never
take a second (of the thread's own processor time) on any input up to the size limit."""

from __future__ import annotations

import contextlib
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import games
from pbem.mailin import commands, parse, quotes, reading
from pbem.mailin.htmltext import html_to_text

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEADERS = ["From", "To", "Cc", "Subject", "Message-ID", "Content-Type", "Content-Transfer-Encoding",
           "Auto-Submitted", "Delivered-To", "MIME-Version"]
PIECES = ["multipart/mixed; boundary=b", "text/html", "text/plain; charset=\"utf\x008\"", "base64",
          "quoted-printable", "--b", "--b--", "=?utf-8?q?a?=", "=?x?b?", "<a@b>", "a@b, c@d", "alice@x <m@y>",
          "On Mon, alice wrote:", "> quoted", "-- ", "<blockquote>", "<!--", "<div class=quote>", "b3 #7",
          "cambio move 12 alice KEY b3", "Re: Fwd: ", "\r\n", "\n", " ", "\t", ":", "\x00", "é", "#"]


def _as_bytes(headers_and_body: tuple[list[tuple[str, str]], str]) -> bytes:
    headers, body = headers_and_body
    return ("".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n" + body).encode("utf-8", "replace")


def _message() -> st.SearchStrategy[bytes]:
    header = st.tuples(st.sampled_from(HEADERS), st.lists(st.sampled_from(PIECES) | st.text(max_size=20),
                                                          max_size=6).map("".join))
    body = st.lists(st.sampled_from(PIECES) | st.text(max_size=40), max_size=60).map("".join)
    return st.one_of(
        st.binary(max_size=4000),
        st.tuples(st.lists(header, max_size=8), body).map(_as_bytes),
    )


def _within_a_second(started: float) -> None:
    assert time.thread_time() - started < 1.0


@FUZZ
@given(raw=_message(), rcpt=st.text(max_size=200))
def test_the_mail_reader_reads_anything(raw: bytes, rcpt: str) -> None:
    started = time.thread_time()
    mail = parse.read(raw, rcpt)
    assert isinstance(mail.text, str) and isinstance(mail.subject, str)
    assert mail.from_addr == "" or "@" in mail.from_addr
    reading.read_reply(quotes.own_words(mail.text), None)
    _within_a_second(started)


REPLY_WORDS = [*PIECES, "move", "resign", "draw", "offer", "accept", "show", "12", "#12", "if", "then"]


@FUZZ
@given(line=st.one_of(st.text(max_size=2000),
                      st.lists(st.sampled_from(REPLY_WORDS), max_size=30).map(" ".join)))
def test_the_reply_parser_only_refuses(line: str) -> None:
    started = time.thread_time()
    try:
        command = commands.parse_reply(line)
        assert command.verb
    except commands.CommandError as exc:
        assert exc.message
    _within_a_second(started)


SUBJECT_WORDS = ["help", "games", "vacation", "cambio", "truchet", "boxoff", "easyslider", "carreaux", "move",
                 "show", "challenge", "accept", "decline", "resign", "draw", "offer", "conditionals", "clear",
                 "12", "#12", "99999999999999999999", "alice", "KEY", "on", "off", "size=3", "days=x",
                 "seat=9", "Re:", "Fwd:", "[pbem]", "a3v#7", "b3", "if", "then"]


@FUZZ
@given(line=st.one_of(st.text(max_size=2000), st.lists(st.sampled_from(SUBJECT_WORDS) | st.text(max_size=8),
                                                        max_size=20).map(" ".join)))
def test_the_subject_parser_only_refuses_and_never_shows_a_key(line: str) -> None:
    started = time.thread_time()
    shown = commands.redact(line)
    try:
        command = commands.parse_subject(line)
    except commands.CommandError as exc:
        assert exc.message
        # A command that cannot be read is shown by its first two words only: the key may be anywhere.
        if commands.looks_like_command(line):
            assert len(shown.split()) <= 3
    else:
        if command.key and line.split().count(command.key) == 1:
            assert command.key not in shown.split() and command.key not in command.said.split()
    _within_a_second(started)


def test_the_largest_inputs_are_quick() -> None:
    started = time.thread_time()
    for line in ("a" + " " * 1_000_000 + "#", "Re: " * 250_000, "#" * 1_000_000, "x " * 500_000):
        for parser in (commands.parse_reply, commands.parse_subject):
            with contextlib.suppress(commands.CommandError):
                parser(line)
        commands.redact(line)
    assert time.thread_time() - started < 4.0  # Four inputs of a megabyte, each well under a second.


# The pieces replies are made of: quotes, attributions and header blocks in several languages, HTML quote
# containers, footers, moves decorated and not, and lines of the mail answered.
ANSWERED = ("It is your move in Cambio #12 (move 3).\n\n  3  . . .\n  2  X . .\n\n"
            "Legal moves: a2, b1, b2, b3\nOr play with one click: https://pbem.example.org/m/TOKEN\n"
            "Players: O alice, X bob")
READING_PIECES = [
    *ANSWERED.split("\n"), "b3", "b2", "*b3*", "ｂ３", "b3 :)", "(b3)", "b3 #3", "#3", "move", "resign",
    "draw offer", "I'll play b3, good game", "Hi Bob,", "-- ", "--", "> ", ">:", "Sent from my iPhone",
    "Von: pbem", "Gesendet: Mittwoch", "An: alice", "-----Original Message-----", "____________",
    "On Wed, Nov 25, 2026 at 4:46 PM pbem <pbem@pbem.org> wrote:", "schrieb am Mi., 25.", "Nov. 2026 Uhr:",
    "2026年11月25日 pbem <p@x>:", "写道：", "a écrit :", "\u200b", "\ufeff", "\u3000", " ", "\t", ":", "<",
    "<div class=\"gmail_quote\">", "</div>", "<blockquote>", "</blockquote>", "<br>",
    "<div id=divRplyFwdMsg>", "<hr id=stopSpelling>", "<pre>", "</pre>", "&nbsp;", "<p>",
]
ENGINE = games.get("cambio")
POSITION = reading.Position.of(ENGINE, ENGINE.new(2, ENGINE.options.load({"size": 3}), 1), 0)


@FUZZ
@given(lines=st.lists(st.lists(st.sampled_from(READING_PIECES) | st.text(max_size=12), max_size=5)
                      .map(" ".join), max_size=40),
       answered=st.lists(st.sampled_from([ANSWERED, "", "b3", "x" * 30]) | st.text(max_size=60), max_size=3),
       as_html=st.booleans())
def test_the_reading_of_a_reply_never_raises(lines: list[str], answered: list[str], as_html: bool) -> None:
    """Steps 1 and 2 on anything, quickly: the own words are lines, a comment is bounded and trimmed, and
    moves asked about are two or more legal ones, with nothing to play and no comment."""
    started = time.thread_time()
    text = "\n".join(lines)
    if as_html:
        text = html_to_text(text)
    words = quotes.own_words(text, answered)
    assert all(isinstance(line, str) and "\n" not in line for line in words)
    said = reading.read_reply(words, POSITION)
    assert said.comment == said.comment.strip("\n") and len(said.comment) <= reading.COMMENT_READ
    if said.moves:
        assert len(said.moves) >= 2 and set(said.moves) <= set(POSITION.legal.values())
        assert said.command == said.comment == ""
    _within_a_second(started)
