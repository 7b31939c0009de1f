"""Tokens that let a mail stand for its player: reply addresses and one-click move links.

A reply token names a game, a seat and a user, and carries an HMAC keyed by the server secret and the
user's own ``token_secret``; replacing that secret revokes every token the user was ever sent.  The
token is lowercase base32 so it survives mail software that folds the case of addresses, and short
enough for the 64-octet local part of ``play+TOKEN@domain``.

Move links are signed with itsdangerous and bound to game, seat, user and move number, so a link from an
old mail can only ever say that the game has moved on.

A bounce token names an outbox mail and carries an HMAC keyed by the server secret, in the same form:
each mail goes out with the envelope sender ``bounces+TOKEN@domain``, so a delivery report that comes
back names the mail it is about, and nobody who has not seen one of our envelopes can make one up.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import struct
import zlib
from dataclasses import dataclass

from flask import current_app
from itsdangerous import BadSignature, URLSafeSerializer

from pbem.core.models import User, new_token_secret

_MAC_BYTES = 10
_PAYLOAD = struct.Struct(">IBI")  # game id, seat, user id
_BOUNCE_PAYLOAD = struct.Struct(">Q")  # outbox mail id


@dataclass(frozen=True)
class ReplyToken:
    """What a reply token claims; trust it only after :func:`verify_reply` says the MAC is right."""

    game_id: int
    seat: int
    user_id: int
    mac: bytes


def _sign(key: str, purpose: bytes, payload: bytes) -> bytes:
    """The MAC of ``payload`` for ``purpose`` under ``key``, cut to :data:`_MAC_BYTES`."""
    mac = _keyed(key, purpose).copy()
    mac.update(payload)
    return mac.digest()[:_MAC_BYTES]


@functools.lru_cache(maxsize=1024)
def _keyed(key: str, purpose: bytes) -> hmac.HMAC:
    """The HMAC-SHA256 under ``key`` that has read ``purpose``, made once and copied for each MAC: setting
    up the key is most of the work of a MAC this short (each move request makes one, per player's key)."""
    return hmac.new(key.encode(), purpose, hashlib.sha256)


def _mac(payload: bytes, secret_key: str, token_secret: str) -> bytes:
    """A reply token's MAC, under the server's secret and its player's own."""
    return _sign(secret_key + ":" + token_secret, b"reply:", payload)


def _encode(raw: bytes) -> str:
    """``raw`` as a token: lowercase base32 without padding (any case reads back the same)."""
    return base64.b32encode(raw).decode().rstrip("=").lower()


def _decode(token: str, size: int) -> bytes | None:
    """The bytes of a token of ``size`` bytes, or None when it is not one."""
    text = token.strip().upper()
    if len(text) > 2 * size:  # Far longer than any of ours: not decoded at all.
        return None
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (ValueError, TypeError):
        return None
    return raw if len(raw) == size else None


def reply_token(game_id: int, seat: int, user: User) -> str:
    """The token for replies about ``game_id``'s ``seat`` from ``user``."""
    return _reply_token(current_app.config["SECRET_KEY"], user.token_secret, game_id, seat, user.id)


@functools.lru_cache(maxsize=4096)
def _reply_token(secret_key: str, token_secret: str, game_id: int, seat: int, user_id: int) -> str:
    """The reply token of one seat's player under both secrets, made once: every mail of the game to
    that player carries the same one, and its MAC and base32 were 7% of a move request."""
    payload = _PAYLOAD.pack(game_id, seat, user_id)
    return _encode(payload + _mac(payload, secret_key, token_secret))


def parse_reply(token: str) -> ReplyToken | None:
    """Decode a token without trusting it; None when it is not one of ours at all."""
    raw = _decode(token, _PAYLOAD.size + _MAC_BYTES)
    if raw is None:
        return None
    game_id, seat, user_id = _PAYLOAD.unpack(raw[: _PAYLOAD.size])
    return ReplyToken(game_id, seat, user_id, raw[_PAYLOAD.size :])


def verify_reply(token: ReplyToken, user: User) -> bool:
    """Whether ``token`` was issued to ``user`` (and not revoked by a new token secret)."""
    if token.user_id != user.id:
        return False
    payload = _PAYLOAD.pack(token.game_id, token.seat, token.user_id)
    return hmac.compare_digest(token.mac, _mac(payload, current_app.config["SECRET_KEY"], user.token_secret))


def reply_address(game_id: int, seat: int, user: User) -> str:
    """``play+TOKEN@<mail domain>``: the Reply-To of every mail that asks ``user`` for an answer."""
    config = current_app.config
    token = _reply_token(config["SECRET_KEY"], user.token_secret, game_id, seat, user.id)
    return f"play+{token}@{config['PBEM']['mail']['domain']}"


def reply_token_in(address: str) -> str | None:
    """The TOKEN of an address ``play+TOKEN@<mail domain>`` (any case), or None for any other address."""
    return _token_in(address, "play")


def _token_in(address: str, local: str) -> str | None:
    """The TOKEN of an address ``<local>+TOKEN@<mail domain>`` (any case), or None for any other."""
    local_part, _, domain = address.strip().strip("<>").rpartition("@")
    if domain.lower() != current_app.config["PBEM"]["mail"]["domain"].lower():
        return None
    prefix, plus, token = local_part.partition("+")
    if prefix.lower() != local or not plus or not token:
        return None
    return token.lower()


def bounce_address(outbox_id: int) -> str:
    """``bounces+TOKEN@<mail domain>``: the envelope sender of the outbox mail ``outbox_id``, where
    delivery reports about it (and the auto-replies of vacation responders) come back."""
    domain = current_app.config["PBEM"]["mail"]["domain"]
    payload = _BOUNCE_PAYLOAD.pack(outbox_id)
    return f"bounces+{_encode(payload + _bounce_mac(payload))}@{domain}"


def _bounce_mac(payload: bytes) -> bytes:
    return _sign(current_app.config["SECRET_KEY"], b"bounce:", payload)


def is_bounce_address(address: str) -> bool:
    """Whether ``address`` is one of our bounce addresses, its token good or not."""
    return _token_in(address, "bounces") is not None


def bounced_mail(address: str) -> int | None:
    """The outbox mail a bounce address names, if its token is one we made; else None."""
    token = _token_in(address, "bounces")
    raw = _decode(token, _BOUNCE_PAYLOAD.size + _MAC_BYTES) if token is not None else None
    if raw is None:
        return None
    payload, mac = raw[: _BOUNCE_PAYLOAD.size], raw[_BOUNCE_PAYLOAD.size :]
    if not hmac.compare_digest(mac, _bounce_mac(payload)):
        return None
    return _BOUNCE_PAYLOAD.unpack(payload)[0]


def _links() -> URLSafeSerializer:
    return _link_serializer(current_app.config["SECRET_KEY"])


@functools.lru_cache(maxsize=4)
def _link_serializer(secret_key: str) -> URLSafeSerializer:
    """The move links' serializer for one server secret, made once: it keeps no state between uses, and
    making it was a sixth of signing a link (every move request signs one)."""
    return URLSafeSerializer(secret_key, salt="move-link")


@functools.lru_cache(maxsize=4)
def _link_mac(secret_key: str) -> hmac.HMAC:
    """The keyed HMAC a move link is signed with, for one server secret, made once and copied for each
    link: itsdangerous derives the key and sets up the HMAC anew for every signature, which with its
    JSON and compression steps was most of the cost of a move request's link."""
    signer = _link_serializer(secret_key).make_signer()
    return hmac.new(signer.derive_key(), digestmod=signer.digest_method)


# The JSON itsdangerous's serializer writes (``json.dumps`` with these options makes this encoder anew
# at each call).
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def move_link_token(game_id: int, seat: int, user: User, number: int, move: str | None = None) -> str:
    """A signed token for ``/m/<token>``: play ``move`` (or choose one) as move ``number``.

    Written as itsdangerous's ``URLSafeSerializer(secret, salt="move-link").dumps`` writes it, byte for
    byte (``load_move_link`` reads it with itsdangerous), without its per-call set-up: compact JSON in
    URL-safe base64 and the HMAC-SHA1 of that.  A payload that compression would shorten (none of these
    short claims, in practice) is left to itsdangerous, which writes it compressed."""
    data = {"g": game_id, "s": seat, "u": user.id, "n": number, "t": user.token_secret[:8]}
    if move is not None:
        data["m"] = move
    claims = _COMPACT_JSON.encode(data).encode()
    if len(zlib.compress(claims)) < len(claims) - 1:
        return _links().dumps(data)
    payload = base64.urlsafe_b64encode(claims).rstrip(b"=")
    mac = _link_mac(current_app.config["SECRET_KEY"]).copy()
    mac.update(payload)
    return (payload + b"." + base64.urlsafe_b64encode(mac.digest()).rstrip(b"=")).decode("ascii")


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
