"""The data model: players, games and their seats and moves, challenges, mail in and out, ratings.

Times are stored as naive UTC datetimes; :func:`utcnow` is the one clock the server reads, so that
tests and ``pbem sweep --at`` can set it.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from pbem.core.extensions import Model

_clock_override: datetime | None = None


def utcnow() -> datetime:
    """The current time as naive UTC (or the time a test or ``pbem sweep --at`` has set)."""
    if _clock_override is not None:
        return _clock_override
    return wall_clock()


def wall_clock() -> datetime:
    """The real current time as naive UTC, whatever :func:`set_clock` says."""
    return datetime.now(UTC).replace(tzinfo=None)


def clock_is_set() -> bool:
    """Whether :func:`utcnow` answers a time set by :func:`set_clock` rather than the real one."""
    return _clock_override is not None


def set_clock(at: datetime | None) -> None:
    """Make :func:`utcnow` answer ``at`` (naive UTC); None returns to the real clock."""
    global _clock_override
    _clock_override = at


# Mail keys are 16 characters from an alphabet without look-alikes (80 bits): long enough that guessing
# is hopeless within the attempt limits, short enough to copy into a subject line.
_KEY_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
MAIL_KEY_LENGTH = 16


def new_mail_key() -> str:
    """A fresh mail key: the password of pbmserv-style subject commands (shown once, stored hashed)."""
    return "".join(secrets.choice(_KEY_ALPHABET) for _ in range(MAIL_KEY_LENGTH))


def is_key_shaped(word: str) -> bool:
    """Whether ``word`` (less punctuation around it) could be a mail key, in any case: for blanking keys
    out of what is shown back to a sender without knowing whose key it would be."""
    word = word.strip(".,;:!?()[]<>'\"")
    return len(word) == MAIL_KEY_LENGTH and all(c in _KEY_ALPHABET for c in word.lower())


def hash_mail_key(key: str) -> str:
    """The stored form of a mail key: SHA-256 of the key, case folded (keys are random, so a fast hash
    does; nobody can work back from it to the key)."""
    return hashlib.sha256(key.strip().lower().encode()).hexdigest()


def _new_mail_key_hash() -> str:
    # An account starts with a key nobody knows; the real one is made and mailed when it is confirmed.
    return hash_mail_key(new_mail_key())


def new_session_token() -> str:
    """A fresh session token: part of every sign-in, so replacing it ends the account's other sessions."""
    return secrets.token_hex(8)


def new_token_secret() -> str:
    """A fresh per-user secret for reply tokens; replacing it revokes every token already mailed."""
    return secrets.token_hex(16)


