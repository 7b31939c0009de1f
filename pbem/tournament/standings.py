"""A tournament's standings, crosstable and rounds, derived from its pairings' results, and the check
that every pairing's result is the one its game's record gives (``pbem verify``).

A pairing's ``result`` is its first player's score ("1", "½", "0"), copied from its game when the game
ends (:func:`result_of`) or set by the rules for what was not played (a bye, a forfeit).  Everything
here is computed from one read of the pairings and one of the entries, so the standings page of a
1,000-player tournament costs two indexed queries and a pass over its pairings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import select

from games import Outcome
from pbem.core.extensions import db
from pbem.core.models import Game, Tournament, TournamentGame, TournamentPlayer, User
from pbem.game import replay

WIN, DRAW, LOSS = "1", "½", "0"
SCORE = {WIN: 1.0, DRAW: 0.5, LOSS: 0.0}
OTHER_SIDE = {WIN: LOSS, DRAW: DRAW, LOSS: WIN}
FORMATS = {"round_robin": "Round-robin", "swiss": "Swiss", "knockout": "Knockout", "ladder": "Ladder"}
# The tie-breaks of each format, in the order they count, by key and by name.
TIE_BREAKS = {
    "round_robin": [("sb", "Sonneborn-Berger")],
    "swiss": [("buchholz", "Buchholz"), ("median", "Median Buchholz")],
    "knockout": [],
    "ladder": [],
}


def result_of(outcome: Outcome | None) -> str | None:
    """A two-player game's result as its first player's score; None while it has none."""
    if outcome is None or len(outcome.results) != 2:
        return None
    return {"win": WIN, "draw": DRAW, "loss": LOSS}[outcome.results[0]]


def points_words(points: float) -> str:
    """A score as people write it: "2½", "½", "3"."""
    whole, half = int(points), points - int(points) >= 0.5
    if half:
        return f"{whole}½" if whole else "½"
    return str(whole)


@dataclass(frozen=True)
class Pairing:
    """A pairing as the standings read it."""

    id: int
    round: int
    kind: str
    game_id: int | None
    first: int
    second: int | None
    result: str | None
    how: str | None
    void: bool

    def score_of(self, user_id: int) -> str | None:
        """``user_id``'s result in this pairing ("1", "½", "0"), None while it has none."""
        if self.result is None:
            return None
        return self.result if user_id == self.first else OTHER_SIDE[self.result]

    def opponent_of(self, user_id: int) -> int | None:
        """The other player of the pairing (None for a bye)."""
        return self.second if user_id == self.first else self.first


def pairings(tournament_id: int) -> list[Pairing]:
    """Every pairing of the tournament, by round and in the order made (one indexed read)."""
    table = TournamentGame.__table__.c
    rows = db.session.execute(
        select(table.id, table.round, table.kind, table.game_id, table.first_id, table.second_id,
               table.result, table.how, table.void)
        .where(table.tournament_id == tournament_id).order_by(table.round, table.id)
    )
    return [Pairing(*row) for row in rows]


@dataclass
class Entry:
    """A player's line of the standings."""

    user_id: int
    handle: str
    status: str
    seed: int | None
    position: int | None
    points: float = 0.0
    played: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    tie_breaks: dict[str, float] = field(default_factory=dict)
    place: int = 0
    # The round a knockout player reached (the last they played in).
    reached: int = 0
    # (opponent, own score) of each counted game, for the tie-breaks.
    scored: list[tuple[int, float]] = field(default_factory=list)

    @property
    def points_words(self) -> str:
        """The score as people write it."""
        return points_words(self.points)


def entries(tournament_id: int) -> list[Entry]:
    """The tournament's players with their handles, in the order they joined."""
    rows = db.session.execute(
        select(TournamentPlayer.user_id, User.handle, TournamentPlayer.status, TournamentPlayer.seed,
               TournamentPlayer.position)
        .join(User, User.id == TournamentPlayer.user_id)
        .where(TournamentPlayer.tournament_id == tournament_id).order_by(TournamentPlayer.id)
    )
    return [Entry(*row) for row in rows]


