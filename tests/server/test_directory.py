"""The player directory (search by the beginning of a handle, a page at a time, with ratings and games
played) on the web and through the API, and the standings in the navigation."""

from __future__ import annotations

from flask import Flask

from pbem.accounts import accounts
from pbem.archive import directory
from pbem.core.extensions import db
from pbem.core.models import Rating, utcnow
from pbem.game import play
from tests.server.test_api import Client, server  # noqa: F401 (fixture)
from tests.server.test_web_games import text_of
from tests.server.webclient import WebClient


def test_players_are_found_by_the_start_of_their_handle_page_by_page(app: Flask, ctx: Flask, players,
                                                                     server, monkeypatch) -> None:  # noqa: F811
    alice, bob, _carol = players
    for handle in ("Alfred", "al_x", "alex"):
        accounts.create_user(handle, f"{handle}@example.org", verified=True)
    accounts.create_user("alan", "alan@example.org")  # Not confirmed: not listed.
    db.session.add(Rating(user_id=alice.id, engine="cambio", rating=1612.0, deviation=60.0, games=12,
                          last_game_at=utcnow()))
    game = play.create_game("cambio", [alice, bob], {"size": 3, "placements": 2}, rated=False)
    db.session.commit()
    play.resign(game.id, bob, "web")

    web = WebClient(app)
    home = text_of(web.get("/"))
    assert 'href="/players">Players</a>' in home and 'href="/standings">Standings</a>' in home
    found = text_of(web.get("/players?q=AL"))
    handles = [h for h in ("al_x", "alex", "Alfred", "alice", "alan") if f">{h}</a>" in found]
    assert handles == ["al_x", "alex", "Alfred", "alice"]  # In handle order, any case; "_" is no wildcard.
    row = found[found.index(">alice</a>"):]
    assert "Cambio 1612" in row[:300] and "<td>1</td>" in row[:300]  # Rated, and one game finished.
    assert "No player's handle begins with zz." in text_of(web.get("/players?q=zz"))
    refused = web.get("/players?q=a%25")
    assert refused.status_code == 400 and "search by how it begins" in text_of(refused)

    monkeypatch.setattr(directory, "PAGE_SIZE", 2)  # Pages of two, to follow the next page.
    first = text_of(web.get("/players?q=al"))
    assert ">al_x</a>" in first and ">alex</a>" in first and ">Alfred</a>" not in first
    second = text_of(web.get("/players?q=al&after=alex"))
    assert ">Alfred</a>" in second and ">alice</a>" in second and ">al_x</a>" not in second

    api = Client(server, None)
    status, page = api.call("GET", "/api/v1/players?q=al&limit=3")
    assert status == 200 and [p["handle"] for p in page["players"]] == ["al_x", "alex", "Alfred"]
    assert page["next"] == "Alfred"
    status, page = api.call("GET", "/api/v1/players?q=al&limit=3&after=Alfred")
    assert page == {"players": [{"handle": "alice", "ratings": [{"game": "cambio", "display": "1612"}],
                                 "played": 1}], "next": None}
    assert api.call("GET", "/api/v1/players?q=a*")[0] == 422

    standings = text_of(web.get("/standings"))
    section = standings[standings.index('id="standings-cambio"'):]
    assert ">alice</a>" in section[:400] and "1612" in section[:400]
    assert "Nobody is rated in Truchet yet." in standings
