"""Cutting this server's secrets out of text that other people read: one idea, one piece of code.

Whatever a player writes for others (the comment of a move, a resignation, a draw offer or answer, the
words with an answer to a challenge) reaches their opponents' mail, the game's page, its public record
and the API.  A mail program that quotes the move request where the server does not see a quote, or a
player who pastes a link, would hand on what acts for the player: a one-click move link, the reply
address, a bounce address, an API token, their mail key.  :func:`blank_secrets` is the last guard, run
on every such text where it enters (:mod:`pbem.game.play` records it, :mod:`pbem.lobby.challenges`
passes it on, :mod:`pbem.archive.records` imports it), whatever channel it came by and however its
quotes were (not) read:

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

No pattern has a repetition that can match the same text in two ways, and each is made only over a
text that holds what its matches hold, so a text is read in linear time (a comment of 2,000 characters
in well under a millisecond).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from flask import Flask, current_app

from pbem.core.models import MAIL_KEY_LENGTH, User, hash_mail_key, is_key_shaped

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
# What stands alone anywhere (in a kept link of ours too) and acts all the same: each pattern with the
# text, in lower case, that every match of it holds (a pass is made only over a text that holds it), and
# its marker.  Signed tokens (itsdangerous', and JWTs alike) are base64url JSON: ``{"`` is always ``eyJ``.
_LOOSE = (
    (("eyj",), re.compile(r"eyJ[A-Za-z0-9_-]{16,}(?:\.[A-Za-z0-9_-]+){0,2}"), TOKEN_REMOVED),
    ((API_TOKEN_PREFIX,), re.compile(rf"(?<![A-Za-z0-9_]){API_TOKEN_PREFIX}[A-Za-z0-9_-]{{20,}}"),
     TOKEN_REMOVED),
    (tuple(f"{local}{plus}" for local in TOKEN_ADDRESS_LOCALS for plus in ("+", "%2b")),
     re.compile(rf"(?i:(?<![\w.+-])(?:mailto:)?(?:{'|'.join(TOKEN_ADDRESS_LOCALS)})(?:\+|%2b)"
                r"[a-z0-9]{16,}(?:(?:@|%40)[a-z0-9.-]+)?)"), ADDRESS_REMOVED),
)
# Runs of letters and digits: those of exactly a key's length are hashed and looked up.
_KEY_WORD = re.compile(r"[A-Za-z0-9]{16,}")


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
    """The pattern of one app's links that carry a secret: its base URL's host and its secret paths."""

    def __init__(self, host: str, prefixes: frozenset[str]) -> None:
        self.prefixes = tuple(prefixes)
        # What every match holds, in lower case (see _LOOSE).
        self.triggers = tuple({host.lower(), *prefixes} - {""})
        parts = []
        if host:
            # A link to this server; its scheme, and whether it carries a secret, are read around the
            # match (see _blank_links): every alternative starts with a literal, which the pattern
            # engine looks for far faster than for an optional scheme at each character.
            parts.append(rf"(?P<ours>(?i:{re.escape(host)})(?::\d+)?(?P<rest>/{_URL_CHARS}*)?)")
        self.secret_path = None
        if prefixes:
            # A secret path alone (a link whose host was broken off, or written by hand): the secret
            # must be long enough to be one, so that prose such as "I/m/bored" stays.
            path = f"(?:{_alternatives(prefixes)}){_SECRET}{{8,}}{_URL_CHARS}*"
            self.secret_path = re.compile(path)
            parts.append(f"(?P<path>{path})")
        self.pattern = re.compile("|".join(parts)) if parts else None


def _comment_pattern() -> _CommentPattern:
    """The current app's pattern, made once per app (after its routes are registered)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    made = app.extensions.get("pbem.core.redaction")
    if made is None:
        host = urlsplit(app.config["PBEM"]["server"]["base_url"]).hostname or ""
        made = app.extensions["pbem.core.redaction"] = _CommentPattern(host, secret_path_prefixes(app))
    return made


def _marker(found: str, marker: str) -> str:
    """``marker`` for the secret ``found``, never longer than it: a comment never grows past its bound."""
    return marker if len(marker) <= len(found) else "*" * len(found)


def _marked(found: re.Match[str], marker: str) -> str:
    """The marker for one match of a loose pattern (see :func:`_marker`)."""
    return _marker(found.group(0), marker)


