"""Atom feeds of finished games, built with feedgen."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Response, current_app, url_for

import games
from pbem.archive import archive
from pbem.core.models import Game, utcnow
from pbem.core.site import absolute_url
from pbem.game import results


def _utc(value: datetime | None) -> datetime:
    return (value or utcnow()).replace(tzinfo=UTC)


def entry_title(game: Game) -> str:
    """A finished game in a line: the game, its number, its players and who won (a game played alone
    names its player once: "Box Off #4: pia: cleared")."""
    title = f"{games.get(game.engine).title} #{game.id}"
    if game.players == 1:
        return f"{title}: {results.headline(game)}"
    return f"{title}: {results.players(game)}, {results.headline(game)}"


def atom(found: list[Game], title: str, link: str, self_url: str,
         updated: datetime | None = None) -> Response:
    """An Atom feed of ``found`` (newest first): each entry links the game's page.  Its time of update is
    its latest game's end, or with no game ``updated`` (by default the time asked)."""
    # Imported here: feedgen brings lxml and dateutil (5 MB), which a worker needs only for a feed.
    from feedgen.feed import FeedGenerator

    feed = FeedGenerator()
    feed.id(self_url)
    feed.title(f"{title} · pbem")
    feed.author({"name": current_app.config["PBEM"]["mail"]["from_name"]})
    feed.link(href=link, rel="alternate")
    feed.link(href=self_url, rel="self")
    feed.updated(_utc(found[0].finished_at if found else updated))
    for game in found:
        url = absolute_url(url_for("games.game", game_id=game.id))
        entry = feed.add_entry(order="append")
        entry.id(url)
        entry.title(entry_title(game))
        # One link only: feedgen 1.0 writes an entry's links without their rel and type, so a second link
        # (to the JSON record, say) would be a second "alternate" of the same type, which Atom forbids.
        entry.link(href=url, rel="alternate")
        entry.updated(_utc(game.finished_at))
        entry.published(_utc(game.finished_at))
        entry.summary(f"{archive.result_words(game)} ({game.ply} move{'' if game.ply == 1 else 's'})")
        for seat in game.seats:
            if seat.user is not None:
                entry.author({"name": seat.user.handle})
    return Response(feed.atom_str(pretty=True), mimetype="application/atom+xml")