class User(Model):
    """A player.  ``handle_key`` is the handle folded for look-alike checks (case and similar glyphs)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    handle: Mapped[str] = mapped_column(String(32), unique=True)
    handle_key: Mapped[str] = mapped_column(String(32), unique=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(255))
    verified_at: Mapped[datetime | None] = mapped_column(DateTime)
    mail_key_hash: Mapped[str] = mapped_column(String(64), default=_new_mail_key_hash)
    # After too many wrong mail keys, mail commands for the account are refused until then.
    mail_key_paused_until: Mapped[datetime | None] = mapped_column(DateTime)
    session_token: Mapped[str] = mapped_column(String(32), default=new_session_token)
    token_secret: Mapped[str] = mapped_column(String(64), default=new_token_secret)
    # "move": a mail for every move; "digest": one mail a day listing the games awaiting a move.
    notify: Mapped[str] = mapped_column(String(16), default="move")
    last_digest_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Vacation: while on, the player's clocks stop.  The allowance is counted per calendar year.
    vacation_since: Mapped[datetime | None] = mapped_column(DateTime)
    vacation_year: Mapped[int | None] = mapped_column(Integer)
    vacation_days_used: Mapped[float] = mapped_column(Float, default=0.0)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # An account made by importing another server's records: it has no address of its own and cannot sign
    # in until someone signs up with its handle and confirms their address (see pbem.archive.records).
    placeholder: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The IANA time zone the player reads times in (pages and mails); times are stored in UTC.
    time_zone: Mapped[str] = mapped_column(String(64), default="UTC", server_default="UTC")
    # A new address the player asked for, until they confirm it from a mail sent there (the current
    # address keeps working until then).
    pending_email: Mapped[str | None] = mapped_column(String(254))
    # Mail to the player's address comes back (see pbem.mailout.bouncing): since when, and the receiving
    # server's words.  While set, game mail to the address is not sent; account mail still is.
    mail_bouncing_since: Mapped[datetime | None] = mapped_column(DateTime)
    mail_bounce_reason: Mapped[str | None] = mapped_column(String(300))
    # Hard bounces counted towards mail.bounces_to_stop, and when the first of them came.
    mail_bounces: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    mail_bounced_at: Mapped[datetime | None] = mapped_column(DateTime)
    # The hour (0-23, in the player's time zone) their daily digest goes out; None for the server's
    # scheduler.digest_hour in UTC (see pbem.mailout.digest).
    digest_hour: Mapped[int | None] = mapped_column(Integer)
    # A computer player (``pbem bot add``): it plays through the API (``pbem bots``), is marked BOT
    # wherever it is named, and is sent no mail.  The games it plays (slugs, space-separated) and its
    # strength (games.players.STRENGTHS).
    is_bot: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    bot_games: Mapped[str] = mapped_column(String(200), default="", server_default="")
    bot_strength: Mapped[str] = mapped_column(String(16), default="", server_default="")

    seats: Mapped[list[Seat]] = relationship(back_populates="user")

    @property
    def verified(self) -> bool:
        """Whether the player has confirmed their address."""
        return self.verified_at is not None

    @property
    def on_vacation(self) -> bool:
        """Whether the player's clocks are stopped."""
        return self.vacation_since is not None

    # Flask-Login's protocol.
    @property
    def is_authenticated(self) -> bool:
        """Flask-Login: a loaded user is signed in."""
        return True

    @property
    def is_active(self) -> bool:
        """Flask-Login: only verified players may sign in."""
        return self.verified

    @property
    def is_anonymous(self) -> bool:
        """Flask-Login: a loaded user is never anonymous."""
        return False

    def get_id(self) -> str:
        """Flask-Login: the session key, the id and the current session token (see
        :func:`pbem.accounts.accounts.end_other_sessions`)."""
        return f"{self.id}:{self.session_token}"

    def __repr__(self) -> str:
        return f"<User {self.handle}>"