def _blank_loose(text: str, folded: str) -> str:
    """``text`` (``folded``, in lower case) without the tokens and addresses of ours that stand alone."""
    for triggers, pattern, marker in _LOOSE:
        if any(trigger in folded for trigger in triggers):
            text = pattern.sub(functools.partial(_marked, marker=marker), text)
    return text


_SCHEMES = ("https://", "http://")


def _blank_links(text: str, links: _CommentPattern) -> str:
    """``text`` with each link of this server that carries a secret (with its scheme), and each secret
    path standing alone, replaced by :data:`LINK_REMOVED`; a link to a page without a secret stays."""
    assert links.pattern is not None
    pieces, done = [], 0
    for found in links.pattern.finditer(text):
        start = found.start()
        if found.groupdict().get("path") is None:  # A link with this server's host.
            before = text[max(done, start - 8):start].lower()
            scheme = next((s for s in _SCHEMES if before.endswith(s)), "")
            if not scheme and start and (text[start - 1].isalnum() or text[start - 1] in "._-"):
                continue  # Part of another host's name ("not127.0.0.1").
            rest = found.group("rest") or ""
            if not (rest.startswith(links.prefixes) or
                    (links.secret_path is not None and links.secret_path.search(rest))):
                continue  # A page of ours without a secret in its path (its query: see _blank_loose).
            start -= len(scheme)
        pieces += [text[done:start], _marker(text[start:found.end()], LINK_REMOVED)]
        done = found.end()
    return "".join(pieces) + text[done:] if pieces else text


def blank_secrets(text: str, players: Iterable[User] = ()) -> str:
    """``text`` as others may read it: this server's secret links, reply and bounce addresses, signed and
    API tokens, and the mail key of any of ``players`` (the author, and the others of their game, whose
    keys a quoted mail could hold) blanked (see the module's docstring); the rest as written.

    Each pattern is matched only in a text that holds what every match of it holds, so that most
    comments (which hold none) cost a few substring searches."""
    if not text:
        return text
    links = _comment_pattern()
    folded = text.lower()

    if links.pattern is not None and any(trigger in folded for trigger in links.triggers):
        text = _blank_links(text, links)
        folded = text.lower()
    text = _blank_loose(text, folded)
    key_hashes = {user.mail_key_hash for user in players if user is not None and user.mail_key_hash}
    return _blank_mail_keys(text, key_hashes) if key_hashes else text


def _blank_mail_keys(text: str, key_hashes: set[str]) -> str:
    """``text`` with every word whose key hash is one of ``key_hashes`` hidden, in any case (a key is
    stored only as its hash, so each word shaped like a key is hashed and looked up)."""
    return KeysFound(key_hashes, key_shaped_words(text)).blank(text)


def key_shaped_words(text: str) -> set[str]:
    """The distinct words of ``text`` that could be mail keys, in lower case (keys are read in any case)."""
    return {word.lower() for word in _KEY_WORD.findall(text)
            if len(word) == MAIL_KEY_LENGTH and is_key_shaped(word)}


class KeysFound:
    """Which of ``words`` are the mail keys of some accounts (given by their key hashes).

    A key is stored only as its hash, so each word is hashed once and looked up; the keys found are then
    blanked from any text by :meth:`blank` without hashing anything again, so that a mail's words are
    looked at once and its keys blanked from everything made of it.
    """

    def __init__(self, key_hashes: Iterable[str], words: Iterable[str]) -> None:
        hashes = frozenset(h for h in key_hashes if h)
        self.keys = {word for word in words if hash_mail_key(word) in hashes} if hashes else set()

    def blank(self, text: str) -> str:
        """``text`` with every key found hidden, in any case."""
        for key in self.keys:
            text = blank_key(text, key)
        return text


def blank_key(text: str, key: str) -> str:
    """``text`` (a subject, a comment) with the mail key ``key`` hidden wherever it stands as a word of
    its own, in any case (keys are read in any case), so that answers and records never carry it.

    Only whole words: ``key`` is what stood in a command's key place, which may be no key at all (a
    move written where the key goes, "b2"), and blanking it inside other words would cut into them,
    the sender's real key among them, leaving that key's other characters for anyone to read."""
    return re.sub(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", KEY_REMOVED, text,
                  flags=re.IGNORECASE)


def init_app(app: Flask) -> None:
    """Make the app's pattern now that its routes are registered (rather than on the first comment)."""
    app.extensions.pop("pbem.core.redaction", None)
    with app.app_context():
        _comment_pattern()
