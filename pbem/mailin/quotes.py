"""Step 1 of reading a reply: the player's own words, without what their mail program added.

A mail program puts many things around what the player wrote: the mail answered, quoted with ``>`` or
pasted unquoted under a header block (Outlook's ``From: / Sent: / To: / Subject:`` in the program's
language), an attribution above it ("On … wrote:", "Am … schrieb …:", wrapped over up to three lines),
a signature under ``-- `` and a phone or app footer ("Sent from my iPhone", "Von meinem iPhone
gesendet").  Each is recognised as such, in the nineteen languages of the tables below, and the
server knows exactly what it sent: every run of lines that repeats the mail answered is its copy,
whatever the program did to its quote marks, white space and line breaks, and whatever stands above it.

What is left, in order, is the player's: written above the mail answered (top-posting), under it
(bottom-posting), or between its quoted lines (inline).  Nothing here raises, and every step is one
pass over at most ``MAX_LINES`` lines, each examined to ``MAX_LINE`` characters, with patterns that see
only bounded pieces of a line: hostile mail costs time in proportion to its size.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence

# Only the first MAX_LINES lines are read (a reply's own words are never further down), and each line is
# examined up to MAX_LINE characters.
MAX_LINE = 1000
MAX_LINES = 5000
# The most of the mails answered that is compared with a reply (a move request is a few kilobytes).
MAX_ANSWERED = 200_000

# Invisible format characters mail programs and keyboards leave in a line: a byte-order mark, zero-width
# spaces and joiners, the word joiner, left-to-right and right-to-left marks.
INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060\u200e\u200f"
_STRIP = INVISIBLE + " \t\r\x0b\x0c"

# The lines that open a signature: the standard delimiter "-- ", and "--", as mail programs that trim
# trailing spaces send it.
_SIGNATURE_MARKS = ("-- ", "--")

# The verbs of attribution lines ("On Tue, 3 May, alice <a@b> wrote:"), as whole words; and those of
# languages written without spaces between words, found anywhere in the line.
_VERBS = re.compile(
    r"(?<!\w)(?:wrote|writes|schrieb|geschrieben|a écrit|écrit|escribió|escrito|scritto|scrisse|escreveu"
    r"|schreef|geschreven|skrev|skreiv|kirjoitti|napisał\(a\)|napisała|napisał|napsal\(a\)|napsala|napsal"
    r"|написал\(а\)|написала|написал|пишет|написав|пише|yazdı)(?!\w)",
    re.IGNORECASE,
)
_CJK_VERBS = ("写道", "寫道", "写到", "寫到", "書きました", "のメッセージ", "작성", "님이 씀")

# Outlook's header block over the mail answered, in each language: the names of its lines.
_HEADER_NAMES = frozenset({
    # From
    "from", "von", "de", "da", "från", "fra", "van", "lähettäjä", "od", "от", "від", "kimden", "差出人",
    "发件人", "寄件者", "寄件人", "보낸 사람", "보낸사람",
    # Sent / Date
    "sent", "date", "gesendet", "datum", "envoyé", "envoyé le", "date d'envoi", "enviado", "enviado el",
    "enviada em", "enviado em", "fecha", "data", "inviato", "skickat", "sendt", "verzonden", "lähetetty",
    "päivämäärä", "wysłano", "wysłane", "odesláno", "odeslané", "отправлено", "дата", "надіслано",
    "gönderildi", "tarih", "送信日時", "日付", "发送时间", "發送時間", "日期", "寄件日期", "보낸 날짜",
    "날짜",
    # To / Cc
    "to", "an", "à", "a", "para", "till", "til", "aan", "vastaanottaja", "do", "komu", "кому", "kime",
    "宛先", "收件人", "收件者", "받는 사람", "받는사람", "cc", "kopie", "copie", "copia", "kopia", "копия",
    "kopio", "kopi", "bilgi", "抄送", "副本", "참조", "reply to", "reply-to",
    # Subject
    "subject", "betreff", "objet", "asunto", "oggetto", "assunto", "onderwerp", "ämne", "emne", "aihe",
    "temat", "předmět", "тема", "konu", "件名", "主题", "主題", "主旨", "제목",
})
# A line "Name: value" of a header block in a language the table does not know: a short name.
_ANY_HEADER = re.compile(r"\*{0,2}[^\W\d_][^:\n]{0,24}:")

# Phone and app footers, read on the line lowercased: "Sent from my iPhone", in the nineteen languages.
_FOOTERS = re.compile(
    r"(?:sent from|sent with|sent via|get outlook for|von meinem .{1,60}gesendet|gesendet von|gesendet mit"
    r"|envoyé de mon|envoyé depuis|envoyé à partir de|envoyé avec|obtenir outlook pour|enviado desde"
    r"|obtener outlook para|inviato da|inviato dal|scarica outlook per|enviado do|enviado a partir do"
    r"|obter o outlook para|verzonden vanaf|verstuurd vanaf|verzonden met|download outlook voor"
    r"|skickat från|skickades från|hämta outlook för|sendt fra|få outlook for|hent outlook til"
    r"|lähetetty (?!:)|wysłane z|wysłano z|pobierz outlook|odesláno z|odeslané z|отправлено с|отправлено из"
    r"|отправлено через|надіслано з|відправлено з|.{1,60}(?:dan|den|tan|ten) gönderildi|.{1,60}から送信"
    r"|发自我的|發自我的|從我的.{1,60}傳送|从我的.{1,60}发送|.{1,60}에서 보냄"
    # "Get Outlook for Android", as Outlook says it in each language.
    r"|outlook für .{1,20} herunterladen|télécharger outlook pour|descargar outlook para"
    r"|baixe o outlook para|baixar o outlook para|outlook voor .{1,20} downloaden|skaffa outlook för"
    r"|hanki outlook|pobierz program outlook|stáhnout outlook|получить outlook|отримати outlook"
    r"|.{1,20} için outlook|.{1,20}outlook を入手|获取 .{1,20}outlook|取得 .{1,20}outlook"
    r"|.{1,20}outlook 다운로드)"
)
_LONGEST_FOOTER = 150

# A run of lines counts as a copy of the mail answered when it repeats at least this many characters of
# it (white space aside): a move ("b3") or a word of the player's may well stand in that mail too.
_REPEATED_AT_LEAST = 24
# Lines are found in the mail answered by their first _GRAM characters; a line shorter than that only
# ever continues a run.  A piece of text found at more places than _PLACES is followed from the first ones.
_GRAM = 8
_PLACES = 16


def _view(line: str) -> str:
    """A line as it is examined: cut to MAX_LINE characters, in Unicode's compatible form (full-width
    letters and colons as plain ones), without invisible characters or spaces at its ends."""
    line = line[:MAX_LINE]
    if not unicodedata.is_normalized("NFKC", line):
        line = unicodedata.normalize("NFKC", line)
    return line.strip(_STRIP)


def _bare(view: str) -> str:
    """A line without quote marks and white space, in lower case: how two copies are compared."""
    while view.startswith(">"):
        view = view[1:].lstrip(_STRIP)
    return "".join(view.split()).casefold()


def _is_header(view: str) -> bool:
    """Whether the line is a header line ("Von: pbem <…>", "**Sent:** …") of a known name."""
    head, colon, _ = view[:40].partition(":")
    return bool(colon) and head.strip(" *\t").lower() in _HEADER_NAMES


def _is_separator(view: str) -> bool:
    """Whether the line is a separator over the mail answered: "-----Original Message-----" (in any
    language: dashes, a few words without digits, dashes), or a rule of ten or more dashes or
    underscores."""
    if len(view) < 10 or view[0] not in "-_":
        return False
    if view.strip("_") == "" or view.strip("-") == "":
        return True
    inner = view.strip("-").strip()
    return (view.startswith("--") and view.endswith("--") and 3 <= len(inner) <= 60
            and not any(c.isdigit() for c in inner))


def _footer(view: str) -> bool:
    """Whether the line is a phone or app footer."""
    return len(view) <= _LONGEST_FOOTER and _FOOTERS.match(view.lower()) is not None


def _has_verb(text: str) -> bool:
    return _VERBS.search(text) is not None or any(verb in text for verb in _CJK_VERBS)


def _attribution_part(view: str) -> bool:
    """Whether a line can be the upper part of a wrapped attribution: it holds an address or a date."""
    return "@" in view or "<" in view or sum(c.isdigit() for c in view) >= 4


class _Reading:
    """The lines of one reply and what each is."""

    def __init__(self, text: str, answered: Sequence[str] | Callable[[], Sequence[str]]) -> None:
        self.lines = text.split("\n", MAX_LINES)[:MAX_LINES]
        self.views = [_view(line) for line in self.lines]
        n = len(self.lines)
        self.quoted = [v.startswith(">") for v in self.views]
        self.blank = [not v for v in self.views]
        self.dropped = list(self.quoted)
        self.n = n
        self.runs = _repeated_runs(self.views, self.quoted, answered)

    def attribution_ending_at(self, end: int, above_quote: bool) -> int | None:
        """The first line of an attribution whose last line is ``end`` (None if it is not one).

        An attribution ends with ":" (or its last ":" was wrapped onto the quote's first line, ">:"); it
        has the verb of its language, or, just above a quote, an address or a date; it takes up to two
        lines above that hold an address or a date, as a wrapped one does."""
        view = self.views[end]
        if not view or self.quoted[end] or len(view) > 400:
            return None
        wrapped_colon = end + 1 < self.n and self.views[end + 1].replace(" ", "") == ">:"
        if not view.endswith(":") and not wrapped_colon:
            return None
        start, text = end, view
        while start > 0 and end - start < 2 and not self.dropped[start - 1] and not self.blank[start - 1]:
            above = self.views[start - 1]
            if len(text) + len(above) > 400:
                break
            # A line above joins when the attribution is not whole without it, or holds an address or date.
            if _has_verb(text) and not _attribution_part(above):
                break
            if not _has_verb(text) and not _has_verb(above) and not _attribution_part(above):
                break
            start, text = start - 1, f"{above} {text}"
        if _has_verb(text):
            return start
        if above_quote and ("@" in text or sum(c.isdigit() for c in text) >= 4):
            return start
        return None

    def header_block_at(self, i: int) -> bool:
        """Whether line ``i`` opens a header block of known names (two lines of them, one under another)."""
        return i + 1 < self.n and _is_header(self.views[i]) and _is_header(self.views[i + 1])

    def head_above(self, start: int, pasted: bool) -> int:
        """The first line of what introduces the quote that starts at line ``start``: the attribution or
        separator just above it, or, over a ``pasted`` copy of the mail answered (Outlook's way), its header
        block in any language (``start`` when there is none)."""
        i = start
        while i > 0 and self.blank[i - 1] and start - i < 2:
            i -= 1
        if i == 0 or self.dropped[i - 1]:
            return start if i == 0 else i
        first = self.attribution_ending_at(i - 1, above_quote=True)
        if first is not None:
            return first
        # Lines "Name: value" (two or more, of names in any language), perhaps under a separator.
        j = i
        while (pasted and j > 0 and i - j < 8 and not self.quoted[j - 1]
               and _ANY_HEADER.match(self.views[j - 1])):
            j -= 1
        if i - j >= 2:
            if j > 0 and _is_separator(self.views[j - 1]):
                j -= 1
            return j
        if _is_separator(self.views[i - 1]):
            return i - 1
        return start


# With at most this many distinct first pieces among a reply's lines, each is looked for in the mails
# answered by itself (a search in C); with more, every piece of those mails is indexed once.  Either way
# the work is linear in the mails answered: a reply that is a line or two (a move, an attribution) costs
# a search or two, not an index of the whole move request.
_LOOKED_FOR_AT_MOST = 64


def _places_of(reference: str, grams: set[str]) -> dict[str, list[int]]:
    """For each of ``grams``, the first _PLACES places it stands at in ``reference`` (overlapping ones
    too); those it is not found at are left out."""
    places: dict[str, list[int]] = {}
    if len(grams) > _LOOKED_FOR_AT_MOST:
        for p in range(len(reference) - _GRAM + 1):
            found = places.setdefault(reference[p : p + _GRAM], [])
            if len(found) < _PLACES:
                found.append(p)
        return places
    for gram in grams:
        found = places[gram] = []
        p = reference.find(gram)
        while p >= 0 and len(found) < _PLACES:
            found.append(p)
            p = reference.find(gram, p + 1)
    return places


def _repeated_runs(views: list[str], quoted: list[bool],
                   answered: Sequence[str] | Callable[[], Sequence[str]]) -> list[tuple[int, int]]:
    """The runs of unquoted lines (start, end) that repeat the mails answered, white space aside.
    ``answered`` may be a function giving them, called only when a line could start a run."""
    bare = [_bare(v) if not q else "" for v, q in zip(views, quoted, strict=True)]
    # Only a line of at least _GRAM characters starts a run: without one, the mails answered are not read.
    grams = {line[:_GRAM] for line in bare if len(line) >= _GRAM}
    if not grams:
        return []
    texts = answered() if callable(answered) else answered
    reference = "\x00".join(
        "".join(_bare(_view(line)) for line in text.split("\n")) for text in texts
    )[:MAX_ANSWERED]
    if len(reference) < _REPEATED_AT_LEAST:
        return []
    places = _places_of(reference, grams)
    runs: list[tuple[int, int]] = []
    i, n = 0, len(views)
    while i < n:
        line = bare[i]
        if quoted[i] or len(line) < _GRAM:
            i += 1
            continue
        # Where the line stands in the mail answered: its start and end there, for each place.
        spans = [(p, p + len(line)) for p in places.get(line[:_GRAM], ()) if reference.startswith(line, p)]
        if not spans:
            i += 1
            continue
        # Follow the run down (blank lines inside it are part of it) while each line goes on from the end
        # of the one before, at one of the places at least.
        length, last, j = len(line), i, i + 1
        while j < n and not quoted[j]:
            if not bare[j]:
                j += 1
                continue
            going = [(s, e + len(bare[j])) for s, e in spans if reference.startswith(bare[j], e)]
            if not going:
                break
            spans, length, last, j = going, length + len(bare[j]), j, j + 1
        # And up, over short lines that could not start it (a board's ranks, a move).
        first = i
        k = i - 1
        while k >= 0 and not quoted[k] and (runs[-1][1] if runs else 0) <= k:
            if not bare[k]:
                k -= 1
                continue
            rising = [(s - len(bare[k]), e) for s, e in spans if reference.endswith(bare[k], 0, s)]
            if not rising:
                break
            spans, length, first, k = rising, length + len(bare[k]), k, k - 1
        if length >= _REPEATED_AT_LEAST:
            runs.append((first, last + 1))
        i = last + 1
    return runs


def own_words(text: str, answered: Sequence[str] | Callable[[], Sequence[str]] = ()) -> list[str]:
    """The lines the player wrote in ``text`` (a reply's text, HTML turned into text with its quotes
    marked ``>``), in order, right-stripped; ``answered`` are the texts of the mails it may answer (the
    server's own), whose copies in it are left out wherever they stand: a list, or a function that gives
    it, called only when some line of ``text`` is long enough to be part of a copy (a reply that is a
    move over quoted lines reads none).

    Left out: quoted lines, copies of the mail answered, the attribution, separator or header block over
    a quote, a pasted mail under a header block or separator (the rest of the mail, when the player wrote
    above it), a signature (from ``-- `` to the next quote) and phone footers.
    """
    r = _Reading(text, answered)
    n = r.n
    dropped = r.dropped
    # Where an unquoted copy of the mail answered starts (its head included): each is a place where the
    # rest of the mail may be the mail answered.
    cuts: dict[int, int] = {}
    for start, end in r.runs:
        head = r.head_above(start, pasted=True)
        for i in range(head, end):
            dropped[i] = True
        cuts[head] = end
    # The attributions over quoted lines (in any language), and those that name themselves (with a verb).
    for i in range(n):
        if r.quoted[i] and i > 0 and not r.quoted[i - 1]:
            head = r.head_above(i, pasted=False)
            for k in range(head, i):
                dropped[k] = True
    for i in range(n):
        if dropped[i] or not r.views[i].endswith(":"):
            continue
        first = r.attribution_ending_at(i, above_quote=False)
        if first is not None:
            for k in range(first, i + 1):
                dropped[k] = True
    # Header blocks of known names and separators: the mail answered follows them, pasted.
    for i in range(n):
        if not dropped[i] and (r.header_block_at(i) or _is_separator(r.views[i])):
            cuts.setdefault(i, i + 1)
    # Signatures run to the next line that is no part of the player's words; footers are single lines.
    signature = False
    for i in range(n):
        if dropped[i]:
            signature = False
        elif r.lines[i].strip(INVISIBLE).rstrip("\r") in _SIGNATURE_MARKS or signature:
            signature = dropped[i] = True
        elif _footer(r.views[i]):
            dropped[i] = True
    # Top-posted: the first pasted copy (or header block) under words of the player's ends them, and the
    # rest of the mail is the mail answered.  With nothing written above it, the player writes under it:
    # the words after the last copy of it are theirs.
    copies_end = _copies_end(r.runs, n)
    written = False
    last_cut_end = 0
    for i in range(n):
        if i in cuts and i >= last_cut_end:
            if written:
                for k in range(i, n):
                    dropped[k] = True
                break
            # A header block over a mail that is not ours, or not recognised, is over all the rest.
            end = max(cuts[i], copies_end[i]) if copies_end[i] else n
            for k in range(i, end):
                dropped[k] = True
            last_cut_end = end
        if not dropped[i] and not r.blank[i]:
            written = True
    return [line.strip(INVISIBLE).rstrip() for line, gone in zip(r.lines, dropped, strict=True) if not gone]


def _copies_end(runs: list[tuple[int, int]], n: int) -> list[int]:
    """For each line, the end of the last copy of the mail answered that starts there or below (0 if
    none)."""
    ends = [0] * (n + 1)
    for start, end in runs:
        ends[start] = max(ends[start], end)
    for i in range(n - 1, -1, -1):
        ends[i] = max(ends[i], ends[i + 1])
    return ends
