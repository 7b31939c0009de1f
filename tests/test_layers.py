"""The layers of pbem hold: import-linter finds every contract of pyproject.toml kept, and a copy of the
code with one import against them (the move path importing the mail) breaks the build's lint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed")


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the code under ``where``, with its own pyproject.toml, as `make lint` runs it."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=where, capture_output=True, text=True,
        env={"PATH": str(LINT_IMPORTS.parent), "PYTHONPATH": str(where)}, timeout=120, check=False,
    )


def test_every_contract_is_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_move_path_importing_the_mail_breaks_the_lint(tmp_path: Path) -> None:
    for part in ("pbem", "games"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "static"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    play = tmp_path / "pbem" / "game" / "play.py"
    play.write_text(play.read_text() + "\nfrom pbem.mailout import notify  # noqa: E402, F401\n")
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pbem is layered: each layer imports only those below it BROKEN" in result.stdout
    assert "pbem.game is not allowed to import pbem.mailout" in result.stdout
    assert "pbem.game.play -> pbem.mailout.notify" in result.stdout
