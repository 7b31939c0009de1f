"""A running tournament: its rounds' games started, results scored as games end, the next round paired,
a knockout advanced, a ladder's challenges made and settled, and every player told by mail.

Every function here runs inside the caller's unit of work (:mod:`pbem.core.unit_of_work`) and takes
the tournament's lock (:func:`lock`) before reading what it changes, so two games ending at once never
pair the same round twice.  The games themselves are ordinary games, started through
:func:`pbem.game.play.create_game` and played through the one move path; the move path tells this
module that one ended (:func:`game_over`, an event handler).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import select

import games
from pbem.core import unit_of_work
from pbem.core.database import is_postgresql
from pbem.core.errors import PlayError
from pbem.core.extensions import db
from pbem.core.models import Game, Tournament, TournamentGame, TournamentPlayer, User, utcnow
from pbem.game import events, play, ratings
from pbem.lobby import challenges
from pbem.mailout import notify, outbox
from pbem.mailout.compose import compose, kind_of
from pbem.tournament import pairing, standings
from pbem.tournament.standings import DRAW, LOSS, WIN


def lock(tournament_id: int) -> Tournament | None:
    """The tournament, read afresh and locked until the transaction ends (on SQLite the write lock the
    transaction began with is the lock)."""
    query = select(Tournament).where(Tournament.id == tournament_id).execution_options(populate_existing=True)
    if is_postgresql():
        query = query.with_for_update()
    return db.session.scalar(query)


def changed(tournament: Tournament) -> None:
    """Note a change of the tournament (its kept pages are stamped with its version)."""
    tournament.version = (tournament.version or 0) + 1


def active_entries(tournament: Tournament) -> list[TournamentPlayer]:
    """The entries still playing, in seed order (then the order they joined)."""
    return sorted((e for e in tournament.entries if e.status == "active"),
                  key=lambda e: (e.seed if e.seed is not None else 10**9, e.id))


def setting(tournament: Tournament, name: str) -> Any:
    """One of the tournament's format settings, or its default."""
    return {**DEFAULT_SETTINGS, **(tournament.settings or {})}[name]


# What a tournament's settings are when its organiser said nothing.
DEFAULT_SETTINGS: dict[str, Any] = {
    "double": False, "rounds": 3, "bye_points": 1.0, "draw_rule": "replay", "leaving": "forfeit",
    "reach": 3, "accept_days": 7,
}


# Starting ---------------------------------------------------------------------------------------------


def begin(tournament: Tournament) -> None:
    """Start the tournament now: seed its players (best rated first, then in the order they joined) and
    pair its first round (a ladder: set its first standing list)."""
    entries = sorted((e for e in tournament.entries if e.status == "active"), key=lambda e: e.id)
    rated = ratings.ratings_in(tournament.engine, {e.user_id for e in entries})
    entries.sort(key=lambda e: -ratings.points(rated.get(e.user_id)))
    for number, entry in enumerate(entries, 1):
        entry.seed = number
        if tournament.format == "ladder":
            entry.position = number
    tournament.status = "running"
    tournament.started_at = utcnow()
    changed(tournament)
    if tournament.format == "ladder":
        db.session.flush()
        for entry in entries:
            _tell(entry.user, tournament, "the ladder is open", "mail/tournament_round.txt",
                  position=entry.position, reach=setting(tournament, "reach"))
        return
    _pair_round(tournament, 1)


def _pair_round(tournament: Tournament, number: int) -> None:
    """Pair round ``number``, start its games, and mail every player their pairings."""
    tournament.round = number
    changed(tournament)
    entries = active_entries(tournament)
    made: list[TournamentGame] = []
    if tournament.format == "round_robin":
        ids = [e.user_id for e in entries]
        for first, second in pairing.round_robin(ids, setting(tournament, "double")):
            made.append(_start_game(tournament, number, first, second))
    elif tournament.format == "swiss":
        made.extend(_pair_swiss(tournament, number, entries))
    else:
        made.extend(_pair_knockout(tournament, number, entries))
    db.session.flush()
    _mail_round(tournament, made)


