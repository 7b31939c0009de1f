"""Tokens that let a mail stand for its player: reply addresses and one-click move links.

A reply token names a game, a seat and a user, and carries an HMAC keyed by the server secret and the
user's own ``token_secret``; replacing that secret revokes every token the user was ever sent.  The
token is lowercase base32 so it survives mail software that folds the case of addresses, and short
enough for the 64-octet local part of ``play+TOKEN@domain``.

Move links are signed with itsdangerous and bound to game, seat, user and move number, so a link from an
old mail can only ever say that the game has moved on.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import struct
from dataclasses import dataclass

from flask import current_app
from itsdangerous import BadSignature, URLSafeSerializer

from pbem.models import User, new_token_secret

_MAC_BYTES = 10
_PAYLOAD = struct.Struct(">IBI")  # game id, seat, user id


@dataclass(frozen=True)
class ReplyToken:
    """What a reply token claims; trust it only after :func:`verify_reply` says the MAC is right."""

    game_id: int
    seat: int
    user_id: int
    mac: bytes


def _mac(payload: bytes, user: User) -> bytes:
    key = (current_app.config["SECRET_KEY"] + ":" + user.token_secret).encode()
    return hmac.new(key, b"reply:" + payload, hashlib.sha256).digest()[:_MAC_BYTES]


def reply_token(game_id: int, seat: int, user: User) -> str:
    """The token for replies about ``game_id``'s ``seat`` from ``user``."""
    payload = _PAYLOAD.pack(game_id, seat, user.id)
    return base64.b32encode(payload + _mac(payload, user)).decode().rstrip("=").lower()


def parse_reply(token: str) -> ReplyToken | None:
    """Decode a token without trusting it; None when it is not one of ours at all."""
    text = token.strip().upper()
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (ValueError, TypeError):
        return None
    if len(raw) != _PAYLOAD.size + _MAC_BYTES:
        return None
    game_id, seat, user_id = _PAYLOAD.unpack(raw[: _PAYLOAD.size])
    return ReplyToken(game_id, seat, user_id, raw[_PAYLOAD.size :])


def verify_reply(token: ReplyToken, user: User) -> bool:
    """Whether ``token`` was issued to ``user`` (and not revoked by a new token secret)."""
    if token.user_id != user.id:
        return False
    payload = _PAYLOAD.pack(token.game_id, token.seat, token.user_id)
    return hmac.compare_digest(token.mac, _mac(payload, user))


def reply_address(game_id: int, seat: int, user: User) -> str:
    """``play+TOKEN@<mail domain>``: the Reply-To of every mail that asks ``user`` for an answer."""
    domain = current_app.config["PBEM"]["mail"]["domain"]
    return f"play+{reply_token(game_id, seat, user)}@{domain}"


def reply_token_in(address: str) -> str | None:
    """The TOKEN of an address ``play+TOKEN@<mail domain>`` (any case), or None for any other address."""
    local, _, domain = address.strip().strip("<>").rpartition("@")
    if domain.lower() != current_app.config["PBEM"]["mail"]["domain"].lower():
        return None
    prefix, plus, token = local.partition("+")
    if prefix.lower() != "play" or not plus or not token:
        return None
    return token.lower()


def _links() -> URLSafeSerializer:
    return _link_serializer(current_app.config["SECRET_KEY"])


@functools.lru_cache(maxsize=4)
def _link_serializer(secret_key: str) -> URLSafeSerializer:
    """The move links' serializer for one server secret, made once: it keeps no state between uses, and
    making it was a sixth of signing a link (every move request signs one)."""
    return URLSafeSerializer(secret_key, salt="move-link")


def move_link_token(game_id: int, seat: int, user: User, number: int, move: str | None = None) -> str:
    """A signed token for ``/m/<token>``: play ``move`` (or choose one) as move ``number``."""
    data = {"g": game_id, "s": seat, "u": user.id, "n": number, "t": user.token_secret[:8]}
    if move is not None:
        data["m"] = move
    return _links().dumps(data)


def load_move_link(token: str) -> dict | None:
    """The claims of a move-link token whose signature is good, else None (check ``t`` against the
    user's current token secret before acting on it)."""
    try:
        data = _links().loads(token)
    except BadSignature:
        return None
    return data if isinstance(data, dict) else None


def move_link_current(data: dict, user: User) -> bool:
    """Whether a move link's claims were made for ``user`` under their current token secret (a new
    secret revokes the links already mailed, as it does reply tokens)."""
    return data.get("u") == user.id and hmac.compare_digest(str(data.get("t", "")), user.token_secret[:8])


def renew(user: User) -> None:
    """Give ``user`` a new token secret: every reply address and move link mailed to them so far stops
    working (for a leaked mail, or a player who asks).  The caller commits."""
    user.token_secret = new_token_secret()
