"""Who really sent a mail, as the local MTA found it: SPF, DKIM and DMARC results from the
``Authentication-Results`` header(s) the MTA adds (RFC 8601), read with ``authres``.

Only headers naming the configured ``mail.authserv_id`` count, and only among the headers the receiving
MTA added: those above the mail's second ``Received:`` line.  A header further down came with the mail
(a sender can write anything there), and the MTA is told to strip any that name it on arrival (see
docs/DEPLOY.md), so a forged "dmarc=pass" plays nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import authres

from pbem.mailin.parse import Incoming

log = logging.getLogger(__name__)

# Bounds, so that a hostile header block costs little: header lines looked at, and characters of each
# Authentication-Results header read.
MAX_LINES = 100
MAX_VALUE = 2000


@dataclass(frozen=True)
class Verdict:
    """What the local MTA found of a mail's sender: the DMARC result (``pass``, ``fail``, ``none``, …,
    or None when it wrote none) for the From domain, and every result in a few words, for the note."""

    dmarc: str | None
    domain: str | None
    said: str

    @property
    def fails_dmarc(self) -> bool:
        """Whether the From domain's DMARC policy says this mail is not from it."""
        return self.dmarc == "fail"


@lru_cache(maxsize=1024)
def _parsed(value: str) -> tuple[str, tuple[Any, ...]] | None:
    """The authserv-id (lowercased) and the results of an Authentication-Results header's ``value``;
    None when it cannot be read.

    authres reads a header in 0.1-0.3 ms (one result to three), and the MTA writes the same ones again
    and again (its SPF and DMARC verdicts on a player's domain): each is read once.  The results are
    only ever read."""
    try:
        header = authres.AuthenticationResultsHeader.parse(f"Authentication-Results: {value}")
    except Exception:  # authres raises its own SyntaxError, and others on odd input: not ours to read.
        return None
    return str(header.authserv_id).lower(), tuple(header.results)


def verdict(mail: Incoming, authserv_id: str) -> Verdict | None:
    """The results written under ``authserv_id`` by the MTA that took ``mail`` in; None when it wrote
    none (no milter ran, or the mail did not come through it)."""
    wanted = authserv_id.strip().lower()
    results: list[authres.core.AuthenticationResult] = []
    received = 0
    for number, (name, value) in enumerate(mail.message.raw_items()):
        if number >= MAX_LINES:
            break
        key = name.lower()
        if key == "received":
            received += 1
            if received == 2:  # What lies below came with the mail, from elsewhere.
                break
        if key != "authentication-results":
            continue
        header = _parsed(" ".join(str(value)[:MAX_VALUE].split()))
        if header is not None and header[0] == wanted:
            results.extend(header[1])
    if not results:
        return None
    dmarc = [r for r in results if str(r.method).lower() == "dmarc"]
    outcomes = {str(r.result).lower() for r in dmarc}
    # Two results of ours that disagree: a failure wins.
    found = "fail" if "fail" in outcomes else next(iter(sorted(outcomes)), None)
    domain = next((str(p.value) for r in dmarc for p in r.properties
                   if (str(p.type), str(p.name)) == ("header", "from")), None)
    said = " ".join(f"{r.method}={r.result}" for r in results[:10])
    return Verdict(found, domain, said[:300])
