"""Reading a stored message: its sender, subject and recipients, and its text (whose reading, the
player's own words and the command in them, is :mod:`pbem.mail.quotes` and :mod:`pbem.mail.reading`).

Mail arrives in every shape: plain or HTML-only, quoted-printable or base64, any charset, with the
whole conversation quoted below (or above) the answer, and sometimes broken.  Nothing here raises on a
bad message; what cannot be decoded is read as best it can be, and an empty text is the worst case.
"""

from __future__ import annotations

import codecs
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
from typing import Any

from pbem.core import inputs
from pbem.core.models import SUBJECT_TAG
from pbem.mailin.htmltext import html_to_text

log = logging.getLogger(__name__)

# Limits that keep reading linear in the size of the message, whatever it holds.  A header longer than
# MAX_HEADER characters is cut there (an address header that long is unreadable); a message with more than
# MAX_PARTS MIME parts, or parts nested deeper than MAX_DEPTH, is not read.  (How much of a text is read
# for the player's words: pbem.mailin.quotes.)
MAX_HEADER = 2000
MAX_PARTS = 100
MAX_DEPTH = 10


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
        """The parsed header (see :func:`fetch_header`), of its first MAX_HEADER characters only: the
        parser's reading of parameters is not linear (a Content-Type of 43,000 ``name*N=`` parameters
        took a minute), and no header a mail needs is longer."""
        if hasattr(value, "name"):
            return value
        return fetch_header(name, value[:MAX_HEADER])


READING_POLICY = _ReadingPolicy()


# One "Re:", "Fwd:", "AW:", "Re[2]:" (also Polish "Odp:", Portuguese "Res:", Italian "Rif:", Russian
# "Ответ:") or "[pbem]" (our tag) at the start of a subject; matched at a position and never searched for,
# so stripping any number of them takes linear time.
_PREFIX = re.compile(
    r"\s*(?:(?:re|aw|sv|wg|fwd?|fw|tr|antw|vs|rv|enc|r|odp|res|rif|ответ|отв)\s*(?:\[\d{1,9}\])?\s*:"
    rf"|{re.escape(SUBJECT_TAG)})\s*",
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
    """``name``'s value, decoded, on one line, without control characters (an encoded word may hold a
    NUL); '' when absent or so broken it cannot be read.

    Only the first MAX_HEADER characters are decoded, so a huge header costs no more than a normal one.
    """
    try:
        raw = _raw_header(message, name)
        if raw is None:
            return ""
        value = fetch_header(name, raw)
    except Exception:  # A header the parser chokes on reads as missing.
        return ""
    return " ".join(inputs.clean_line(str(value)).split())


def sender(message: Message) -> tuple[str, bool]:
    """The From address, lowercased, and whether the header was ambiguous.

    A From header is only trusted when it names exactly one address and two parsers agree on which:
    ``alice@x <mallory@y>`` or ``alice@x, mallory@y`` would otherwise be read as alice by one program
    and as mallory by another.  An ambiguous header gives ('', True); a missing one ('', False).
    """
    raw = _raw_header(message, "From")
    if raw is None or not raw.strip():
        return "", False
    # A player's From header is the same from one mail to the next: read once (a tenth of the parse).
    if len(raw) <= _KEEP_VALUES_UP_TO:
        return _sender_of(raw)
    return _sender_of.__wrapped__(raw)


@lru_cache(maxsize=2048)
def _sender_of(raw: str) -> tuple[str, bool]:
    """:func:`sender` of a From header written ``raw``."""
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
    try:
        # An 8-bit header comes from the parser as escaped bytes: the address as it was written.
        address = loose[0].strip().encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeError:
        return "", True
    if not inputs.is_clean(address, one_line=True):  # No address holds a control character.
        return "", True
    return address.lower(), False


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
    recipients = [a.strip().lower() for a in inputs.clean_line(rcpt_to).split(",") if a.strip()]
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
    return inputs.clean(text).replace("\r", "")


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


# The charsets a part's text is decoded from: those mail is written in.  Python's other codecs are no
# charsets of mail, and some cost far more than a pass over the text (punycode and idna are quadratic:
# 410 KB of punycode took 7.6 s); a part that names one is read as UTF-8, as one naming an unknown
# charset is.
MAIL_CHARSETS = frozenset(codecs.lookup(name).name for name in (
    "ascii", "utf-8", "utf-8-sig", "utf-7", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le",
    "utf-32-be", "latin-1", *(f"iso8859-{n}" for n in (*range(2, 12), *range(13, 17))),
    "cp037", *(f"cp{n}" for n in (*range(1250, 1259), 273, 424, 437, 500, 720, 737, 775, 850, 852, 855, 856,
                         857, 858, *range(860, 867), 869, 874, 875, 932, 949, 950, 1006, 1026, 1125, 1140)),
    "koi8-r", "koi8-u", "koi8-t", "kz1048", "ptcp154", "hp-roman8", "tis-620", "mac-roman", "mac-cyrillic",
    "mac-greek", "mac-iceland", "mac-latin2", "mac-turkish", "big5", "big5hkscs", "gb2312", "gbk",
    "gb18030", "hz", "euc-jp", "euc-jis-2004", "euc-jisx0213", "euc-kr", "johab", "shift-jis",
    "shift-jis-2004", "shift-jisx0213", "iso2022-jp", "iso2022-jp-1", "iso2022-jp-2", "iso2022-jp-2004",
    "iso2022-jp-3", "iso2022-jp-ext", "iso2022-kr",
))


def mail_charset(part: Message) -> str:
    """The charset ``part``'s text is decoded from: the one it names, if mail is written in it, else
    UTF-8."""
    try:
        named = codecs.lookup(part.get_content_charset() or "utf-8").name
    except (LookupError, ValueError):  # Unknown, or a name with a NUL in it.
        return "utf-8"
    return named if named in MAIL_CHARSETS else "utf-8"


def _decoded(part: Message) -> str:
    """The part's text, decoded from its transfer encoding and charset (see :func:`mail_charset`),
    replacing what will not decode."""
    try:
        payload = part.get_payload(decode=True)
    except Exception:  # Broken beyond what the decoder forgives.
        payload = None
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    return payload.decode(mail_charset(part), errors="replace")
