"""The corpus: replies to real move requests, one a row, each with what a person reading it sees as
the move and as the comment.

A row names the mail program (a key of ``clients.CLIENTS``), the language, where the player wrote
(top, bottom, inline), the charset and transfer encoding of its text, the player's words as typed, and
the expected move (the record's text) and comment (exactly as stored and passed on).  A row with
``refused`` expects no move, and an answer that names those moves and asks for one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAMBIO: dict[str, Any] = {"size": 3, "placements": 2}  # Legal first moves: a2, b1, b2, b3, c2.


@dataclass(frozen=True)
class Case:
    """One reply of the corpus."""

    id: str
    client: str
    lang: str
    posting: str
    charset: str
    cte: str
    words: str
    move: str | None
    comment: str = ""
    refused: tuple[str, ...] = ()
    game: str = "cambio"
    options: dict[str, Any] = field(default_factory=lambda: dict(CAMBIO))
    seed: int | None = None
    # A first move (and its comment) the opponent plays on the web; the reply then answers the
    # request for move 2, which shows that comment (the repeat of it must not become the reply's).
    first: tuple[str, str] | None = None
    threaded: bool = True
    attach: str = ""
    what: str = ""  # What the row is there to show, when its id does not say it.


CASES: list[Case] = [
    # Gmail -----------------------------------------------------------------------------------------
    Case("gmail-en-top", "gmail", "en", "top", "utf-8", "quoted-printable",
         "b3\nGood luck!", "b3", "Good luck!"),
    Case("gmail-en-greeting-first", "gmail", "en", "top", "utf-8", "7bit",
         "Hi Bob,\n\nb3\n\nCheers, Alice", "b3", "Hi Bob,\n\nCheers, Alice"),
    Case("gmail-de-bold-move", "gmail", "de", "top", "utf-8", "quoted-printable",
         "*b3*\n\nViel Glück, und möge der Bessere gewinnen!", "b3",
         "Viel Glück, und möge der Bessere gewinnen!", what="bold in HTML, *b3* in the plain part"),
    Case("gmail-ru-attribution-without-verb", "gmail", "ru", "top", "utf-8", "base64",
         "b2\n\nНу что ж, посмотрим.", "b2", "Ну что ж, посмотрим.",
         what="Gmail's Russian attribution has no verb: 'ср, 25 нояб. 2026 г. в 17:46, pbem <…>:'"),
    Case("gmail-ja-fullwidth-move", "gmail", "ja", "top", "utf-8", "base64",
         "ｂ３\nよろしくお願いします。", "b3", "よろしくお願いします。",
         what="a move typed full-width by an IME"),
    Case("gmail-ko-top", "gmail", "ko", "top", "utf-8", "base64",
         "c2\n잘 부탁드립니다!", "c2", "잘 부탁드립니다!"),
    Case("gmail-tr-sentence", "gmail", "tr", "top", "utf-8", "quoted-printable",
         "Ben b3 oynuyorum, iyi oyunlar!", "b3", "Ben b3 oynuyorum, iyi oyunlar!",
         what="the move inside a sentence: the line is the comment as written"),
    Case("gmail-fi-bottom", "gmail", "fi", "bottom", "utf-8", "quoted-printable",
         "a2\n\nOnnea peliin!", "a2", "Onnea peliin!"),
    Case("gmail-html-only-pt", "gmail-html", "pt", "top", "utf-8", "quoted-printable",
         "b1\nBoa sorte!", "b1", "Boa sorte!"),
    Case("gmail-html-only-en-bottom", "gmail-html", "en", "bottom", "utf-8", "quoted-printable",
         "b3\nGood luck!", "b3", "Good luck!"),
    Case("gmail-android-es", "gmail-android", "es", "top", "utf-8", "quoted-printable",
         "b3\n\n¡Suerte!", "b3", "¡Suerte!"),
    Case("gmail-en-two-moves", "gmail", "en", "top", "utf-8", "7bit",
         "b3\nc2", None, refused=("b3", "c2"), what="two moves on two lines: played neither, asked"),
    Case("gmail-en-changed-mind", "gmail", "en", "top", "utf-8", "7bit",
         "b3\n\nSorry, I mean c2", None, refused=("b3", "c2"), what="a move, then another in a sentence"),
    # Outlook ---------------------------------------------------------------------------------------
    Case("outlook-en-header-block", "outlook", "en", "top", "us-ascii", "7bit",
         "b3\n\nGood luck!", "b3", "Good luck!", what="the unquoted From/Sent/To/Subject block"),
    Case("outlook-de-header-block-cp1252", "outlook", "de", "top", "windows-1252", "quoted-printable",
         "b3\n\nViel Glück – gutes Spiel!", "b3", "Viel Glück – gutes Spiel!"),
    Case("outlook-fr-header-block", "outlook", "fr", "top", "windows-1252", "quoted-printable",
         "c2\n\nBonne chance, à toi de jouer ensuite.", "c2", "Bonne chance, à toi de jouer ensuite."),
    Case("outlook-pl-header-block", "outlook", "pl", "top", "iso-8859-2", "quoted-printable",
         "b2\n\nPowodzenia!", "b2", "Powodzenia!"),
    Case("outlook-ja-header-block-iso2022jp", "outlook", "ja", "top", "iso-2022-jp", "7bit",
         "a2\n\nよろしくお願いします。", "a2", "よろしくお願いします。"),
    Case("outlook-ru-header-block-koi8r", "outlook", "ru", "top", "koi8-r", "8bit",
         "b1\n\nУдачи!", "b1", "Удачи!"),
]
