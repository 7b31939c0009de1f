"""Atom feeds of finished games, the standings of each game, and rating histories on player pages."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from datetime import datetime

from flask import Flask

from pbem.core.models import RatingHistory
from tests.server.archived import finished
from tests.server.webclient import WebClient

ATOM = "{http://www.w3.org/2005/Atom}"


def feed(web: WebClient, path: str) -> ET.Element:
    response = web.get(path)
    assert response.status_code == 200 and response.mimetype == "application/atom+xml", path
    root = ET.fromstring(response.get_data())
    assert root.tag == f"{ATOM}feed"
    # Atom's required elements (RFC 4287): the feed's id, title, updated and an author (here the
    # feed's own); each entry's id, title, updated and a link to the game.
    for name in ("id", "title", "updated", "author"):
        assert root.find(f"{ATOM}{name}") is not None, name
    assert root.find(f"{ATOM}link[@rel='self']") is not None
    for entry in root.findall(f"{ATOM}entry"):
        for name in ("id", "title", "updated"):
            assert (entry.findtext(f"{ATOM}{name}") or "").strip(), name
        # A link without rel is the alternate one.
        alternate = [a for a in entry.findall(f"{ATOM}link") if a.get("rel", "alternate") == "alternate"]
        assert len(alternate) == 1 and re.search(r"/games/\d+$", alternate[0].get("href"))
    return root


def games_in(root: ET.Element) -> list[int]:
    return [int(e.findtext(f"{ATOM}id").rsplit("/", 1)[1]) for e in root.findall(f"{ATOM}entry")]


def test_feeds_of_all_games_of_one_game_and_of_a_player(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    a = finished("cambio", [alice, bob], end="resign", moves=2, at=datetime(2026, 3, 1))
    b = finished("truchet", [bob, carol], end="draw", moves=2, at=datetime(2026, 3, 2))
    c = finished("cambio", [carol, alice], end="resign", moves=1, at=datetime(2026, 3, 3))
    web = WebClient(app)
    everything = feed(web, "/archive.atom")
    assert games_in(everything) == [c.id, b.id, a.id]
    assert everything.findtext(f"{ATOM}updated").startswith("2026-03-03")
    first = everything.find(f"{ATOM}entry")
    assert first.findtext(f"{ATOM}title") == f"Cambio #{c.id}: carol vs alice, alice wins"
    assert first.findtext(f"{ATOM}summary").endswith("alice (X) wins: carol (O) resigned. (1 move)")
    assert everything.findall(f"{ATOM}entry")[1].findtext(f"{ATOM}summary").endswith("(2 moves)")
    assert {a.findtext(f"{ATOM}name") for a in first.findall(f"{ATOM}author")} == {"alice", "carol"}
    assert games_in(feed(web, "/archive.atom?game=cambio")) == [c.id, a.id]
    assert games_in(feed(web, "/archive.atom?player=bob&opponent=carol")) == [b.id]
    assert games_in(feed(web, "/players/alice.atom")) == [c.id, a.id]
    assert games_in(feed(web, "/archive.atom?game=boxoff")) == []
    refused = web.get("/archive.atom?game=chess")
    assert refused.status_code == 400 and "There is no game called 'chess'" in refused.get_data(as_text=True)
    assert web.get("/players/nobody.atom").status_code == 404
    page = web.get("/archive?game=cambio").get_data(as_text=True)
    assert 'type="application/atom+xml"' in page and "/archive.atom?game=cambio" in page


def test_standings_rank_rated_players_with_their_games(app: Flask, ctx: Flask, players) -> None:
    alice, bob, carol = players
    games = [finished("cambio", [alice, bob], end="resign", moves=1, at=datetime(2026, 3, d)) for d in (1, 2)]
    games.append(finished("cambio", [carol, alice], end="draw", moves=2, at=datetime(2026, 3, 3)))
    finished("cambio", [bob, carol], end="resign", moves=1, at=datetime(2026, 3, 4))
    finished("cambio", [alice, carol], end="resign", moves=1, at=datetime(2026, 3, 5), rated=False)
    web = WebClient(app)
    page = html.unescape(web.get("/standings/cambio").get_data(as_text=True))
    rows = re.findall(r'<tr class="standing">\s*<td>(\d+)</td>\s*<td><a href="/players/(\w+)">.*?</a></td>\s*'
                      r'<td>(\d+)(<span class="provisional"[^>]*>\?</span>)?</td>\s*'
                      r'<td>(\d+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>', page)
    table = {handle: (int(rank), int(rating), bool(mark), *map(int, counts))
             for rank, handle, rating, mark, *counts in rows}
    # alice resigned twice to bob and drew with carol; bob beat alice twice and resigned to carol (alice's
    # resignation to carol in an unrated game counts for neither).
    assert {h: t[3:] for h, t in table.items()} == {"alice": (3, 0, 1, 2), "bob": (3, 2, 0, 1),
                                                     "carol": (2, 1, 1, 0)}
    assert sorted(table, key=lambda h: table[h][0]) == sorted(table, key=lambda h: -table[h][1])
    assert all(t[2] for t in table.values())  # Three games are too few: every rating is provisional.
    assert web.get("/standings/chess").status_code == 404
    assert "Nobody is rated in Truchet yet." in web.get("/standings/truchet").get_data(as_text=True)

    history = html.unescape(web.get("/players/alice").get_data(as_text=True))
    section = re.search(r'id="history-cambio">(.*?)</section>', history, re.S).group(1)
    assert "over 3 rated games" in section and section.count("<polyline") == 1
    ratings = re.search(r'<table id="ratings">(.*?)</table>', history, re.S).group(1)
    assert re.search(r"deviation \d+, volatility 0\.\d{3}</td><td[^>]*>3 rated games", ratings), ratings
    for game in games:
        assert f'href="/games/{game.id}">#{game.id}</a>' in section
    points = ctx.extensions["sqlalchemy"].session.scalars(
        RatingHistory.__table__.select().where(RatingHistory.user_id == alice.id)).all()
    assert len(points) == 3
    assert 'id="player-archive"' in history


def test_feed_links_come_from_the_configured_address_whatever_host_is_asked(
        app: Flask, ctx: Flask, players) -> None:
    """A request naming another Host (a proxy passing it on, a poisoned cache) gets feeds, API links and
    the API's server on ``server.base_url`` all the same: feed readers keep what a feed says."""
    alice, bob, _ = players
    game = finished("cambio", [alice, bob], end="resign", moves=2, at=datetime(2026, 3, 1))
    base = app.config["PBEM"]["server"]["base_url"].rstrip("/")
    web = WebClient(app)
    evil = {"Host": "evil.example"}
    for path in ("/archive.atom", "/archive.atom?game=cambio&player=alice", "/players/alice.atom"):
        text = web.get(path, headers=evil).get_data(as_text=True)
        assert "evil.example" not in text, path
        root = ET.fromstring(text)
        links = [root.findtext(f"{ATOM}id")] + [link.get("href") for link in root.iter(f"{ATOM}link")]
        links += [entry.findtext(f"{ATOM}id") for entry in root.iter(f"{ATOM}entry")]
        assert len(links) >= 5 and all(link.startswith(f"{base}/") for link in links), (path, links)
    self_link = ET.fromstring(web.get("/archive.atom?game=cambio", headers=evil).get_data()).find(
        f"{ATOM}link[@rel='self']").get("href")
    assert self_link == f"{base}/archive.atom?game=cambio"
    assert web.get(f"/api/v1/games/{game.id}", headers=evil).get_json()["url"] == f"{base}/games/{game.id}"
    assert web.get("/api/openapi.json", headers=evil).get_json()["servers"] == [{"url": base}]
