"""Move requests written again: when a player's bounce mark comes off, and when their reply addresses
are renewed.

Each game awaiting the player's move gets its move request again (the move path's own,
:func:`pbem.mailout.notify.request_move`), to the address and with the reply address they have now.
Accounts (a new address confirmed, reply addresses renewed) and the web (an address said to work again)
call down to here; the bounce marks themselves (:mod:`pbem.mailout.bouncing`) sit below the outbox,
which reads them, so taking a mark off, which writes mail, lives here above both.
"""

from __future__ import annotations

from sqlalchemy import or_, select

from pbem.core.database import is_postgresql
from pbem.core.extensions import db
from pbem.core.models import Game, OutboxMail, Seat, User, utcnow
from pbem.core.unit_of_work import unit_of_work
from pbem.game import queries
from pbem.mailout.notify import request_move


def awaiting_move_locked(user: User) -> list[tuple[Game, Seat]]:
    """The games (and seats) awaiting the move of ``user``, locked until the transaction ends, for their
    move requests to be written again (see :func:`request_moves_again`); none for a digest player, who
    gets no move requests.

    On PostgreSQL each of their active games is locked FOR SHARE, in one order, before anything about
    them is read: a move in one of them waits until the mark is off, so that its request is sent, and a
    position read here cannot pass before the commit (the request would be stale).  The locks come
    before the player's row is written (their address, their token secret): an UPDATE of the address
    (a key column) would block the move path's check of the outbox's reference to the player, while the
    move holds the game this waits for.  (On SQLite the transaction's BEGIN IMMEDIATE holds every
    writer off already.)
    """
    if user.notify == "digest":
        return []
    if is_postgresql():
        db.session.execute(
            select(Game.id).join(Seat, Seat.game_id == Game.id)
            .where(Seat.user_id == user.id, Game.status == "active")
            .order_by(Game.id).with_for_update(of=Game, read=True)
        )
    return queries.awaiting(user)


def request_moves_again(user: User, turns: list[tuple[Game, Seat]], *, skip_waiting: bool = True) -> int:
    """Write the move request of each of ``turns`` (from :func:`awaiting_move_locked`) again, to
    ``user``'s address and with their reply address as they are now; returns how many were written.

    With ``skip_waiting``, a game whose request is still waiting in the outbox is left out: written since
    the last delivery run, it goes as it is (a bounce mark coming off).  Without, every game gets a new
    one (the player's reply addresses were just replaced, so a waiting mail's would not work)."""
    if turns and skip_waiting:
        waiting = _requests_waiting(user.email, [game.id for game, _seat in turns])
        turns = [(game, seat) for game, seat in turns if game.id not in waiting]
    if not turns:
        return 0
    queries.prefetch_last_moves([game.id for game, _seat in turns])
    for game, seat in turns:
        request_move(game, queries.engine_of(game), queries.state_of(game), seat)
    return len(turns)


def _requests_waiting(address: str, game_ids: list[int]) -> set[int]:
    """Those of ``game_ids`` with a move request to ``address`` waiting in the outbox that no deliverer
    has claimed: each is sent after the commit, when the deliverer finds the address no longer marked.

    A claimed one may have been held back already, so it does not count.  On PostgreSQL the rows found
    are locked, so that a deliverer cannot claim one and find the address still marked before this
    transaction commits; a row a deliverer is claiming at this moment is skipped (and so does not count)
    rather than waited for, so this never waits on a deliverer while holding the games.
    """
    now = utcnow()
    query = select(OutboxMail.game_id).where(
        OutboxMail.to_addr == address, OutboxMail.kind == "your-move", OutboxMail.game_id.in_(game_ids),
        OutboxMail.sent_at.is_(None), OutboxMail.failed_at.is_(None),
        or_(OutboxMail.claimed_until.is_(None), OutboxMail.claimed_until < now),
    )
    if is_postgresql():
        query = query.with_for_update(skip_locked=True)
    return {game_id for game_id in db.session.scalars(query) if game_id is not None}


def resent_words(count: int) -> str:
    """What the player is told of the move requests :func:`request_moves_again` wrote ('' for none)."""
    if count == 0:
        return ""
    if count == 1:
        return " The move request for 1 game awaiting your move was sent again."
    return f" Move requests for {count} games awaiting your move were sent again."


def clear_bounce_mark(user: User, new_email: str | None = None) -> int:
    """Take the mark off ``user``'s address and the bounces counted, in the caller's write transaction
    (the caller commits): they say their address works again, or it becomes ``new_email`` (what bounced
    was the old one).  If it was marked, each game awaiting their move sends its move request again,
    to the address they have now; returns how many were written.

    The caller holds the player's row (FOR NO KEY UPDATE on PostgreSQL), so that two clicks at once do
    not both write the requests; the address is changed here, after the games are locked, for the
    reason :func:`awaiting_move_locked` gives.
    """
    turns = awaiting_move_locked(user) if user.mail_bouncing_since is not None else []
    if new_email is not None:
        user.email = new_email
    user.mail_bouncing_since = user.mail_bounce_reason = user.mail_bounced_at = None
    user.mail_bounces = 0
    return request_moves_again(user, turns)


def address_works_again(user: User) -> int:
    """The player says their address works again: game mail goes to it again, and the move requests of
    the games awaiting their move are sent again (see :func:`clear_bounce_mark`).  Commits; returns how
    many."""
    with unit_of_work() as uow:
        fresh = db.session.get(User, user.id, with_for_update={"key_share": True}, populate_existing=True)
        assert fresh is not None
        resent = clear_bounce_mark(fresh)
        uow.commit()
    return resent
