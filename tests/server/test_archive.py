"""The archive: every filter and their combinations, keyset paging, rows in words, bad filters."""

from __future__ import annotations

import html
import re
from datetime import datetime

import pytest
from flask import Flask

from pbem.archive import archive
from pbem.core.extensions import db
from pbem.core.models import Game
from pbem.game import play
from tests.server.archived import finished
from tests.server.webclient import WebClient


def ids(path: str, web: WebClient) -> list[int]:
    """The game numbers an archive page lists, in order."""
    page = web.get(path)
    assert page.status_code == 200, page.get_data(as_text=True)
    rows = re.findall(r'class="archived-game" data-game="(\d+)"', page.get_data(as_text=True))
    return [int(n) for n in rows]


@pytest.fixture
def library(ctx: Flask, players) -> dict[str, Game]:
    """Finished games of every kind of ending, on different days, and games the archive must not show."""
    alice, bob, carol = players
    g = {
        "line": finished("cambio", [alice, bob], seed=3, at=datetime(2026, 3, 1, 10)),
        "resign": finished("carreaux", [bob, carol], end="resign", moves=2, at=datetime(2026, 3, 5, 10)),
        "draw": finished("truchet", [alice, carol], end="draw", moves=3, at=datetime(2026, 3, 9, 10)),
        # Both have moved (a timeout before one side moves aborts the game, and the archive has none).
        "time": finished("cambio", [carol, alice], end="time", moves=3, at=datetime(2026, 3, 12, 10)),
        "solo": finished("boxoff", [alice], seed=5, at=datetime(2026, 3, 15, 10)),
        "truchet": finished("truchet", [bob, alice], seed=2, at=datetime(2026, 3, 20, 10)),
    }
    # Not in the archive: a private finished game, and a game still running.
    finished("cambio", [alice, bob], seed=3, public=False, at=datetime(2026, 3, 21))
    play.create_game("cambio", [alice, bob], {"size": 3})
    db.session.commit()
    assert all(game.status == "finished" for game in g.values()), {k: v.status for k, v in g.items()}
    return g


def test_every_finished_public_game_newest_first_with_players_results_and_reason(
        app: Flask, library: dict[str, Game]) -> None:
    web = WebClient(app)
    order = ["truchet", "solo", "time", "draw", "resign", "line"]
    assert ids("/archive", web) == [library[k].id for k in order]
    page = html.unescape(web.get("/archive").get_data(as_text=True))
    resigned = library["resign"]
    row = re.search(rf'data-game="{resigned.id}">(.*?)</tr>', page, re.S).group(1)
    assert "Carreaux #" in row and "bob" in row and "carol" in row
    assert re.search(r"bob</a>\s*<span class=\"result result-loss\">lost", row)
    assert re.search(r"carol</a>\s*<span class=\"result result-win\">won", row)
    assert "carol (Blue) wins: bob (Red) resigned." in row
    assert f'href="/games/{resigned.id}?move=0"' in row  # The replay.
    assert "2026-03-05" in row
    # The ending filter offers what the chosen game's rules allow.
    truchet = web.get("/archive?game=truchet").get_data(as_text=True)
    assert '<option value="capture"' in truchet and '<option value="line"' not in truchet
    assert '<option value="resignation"' in truchet


FILTERS = [
    ("game=cambio", ["time", "line"]),
    ("game=TRUCHET", ["truchet", "draw"]),
    ("player=carol", ["time", "draw", "resign"]),
    ("player=alice&opponent=carol", ["time", "draw"]),
    ("player=carol&opponent=alice", ["time", "draw"]),
    ("player=alice&opponent=bob", ["truchet", "line"]),
    ("player=alice&result=draw", ["draw"]),
    ("player=carol&result=win", ["time", "resign"]),
    ("player=carol&result=loss", []),
    ("player=bob&result=loss&game=carreaux", ["resign"]),
    ("result=draw", ["draw"]),
    ("ending=resignation", ["resign"]),
    ("ending=agreement", ["draw"]),
    ("ending=time", ["time"]),
    ("ending=score", ["solo"]),
    ("from=2026-03-05&to=2026-03-12", ["time", "draw", "resign"]),
    ("to=2026-03-04", ["line"]),
    ("min_moves=3&max_moves=3", ["time", "draw"]),
    ("game=truchet&player=alice&result=loss", ["truchet"]),
    ("game=cambio&player=alice&from=2026-03-10", ["time"]),
    ("player=alice&opponent=bob&ending=resignation", []),
    ("game=boxoff&player=bob", []),
    ("rated=no", ["solo"]),
    ("rated=yes&game=truchet", ["truchet", "draw"]),
    ("rated=no&player=alice&result=win", []),
]


