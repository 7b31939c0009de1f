#!/usr/bin/env python3
"""A pbem bot that accepts every challenge and plays random legal moves, through the JSON API only.

    PBEM_TOKEN=pbem_... python3 examples/random_bot.py --server http://127.0.0.1:5000

It needs nothing but Python's standard library.  Make the token in Settings (or `pbem user token HANDLE`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import urllib.error
import urllib.request


def call(server: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """One API call: the HTTP status and the JSON answer (errors are JSON too)."""
    request = urllib.request.Request(
        server.rstrip("/") + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def play_once(server: str, token: str) -> int:
    """Accept the challenges waiting, then make one random move in each game awaiting ours; returns how
    many moves were made."""
    status, waiting = call(server, token, "GET", "/api/v1/me/challenges")
    if status == 401:
        raise SystemExit(waiting["error"])
    for challenge in waiting.get("challenges", []):
        call(server, token, "POST", f"/api/v1/games/{challenge['game']['id']}/accept")
    _, turn = call(server, token, "GET", "/api/v1/me/turn")
    moves = 0
    for summary in turn.get("games", []):
        status, game = call(server, token, "GET", f"/api/v1/games/{summary['id']}")
        if status != 200 or not game["legal_moves"]:
            continue
        move = random.choice(game["legal_moves"])
        status, answer = call(server, token, "POST", f"/api/v1/games/{game['id']}/moves",
                              {"move": move, "expect": game["move_number"]})
        if status == 201:
            moves += 1
            print(f"game {game['id']}: played {move}", flush=True)
        elif status == 429:
            time.sleep(5)
        else:  # Someone moved meanwhile (stale), or the game ended: look again next time.
            print(f"game {game['id']}: {answer['code']}: {answer['error']}", flush=True)
    return moves


def main() -> None:
    """Play until stopped (Ctrl-C)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="http://127.0.0.1:5000")
    parser.add_argument("--token", default=os.environ.get("PBEM_TOKEN"), help="or set PBEM_TOKEN")
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between looks when idle")
    args = parser.parse_args()
    if not args.token:
        parser.error("give a token with --token or PBEM_TOKEN")
    try:
        while True:
            if play_once(args.server, args.token) == 0:
                time.sleep(args.interval)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
