"""Cutting this server's secrets out of text that other people read: one idea, one piece of code.

Whatever a player writes for others (the comment of a move, a resignation, a draw offer or answer, the
words with an answer to a challenge) reaches their opponents' mail, the game's page, its public record
and the API.  A mail program that quotes the move request where the server does not see a quote, or a
player who pastes a link, would hand on what acts for the player: a one-click move link, the reply
address, a bounce address, an API token, their mail key.  :func:`blank_secrets` is the last guard, run
on every such text where it enters (:func:`pbem.play` records it, :mod:`pbem.challenges` passes it on),
whatever channel it came by and however its quotes were (not) read:

- a link of ours that carries a secret (``<base_url>/m/…``, ``/verify/…``, ``/reset/…``,
  ``/settings/email/…``: every route with a ``<token>``, as the log filter knows them), with or without
  the scheme or host, is :data:`LINK_REMOVED`; a link to a page of ours without one (``/games/12``) stays;
- a signed token on its own (itsdangerous' form, a link broken over two lines), and an API token
  (``pbem_…``), are :data:`TOKEN_REMOVED`;
- a reply or bounce address (``play+TOKEN@…``, ``bounces+TOKEN@…``, also as ``mailto:`` and
  percent-encoded), whatever its domain, is :data:`ADDRESS_REMOVED`;
- the mail key of the author or of another player of the game, in any case, is :data:`KEY_REMOVED`
  (keys are stored hashed: each word shaped like a key is hashed and looked up).

The web servers' log filter (:mod:`pbem.web.secretlinks`) cuts the secret out of the same paths, found by
the same :func:`secret_path_prefixes`, keeping the path for the operator.

Every pattern is one pass without nested repetition, so a text is read in linear time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from flask import Flask, current_app

from pbem.models import User, hash_mail_key, is_key_shaped

LINK_REMOVED = "[link removed]"
ADDRESS_REMOVED = "[address removed]"
TOKEN_REMOVED = "[token removed]"
KEY_REMOVED = "********"
# What stands for the secret of a secret path in a log line (the path itself is kept there).
REDACTED = "[redacted]"

# The start of every API token (see pbem.apitokens, which imports this).
API_TOKEN_PREFIX = "pbem_"
# The local parts of the addresses whose token acts: replies to a game, and the envelope sender of a mail.
TOKEN_ADDRESS_LOCALS = ("play", "bounces")

# A secret, after its path's prefix, runs to whatever ends a path's segment.
_SECRET = r"[^/?#\s\"'<>\x1b]"
# The characters of a URL as it stands in a text (the brackets and quotes around one end it).
_URL_CHARS = r"[^\s<>\"'()\[\]{}]"
# Signed tokens (itsdangerous, and JWTs alike) are base64url JSON: ``{"`` is always ``eyJ``.
_SIGNED = r"eyJ[A-Za-z0-9_-]{16,}(?:\.[A-Za-z0-9_-]+){0,2}"
_API_TOKEN = rf"(?<![A-Za-z0-9_]){API_TOKEN_PREFIX}[A-Za-z0-9_-]{{20,}}"
_TOKEN_ADDRESS = (rf"(?i:(?<![\w.+-])(?:mailto:)?(?:{'|'.join(TOKEN_ADDRESS_LOCALS)})(?:\+|%2b)"
                  r"[a-z0-9]{16,}(?:(?:@|%40)[a-z0-9.-]+)?)")
# Words that could be a mail key, checked one by one against the author's.
_KEY_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z0-9]{16}(?![A-Za-z0-9])")
# Standing alone anywhere (in a kept link of ours too): what is no link of ours but acts all the same.
_LOOSE = f"(?P<signed>{_SIGNED})|(?P<api>{_API_TOKEN})|(?P<address>{_TOKEN_ADDRESS})"
_LOOSE_PATTERN = re.compile(_LOOSE)


def secret_path_prefixes(app: Flask) -> frozenset[str]:
    """The paths, up to their secret, of the app's links that carry one: ``/verify/``, ``/m/``…

    Every URL rule with a ``<token>`` variable is one, so a new kind of link is covered without being
    listed anywhere."""
    return frozenset(
        rule.rule.split("<", 1)[0] for rule in app.url_map.iter_rules() if "token" in rule.arguments
    )


def _alternatives(prefixes: Iterable[str]) -> str:
    """The prefixes as one alternation, longest first (so ``/settings/email/`` wins over a shorter one)."""
    return "|".join(re.escape(p) for p in sorted(prefixes, key=len, reverse=True))


def secret_path_pattern(prefixes: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern of the secret paths: group 1 the prefix, group 2 the secret (None for no prefixes).

    Literal prefixes, then the secret up to whatever ends a path's segment: no nested repetition."""
    prefixes = frozenset(prefixes)
    if not prefixes:
        return None
    return re.compile(f"({_alternatives(prefixes)})({_SECRET}+)")