def test_filters_and_their_combinations(app: Flask, library: dict[str, Game]) -> None:
    web = WebClient(app)
    for query, expected in FILTERS:
        assert ids(f"/archive?{query}", web) == [library[k].id for k in expected], query


def test_the_engines_endings_are_sorted_into_kinds(library: dict[str, Game]) -> None:
    assert library["line"].ending in ("line", "blocked", "repetition")
    assert library["truchet"].ending in ("capture", "blocked", "repetition")
    assert library["resign"].ending == "resignation" and library["time"].ending == "time"
    seats = {s.user.handle: s.result for s in library["resign"].seats}
    assert seats == {"bob": "loss", "carol": "win"}
    assert all(s.finished_at == library["resign"].finished_at for s in library["resign"].seats)


BAD_FILTERS = [
    ("game=chess", "game", "There is no game called 'chess'"),
    ("player=nobody", "player", "There is no player called 'nobody'."),
    ("opponent=bob", "opponent", "Name a player first"),
    ("player=alice&opponent=alice", "opponent", "must be another player"),
    ("result=lost", "result", "The result is one of win, loss, draw."),
    ("ending=magic", "ending", "The ending is one of"),
    ("from=31/03/2026", "from", "is not a date (write it as 2026-03-31)"),
    ("from=2026-03-10&to=2026-03-01", "to", "before its start"),
    ("min_moves=-1", "min_moves", "is not a number of moves"),
    ("min_moves=9&max_moves=2", "max_moves", "fewer than the fewest"),
    ("rated=maybe", "rated", "Rated is yes or no."),
    ("after=999999", "after", "That page no longer exists"),
]


def test_bad_filters_are_refused_with_the_reason(app: Flask, library: dict[str, Game]) -> None:
    web = WebClient(app)
    for query, field, message in BAD_FILTERS:
        page = web.get(f"/archive?{query}")
        assert page.status_code == 400, query
        assert message in html.unescape(page.get_data(as_text=True)), query
        assert 'class="archived-game"' not in page.get_data(as_text=True)
        with pytest.raises(archive.ArchiveError) as refused:
            archive.search(archive.parse_filters(dict(p.split("=") for p in query.split("&"))),
                           after=999999 if field == "after" else None)
        assert field in refused.value.errors


def test_keyset_paging_loses_and_repeats_nothing_while_games_finish(ctx: Flask, players) -> None:
    alice, bob, carol = players
    made = [finished("cambio", [alice, bob], end="resign", at=datetime(2026, 4, 1, 12, 0, n)).id
            for n in range(7)]
    # Two games finishing at the same moment are told apart by their number.
    made.append(finished("cambio", [bob, carol], end="resign", at=datetime(2026, 4, 1, 12, 0, 6)).id)
    expected = sorted(made[:7], reverse=True)
    expected.insert(0, made[7])
    seen: list[int] = []
    page = archive.search(archive.Filters(), limit=3)
    assert page.newer is None
    while True:
        seen += [g.id for g in page.games]
        # Games finishing between two pages go before the first page, never into the next.
        finished("cambio", [carol, alice], end="resign", at=datetime(2026, 5, 1, len(seen)))
        if page.older is None:
            break
        page = archive.search(archive.Filters(), after=page.older, limit=3)
    assert seen == expected
    # Back to newer pages from the last one.
    back = archive.search(archive.Filters(), before=expected[-2], limit=3)
    assert [g.id for g in back.games] == expected[-5:-2]
    # A player's archive pages the same way, through their seats.
    mine = archive.search(archive.parse_filters({"player": "bob"}), limit=5)
    rest = archive.search(archive.parse_filters({"player": "bob"}), after=mine.older, limit=5)
    assert [g.id for g in mine.games + rest.games] == expected
    assert rest.older is None and rest.newer == rest.games[0].id


def test_the_pages_link_older_and_newer_keeping_the_filters(app: Flask, ctx: Flask, players,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob, _ = players
    monkeypatch.setattr(archive, "PAGE_SIZE", 2)
    made = [finished("cambio", [alice, bob], end="resign", at=datetime(2026, 4, 1, n)).id for n in range(5)]
    web = WebClient(app)
    first = web.get("/archive?game=cambio&player=bob").get_data(as_text=True)
    older = html.unescape(re.search(r'href="([^"]+)" id="older"', first).group(1))
    assert "game=cambio" in older and "player=bob" in older and f"after={made[3]}" in older
    assert ids(older, web) == [made[2], made[1]]
    second = web.get(older).get_data(as_text=True)
    newer = html.unescape(re.search(r'href="([^"]+)" id="newer"', second).group(1))
    assert ids(newer, web) == [made[4], made[3]]
