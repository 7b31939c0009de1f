"""A tournament as its page and the API show it: its settings in words, standings with tie-breaks, each
round's pairings and games, and the crosstable (a grid for a round-robin, a line per round for a Swiss)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select

import games
from pbem.core.extensions import db
from pbem.core.models import Tournament, User
from pbem.game import clock
from pbem.lobby.challenges import options_words
from pbem.tournament import organise, rounds, standings


@dataclass
class PairingLine:
    """One pairing as shown: the players' handles, its game and result ("*" while in play)."""

    id: int
    round: int
    kind: str
    first: str
    second: str | None
    game_id: int | None
    result: str
    how: str | None
    void: bool


@dataclass
class TournamentView:
    """What a tournament's page (and the API) shows."""

    tournament: Tournament
    engine: games.Engine
    format_name: str
    status_words: str
    range_words: str
    options_words: str
    time_words: str
    organiser: str
    settings: dict[str, Any]
    standings: list[standings.Entry]
    tie_breaks: list[tuple[str, str]]
    rounds: dict[int, list[PairingLine]] = field(default_factory=dict)
    players: int = 0


def build(tournament: Tournament) -> TournamentView:
    """The tournament as shown to anyone (nothing of it is hidden)."""
    found = standings.pairings(tournament.id)
    players = standings.entries(tournament.id)
    ranked = standings.standings(tournament, found, players)
    handles = {e.user_id: e.handle for e in players}
    # Players of a pairing who are no longer entered (a ladder leaver's old games) are looked up once.
    missing = {u for p in found for u in (p.first, p.second) if u is not None and u not in handles}
    if missing:
        handles.update(db.session.execute(select(User.id, User.handle).where(User.id.in_(missing))).all())
    by_round: dict[int, list[PairingLine]] = {}
    for p in found:
        by_round.setdefault(p.round, []).append(PairingLine(
            p.id, p.round, p.kind, handles.get(p.first, "?"),
            handles.get(p.second, "?") if p.second is not None else None, p.game_id, p.result or "*", p.how,
            p.void))
    return TournamentView(
        tournament=tournament, engine=games.get(tournament.engine),
        format_name=standings.FORMATS[tournament.format], status_words=organise.status_words(tournament),
        range_words=organise.range_words(tournament), options_words=options_words(tournament.options),
        time_words=clock.describe_time_control(tournament.time_control),
        organiser=tournament.organiser.handle, settings={**rounds.DEFAULT_SETTINGS, **tournament.settings},
        standings=ranked, tie_breaks=standings.TIE_BREAKS[tournament.format], rounds=by_round,
        players=sum(1 for e in players if e.status != "withdrawn"),
    )


def crosstable(view: TournamentView) -> list[list[str]]:
    """The round-robin grid of :func:`pbem.tournament.standings.crosstable` for ``view``."""
    return standings.crosstable(view.standings, standings.pairings(view.tournament.id))


def swiss_table(view: TournamentView) -> list[standings.RoundLine]:
    """The Swiss lines of :func:`pbem.tournament.standings.swiss_table` for ``view``."""
    planned = int(view.settings["rounds"]) if view.tournament.format == "swiss" else 0
    rounds_played = max(view.tournament.round, planned)
    return standings.swiss_table(view.standings, standings.pairings(view.tournament.id), rounds_played)


def as_dict(view: TournamentView, with_rounds: bool = True) -> dict[str, Any]:
    """The tournament as the API answers it."""
    t = view.tournament
    answer: dict[str, Any] = {
        "id": t.id, "name": t.name, "game": t.engine, "format": t.format, "status": t.status,
        "status_words": view.status_words, "round": t.round, "options": t.options,
        "time_control": view.time_words, "rated": t.rated, "organiser": view.organiser,
        "min_players": t.min_players, "max_players": t.max_players, "start_at": t.start_at,
        "min_rating": t.min_rating, "max_rating": t.max_rating, "settings": view.settings,
        "players": view.players,
        "standings": [{"place": e.place, "player": e.handle, "status": e.status, "points": e.points,
                       "played": e.played, "wins": e.wins, "draws": e.draws, "losses": e.losses,
                       "position": e.position,
                       "tie_breaks": {key: e.tie_breaks[key] for key, _name in view.tie_breaks}}
                      for e in view.standings],
    }
    if with_rounds:
        answer["rounds"] = [{"round": number, "pairings": [
            {"first": p.first, "second": p.second, "game": p.game_id,
             "result": None if p.result == "*" else p.result, "how": p.how, "void": p.void}
            for p in lines]} for number, lines in sorted(view.rounds.items())]
    return answer