class _CommentPattern:
    """The pattern of one app's secrets in a text: its base URL's host and its secret paths."""

    def __init__(self, host: str, prefixes: frozenset[str]) -> None:
        self.prefixes = prefixes
        parts = [_LOOSE]
        if prefixes:
            # A secret path alone (a link whose host was broken off, or written by hand): the secret
            # must be long enough to be one, so that prose such as "I/m/bored" stays.
            parts.insert(0, f"(?P<path>(?:{_alternatives(prefixes)}){_SECRET}{{8,}}{_URL_CHARS}*)")
        if host:
            # A link to this server, with or without its scheme; whether it carries a secret is decided
            # on its path (see _blank_match).
            parts.insert(0, rf"(?P<ours>(?i:(?:https?://)?(?<![\w.-]){re.escape(host)}(?::\d+)?)"
                            rf"(?P<rest>/{_URL_CHARS}*)?)")
        self.pattern = re.compile("|".join(parts))


def _comment_pattern() -> _CommentPattern:
    """The current app's pattern, made once per app (after its routes are registered)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    made = app.extensions.get("pbem.redaction")
    if made is None:
        host = urlsplit(app.config["PBEM"]["server"]["base_url"]).hostname or ""
        made = app.extensions["pbem.redaction"] = _CommentPattern(host, secret_path_prefixes(app))
    return made


def _marker(found: str, marker: str) -> str:
    """``marker`` for the secret ``found``, never longer than it: a comment never grows past its bound."""
    return marker if len(marker) <= len(found) else "*" * len(found)


def _blank_loose(found: re.Match[str]) -> str:
    if found.lastgroup == "address":
        return _marker(found.group(0), ADDRESS_REMOVED)
    return _marker(found.group(0), TOKEN_REMOVED)


def blank_secrets(text: str, players: Iterable[User] = ()) -> str:
    """``text`` as others may read it: this server's secret links, reply and bounce addresses, signed and
    API tokens, and the mail key of any of ``players`` (the author, and the others of their game, whose
    keys a quoted mail could hold) blanked (see the module's docstring); the rest as written."""
    if not text:
        return text
    patterns = _comment_pattern()

    def blank(found: re.Match[str]) -> str:
        kind = found.lastgroup
        if kind in ("ours", "rest"):
            path = found.group("rest") or ""
            if any(path.startswith(prefix) for prefix in patterns.prefixes):
                return _marker(found.group(0), LINK_REMOVED)
            # A page of ours without a secret in its path stays, less any token in its query.
            return _LOOSE_PATTERN.sub(_blank_loose, found.group(0))
        if kind == "path":
            return _marker(found.group(0), LINK_REMOVED)
        return _blank_loose(found)

    text = patterns.pattern.sub(blank, text)
    key_hashes = {user.mail_key_hash for user in players if user is not None and user.mail_key_hash}
    return _blank_mail_keys(text, key_hashes) if key_hashes else text


def _blank_mail_keys(text: str, key_hashes: set[str]) -> str:
    """``text`` with every word whose key hash is one of ``key_hashes`` hidden, in any case (a key is
    stored only as its hash, so each word shaped like a key is hashed and looked up)."""
    def blank(found: re.Match[str]) -> str:
        word = found.group(0)
        return KEY_REMOVED if is_key_shaped(word) and hash_mail_key(word) in key_hashes else word

    return _KEY_WORD.sub(blank, text)


def blank_key(text: str, key: str) -> str:
    """``text`` (a subject, a comment) with the mail key ``key`` hidden wherever it stands, in any case
    (keys are read in any case), so that answers and records never carry it."""
    return re.sub(re.escape(key), KEY_REMOVED, text, flags=re.IGNORECASE)


def init_app(app: Flask) -> None:
    """Make the app's pattern now that its routes are registered (rather than on the first comment)."""
    app.extensions.pop("pbem.redaction", None)
    with app.app_context():
        _comment_pattern()
