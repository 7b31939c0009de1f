"""No page of ours shows inside another site's frame, where a decoy over it could get a click on Resign.

The framing page is served from another port of the same host: for cookies that is the same site, so
the framed game page would show the player signed in, Resign button and all, if the browser drew it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from tests.conftest import free_port
from tests.e2e.test_board_page import start
from tests.e2e.test_web_play import sign_in

pytestmark = pytest.mark.e2e


@pytest.fixture
def decoy(server) -> Iterator[str]:
    """Another site's page that frames whatever ``/?frame=`` names, served on a port of its own."""

    class Decoy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            framed = self.path.split("?frame=", 1)[-1]
            body = (f'<h1>Click to win</h1><iframe id="framed" src="{server.url}{framed}" width="900" '
                    'height="700"></iframe>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", free_port()), Decoy)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{site.server_port}/"
    site.shutdown()
    site.server_close()


def test_the_game_page_is_not_drawn_in_another_sites_frame(browser, server, sink, decoy: str) -> None:
    game_id = start(server, "cambio", ("dora", "eve"))
    page = sign_in(browser, server, "dora")
    page.goto(f"{server.url}/games/{game_id}")
    expect(page.get_by_role("button", name="Resign")).to_be_visible()  # What a decoy would be after.
    with page.expect_response(f"{server.url}/games/{game_id}") as framed:
        page.goto(f"{decoy}?frame=/games/{game_id}")
    assert framed.value.status == 200  # The server answered; the browser refused to draw it.
    expect(page.locator("h1")).to_have_text("Click to win")
    frame = next(f for f in page.frames if f != page.main_frame)
    assert "Resign" not in frame.evaluate("document.documentElement.innerText")
