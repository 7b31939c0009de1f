"""An HTML mail part as the text a person sees, with what mail programs quote marked as quoted.

A reply written in HTML carries the mail it answers in a container of its program's own: Gmail's
``gmail_quote`` div, Yahoo's ``yahoo_quoted``, Apple's and Thunderbird's ``<blockquote type=cite>`` (and
Thunderbird's ``moz-cite-prefix`` attribution), or, in the programs that put the reply above everything
else, a mark after which all the rest is the mail answered: Outlook's ``divRplyFwdMsg`` and
``appendonsend`` and the header div with a top border (Outlook desktop, Windows Mail, BlackBerry),
Hotmail's ``stopSpelling`` and Zimbra's ``zwchr`` rules, AOL's message part.  Every line inside such a
container comes out marked ``> `` (once per level), as a quoted line of a plain-text mail would be, so
the reading of a reply treats both alike (see :mod:`pbem.mailin.quotes`).

White space in HTML source is a space, never a line break (a line break in the source between ``From:``
and its value must not split a header line in two); only block tags and ``<br>`` break lines, and
``<pre>`` keeps its lines.  Every step is one pass over the markup by patterns that stop at the next
``<`` or are bounded, so hostile markup costs time in proportion to its size.
"""

from __future__ import annotations

import re
from html import unescape

