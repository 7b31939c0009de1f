"""Reading a stored message: its sender, subject and recipients, its text, and the command in it.

Mail arrives in every shape: plain or HTML-only, quoted-printable or base64, any charset, with the
whole conversation quoted below (or above) the answer, and sometimes broken.  Nothing here raises on a
bad message; what cannot be decoded is read as best it can be, and an empty text is the worst case.
"""

from __future__ import annotations

import email
import email.parser
import logging
import re
from dataclasses import dataclass, field
from email.message import EmailMessage, Message
from email.policy import EmailPolicy
from email.policy import default as default_policy
from email.utils import getaddresses
from functools import lru_cache
from html import unescape
from typing import Any

from pbem.models import MAX_COMMENT, SUBJECT_TAG

log = logging.getLogger(__name__)

# Limits that keep reading linear in the size of the message, whatever it holds.  A header longer than
# MAX_HEADER characters is cut there (an address header that long is unreadable); a line is examined
# for quote marks only up to MAX_LINE characters, and only the first MAX_LINES lines are examined; a
# message with more than MAX_PARTS MIME parts, or parts nested deeper than MAX_DEPTH, is not read.
MAX_HEADER = 2000
MAX_LINE = 1000
MAX_LINES = 5000
MAX_PARTS = 100
MAX_DEPTH = 10
# An attribution ("On Tuesday, alice <a@b> wrote:") is never longer than this, even wrapped.
_MAX_ATTRIBUTION = 400