def standings(tournament: Tournament, found: list[Pairing] | None = None,
              players: list[Entry] | None = None) -> list[Entry]:
    """The players best first, with their points, games and the format's tie-breaks; equal players
    share a place."""
    found = pairings(tournament.id) if found is None else found
    players = entries(tournament.id) if players is None else players
    by_id = {e.user_id: e for e in players}
    for pairing in found:
        if pairing.void:
            continue
        for user_id in (pairing.first, pairing.second):
            if user_id is None or user_id not in by_id:
                continue
            entry = by_id[user_id]
            entry.reached = max(entry.reached, pairing.round)
            score = pairing.score_of(user_id)
            if score is None:
                continue
            entry.points += SCORE[score]
            opponent = pairing.opponent_of(user_id)
            if opponent is None:
                continue  # A bye scores, but is no game and has no opponent for the tie-breaks.
            entry.played += 1
            entry.wins += score == WIN
            entry.draws += score == DRAW
            entry.losses += score == LOSS
            entry.scored.append((opponent, SCORE[score]))
    for entry in players:
        opponents = [by_id[o].points for o, _s in entry.scored if o in by_id]
        entry.tie_breaks = {
            "sb": sum(by_id[o].points * s for o, s in entry.scored if o in by_id),
            "buchholz": sum(opponents),
            "median": sum(sorted(opponents)[1:-1]) if len(opponents) >= 3 else sum(opponents),
        }
    keys = {
        "round_robin": lambda e: (-e.points, -e.tie_breaks["sb"]),
        "swiss": lambda e: (-e.points, -e.tie_breaks["buchholz"], -e.tie_breaks["median"]),
        "knockout": lambda e: (e.status == "out", -e.reached, -e.points),
        "ladder": lambda e: (e.position if e.position is not None else 10**9,),
    }
    key = keys[tournament.format]
    # Those who left stand below those still in, whatever their points.
    ranked = sorted(players, key=lambda e: (e.status in ("withdrawn", "removed"), key(e), e.seed or 0,
                                            e.handle.lower()))
    previous = None
    for number, entry in enumerate(ranked, 1):
        mine = (entry.status in ("withdrawn", "removed"), key(entry))
        entry.place = number if mine != previous else ranked[number - 2].place
        previous = mine
    return ranked


def crosstable(ranked: list[Entry], found: list[Pairing]) -> list[list[str]]:
    """The round-robin crosstable: a row per player in standings order, a column per opponent in the same
    order, each cell the row player's results against that opponent ("1", "½", "0", "*" while played,
    "" on the diagonal)."""
    number = {e.user_id: i for i, e in enumerate(ranked)}
    cells: dict[tuple[int, int], list[str]] = defaultdict(list)
    for pairing in found:
        if pairing.second is None or pairing.void:
            continue
        for me in (pairing.first, pairing.second):
            other = pairing.opponent_of(me)
            if me in number and other in number:
                cells[number[me], number[other]].append(pairing.score_of(me) or "*")
    return [[" ".join(cells.get((i, j), [])) if i != j else "" for j in range(len(ranked))]
            for i in range(len(ranked))]


@dataclass
class RoundLine:
    """One player's line in a Swiss crosstable: per round, the opponent's place, the side and the result."""

    entry: Entry
    rounds: list[str]


def swiss_table(ranked: list[Entry], found: list[Pairing], rounds: int) -> list[RoundLine]:
    """The Swiss crosstable: for each player and round, ``5w 1`` (the opponent's place in the standings,
    ``w`` moving first or ``b`` second, the result), ``bye 1``, or ``-`` when not paired."""
    place = {e.user_id: e.place for e in ranked}
    lines = {e.user_id: RoundLine(e, ["-"] * rounds) for e in ranked}
    for pairing in found:
        if not 1 <= pairing.round <= rounds:
            continue
        for me in (pairing.first, pairing.second):
            if me is None or me not in lines:
                continue
            score = "void" if pairing.void else (pairing.score_of(me) or "*")
            other = pairing.opponent_of(me)
            if other is None:
                lines[me].rounds[pairing.round - 1] = f"bye {score}"
            else:
                side = "w" if me == pairing.first else "b"
                lines[me].rounds[pairing.round - 1] = f"{place.get(other, '?')}{side} {score}"
    return [lines[e.user_id] for e in ranked]


# Checking against the records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    """A pairing whose stored result is not what its game's record gives."""

    tournament_id: int
    game_id: int
    problem: str


def check_all(batch: int = 200) -> Iterator[Mismatch]:
    """Every tournament pairing whose result differs from the one its game's record replays to."""
    last = 0
    while True:
        rows = db.session.execute(
            select(TournamentGame, Game).join(Game, Game.id == TournamentGame.game_id)
            .where(TournamentGame.id > last).order_by(TournamentGame.id).limit(batch)
        ).all()
        if not rows:
            return
        for pairing, game in rows:
            problem = _check(pairing, game)
            if problem is not None:
                yield Mismatch(pairing.tournament_id, game.id, problem)
        last = rows[-1][0].id
        db.session.expunge_all()


def _check(pairing: TournamentGame, game: Game) -> str | None:
    """What is wrong with one pairing's result, if anything."""
    if game.status not in ("finished", "abandoned") or game.state is None:
        if pairing.result is not None and pairing.how is None:
            return f"its result {pairing.result} is recorded, but game #{game.id} is not over"
        return None
    record = replay.Replay.of(game)
    for move in game.moves:
        record.apply(move.seat, move.kind, move.text)
    expected = result_of(record.outcome)
    if pairing.how is not None:
        return None  # Settled by the tournament's rules (a forfeit), not by the game.
    if expected != pairing.result:
        return (f"the standings count {pairing.result or 'no result'} for its first player, but its record "
                f"gives {expected or 'no result'}")
    return None