def _start_game(tournament: Tournament, number: int, first: int, second: int) -> TournamentGame:
    """A tournament game between ``first`` (seat 1) and ``second``, started at once."""
    players = [db.session.get_one(User, first), db.session.get_one(User, second)]
    game = play.create_game(tournament.engine, list(players), tournament.options,
                            created_by=tournament.organiser, time_control=tournament.time_control,
                            rated=tournament.rated)
    made = TournamentGame(tournament_id=tournament.id, round=number, kind="game", game=game,
                          first_id=first, second_id=second)
    db.session.add(made)
    return made


def _bye(tournament: Tournament, number: int, user_id: int, points: float) -> TournamentGame:
    """A bye for ``user_id`` in round ``number``, scored ``points``."""
    result = {1.0: WIN, 0.5: DRAW}.get(points, LOSS)
    made = TournamentGame(tournament_id=tournament.id, round=number, kind="bye", first_id=user_id,
                          second_id=None, result=result, how="bye")
    db.session.add(made)
    return made


def _pair_swiss(tournament: Tournament, number: int, entries: list[TournamentPlayer]) -> list[TournamentGame]:
    """A Swiss round, paired by score from what every pairing so far says."""
    found = standings.pairings(tournament.id)
    ranked = standings.standings(tournament, found)
    seed = {e.user_id: e.seed or 0 for e in entries}
    playing = {e.user_id for e in entries}
    players = {uid: pairing.SwissPlayer(uid, 0.0) for uid in playing}
    for line in ranked:
        if line.user_id in players:
            players[line.user_id].score = line.points
    for past in found:
        for me in (past.first, past.second):
            if me not in players:
                continue
            player = players[me]
            other = past.opponent_of(me)
            if other is None:
                player.had_bye = True
                continue
            player.opponents.add(other)
            side = 1 if me == past.first else 2
            player.balance += 1 if side == 1 else -1
            player.last_side = side
    order = [players[e.user_id] for e in sorted(
        (e for e in ranked if e.user_id in players),
        key=lambda e: (-e.points, -e.tie_breaks["buchholz"], seed[e.user_id]))]
    paired = pairing.swiss(order)
    made = [_start_game(tournament, number, first, second) for first, second in paired.pairs]
    if paired.bye is not None:
        made.append(_bye(tournament, number, paired.bye, float(setting(tournament, "bye_points"))))
    return made


def _pair_knockout(tournament: Tournament, number: int,
                   entries: list[TournamentPlayer]) -> list[TournamentGame]:
    """A knockout round: the seeded bracket in round 1, then the winners of the previous round, each
    beside the winner of the neighbouring match."""
    if number == 1:
        bracket = pairing.knockout_first_round([e.user_id for e in entries])
    else:
        winners = knockout_winners(tournament, number - 1)
        bracket = [(winners[i], winners[i + 1]) for i in range(0, len(winners) - 1, 2)]
    made = []
    for first, second in bracket:
        if second is None:
            made.append(_bye(tournament, number, first, 1.0))
        else:
            made.append(_start_game(tournament, number, first, second))
    return made


# Results -------------------------------------------------------------------------------------------------


def game_over(event: events.GameOver) -> None:
    """The move path's news that a game ended: if it is a tournament game, score it, and advance the
    tournament (the next round, the knockout's next match, the ladder's places)."""
    made_id = _pairing_of(event.game)
    if made_id is None:
        return
    made = db.session.get_one(TournamentGame, made_id)
    tournament = lock(made.tournament_id)
    if tournament is None:
        return
    db.session.refresh(made)
    made.result = standings.result_of(event.outcome)
    changed(tournament)
    if tournament.status != "running":
        return
    if tournament.format == "ladder":
        _settle_challenge(tournament, made)
        return
    replayed = tournament.format == "knockout" and setting(tournament, "draw_rule") == "replay"
    if replayed and made.result == DRAW:
        # A drawn match is played again, sides swapped, until someone wins it.
        replay = _start_game(tournament, made.round, made.second_id or 0, made.first_id)
        db.session.flush()
        _mail_round(tournament, [replay], replay=True)
        return
    advance(tournament)