_DECLARATIONS = re.compile(r"<!--.*?(?:-->|\Z)|<[!?][^<>]*>", re.DOTALL)
_HIDDEN = re.compile(r"<(script|style|head|title)\b[^<>]*>.*?(?:</\1\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_PRE = re.compile(r"<pre\b[^<>]*>.*?(?:</pre\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_WHITE = re.compile(r"\s+")
# The tags that nest quotes (and a rule that may open the rest of the mail as the mail answered).
_CONTAINER = re.compile(r"<(/?)(div|blockquote|hr)\b([^<>]*)>", re.IGNORECASE)
_BR = re.compile(r"<br\b[^<>]*>", re.IGNORECASE)
_BLOCK = re.compile(  # (The look ahead at the first letter fails fast on markup of many "<".)
    r"<(?=/?[PLUOTHDSAFBpluothdsafb])/?(?:p|li|ul|ol|tr|h[1-6]|pre|table|dl|dt|dd|section|article|header"
    r"|footer|body)\b[^<>]*>",
    re.IGNORECASE,
)
_ANY_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
# An attribute's value (class, id, style), unquoted or in either quotes, its first 300 characters.
_ATTRIBUTE = re.compile(
    r"""\b(class|id|style)\s*=\s*(?:"([^"]{0,300})|'([^']{0,300})|([^\s"'>]{1,300}))""", re.IGNORECASE
)
# Containers whose content is the quoted mail: by a word in their class or id.
_QUOTE_CONTAINER = re.compile(r"quote|moz-cite-prefix", re.IGNORECASE)
# Marks after which the rest of the mail is the mail answered (programs that only ever write above it).
_REST_QUOTED_IDS = ("divrplyfwdmsg", "appendonsend", "_persistentheader", "_originalcontent",
                    "stopspelling", "zwchr", "aolmsgpart", "mail-editor-reference-message-container",
                    "outlookmessageheader")
# Deeper nesting than this is not followed (it reads as this deep): hostile markup cannot grow the stacks.
_MAX_NESTING = 1000
# A line is marked quoted at most this many times (deeper is as deep), so marks never outgrow the text.
_MOST_MARKS = 10

# While the text is put together, a block's edge is SOFT (it ends a line that holds something; an empty
# block is no line) and <br> a line break (it ends the line, empty or not: <div><br></div> is a blank
# line); the quote depth from there on is a character of its own, DEPTH + depth.
_SOFT = "\x01"
_DEPTH = 0xE000
_DEPTHS = "\ue000-\ue3ff"
_DEPTH_BEFORE_DEPTH = re.compile(f"[{_DEPTHS}](?=[{_SOFT} ]*[{_DEPTHS}])")
_SOFT_RUN = re.compile(f"{_SOFT}[{_SOFT} ]*(?:([{_DEPTHS}])[{_SOFT} ]*)?")
_SOFT_AT_LINE_START = re.compile(f"(^|\n) *{_SOFT}")
_DEPTH_MARK = re.compile(f"([{_DEPTHS}])")
# The characters used as marks, should the mail hold them already.
_MARKS = re.compile(f"[{_SOFT}{_DEPTHS}]")
_LINE_EDGES = re.compile(r"^ +| +$", re.MULTILINE)
_NON_EMPTY_LINE = re.compile(r"^(?=[^\n])", re.MULTILINE)


def _attributes(text: str) -> dict[str, str]:
    """The class, id and style attributes of a tag's attribute text, lowercased."""
    found: dict[str, str] = {}
    for match in _ATTRIBUTE.finditer(text):
        name = match.group(1).lower()
        found.setdefault(name, next((g for g in match.groups()[1:] if g is not None), "").lower())
    return found


def _opens_rest_of_quote(tag: str, attributes: dict[str, str]) -> bool:
    """Whether this tag marks the start of the mail answered, everything after it being quoted."""
    names = f"{attributes.get('id', '')} {attributes.get('class', '')}"
    if any(mark in names for mark in _REST_QUOTED_IDS):
        return True
    # Outlook desktop, Windows Mail and BlackBerry open the header block of the mail answered with a
    # div with a solid top border.
    style = attributes.get("style", "")
    return tag == "div" and "border-top" in style and "solid" in style


class _Containers:
    """The quote containers open at each point of the markup, read tag by tag."""

    def __init__(self) -> None:
        # For each open div and blockquote, innermost last: whether it is a quote container.
        self.open: dict[str, list[bool]] = {"div": [], "blockquote": []}
        self.depth = self.rest = 0

    def mark(self, tag: re.Match[str]) -> str:
        """The tag as a soft line break and the quote depth after it."""
        closing, name = tag.group(1) == "/", tag.group(2).lower()
        stack = self.open.get(name)
        if stack is not None and closing:
            # Close the innermost open one of this name (markup may be broken: nothing if none is).
            self.depth -= stack.pop() if stack else 0
        elif not closing and (stack is None or len(stack) < _MAX_NESTING):
            said = tag.group(3)
            attributes = _attributes(said) if "=" in said else {}
            if not self.rest and _opens_rest_of_quote(name, attributes):
                self.rest = 1
            if stack is not None:
                quoting = name == "blockquote" or bool(
                    _QUOTE_CONTAINER.search(f"{attributes.get('class', '')} {attributes.get('id', '')}"))
                stack.append(quoting)
                self.depth += quoting
        return _SOFT + chr(_DEPTH + min(self.depth + self.rest, _MOST_MARKS))


def html_to_text(html: str) -> str:
    """The text a person sees in ``html``, one block per line, quoted containers marked with ``>``.

    Each step is one pass over the markup by a pattern that stops at the next ``<`` or is bounded, so
    hostile markup costs time in proportion to its size."""
    # A pass is skipped when the markup has nothing it looks for (hostile markup may be all "<").
    lowered = html.lower()
    if "<!" in html or "<?" in html:
        html = _DECLARATIONS.sub("", html)
    if any(f"<{name}" in lowered for name in ("script", "style", "head", "title")):
        html = _HIDDEN.sub("", html)
    if "<pre" in lowered:
        html = _PRE.sub(lambda pre: pre.group().replace("\n", "<br>"), html)
    html = _MARKS.sub("", _WHITE.sub(" ", html))
    if "<div" in lowered or "<blockquote" in lowered or "<hr" in lowered:
        html = _CONTAINER.sub(_Containers().mark, html)
    if "<br" in lowered or "<pre" in lowered:
        html = _BR.sub("\n", html)
    html = _ANY_TAG.sub("", _BLOCK.sub(_SOFT, html))
    text = unescape(html)
    # Line breaks: a run of block edges is one; at the start of a line, none.  A depth mark stays where
    # its run was (the last of the run: the depth from there on).
    text = _SOFT_RUN.sub(lambda run: _SOFT + (run.group(1) or ""), _DEPTH_BEFORE_DEPTH.sub("", text))
    text = _SOFT_AT_LINE_START.sub(r"\1", text).replace(_SOFT, "\n").replace("\xa0", " ")
    pieces = _DEPTH_MARK.split(text)
    lines = [pieces[0]]
    for i in range(1, len(pieces), 2):
        depth, piece = ord(pieces[i]) - _DEPTH, pieces[i + 1]
        if depth and piece:
            piece = _NON_EMPTY_LINE.sub("> " * depth, _LINE_EDGES.sub("", piece))
        lines.append(piece)
    return _LINE_EDGES.sub("", "".join(lines)).strip("\n")
