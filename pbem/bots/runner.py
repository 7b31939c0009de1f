"""The bot runner: one loop that plays for every bot whose token it holds, through ``/api/v1`` alone.

Each round it asks, for each bot, for the challenges awaiting it and the games awaiting its move, with
the ETag of the last answer (``If-None-Match``): while nothing has changed the server answers 304 with
no body, so polling every few seconds costs it next to nothing.  A challenge is accepted when the bot
plays that game with that many players and has room for another game (``max_games``), declined with
the reason otherwise.  On its turn a bot reads the game (the position its seat may know, ``position``),
lets its player (:mod:`games.players`) choose, and moves with ``expect`` so that a move on a position
gone stale is refused rather than played; it resigns a game its search finds lost, answers draw offers
by its estimate, and offers a draw in a long level game.  Everything it knows comes from the server on
each look, so a restart of either side loses nothing; a server that does not answer is asked again
after a growing pause (up to a minute).
"""

from __future__ import annotations

import json
import logging
import random
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import games
from games import players

log = logging.getLogger(__name__)

# A game the search finds lost by this estimate (0 lost .. 1 won), with this many searched positions
# behind it, is resigned; a draw offered is accepted unless the bot stands better than this; a draw is
# offered in a level game (within DRAW_BAND of even) once it is this many record entries long, at most
# once every DRAW_EVERY entries.
RESIGN_BELOW = 0.02
RESIGN_VISITS = 200
ACCEPT_DRAW_BELOW = 0.55
DRAW_BAND = 0.03
DRAW_AFTER = 120
DRAW_EVERY = 40
LONGEST_PAUSE = 60.0
TIMEOUT = 30.0


class Unreachable(Exception):
    """The server did not answer (down, restarting, or answering 5xx): try again later."""


@dataclass
class Answer:
    """An API answer: its status, its JSON (None for 304) and its ETag."""

    status: int
    data: Any
    etag: str | None = None


class Client:
    """Calls to the API with one token."""

    def __init__(self, server: str, token: str) -> None:
        self.server = server.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             etag: str | None = None) -> Answer:
        """One call; Unreachable when the server cannot be reached or fails (5xx), and after a 429 with
        the pause it asks for."""
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if etag:
            headers["If-None-Match"] = etag
        request = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                return Answer(answer.status, json.load(answer), answer.headers.get("ETag"))
        except urllib.error.HTTPError as refused:
            if refused.code == 304:
                return Answer(304, None, refused.headers.get("ETag") or etag)
            if refused.code == 429:
                pause = float(refused.headers.get("Retry-After") or 5)
                raise Unreachable(f"rate-limited; asked to wait {pause:.0f} s") from None
            if refused.code >= 500:
                raise Unreachable(f"{method} {path}: HTTP {refused.code}") from None
            try:
                return Answer(refused.code, json.load(refused))
            except ValueError:
                return Answer(refused.code, {"error": refused.reason, "code": str(refused.code)})
        except (OSError, ValueError) as exc:  # URLError, refused connections, timeouts, a cut answer
            raise Unreachable(f"{method} {path}: {exc}") from None