def games_locked(event: events.GamesLocked) -> None:
    """The sweep locked a batch of games: find which are tournament games now, in one statement, so that
    their ends read nothing in the middle of the batch (see :class:`pbem.game.events.GamesLocked`)."""
    _find_pairings(event.game_ids, unit_of_work.reads("tournament_pairings"))


def _find_pairings(game_ids: list[int], known: dict[Any, Any]) -> None:
    """Note in ``known`` (what the unit of work has read) the tournament pairing of each of ``game_ids``
    (None for none)."""
    known.update(dict.fromkeys(game_ids))
    known.update(db.session.execute(select(TournamentGame.game_id, TournamentGame.id).where(
        TournamentGame.game_id.in_(sorted(game_ids)))).all())


def _pairing_of(game: Game) -> int | None:
    """The tournament pairing ``game`` is played for, if any."""
    known = unit_of_work.reads("tournament_pairings")
    if game.id not in known:
        _find_pairings([game.id], known)
    return known[game.id]


def _round_done(tournament: Tournament) -> bool:
    """Whether every game of the current round has its result (or counts for nobody)."""
    for made in db.session.scalars(select(TournamentGame).where(
            TournamentGame.tournament_id == tournament.id, TournamentGame.round == tournament.round)):
        if made.result is None and not made.void and not _game_over_without_result(made):
            return False
    return True


def _game_over_without_result(made: TournamentGame) -> bool:
    """A game that ended with no result (abandoned): a knockout settles it by seed."""
    return made.game is not None and made.game.status in ("finished", "abandoned") and made.result is None


def advance(tournament: Tournament) -> None:
    """When the current round is over: pair the next one, or finish the tournament (nothing while it is
    paused, or for a ladder, which runs until its organiser ends it)."""
    if tournament.status != "running" or tournament.format == "ladder" or not _round_done(tournament):
        return
    if tournament.format == "round_robin":
        finish(tournament)
    elif tournament.format == "swiss":
        players = len(active_entries(tournament))
        if tournament.round >= int(setting(tournament, "rounds")) or players < 2:
            finish(tournament)
        else:
            _pair_round(tournament, tournament.round + 1)
    else:
        winners = knockout_winners(tournament, tournament.round)
        losers = _knockout_losers(tournament, tournament.round, winners)
        for entry in tournament.entries:
            if entry.user_id in losers and entry.status == "active":
                entry.status = "out"
        if len(winners) <= 1:
            finish(tournament)
        else:
            _pair_round(tournament, tournament.round + 1)


def knockout_winners(tournament: Tournament, number: int) -> list[int]:
    """The players who won their matches of knockout round ``number``, in bracket order.

    A match is decided by its last game; a drawn game (when the settings do not replay it), an unfinished
    one, or one a player left, goes to the better seed still in the tournament."""
    seeds = {e.user_id: (e.seed or 10**9) for e in tournament.entries}
    still_in = {e.user_id for e in tournament.entries if e.status in ("active", "out")}
    matches: dict[frozenset[int | None], TournamentGame] = {}
    order: list[frozenset[int | None]] = []
    for made in db.session.scalars(select(TournamentGame).where(
            TournamentGame.tournament_id == tournament.id, TournamentGame.round == number)
            .order_by(TournamentGame.id)):
        key = frozenset((made.first_id, made.second_id))
        if key not in matches:
            order.append(key)
        matches[key] = made
    winners = []
    for key in order:
        made = matches[key]
        if made.second_id is None or made.result == WIN:
            winners.append(made.first_id)
        elif made.result == LOSS:
            winners.append(made.second_id)
        else:
            both = [u for u in (made.first_id, made.second_id) if u in still_in] or [made.first_id]
            winners.append(min(both, key=lambda u: seeds.get(u, 10**9)))
    return [w for w in winners if w in still_in]


