"""The command blocks of docs/DEPLOY.md, as the deployment tests run them word for word.

A block an operator copies is marked in the document with ``<!-- name -->`` on the line before it; a
test takes it from there, changes only what must differ on a test machine (paths, ports, names), each
change checked to have been made, so that the document and the tests cannot drift apart.
"""

from __future__ import annotations

import re
import shlex
import textwrap

from tests.conftest import ROOT

DEPLOY_MD = ROOT / "docs" / "DEPLOY.md"


def deploy_block(name: str) -> str:
    """The text of the block marked ``<!-- name -->`` in docs/DEPLOY.md: what an operator copies."""
    found = re.search(rf"<!-- {re.escape(name)} -->\s*```[a-z]*\n(.*?)```", DEPLOY_MD.read_text(), re.S)
    assert found, f"docs/DEPLOY.md has no block marked <!-- {name} -->"
    return textwrap.dedent(found.group(1)).rstrip(" ")  # A block in a list item is indented.


def substituted(text: str, changes: list[tuple[str, str]]) -> str:
    """``text`` with each (old, new) change made; every ``old`` must be there."""
    for old, new in changes:
        assert old in text, f"{old!r} is not in the block any more:\n{text}"
        text = text.replace(old, new)
    return text


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block, each split into words as sh would (comments left out, lines joined
    at a trailing backslash); a line of several commands joined by ``&&`` gives each of them."""
    found: list[list[str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, "&&"]:
            if word == "&&":
                if command:
                    found.append(command)
                command = []
            else:
                command.append(word)
    return found