@dataclass
class Bot:
    """One bot account as the runner knows it: learnt from ``/api/v1/me`` with its token."""

    client: Client
    handle: str = ""
    games: frozenset[str] = frozenset()
    strength: str = "easy"
    etags: dict[str, str] = field(default_factory=dict)
    pending_turns: bool = True
    rng: random.Random = field(default_factory=random.Random)

    def learn(self) -> None:
        """Who the token plays for, what and how strongly; ValueError for a token that is not a bot's."""
        answer = self.client.call("GET", "/api/v1/me")
        if answer.status != 200:
            raise ValueError(f"the token is refused: {answer.data.get('error')}")
        bot = answer.data.get("bot")
        if not bot:
            raise ValueError(f"{answer.data['handle']} is not a bot account (pbem bot add makes one)")
        self.handle, self.strength = answer.data["handle"], bot["strength"]
        self.games = frozenset(bot["games"])

    def look(self, path: str) -> Any | None:
        """A polled list, or None while it has not changed since the last look."""
        answer = self.client.call("GET", path, etag=self.etags.get(path))
        if answer.status == 304:
            return None
        if answer.status != 200:
            raise ValueError(f"{path}: {answer.data.get('error')}")
        if answer.etag:
            self.etags[path] = answer.etag
        return answer.data

    def answer_challenges(self, max_games: int) -> int:
        """Accept the challenges the bot can play, decline the others; how many were answered."""
        waiting = self.look("/api/v1/me/challenges")
        if waiting is None:
            return 0
        answered = 0
        for challenge in waiting["challenges"]:
            game = challenge["game"]
            why_not = self.refusal(game, max_games)
            if why_not is None:
                done = self.client.call("POST", f"/api/v1/games/{game['id']}/accept",
                                        {"comment": "Good luck!"})
                log.info("%s accepts game %s (%s): %s", self.handle, game["id"], game["game"], done.status)
                self.pending_turns = True
            else:
                done = self.client.call("POST", f"/api/v1/games/{game['id']}/decline", {"comment": why_not})
                log.info("%s declines game %s: %s", self.handle, game["id"], why_not)
            answered += 1
        return answered

    def refusal(self, game: dict[str, Any], max_games: int) -> str | None:
        """Why the bot cannot take up a challenge to ``game``, or None when it can."""
        if game["game"] not in self.games:
            return f"I am a computer player of {', '.join(sorted(self.games))} only."
        try:
            engine = games.get(game["game"])
        except games.UnknownGame:
            return "I do not know that game."
        if not players.plays(engine, len(game["players"])):
            return f"I do not play {engine.title} with {len(game['players'])} players."
        mine = self.client.call("GET", f"/api/v1/games?status=active&player={self.handle}&limit=100")
        if mine.status == 200 and len(mine.data["games"]) >= max_games:
            return f"I am playing {max_games} games already; challenge me again later."
        return None

    def play_turns(self) -> int:
        """A move (or a resignation) in every game awaiting the bot; how many it made."""
        turn = self.look("/api/v1/me/turn")
        if turn is None and not self.pending_turns:
            return 0
        if turn is None:  # Unchanged, but a game was left unplayed last time: read the list again.
            self.etags.pop("/api/v1/me/turn", None)
            turn = self.look("/api/v1/me/turn")
        self.pending_turns = False
        made = 0
        for summary in (turn or {}).get("games", []):
            try:
                made += self.play_turn(summary["id"])
            except (KeyError, ValueError, games.IllegalMove) as exc:
                log.warning("%s: game %s: %s", self.handle, summary["id"], exc)
                self.pending_turns = True
        return made

    def play_turn(self, game_id: int) -> int:
        """Play in one game: answer a draw offer, resign a lost game, or move; 1 when it acted."""
        read = self.client.call("GET", f"/api/v1/games/{game_id}")
        if read.status != 200 or not read.data["your_turn"]:
            return 0
        game = read.data
        engine = games.get(game["game"])
        seat = game["your_seat"]
        if game["position"] is None:
            decision = players.Decision(self.rng.choice(game["legal_moves"]))
        else:
            state = engine.load(game["position"])
            decision = players.choose(engine, state, seat, self.strength, self.rng)
        offered_by = game["draw_offered_by"]
        if offered_by is not None and offered_by != seat:
            action = "accept" if decision.value is None or decision.value < ACCEPT_DRAW_BELOW else "decline"
            self.client.call("POST", f"/api/v1/games/{game_id}/draw", {"action": action})
            log.info("%s: game %s: draw %sed", self.handle, game_id, action)
            if action == "accept":
                return 1
        if (decision.value is not None and decision.value < RESIGN_BELOW and decision.visits >= RESIGN_VISITS
                and len(game["record"]) >= 10):
            self.client.call("POST", f"/api/v1/games/{game_id}/resign",
                             {"comment": "I resign: I see no way to save this game. Well played!"})
            log.info("%s: game %s: resigned", self.handle, game_id)
            return 1
        if decision.move is None:
            return 0
        if self.wants_draw(game, seat, decision):
            self.client.call("POST", f"/api/v1/games/{game_id}/draw", {"action": "offer"})
        moved = self.client.call("POST", f"/api/v1/games/{game_id}/moves",
                                 {"move": decision.move, "expect": game["move_number"]})
        if moved.status != 201:  # Someone moved meanwhile, or the game ended: look again next time.
            log.info("%s: game %s: %s refused: %s", self.handle, game_id, decision.move,
                     moved.data.get("code"))
            self.pending_turns = True
            return 0
        log.info("%s: game %s: played %s", self.handle, game_id, decision.move)
        return 1

    @staticmethod
    def wants_draw(game: dict[str, Any], seat: int, decision: players.Decision) -> bool:
        """A long game, level by the search's estimate, with no draw offer of the bot's lately."""
        record = game["record"]
        if (decision.value is None or abs(decision.value - 0.5) > DRAW_BAND or len(record) < DRAW_AFTER
                or game["draw_offered_by"] is not None or len(game["players"]) != 2):
            return False
        recent = record[-DRAW_EVERY:]
        return not any(entry["kind"] == "draw-offer" and entry["seat"] == seat for entry in recent)


def read_tokens(path: Path) -> list[str]:
    """The bots' tokens in ``path``: one a line; blank lines and lines starting with # are skipped."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]


def run(server: str, tokens: list[str], poll_seconds: float, max_games: int,
        stop: threading.Event | None = None) -> None:
    """Play for every bot of ``tokens`` until ``stop`` is set, looking every ``poll_seconds`` when idle."""
    stop = stop or threading.Event()
    waiting = [Bot(Client(server, token)) for token in tokens]
    ready: list[Bot] = []
    pause = 1.0
    while not stop.is_set():
        try:
            for bot in list(waiting):
                try:
                    bot.learn()
                except ValueError as exc:
                    log.error("a token of the bots' file is not used: %s", exc)
                    waiting.remove(bot)
                    continue
                log.info("playing for %s (%s, %s)", bot.handle, bot.strength, ", ".join(sorted(bot.games)))
                waiting.remove(bot)
                ready.append(bot)
            busy = 0
            for bot in ready:
                busy += bot.answer_challenges(max_games)
                busy += bot.play_turns()
            pause = 1.0
        except Unreachable as exc:
            log.warning("the server does not answer (%s); asking again in %.0f s", exc, pause)
            stop.wait(pause)
            pause = min(pause * 2, LONGEST_PAUSE)
            continue
        if not busy:
            stop.wait(poll_seconds)