def _knockout_losers(tournament: Tournament, number: int, winners: list[int]) -> set[int]:
    """The players of round ``number`` who did not win their match."""
    played: set[int] = set()
    for made in db.session.scalars(select(TournamentGame).where(
            TournamentGame.tournament_id == tournament.id, TournamentGame.round == number)):
        played.update(u for u in (made.first_id, made.second_id) if u is not None)
    return played - set(winners)


def finish(tournament: Tournament) -> None:
    """The tournament is over: every player gets the final standings."""
    tournament.status = "finished"
    tournament.finished_at = utcnow()
    changed(tournament)
    db.session.flush()
    ranked = standings.standings(tournament)
    for entry in tournament.entries:
        _tell(entry.user, tournament, "final standings", "mail/tournament_over.txt", standings=ranked,
              mine=next((r for r in ranked if r.user_id == entry.user_id), None))


# Ladders -----------------------------------------------------------------------------------------------


def challenge(tournament: Tournament, challenger: User, defender: User) -> TournamentGame:
    """``challenger`` challenges ``defender`` on the ladder: a game in which the defender is challenged,
    to be accepted within the settings' ``accept_days``, or lost by default."""
    if tournament.format != "ladder":
        raise PlayError("Only a ladder has challenges; the server pairs the other formats.", "not-ladder")
    if tournament.status != "running":
        raise PlayError(f"Tournament #{tournament.id} is not running.", "not-running")
    entries = {e.user_id: e for e in tournament.entries if e.status == "active"}
    mine, theirs = entries.get(challenger.id), entries.get(defender.id)
    if mine is None:
        raise PlayError(f"You are not on the ladder of tournament #{tournament.id}.", "not-entered")
    if theirs is None:
        raise PlayError(f"{defender.handle} is not on this ladder.", "not-entered")
    reach = int(setting(tournament, "reach"))
    assert mine.position is not None and theirs.position is not None
    if not 0 < mine.position - theirs.position <= reach:
        raise PlayError(
            f"You stand at place {mine.position}: you may challenge the players up to {reach} places above "
            f"you, and {defender.handle} stands at place {theirs.position}.", "out-of-reach")
    busy = db.session.scalars(select(TournamentGame).where(
        TournamentGame.tournament_id == tournament.id, TournamentGame.result.is_(None),
        TournamentGame.void.is_(False))).all()
    for open_one in busy:
        involved = {open_one.first_id, open_one.second_id}
        if challenger.id in involved or defender.id in involved:
            who = "You have" if challenger.id in involved else f"{defender.handle} has"
            raise PlayError(f"{who} a ladder game in hand already; one at a time.", "busy")
    game = challenges.open_game(challenger, tournament.engine, [defender, challenger], tournament.options,
                                time_control=tournament.time_control, rated=tournament.rated)
    made = TournamentGame(tournament_id=tournament.id, round=0, kind="challenge", game=game,
                          first_id=defender.id, second_id=challenger.id,
                          expires_at=utcnow() + timedelta(days=int(setting(tournament, "accept_days"))))
    db.session.add(made)
    changed(tournament)
    return made


def _settle_challenge(tournament: Tournament, made: TournamentGame, how: str | None = None) -> None:
    """A ladder challenge has its result: a challenger who won takes the defender's place, and the
    defender theirs (a draw, or the defender's win, changes nothing).  Both are told where they stand."""
    entries = {e.user_id: e for e in tournament.entries}
    defender, challenger = entries.get(made.first_id), entries.get(made.second_id or 0)
    if defender is None or challenger is None:
        return
    if made.result == LOSS and challenger.status == "active" and (defender.position or 0) < (
            challenger.position or 0):
        defender.position, challenger.position = challenger.position, defender.position
    changed(tournament)
    for entry in (defender, challenger):
        _tell(entry.user, tournament, f"the ladder: you stand at place {entry.position}",
              "mail/tournament_ladder.txt", made=made, position=entry.position, how=how,
              challenger=challenger.user, defender=defender.user)


