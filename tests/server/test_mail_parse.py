"""Finding the command and the comment in what mail clients send: the player's own words above (or
under) the quote, without attributions, Outlook header blocks, signatures or "Sent from my phone"."""

from __future__ import annotations

import pytest

from pbem.mailin.parse import command_and_comment, html_to_text

CASES = [
    ("b3 #7\nNice try.\n\nOn Mon, 3 Mar 2025 at 12:00, pbem <pbem@pbem.localhost> wrote:\n> It is your move",
     ("b3 #7", "Nice try.")),
    # Gmail wraps a long attribution over two lines.
    ("  \n\nc1^\n\nOn Mon, 3 Mar 2025 at 12:00, pbem\n<play+abc@pbem.localhost> wrote:\n> quoted",
     ("c1^", "")),
    ("a2\n-- \nAlice\nalice.example.org", ("a2", "")),
    ("resign\nSent from my iPhone\n\n-----Original Message-----\nFrom: pbem\n> x", ("resign", "")),
    ("draw offer\nsee you\n\nFrom: pbem <pbem@pbem.localhost>\nSent: Monday\nSubject: your move",
     ("draw offer", "see you")),
    # Written under the quote (bottom-posting).
    ("On Mon, pbem wrote:\n> It is your move\n> Legal moves: a2\n\nb2 #3\nthanks\n-- \nsig",
     ("b2 #3", "thanks")),
    ("a3v\n\nAm Mo., 3. März 2025 um 12:00 Uhr schrieb pbem <pbem@pbem.localhost>:\n> Zug", ("a3v", "")),
    ("I wrote: b3 is good\nb3", ("I wrote: b3 is good", "b3")),
    ("\n\n", ("", "")),
    # A reply that is only a signature has no command, wherever the quote is.
    ("-- \nBob Example\nExample Ltd.\n\nSent from my iPhone", ("", "")),
    ("\n--\nBob Example\n\nOn Mon, pbem wrote:\n> It is your move", ("", "")),
    ("-- \nBob Example\n\nOn Mon, pbem wrote:\n> It is your move\n\nb2\nthanks\n-- \nBob", ("b2", "thanks")),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_command_is_the_first_line_of_the_players_own_words(text: str, expected: tuple[str, str]) -> None:
    assert command_and_comment(text) == expected


def test_html_quotes_become_quote_lines() -> None:
    text = html_to_text("<div>b3&nbsp;#1</div><div>gl&amp;hf</div>"
                        "<blockquote>It is <b>your</b> move</blockquote><style>p {}</style>")
    assert command_and_comment(text) == ("b3 #1", "gl&hf")
