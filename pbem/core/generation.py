"""The host's write generation: eight bytes in a small memory-mapped file that every process of the
installation on this host maps (web workers, the mail listener, the scheduler, the CLI), changed after
every commit that wrote to the database.

A kept answer (:mod:`pbem.present.keeping`) remembers the generation read before its stamp was read;
while the generation is still that value, nothing on this host has committed a write since, and the
answer is served without reading the database (for at most ``pages.generation_max_age_seconds``).

The value is changed to eight random bytes, never incremented: two writers reading, adding one and
writing back could both write the same value, and a reader that saw it after the first would take it
for unchanged after the second.  Random values are never seen twice (in practice), so the one question a
reader asks, "is it still what I read?", is answered truly; for the same reason a torn read or write of
the eight bytes (two writers at once) only gives a value nobody saw before.

Writes are seen at the engine (:func:`pbem.core.database.init_app` installs the hooks): a statement that
is not a read marks its connection, and the commit that ends its transaction changes the generation
after the database has it; a write the driver commits by itself (a connection in autocommit) changes it
right after the statement.  What writes without the engine (an operator's psql, another host) is seen
only when a kept answer's max age runs out.
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

log = logging.getLogger(__name__)

# The generation's size in bytes.
SIZE = 8
# The settings' names for it, in the [pages] section.
SECTION = "pages"


class Generation:
    """The write generation in the file at ``path``, mapped into this process (and shared across a
    fork: the mapping is the file's)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o660)
        try:
            if os.fstat(descriptor).st_size < SIZE:
                # (Two processes doing this at once both make it SIZE bytes; one already SIZE is left.)
                os.ftruncate(descriptor, SIZE)
            self._map = mmap.mmap(descriptor, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(descriptor)

    def now(self) -> bytes:
        """The current generation."""
        return self._map[:SIZE]

    def change(self) -> None:
        """Make the generation a value never seen before (after a commit that wrote)."""
        self._map[:SIZE] = os.urandom(SIZE)

    def close(self) -> None:
        """Unmap the file (the generation is not to be used after)."""
        self._map.close()


def file_for(settings: dict[str, Any]) -> Path | None:
    """Where the installation's generation lives on this host: ``pages.generation_file``, or else a file
    in the instance path named from a digest of the database URL (its password left out, so that
    changing it changes nothing); None when the generation is turned off."""
    pages = settings[SECTION]
    if not pages["write_generation"]:
        return None
    if pages["generation_file"]:
        return Path(pages["generation_file"])
    url = make_url(settings["database"]["url"]).render_as_string(hide_password=True)
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return Path(settings["server"]["instance_path"]).resolve() / f"write-generation-{digest}"


def open_for(settings: dict[str, Any]) -> Generation | None:
    """The installation's generation mapped (see :func:`file_for`), or None when it is turned off or
    cannot be opened or mapped (logged): kept answers then read their stamps every time, as without it."""
    path = file_for(settings)
    if path is None:
        return None
    try:
        return Generation(path)
    except (OSError, ValueError) as error:
        log.warning("The write generation %s cannot be used (%s): every kept page and API answer reads "
                    "its stamp from the database.", path, error)
        return None


# Statements' first words that do not write (anything else is taken as a write: one unknown costs at
# most a kept answer's read, one missed would serve a stale answer).  "" is the pool's ping, ";".
_READS = frozenset({"SELECT", "PRAGMA", "SHOW", "SET", "BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK", ""})


def writes(statement: str) -> bool:
    """Whether ``statement`` may write: its first word (past any opening parenthesis of a compound
    SELECT) is none of the words of reads."""
    words = statement.lstrip(" \t\r\n(").split(None, 1)
    return (words[0].rstrip(";").upper() if words else "") not in _READS