def lapse_challenges(now: Any) -> int:
    """Settle the ladder challenges not accepted in time, or declined: the defender loses by default.
    Returns how many were settled.  The caller holds the write transaction."""
    due = db.session.execute(
        select(TournamentGame.id, TournamentGame.tournament_id).join(Game, Game.id == TournamentGame.game_id)
        .where(TournamentGame.kind == "challenge", TournamentGame.result.is_(None),
               TournamentGame.void.is_(False),
               (Game.status == "abandoned")
               | ((Game.status == "waiting") & (TournamentGame.expires_at <= now)))
        .order_by(TournamentGame.tournament_id, TournamentGame.id)
    ).all()
    settled = 0
    for made_id, tournament_id in due:
        tournament = lock(tournament_id)
        made = db.session.get(TournamentGame, made_id)
        if tournament is None or made is None or made.result is not None or made.game is None:
            continue
        game = play.lock_game(made.game.id)
        if game is None or game.status not in ("waiting", "abandoned"):
            continue
        if game.status == "waiting":
            challenges.lapse(game)
        made.result, made.how = LOSS, "lapsed"
        if tournament.status == "running":
            _settle_challenge(tournament, made, how="lapsed")
        settled += 1
    return settled


# Mail ------------------------------------------------------------------------------------------------------


def tournament_url(tournament: Tournament) -> str:
    """The tournament's page."""
    return f"{notify.base_url()}/tournaments/{tournament.id}"


def title(tournament: Tournament) -> str:
    """The tournament as a mail's subject names it: "Tournament #3 (Autumn Cambio)"."""
    return f"Tournament #{tournament.id} ({tournament.name})"


def _tell(user: User, tournament: Tournament, what: str, template: str, **context: Any) -> None:
    """A mail about ``tournament`` to one player."""
    engine = games.get(tournament.engine)
    context.update(tournament=tournament, engine=engine, url=tournament_url(tournament), user=user,
                   time_zone=user.time_zone, format_name=standings.FORMATS[tournament.format],
                   points_words=standings.points_words)
    outbox.enqueue(user, outbox.subject(f"{title(tournament)}: {what}"),
                   compose(template, html=True, **context), kind=kind_of(template))


def _mail_round(tournament: Tournament, made: Iterable[TournamentGame], replay: bool = False) -> None:
    """Every player paired in ``made`` gets their pairings of the round, with each game's link."""
    mine: dict[int, list[TournamentGame]] = {}
    for pairing_made in made:
        for user_id in (pairing_made.first_id, pairing_made.second_id):
            if user_id is not None:
                mine.setdefault(user_id, []).append(pairing_made)
    for user_id, theirs in mine.items():
        user = db.session.get_one(User, user_id)
        what = "a replay of your drawn match" if replay else f"round {tournament.round}: your pairings"
        if tournament.format == "round_robin" and not replay:
            what = "your games"
        _tell(user, tournament, what, "mail/tournament_round.txt", pairings=theirs, replay=replay,
              game_url=notify.game_url)


def tell_everyone(tournament: Tournament, what: str, template: str, **context: Any) -> None:
    """One mail to every player still in the tournament (and its organiser)."""
    told = set()
    for entry in tournament.entries:
        if entry.status in ("active", "out") and entry.user_id not in told:
            told.add(entry.user_id)
            _tell(entry.user, tournament, what, template, **context)
    if tournament.organiser_id not in told:
        _tell(tournament.organiser, tournament, what, template, **context)