class Game(Model):
    """One game: the engine and its options, the seed, the stored state, and how it stands.

    ``version`` is the optimistic lock: every change to a game bumps it, and an UPDATE made from a stale
    copy matches no row and fails, so two writers can never both apply a move.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    engine: Mapped[str] = mapped_column(String(32), index=True)
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    seed: Mapped[int] = mapped_column(BigInteger)
    players: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # "waiting" for seats or challenges, "active", "finished" (with result), "abandoned".
    status: Mapped[str] = mapped_column(String(16), default="waiting", index=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    public: Mapped[bool] = mapped_column(Boolean, default=True)
    # Whether the result moves the players' ratings (only two-player games between two accounts can be).
    rated: Mapped[bool] = mapped_column(Boolean, default=False)
    # Time control, e.g. {"kind": "per_move", "days": 3} or
    # {"kind": "bank", "initial_days": 7, "increment_days": 1, "max_days": 14}, optional "weekend_pause".
    time_control: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    ply: Mapped[int] = mapped_column(Integer, default=0)
    draw_offered_by: Mapped[int | None] = mapped_column(Integer)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    # How a finished game ended, as the archive filters it: "line", "resignation", "time", ... (see
    # pbem.game.endings.ENDINGS).
    ending: Mapped[str | None] = mapped_column(String(16))
    # For a game imported from a record: the digest of what it was replayed from, so that importing the
    # same record again finds it instead of adding it twice (see pbem.archive.records).
    import_key: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)
    # For a game imported from a record that names where it was played: that server (its base URL) and
    # the game's number there, so that the same game is never imported twice, whatever else of the
    # record changed (see pbem.records).
    origin: Mapped[str | None] = mapped_column(String(200))
    origin_game_id: Mapped[int | None] = mapped_column(Integer)
    # Who may take an open seat: a player whose rating in this game lies within these bounds (either may
    # be None: no bound), as the creator chose (see pbem.lobby.challenges.take_seat).
    min_rating: Mapped[int | None] = mapped_column(Integer)
    max_rating: Mapped[int | None] = mapped_column(Integer)
    version: Mapped[int] = mapped_column(Integer, nullable=False)

    seats: Mapped[list[Seat]] = relationship(
        back_populates="game", order_by="Seat.number", cascade="all, delete-orphan"
    )
    moves: Mapped[list[Move]] = relationship(
        back_populates="game", order_by="Move.number", cascade="all, delete-orphan"
    )
    created_by: Mapped[User | None] = relationship(foreign_keys=[created_by_id])

    __mapper_args__ = {"version_id_col": version}
    # The archive walks finished public games newest first, by game type or not, without sorting them;
    # the front page walks the active ones most recently moved first the same way.
    __table_args__ = (
        Index("ix_game_archive", "status", "public", "finished_at", "id"),
        Index("ix_game_front", "status", "public", "updated_at"),
        Index("ix_game_archive_engine", "engine", "status", "public", "finished_at", "id"),
        Index("ix_game_origin", "origin", "origin_game_id", unique=True),
    )

    def seat_of(self, user: User) -> Seat | None:
        """The seat ``user`` holds in this game, if any (the first, when one player holds several)."""
        return next((s for s in self.seats if s.user_id == user.id), None)

    def __repr__(self) -> str:
        return f"<Game {self.engine} #{self.id} {self.status}>"


class Seat(Model):
    """A player's place in a game.  ``number`` counts from 0 as the engines do (people read it +1).

    ``next_event_at`` is when the scheduler next has something to do for this seat (a reminder or the
    deadline); it is indexed so that a sweep reads only the seats that are due.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("game.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))  # (Indexed by ix_seat_user_game.)
    moves_made: Mapped[int] = mapped_column(Integer, default=0)
    deadline: Mapped[datetime | None] = mapped_column(DateTime)
    next_event_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)
    reminders_sent: Mapped[int] = mapped_column(Integer, default=0)
    bank_seconds: Mapped[float | None] = mapped_column(Float)
    joined_at: Mapped[datetime | None] = mapped_column(DateTime)
    # The conditional lines the seat's player has queued (see pbem.game.conditional): lists of moves that
    # alternate between the opponent's and the player's, starting with the opponent's next move.  Only
    # their owner ever sees them.
    conditionals: Mapped[list[list[str]] | None] = mapped_column(JSON)
    # Copied from the game when it finishes: the seat's "win", "loss" or "draw" and the time, so that a
    # player's archive is read from the seats in order (index ix_seat_archive) without sorting.
    result: Mapped[str | None] = mapped_column(String(8))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)

    game: Mapped[Game] = relationship(back_populates="seats")
    user: Mapped[User | None] = relationship(back_populates="seats")

    __table_args__ = (
        UniqueConstraint("game_id", "number", name="uq_seat_game_number"),
        Index("ix_seat_archive", "user_id", "finished_at", "game_id"),
        # A player's seats by game, newest first: the API's list of a player's games walks it.
        Index("ix_seat_user_game", "user_id", "game_id"),
    )

    @property
    def label(self) -> str:
        """The seat as people number it: "seat 1"."""
        return f"seat {self.number + 1}"