# Lines that open the quoted part of a reply in the common mail clients, in several languages: "alice
# wrote:", and "On <date>, alice <address> wrote:" / "Am <date> schrieb alice:", often wrapped.  The
# patterns are literal alternatives without nested repetition, and only ever see lines cut to
# _MAX_ATTRIBUTION characters, so they cannot backtrack their way into quadratic time.
_VERBS = r"(wrote|writes|schrieb|a écrit|escribió|scrisse|schreef|skrev|napisał|написал\(а\)|написал)"
_VERB_WORD = re.compile(rf"(?<!\w){_VERBS}(?!\w)", re.IGNORECASE)
_VERB_AT_END = re.compile(rf"(?<!\w){_VERBS}[ \t]*:$", re.IGNORECASE)
_OPENERS = re.compile(r"(on|am|le|el|il|op|den|w dniu)(?!\w)|\d{1,4}[./-]", re.IGNORECASE)
_SEPARATORS = re.compile(
    r"-{2,}[ \t]*(original message|forwarded message|ursprüngliche nachricht|message d'origine)[ \t]*-{2,}"
    r"|_{10,}|-{10,}",
    re.IGNORECASE,
)
_HEADER_BLOCK = re.compile(r"(from|von|de|sent|date|to|subject):\s", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# The lines that open a signature: the standard delimiter "-- ", and "--", as mail programs that trim
# trailing spaces send it.  Nothing else is guessed to be a signature.
_SIGNATURE_MARKS = ("-- ", "--")
_SENT_FROM = re.compile(r"(sent from my |get outlook for |envoyé de mon |von meinem )", re.IGNORECASE)


# Header values are parsed by the modern policy, and each parsed value is kept: the parser and the search
# for a message's text read its Content-Type a dozen times, and most headers' values (Content-Type,
# MIME-Version, a player's From) repeat from one message to the next.  Only short values are kept, so a
# hostile message cannot fill the memory with its headers.
_KEEP_VALUES_UP_TO = 300


@lru_cache(maxsize=2048)
def _parsed_header(name: str, value: str) -> Any:
    return default_policy.header_fetch_parse(name, value)


def fetch_header(name: str, value: str) -> Any:
    """``value`` (a header's text as it was written) parsed as the modern policy does."""
    if len(value) > _KEEP_VALUES_UP_TO:
        return default_policy.header_fetch_parse(name, value)
    return _parsed_header(name, value)


class _ReadingPolicy(EmailPolicy):
    """The default policy (parsed header objects, ``get_body``), reading each header value once."""

    def header_fetch_parse(self, name: str, value: str) -> Any:
        """The parsed header (see :func:`fetch_header`)."""
        if hasattr(value, "name"):
            return value
        return fetch_header(name, value)


READING_POLICY = _ReadingPolicy()


# One "Re:", "Fwd:", "AW:", "Re[2]:" or "[pbem]" (our tag) at the start of a subject; matched at a
# position and never searched for, so stripping any number of them takes linear time.
_PREFIX = re.compile(
    rf"\s*(?:(?:re|aw|sv|wg|fwd?|fw|tr|antw|vs|rv|enc|r)\s*(?:\[\d{{1,9}}\])?\s*:|{re.escape(SUBJECT_TAG)})\s*",
    re.IGNORECASE,
)


def strip_prefixes(subject: str) -> str:
    """The subject without any number of "Re:", "Fwd:" (in several languages) and "[pbem]" prefixes."""
    pos = 0
    while (found := _PREFIX.match(subject, pos)) is not None and found.end() > pos:
        pos = found.end()
    return subject[pos:].strip()


def tagged(subject: str) -> bool:
    """Whether the subject carries the "[pbem]" tag of the server's mails among its leading prefixes
    (``Re: [pbem] Cambio #12: your move``)."""
    pos = 0
    while (found := _PREFIX.match(subject, pos)) is not None and found.end() > pos:
        if SUBJECT_TAG in found.group().lower():
            return True
        pos = found.end()
    return False


@dataclass
class Incoming:
    """A stored message as the processor needs it.

    ``unreadable`` says why the message could not be read (broken beyond repair, or built to exhaust
    the reader), in words for its sender; its text is then empty.  ``from_addr`` is '' when the From
    header names no single address without doubt.
    """

    message: Message
    message_id: str
    from_addr: str
    subject: str
    recipients: list[str] = field(default_factory=list)
    text: str = ""
    unreadable: str | None = None
    from_ambiguous: bool = False
    # The message's size in bytes, as stored.
    size: int = 0

    def header(self, name: str) -> str:
        """A header's value as text ('' when absent or unreadable)."""
        return header_text(self.message, name)


def _raw_header(message: Message, name: str) -> str | None:
    """The first ``name`` header as it was written, cut to MAX_HEADER characters."""
    wanted = name.lower()
    for key, value in message.raw_items():
        if key.lower() == wanted:
            return str(value)[:MAX_HEADER]
    return None


def header_text(message: Message, name: str) -> str:
    """``name``'s value, decoded, on one line; '' when absent or so broken it cannot be read.

    Only the first MAX_HEADER characters are decoded, so a huge header costs no more than a normal one.
    """
    try:
        raw = _raw_header(message, name)
        if raw is None:
            return ""
        value = fetch_header(name, raw)
    except Exception:  # A header the parser chokes on reads as missing.
        return ""
    return " ".join(str(value).split())


def sender(message: Message) -> tuple[str, bool]:
    """The From address, lowercased, and whether the header was ambiguous.

    A From header is only trusted when it names exactly one address and two parsers agree on which:
    ``alice@x <mallory@y>`` or ``alice@x, mallory@y`` would otherwise be read as alice by one program
    and as mallory by another.  An ambiguous header gives ('', True); a missing one ('', False).
    """
    raw = _raw_header(message, "From")
    if raw is None or not raw.strip():
        return "", False
    if len(raw) >= MAX_HEADER:
        return "", True
    unfolded = " ".join(raw.split())
    try:
        loose = [addr for _, addr in getaddresses([unfolded])]
        strict = [a.addr_spec for a in fetch_header("From", raw).addresses]
    except Exception:
        return "", True
    if len(loose) != 1 or len(strict) != 1 or loose[0].lower() != strict[0].lower() or "@" not in loose[0]:
        return "", True
    return loose[0].strip().lower(), False


_BOUNDARY = re.compile(rb'boundary[ \t]*=[ \t]*"?([^";\r\n]{1,200})', re.IGNORECASE)


def _too_complex(raw: bytes) -> str | None:
    """Why a message has too many parts to read, judged from its bytes before it is parsed (the parser
    itself recurses once per nested part)."""
    lowered = raw.lower()
    containers = lowered.count(b"multipart/") + lowered.count(b"message/")
    if containers > MAX_PARTS:
        return f"it has more than {MAX_PARTS} parts"
    # Each part begins with a line "--BOUNDARY"; the parser is slow with very many of them.
    lines = 0
    for boundary in set(_BOUNDARY.findall(raw)[:MAX_PARTS]):
        lines += raw.count(b"\n--" + boundary.strip())
        if lines > 2 * MAX_PARTS + 2:
            return f"it has more than {MAX_PARTS} parts"
    return None


def _check_structure(message: Message) -> str | None:
    """Why a parsed message's structure is too big to read (too many parts, nested too deep), or None."""
    count = 0
    stack: list[tuple[Message, int]] = [(message, 0)]
    while stack:
        part, depth = stack.pop()
        count += 1
        if count > MAX_PARTS:
            return f"it has more than {MAX_PARTS} parts"
        if depth > MAX_DEPTH:
            return f"its parts are nested more than {MAX_DEPTH} deep"
        payload = part.get_payload() if part.is_multipart() else None
        if isinstance(payload, list):
            stack.extend((child, depth + 1) for child in payload if isinstance(child, Message))
    return None


def read(raw: bytes, rcpt_to: str = "") -> Incoming:
    """Parse ``raw`` (never raises): sender, subject, the envelope or header recipients, and the text.

    A message that cannot be read comes back with ``unreadable`` set and the headers that could be read.
    """
    unreadable = _too_complex(raw)
    message: Message
    try:
        if unreadable is None:
            message = email.message_from_bytes(raw, policy=READING_POLICY)
            unreadable = _check_structure(message)
        if unreadable is not None:
            message = email.parser.BytesParser(policy=READING_POLICY).parsebytes(raw, headersonly=True)
    except Exception as exc:  # The parser itself gave up (RecursionError, a broken header).
        log.info("unreadable message: %s: %s", type(exc).__name__, exc)
        unreadable = "it is not a well-formed mail message"
        message = email.parser.BytesParser(policy=READING_POLICY).parsebytes(
            raw.split(b"\n\n", 1)[0][:64 * 1024], headersonly=True
        )
    from_addr, ambiguous = sender(message)
    recipients = [a.strip().lower() for a in rcpt_to.split(",") if a.strip()]
    if not recipients:
        # Piped in by `pbem ingest`: the MTA's headers say where the message was delivered.
        fields = [header_text(message, h) for h in ("Delivered-To", "X-Original-To", "To", "Cc")]
        try:
            recipients = [addr.lower() for _, addr in getaddresses([f for f in fields if f]) if addr]
        except Exception:
            recipients = []
    text = ""
    if unreadable is None:
        try:
            text = body_text(message)
        except Exception as exc:  # A part that defeats every decoder: say so rather than guess.
            log.info("unreadable body: %s: %s", type(exc).__name__, exc)
            unreadable = "its text could not be decoded"
    return Incoming(
        message=message,
        message_id=header_text(message, "Message-ID"),
        from_addr=from_addr,
        subject=header_text(message, "Subject"),
        recipients=recipients,
        text=text,
        unreadable=unreadable,
        from_ambiguous=ambiguous,
        size=len(raw),
    )


def body_text(message: Message) -> str:
    """The message's text: the plain part if there is one, else the HTML part with its tags stripped."""
    part: Message | None = None
    if isinstance(message, EmailMessage):
        try:
            part = message.get_body(preferencelist=("plain", "html"))
        except Exception:
            part = None
    if part is None:
        part = _first_text_part(message)
    if part is None:
        return ""
    text = _decoded(part)
    if part.get_content_subtype() == "html":
        text = html_to_text(text)
    elif not text.strip():
        # Some mail programs send an empty plain part beside the HTML one the player wrote in.
        html = _html_alternative(message)
        if html is not None:
            text = html_to_text(_decoded(html))
    # A byte-order mark some programs put before the text is no part of it.
    text = text.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    return _CONTROL.sub("", text)


def _html_alternative(message: Message) -> Message | None:
    """The HTML body of ``message`` (None when it has none, or it cannot be found)."""
    if not isinstance(message, EmailMessage):
        return None
    try:
        return message.get_body(preferencelist=("html",))
    except Exception:
        return None


def _first_text_part(message: Message) -> Message | None:
    for part in message.walk():
        if part.get_content_maintype() == "text":
            return part
    # A multipart whose parts could not be found (a broken boundary) has no text we can trust.
    return None if message.get_content_maintype() == "multipart" else message


def _decoded(part: Message) -> str:
    """The part's text, decoded from its transfer encoding and charset, replacing what will not decode."""
    try:
        content = part.get_content()
        if isinstance(content, str):
            return content
    except Exception:  # Unknown charset, broken base64: fall back to the bytes.
        pass
    try:
        payload = part.get_payload(decode=True)
    except Exception:
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    try:
        charset = part.get_content_charset() or "utf-8"
        return payload.decode(charset, errors="replace")
    except (LookupError, ValueError):  # An unknown charset, or one with a NUL in its name.
        return payload.decode("utf-8", errors="replace")


# HTML is turned into text by a few regular-expression passes that each run in linear time (every
# pattern stops at the next "<", or is bounded), so hostile markup cannot make the reader slow.
_DECLARATIONS = re.compile(r"<!--.*?(?:-->|\Z)|<[!?][^<>]*>", re.DOTALL)
_HIDDEN = re.compile(r"<(script|style|head|title)\b[^<>]*>.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
# Quoted blocks: <blockquote>, and the <div class="…quote…"> some clients use (the class is looked for
# among the tag's first 200 characters).
_QUOTE_MARK = re.compile(r"<(/?)blockquote\b[^<>]*>|<div\b[^<>]{0,200}?quote[^<>]*>", re.IGNORECASE)
_BLOCK_TAG = re.compile(r"</?(?:p|div|br|tr|li|h[1-6]|pre|table|hr)\b[^<>]*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_SPACES = re.compile(r"[^\S\n]+")
_LINE_EDGES = re.compile(r"^ | $", re.MULTILINE)
_NON_EMPTY_LINE = re.compile(r"^(?=[^\n])", re.MULTILINE)


def html_to_text(html: str) -> str:
    """The text a person sees in ``html``, one block per line, quotes marked with ``>``."""
    html = _HIDDEN.sub("", _DECLARATIONS.sub("", html))
    pieces: list[str] = []
    depth = pos = 0
    for mark in _QUOTE_MARK.finditer(html):
        pieces.append(_flat(html[pos : mark.start()], depth))
        pos = mark.end()
        depth = max(0, depth - 1) if mark.group(1) == "/" else depth + 1
    pieces.append(_flat(html[pos:], depth))
    return "\n".join(pieces)


def _flat(html: str, depth: int) -> str:
    """A stretch of HTML without quote marks as lines of text, each marked ``>`` ``depth`` times."""
    text = _ANY_TAG.sub("", _BLOCK_TAG.sub("\n", html))
    text = _LINE_EDGES.sub("", _SPACES.sub(" ", unescape(text)))
    return _NON_EMPTY_LINE.sub("> " * depth, text) if depth else text


def _line(lines: list[str], i: int) -> str:
    """Line ``i`` as the quote detection sees it: stripped, and cut to MAX_LINE characters."""
    return lines[i][:MAX_LINE].strip()


def _is_attribution(text: str, wrapped: bool) -> bool:
    """Whether ``text`` is an attribution such as "alice wrote:" or (possibly ``wrapped`` over several
    lines) "On Tue, 3 May, alice <a@b> wrote:"."""
    if len(text) > _MAX_ATTRIBUTION or not text.endswith(":"):
        return False
    if not wrapped and _VERB_AT_END.search(text):
        return True
    return _OPENERS.match(text) is not None and _VERB_WORD.search(text) is not None


def _quote_starts(lines: list[str], i: int) -> bool:
    """Whether line ``i`` opens the quoted part: a ``>`` line, an attribution ("On … wrote:", possibly
    wrapped over three lines), a separator, an Outlook header block, or a signature ``-- ``."""
    line = _line(lines, i)
    if not line:
        return False
    first = line[0]
    if first == ">" or lines[i] in _SIGNATURE_MARKS:
        return True
    if first in "-_" and _SEPARATORS.fullmatch(line):
        return True
    # An attribution ends with ":" on this line or one of the next two (cheap to rule out first).
    end = min(i + 3, len(lines))
    if any(lines[j].rstrip().endswith(":") for j in range(i, end)):
        wrapped = ""
        for j in range(i, end):
            wrapped = f"{wrapped} {_line(lines, j)}".strip()
            if len(wrapped) > _MAX_ATTRIBUTION:
                break
            if _is_attribution(wrapped, j > i):
                return True
    # Outlook quotes with a block of headers: "From: …" then "Sent: …".
    if ":" not in line or i + 1 >= len(lines):
        return False
    return bool(_HEADER_BLOCK.match(line) and _HEADER_BLOCK.match(_line(lines, i + 1)))


def own_words(text: str) -> list[str]:
    """The lines the sender wrote above the quoted text (or, when they wrote under the quote, their
    unquoted lines after it), without a signature or trailing "Sent from my phone" lines.

    Only the first MAX_LINES lines are looked at: a command is never further down than that.
    """
    lines = text.split("\n", MAX_LINES)[:MAX_LINES]
    above: list[str] = []
    start = len(lines)
    for i in range(len(lines)):
        if _quote_starts(lines, i):
            start = i
            break
        above.append(lines[i])
    if not any(s.strip() for s in above):
        # Written under the quote: the unquoted lines after it, up to a signature.  A signature before
        # anything was written (a reply that is only a signature, or one sent above the quote) is no
        # part of the player's words: it runs to the next quote, and only what follows that can be.
        above = []
        written = in_signature = False
        for i in range(start, len(lines)):
            if lines[i] in _SIGNATURE_MARKS:
                if written:
                    break
                in_signature = True
            elif _quote_starts(lines, i):
                in_signature = False
            elif not in_signature:
                above.append(lines[i])
                written = written or bool(lines[i].strip())
    words = [s.rstrip() for s in above]
    while words and (not words[-1].strip() or _SENT_FROM.match(words[-1][:MAX_LINE].strip())):
        words.pop()
    return words


# A comment is read up to one character more than it may hold, so that the command it goes with knows
# whether it was longer (and says so) while what is read stays bounded.
COMMENT_READ = MAX_COMMENT + 1


def own_text(text: str) -> str:
    """The sender's own words (see :func:`own_words`) as one comment, cut to ``COMMENT_READ``."""
    return "\n".join(own_words(text)).strip()[:COMMENT_READ]


# Invisible format characters that mail programs and keyboards leave at the ends of a line: a byte-order
# mark, zero-width spaces and joiners, the word joiner.  Python does not count them as white space.
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"


def command_line(line: str) -> str:
    """``line`` as a command: its words separated by single spaces, without the invisible characters
    (see ``_INVISIBLE``) at its ends."""
    return " ".join(line.strip(_INVISIBLE + " \t").split()).strip(_INVISIBLE + " ")


def command_and_comment(text: str) -> tuple[str, str]:
    """The command (the first line of the sender's own words with anything visible on it) and the
    comment (the rest)."""
    words = own_words(text)
    for i, line in enumerate(words):
        command = command_line(line)
        if command:
            comment = "\n".join(words[i + 1 :]).strip()
            return command, comment[:COMMENT_READ]
    return "", ""
