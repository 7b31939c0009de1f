"""Links that carry a secret: address confirmation, password reset, address change and one-click moves.

Whoever holds such a link can act for its player until it is used or expires, so its secret must not
outlive the mail it came in.  Two places would otherwise keep it:

- the web servers' logs: gunicorn's access log (which ``deploy/pbem-web.service`` turns on) and the
  development server's both write every request's path, and Flask logs the path of a request that
  failed.  Their loggers get a filter that cuts the secret out of every path it knows, so the log says
  ``GET /m/[redacted]``;
- the Referer a browser sends with what the page loads or links to (our own style sheet and scripts,
  whose requests are logged too): the pages of these links are served with ``Referrer-Policy:
  no-referrer``.

The links are known by their route (:func:`pbem.core.redaction.secret_path_prefixes`): every URL rule with a
``<token>`` variable is one, so a new kind of link is covered without being listed here.  What players
write for each other is kept free of the same links by :func:`pbem.core.redaction.blank_secrets`.
``deploy/nginx.conf`` cuts the same paths out of nginx's own access log.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any

from flask import Flask, request
from werkzeug.wrappers import Response

from pbem.core import redaction
from pbem.core.redaction import REDACTED

# The loggers that write request paths: the development server's (werkzeug), gunicorn's access and
# error logs, and the app's own (Flask logs the path of a request that raised).
PATH_LOGGERS = ("werkzeug", "gunicorn.access", "gunicorn.error")


class RedactSecretLinks(logging.Filter):
    """A logging filter that cuts the secret out of every secret link in a record's message and
    arguments (a request line, a path, a Referer), whatever logger or format wrote them."""

    def __init__(self) -> None:
        super().__init__()
        self._prefixes: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add_prefixes(self, prefixes: Iterable[str]) -> None:
        """Cut the secret out of paths that begin with any of ``prefixes`` too."""
        prefixes = self._prefixes | frozenset(prefixes)
        if prefixes != self._prefixes:
            self._prefixes = prefixes
            # Read in one pass, so a long line is read once (a request line is a few kilobytes anyway).
            self._pattern = redaction.secret_path_pattern(prefixes)

    def redact(self, text: str) -> str:
        """``text`` with the secret of every secret link in it replaced by :data:`REDACTED`."""
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda found: found.group(1) + REDACTED, text)

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; every record is kept."""
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        args: Any = record.args
        if isinstance(args, dict):
            # Changed in place: gunicorn's access log passes a dict of its own kind (one that answers
            # "-" for a missing key), which its format string relies on.
            for key, value in args.items():
                if isinstance(value, str):
                    args[key] = self.redact(value)
        elif isinstance(args, tuple):
            record.args = tuple(self.redact(a) if isinstance(a, str) else a for a in args)
        return True


# One filter for the process, added once to each logger, however many apps the process makes.
_FILTER = RedactSecretLinks()


def redact(text: str) -> str:
    """``text`` with the secrets of the app's secret links cut out (for a message of our own)."""
    return _FILTER.redact(text)


def init_app(app: Flask) -> None:
    """Keep the app's secret links out of the web servers' logs and out of Referer headers."""
    _FILTER.add_prefixes(redaction.secret_path_prefixes(app))
    # Comments are kept free of the same links (and of every other secret of ours): see pbem.core.redaction.
    redaction.init_app(app)
    for logger in (*map(logging.getLogger, PATH_LOGGERS), app.logger):
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    app.after_request(_no_referrer_from_secret_pages)


def _no_referrer_from_secret_pages(response: Response) -> Response:
    # The page's own address holds the secret: the browser must not pass it on with what the page loads.
    if request.url_rule is not None and "token" in request.url_rule.arguments:
        response.headers["Referrer-Policy"] = "no-referrer"
    return response