# The longest comment a player may write with a move, a draw, a resignation or an answer to a challenge,
# by mail, on the web or through the API, and so the longest a record entry (or an imported one) holds.
MAX_COMMENT = 2000

# The tag that starts the subject of every mail the server sends (``pbem.outbox.subject`` writes it), by
# which the mail processor knows a reply to one (``pbem.mail.parse.tagged``): here, where both sides of
# the mail read it.
SUBJECT_TAG = "[pbem]"


class Move(Model):
    """One entry of a game's record: an engine move, or a server action (resign, draw, timeout).

    ``number`` orders the record within the game.  Only ``kind == "move"`` entries (and timeouts of
    engines that score them) are replayed through the engine; the others change the game's result.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("game.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    seat: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16), default="move")
    text: Mapped[str] = mapped_column(String(500))
    via: Mapped[str] = mapped_column(String(16))
    comment: Mapped[str | None] = mapped_column(Text)  # At most MAX_COMMENT characters, by every way in.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    game: Mapped[Game] = relationship(back_populates="moves")

    __table_args__ = (UniqueConstraint("game_id", "number", name="uq_move_game_number"),)


class Challenge(Model):
    """An invitation of a named player to a seat of a waiting game."""

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("game.id", ondelete="CASCADE"), index=True)
    seat: Mapped[int] = mapped_column(Integer)
    challenger_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    challenged_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    # "pending", "accepted", "declined", "withdrawn".
    status: Mapped[str] = mapped_column(String(16), default="pending")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)

    game: Mapped[Game] = relationship()
    challenger: Mapped[User] = relationship(foreign_keys=[challenger_id])
    challenged: Mapped[User] = relationship(foreign_keys=[challenged_id])


class Watch(Model):
    """A player following a game they do not play in: they get a notice of each move and the result."""

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("game.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    user: Mapped[User] = relationship()

    __table_args__ = (UniqueConstraint("game_id", "user_id", name="uq_watch_game_user"),)


# The longest private note a player may keep on a game.
MAX_NOTE = 10000


class GameNote(Model):
    """A player's private note on a game (DGS's notes): read and written only by its writer, by no other
    channel shown to anyone, and kept after the game ends (see :mod:`pbem.game.notes`)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    game_id: Mapped[int] = mapped_column(ForeignKey("game.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    text: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (UniqueConstraint("game_id", "user_id", name="uq_game_note_game_user"),)


class OutboxMail(Model):
    """A mail waiting to be sent, written in the same transaction as the change it reports.

    The deliverer claims a row by setting ``claimed_until`` with a conditional UPDATE, sends it, and
    marks it sent; a deliverer that dies mid-way lets the claim lapse and the mail goes out once more
    with the same Message-ID, which mail clients fold into one.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[str] = mapped_column(String(255), unique=True)
    kind: Mapped[str] = mapped_column(String(32))
    to_addr: Mapped[str] = mapped_column(String(254))
    from_addr: Mapped[str] = mapped_column(String(320))
    reply_to: Mapped[str | None] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(500))
    body_text: Mapped[str] = mapped_column(Text)
    body_html: Mapped[str | None] = mapped_column(Text)
    # Extra headers such as In-Reply-To and References, by name.
    headers: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    game_id: Mapped[int | None] = mapped_column(ForeignKey("game.id", ondelete="SET NULL"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    claimed_until: Mapped[datetime | None] = mapped_column(DateTime)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime)
    # When the deliverer gave the mail up (refused for good, or failing for longer than
    # mail.give_up_after_hours); ``last_error`` then says why.  A given-up mail is never sent.
    failed_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    # When a delivery report on this mail was counted as a bounce of its address: a report counts once,
    # however often its bounce address is written to.
    bounced_at: Mapped[datetime | None] = mapped_column(DateTime)

    __table_args__ = (
        # The mails due: neither sent nor given up, by when they are next tried.
        Index("ix_outbox_mail_due", "sent_at", "failed_at", "next_attempt_at"),
        # Counting the answers sent to one address lately (see pbem.mailin.process).
        Index("ix_outbox_mail_to_kind", "to_addr", "kind", "created_at"),
    )


class InboundMail(Model):
    """A received message, stored raw before anything is done with it.

    ``message_id`` is unique, so a message delivered twice is stored (and so acted on) once: it is the
    Message-ID with the From address (another sender's mail with the same Message-ID is another
    message), or for a message without a Message-ID the hash of its bytes (see
    :func:`pbem.mailin.receive.message_key`).
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[str] = mapped_column(String(255), unique=True)
    raw: Mapped[bytes] = mapped_column(LargeBinary)
    mail_from: Mapped[str] = mapped_column(String(320), default="")
    # Every envelope recipient, however many.
    rcpt_to: Mapped[str] = mapped_column(Text, default="")
    received_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # "received" (stored, not yet processed), "processed", "ignored" (bounce, auto-reply, loop),
    # "rejected" (answered with an error), "failed" (a bug: kept for an operator), "interrupted" (a crash
    # after it was acted on: its sender was told to look).
    status: Mapped[str] = mapped_column(String(16), default="received", index=True)
    processed_at: Mapped[datetime | None] = mapped_column(DateTime)
    note: Mapped[str | None] = mapped_column(Text)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    game_id: Mapped[int | None] = mapped_column(ForeignKey("game.id", ondelete="SET NULL"))
    # Set in the same transaction as the first change the message made (a move, a challenge): a message
    # left "processing" by a crash without it did nothing and can simply be processed again.
    acted_at: Mapped[datetime | None] = mapped_column(DateTime)


# The statuses of a message not yet done with: stored and waiting, or claimed by a processor.
UNFINISHED = ("received", "processing")
# The messages waiting or in hand, by sender: whether an earlier one of a sender's is unfinished (the
# claim's condition, pbem.mailin.process) reads these few rows, not every message the sender ever sent
# (migration 0020).  PostgreSQL's alone: on SQLite one processor takes the messages in the order they came,
# without that condition.
_UNFINISHED_BY_SENDER = Index(
    "ix_inbound_mail_unfinished", func.lower(InboundMail.mail_from), InboundMail.id,
).ddl_if(dialect="postgresql")
# The messages waiting, oldest first: PostgreSQL found the oldest by walking every message by id.
_WAITING = Index("ix_inbound_mail_waiting", InboundMail.id)

# The partial indexes' conditions, and the databases that index on them.  Each is given to its index in
# the database the app runs on (:func:`give_index_conditions`), not here as ``postgresql_where=``:
# SQLAlchemy reads a ``postgresql_where`` through its PostgreSQL dialect, which a process on SQLite would
# then load for nothing (2.4 MB of a web worker), as ``sqlite_where`` loads SQLite's on PostgreSQL.
_INDEX_CONDITIONS = (
    (_UNFINISHED_BY_SENDER, InboundMail.status.in_(UNFINISHED), ("postgresql",)),
    (_WAITING, InboundMail.status == "received", ("postgresql", "sqlite")),
)


def give_index_conditions(dialect: str) -> None:
    """Make the partial indexes partial in the database ``dialect`` ("sqlite" or "postgresql"): their
    ``WHERE`` for that database's DDL and for Alembic's comparison of the models with it."""
    for index, condition, dialects in _INDEX_CONDITIONS:
        if dialect in dialects:
            index.dialect_kwargs[f"{dialect}_where"] = condition


class Heartbeat(Model):
    """A long-running process (a mail listener, a scheduler) saying it is alive: it writes ``beat_at``
    every ``monitoring.heartbeat_seconds`` while it works, and ``stopped_at`` when it stops cleanly, so
    that ``pbem status`` can tell a process that stopped from one that died or hangs (see
    :mod:`pbem.core.heartbeat`)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    # "listener", "scheduler", ...
    kind: Mapped[str] = mapped_column(String(32))
    # The host and what tells the process apart there, e.g. "mx1 LMTP 127.0.0.1:2525": a process that
    # restarts takes up its row again.
    name: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(DateTime)
    beat_at: Mapped[datetime] = mapped_column(DateTime)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime)

    __table_args__ = (UniqueConstraint("kind", "name", name="uq_heartbeat_kind_name"),)


class MailKeyFailure(Model):
    """A mail command with a wrong mail key: counted per account and per sender to stop guessing."""

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    sender: Mapped[str] = mapped_column(String(320), index=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)


class ApiToken(Model):
    """A key a program uses for the JSON API in a player's name (``Authorization: Bearer …``).

    Only the SHA-256 of the token is stored: it is shown once when made, and a stolen database does not
    give it away.  (A token is 256 random bits, so a fast hash is enough, unlike for passwords.)"""

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    # The token's first characters, so the player can tell their tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)

    user: Mapped[User] = relationship()


class Rating(Model):
    """A player's Glicko-2 rating in one game, updated when a rated two-player game ends (see
    :mod:`pbem.game.ratings`).  ``deviation`` is as of ``last_game_at``; it grows with inactivity
    (:func:`pbem.game.ratings.deviation_now` and :func:`~pbem.game.ratings.display` read it as it is now)."""

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    engine: Mapped[str] = mapped_column(String(32))
    rating: Mapped[float] = mapped_column(Float, default=1500.0)
    deviation: Mapped[float] = mapped_column(Float, default=350.0)
    volatility: Mapped[float] = mapped_column(Float, default=0.06)
    games: Mapped[int] = mapped_column(Integer, default=0)
    last_game_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)

    user: Mapped[User] = relationship()

    __table_args__ = (
        UniqueConstraint("user_id", "engine", name="uq_rating_user_engine"),
        # The standings of a game read its ratings best first.
        Index("ix_rating_standings", "engine", "rating"),
    )


class RatingHistory(Model):
    """A player's rating in one game after one rated game: the points of their rating history."""

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"))
    engine: Mapped[str] = mapped_column(String(32))
    game_id: Mapped[int | None] = mapped_column(ForeignKey("game.id", ondelete="SET NULL"))
    rating: Mapped[float] = mapped_column(Float)
    deviation: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    __table_args__ = (Index("ix_rating_history_user", "user_id", "engine", "id"),)


class Tournament(Model):
    """Organised play (see :mod:`pbem.tournament`): a round-robin, a Swiss, a knockout or a ladder of one
    game with its options and time control, whose games the server starts itself.

    ``status``: "open" (taking entries), "running", "paused" (no new round is paired), "finished",
    "cancelled".  ``settings`` holds what the format asks for: ``double`` (a round-robin played on both
    sides), ``rounds`` (a Swiss), ``bye_points``, ``draw_rule`` (a knockout's drawn or unfinished match:
    "replay" or "seed"), ``leaving`` (a leaver's games: "forfeit" or "void"), ``reach`` and
    ``accept_days`` (a ladder's challenges).  ``version`` rises with every change of the tournament, its
    entries or its pairings' results, and stamps its kept pages.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    engine: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    time_control: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    rated: Mapped[bool] = mapped_column(Boolean, default=True)
    # "round_robin", "swiss", "knockout", "ladder".
    format: Mapped[str] = mapped_column(String(16))
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    min_players: Mapped[int] = mapped_column(Integer, default=2)
    max_players: Mapped[int] = mapped_column(Integer, default=16)
    # When it starts; None starts it as soon as max_players have joined ("when full").
    start_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Who may join, by their rating in the game (either bound may be None).
    min_rating: Mapped[int | None] = mapped_column(Integer)
    max_rating: Mapped[int | None] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), default="open", index=True)
    # The round being played (0 before the start; a round-robin is one round of every pairing).
    round: Mapped[int] = mapped_column(Integer, default=0)
    organiser_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    version: Mapped[int] = mapped_column(Integer, default=1)

    organiser: Mapped[User] = relationship()
    entries: Mapped[list[TournamentPlayer]] = relationship(
        back_populates="tournament", order_by="TournamentPlayer.id", cascade="all, delete-orphan"
    )

    def __repr__(self) -> str:
        return f"<Tournament {self.format} #{self.id} {self.status}>"


class TournamentPlayer(Model):
    """A player's entry in a tournament.  ``status``: "active", "withdrawn" (by themselves), "removed"
    (by the organiser), "out" (knocked out).  ``seed`` orders the entries at the start (a knockout's
    bracket, a Swiss's first pairing); ``position`` is a ladder's place, 1 at the top."""

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournament.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id"), index=True)
    status: Mapped[str] = mapped_column(String(16), default="active")
    seed: Mapped[int | None] = mapped_column(Integer)
    position: Mapped[int | None] = mapped_column(Integer)
    joined_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    left_at: Mapped[datetime | None] = mapped_column(DateTime)

    tournament: Mapped[Tournament] = relationship(back_populates="entries")
    user: Mapped[User] = relationship()

    __table_args__ = (UniqueConstraint("tournament_id", "user_id", name="uq_tournament_player_entry"),)


class TournamentGame(Model):
    """One pairing of a tournament round: the game between ``first`` (seat 1) and ``second`` (seat 2).

    A bye has no second player and no game.  ``result`` is the pairing's score from the first player's
    side ("1", "½", "0"), copied from the game when it ends (so standings read one table; ``pbem verify``
    checks every copy against its game) or set by the tournament's rules for a pairing without a
    played result: a bye, a forfeit, a ladder challenge not accepted in time.  ``void`` pairings (a
    leaver's, when the settings strike them) count for nobody.  A ladder challenge waits, as
    "challenge", until its game is accepted or ``expires_at`` passes.
    """

    id: Mapped[int] = mapped_column(primary_key=True)
    tournament_id: Mapped[int] = mapped_column(ForeignKey("tournament.id", ondelete="CASCADE"))
    round: Mapped[int] = mapped_column(Integer)
    # "game", "bye", "challenge" (a ladder's, until it is accepted or lapses).
    kind: Mapped[str] = mapped_column(String(16), default="game")
    game_id: Mapped[int | None] = mapped_column(ForeignKey("game.id", ondelete="SET NULL"), index=True)
    first_id: Mapped[int] = mapped_column(ForeignKey("user.id"))
    second_id: Mapped[int | None] = mapped_column(ForeignKey("user.id"))
    result: Mapped[str | None] = mapped_column(String(8))
    # How a result not played out came about: "bye", "forfeit", "lapsed" (a challenge not accepted).
    how: Mapped[str | None] = mapped_column(String(16))
    void: Mapped[bool] = mapped_column(Boolean, default=False)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    game: Mapped[Game | None] = relationship()
    first: Mapped[User] = relationship(foreign_keys=[first_id])
    second: Mapped[User | None] = relationship(foreign_keys=[second_id])

    __table_args__ = (Index("ix_tournament_game_round", "tournament_id", "round", "id"),)
class Tally(Model):
    """How many games of one kind a player has finished, by result: the count of their seats with a
    result in the games of ``engine`` that are ``public`` (or not) and ``rated`` (or not).

    Kept up to date in the transaction that ends a game (:func:`pbem.game.tallies.count_finish`, called
    where the seats' results are written), rebuilt by ``pbem verify``; the standings, the player
    directory and the API's player read these few rows instead of counting a player's seats per request.
    """

    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), primary_key=True)
    engine: Mapped[str] = mapped_column(String(32), primary_key=True)
    public: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    rated: Mapped[bool] = mapped_column(Boolean, primary_key=True)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    draws: Mapped[int] = mapped_column(Integer, default=0)
    losses: Mapped[int] = mapped_column(Integer, default=0)
