"""A browser-like test client for the web tests: it reads the CSRF token from a page, as a form does.

Each request runs in a context of its own, as a real request would: the test's app context (``ctx``)
is neither seen nor changed by it (Flask would otherwise reuse it, sharing ``g`` and the database
session between the test and every client).  After each request the test's session is rolled back, so
what the test reads next comes fresh from the database.
"""

from __future__ import annotations

import contextvars
import re
from typing import Any

from flask import Flask, has_app_context
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from pbem.core.extensions import db
from pbem.core.models import User

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


class WebClient:
    """A test client that signs in and posts forms with the token the page carries."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.client: FlaskClient = app.test_client()

    def _request(self, method: str, path: str, **kwargs: Any) -> TestResponse:
        response = contextvars.Context().run(getattr(self.client, method), path, **kwargs)
        if has_app_context():
            db.session.rollback()
        return response

    def get(self, path: str, **kwargs: Any) -> TestResponse:
        """GET a page."""
        return self._request("get", path, **kwargs)

    def token(self, page: str = "/") -> str:
        """The CSRF token of this session, read from a page as the browser would."""
        match = _TOKEN.search(self.get(page).get_data(as_text=True))
        if match is None:
            # Pages without a form for visitors: the sign-in form always has one.
            match = _TOKEN.search(self.get("/login").get_data(as_text=True))
        assert match is not None
        return match.group(1)

    def post(self, path: str, data: dict[str, Any] | None = None, *, json: bool = False,
             csrf: bool = True, **kwargs: Any) -> TestResponse:
        """POST a form (with the CSRF token unless ``csrf`` is False); ``json`` asks for the script's
        JSON answer."""
        data = dict(data or {})
        if csrf:
            data.setdefault("csrf_token", self.token())
        headers = {**({"Accept": "application/json"} if json else {}), **kwargs.pop("headers", {})}
        return self._request("post", path, data=data, headers=headers, **kwargs)

    def sign_in(self, user: User, password: str = "correct horse") -> TestResponse:
        """Sign ``user`` in (giving them ``password`` first)."""
        from pbem.accounts import accounts

        def give_password() -> None:
            with self.app.app_context():
                accounts.set_password(db.session.get(User, user.id), password)
                db.session.commit()

        contextvars.Context().run(give_password)
        response = self.post("/login", {"login": user.handle, "password": password})
        assert response.status_code == 302, response.get_data(as_text=True)
        return response
