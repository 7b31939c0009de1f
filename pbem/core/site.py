"""The site's own address.  Every absolute link the server writes (in mails, feeds, the API, records)
starts with ``server.base_url``, never with the Host a request names, which its sender chooses."""

from __future__ import annotations

from flask import current_app


def base_url() -> str:
    """The site's address (``server.base_url``) without a trailing slash."""
    return current_app.config["PBEM"]["server"]["base_url"].rstrip("/")


def absolute_url(path: str) -> str:
    """``path`` (beginning with "/", as ``url_for`` gives it) on the site's address."""
    return base_url() + path
