"""Text from outside, made safe to store and to write into a header: the one place that knows which
characters no input may carry.

Whatever a channel reads — a form field, a query parameter, a part of a URL's path, a JSON body, a mail's
headers and text, an imported record — it passes through here before it reaches the database or a mail
header.  The characters refused are the control characters (C0 but tab, line feed and carriage return;
DEL; C1) and lone surrogates: PostgreSQL refuses a NUL in text, a surrogate cannot be written in UTF-8,
and none of them is anything a person means to write.  Each channel either cleans them away (what people
type and mail: a pasted word-processor line break must not cost them their comment) or refuses the input
with an error naming it (what programs send: a bot is told rather than quietly changed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from flask import Request
from werkzeug.datastructures import ImmutableMultiDict, MultiDict

# Every character no text from outside may carry.  Tab, line feed and carriage return are kept where
# text may have them (see :func:`clean`).
_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# The same with the line breaks and tabs, for a text that must stay on one line (a header, a handle).
_FORBIDDEN_ON_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_LINE_BREAKS = re.compile(r"[\t\n\r]+")

# A mail address as nearly every MTA and player writes it: a dot-atom, "@", a host name (nothing quoted,
# no comments, no address literal).  Such an address is written the same in an SMTP path and a header,
# so the mail listener and the deliverer take it as it is and leave every other form to the email parsers.
PLAIN_ADDRESS = (r"(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+\.)*[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
                 r"@(?:[A-Za-z0-9-]+\.)*[A-Za-z0-9-]+")

# The deepest JSON a program may send: the API's bodies and the records of `pbem import` are a few levels
# deep (an option's value inside a record's options is three).
MAX_JSON_DEPTH = 8


def clean(text: str) -> str:
    """``text`` without the characters no input may carry (tab and line breaks stay)."""
    return _FORBIDDEN.sub("", text)


def clean_line(text: str) -> str:
    """``text`` on one line, as a header or a name: line breaks and tabs become one space, and the
    characters no input may carry go."""
    return _FORBIDDEN.sub("", _LINE_BREAKS.sub(" ", text))


def is_clean(text: str, *, one_line: bool = False) -> bool:
    """Whether ``text`` carries none of the characters no input may carry (nor, ``one_line``, a tab or
    line break)."""
    return (_FORBIDDEN_ON_ONE_LINE if one_line else _FORBIDDEN).search(text) is None


def clean_pairs(pairs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """Form fields or query parameters with every text key and value cleaned (files pass as they are)."""
    for key, value in pairs:
        yield clean(key), clean(value) if isinstance(value, str) else value


class CleanMultiDict(ImmutableMultiDict):
    """Form fields or query parameters as werkzeug reads them, each text cleaned as it is read."""

    def __init__(self, mapping: Any = None) -> None:
        if isinstance(mapping, MultiDict):
            pairs: Iterable[tuple[str, Any]] = mapping.items(multi=True)
        elif isinstance(mapping, Mapping):
            pairs = ((key, value) for key, values in mapping.items()
                     for value in (values if isinstance(values, list | tuple) else [values]))
        else:
            pairs = mapping or ()
        super().__init__(list(clean_pairs(pairs)))


class CleanRequest(Request):
    """The app's request: its form fields and query parameters (``form``, ``args``, ``values``) are
    cleaned as they are parsed, so no view, web or API, ever reads a control character from them."""

    parameter_storage_class = CleanMultiDict


class BadInput(ValueError):
    """A structured input (a JSON body, a record) that cannot be taken: ``where`` names the place in it
    (``comment``, ``options.size``, ``moves.3.text``), or is '' for the whole."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where, self.message = where, message


class TooDeep(BadInput):
    """A JSON value nested deeper than is read."""


def check_json(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse (:class:`BadInput`) a parsed JSON value nested deeper than ``max_depth``, or holding a key
    or a string that is not clean text.  Iterative, so any depth costs one pass and no recursion."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if not is_clean(item):
                raise BadInput(where, "holds a control character (such as NUL), which no text may carry")
            continue
        if not isinstance(item, Mapping | list):
            continue
        if depth >= max_depth:
            raise TooDeep(where, f"is nested more than {max_depth} levels deep")
        children = item.items() if isinstance(item, Mapping) else enumerate(item)
        for key, child in children:
            name = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and not is_clean(key):
                raise BadInput(where, "has a key holding a control character")
            stack.append((child, name, depth + 1))
