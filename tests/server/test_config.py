"""Settings: files, PBEM_* variables, and clear refusals of wrong ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from pbem.core import config
from pbem.core.config import ConfigError

# A secret key a server accepts: long and not published anywhere but in this test.
SECRET = "3f9c2a7be41d8056c9e2f17a4b3d6e80"


def test_defaults_then_file_then_environment(tmp_path: Path) -> None:
    path = tmp_path / "site.toml"
    path.write_text(f'[server]\nsecret_key = "{SECRET}"\n'
                    '[mail]\ndomain = "games.example.org"\nsmtp_port = 2500\n')
    settings = config.load(environ={"PBEM_CONFIG": str(path), "PBEM_MAIL_SMTP_PORT": "2600"})
    assert settings["mail"]["domain"] == "games.example.org"
    assert settings["mail"]["smtp_port"] == 2600  # The environment wins, and is typed.
    assert settings["smtpd"]["port"] == 2525  # Untouched defaults stay.


def test_a_missing_secret_stops_the_start_with_instructions() -> None:
    with pytest.raises(ConfigError, match=r"server.secret_key is not set.*PBEM_SERVER_SECRET_KEY"):
        config.load(environ={})


@pytest.mark.parametrize("secret", [
    "change-me-to-the-output-of-python3-c-import-secrets-print-secrets-token_hex-32",  # pbem.env.example
    "x",
    "development-only-not-secret",
    "testing-only-not-secret",
    "a" * 64,
])
def test_a_placeholder_short_or_published_secret_is_refused_with_how_to_make_one(
    secret: str, tmp_path: Path
) -> None:
    site = tmp_path / "pbem.toml"
    site.write_text(f'[server]\nsecret_key = "{secret}"\nbase_url = "https://pbem.example.org"\n')
    for environ in ({"PBEM_CONFIG": str(site)}, {"PBEM_SERVER_SECRET_KEY": secret}):
        with pytest.raises(ConfigError, match=r"server\.secret_key .*secrets\.token_hex\(32\)") as refused:
            config.load(environ=environ)
        assert len(secret) < 3 or secret not in str(refused.value)  # The refusal never shows the key.
    # A development server (`make run`) takes any key; the repository's own files take their own.
    development = config.load(environ={"PBEM_SERVER_SECRET_KEY": secret, "PBEM_SERVER_DEVELOPMENT": "1"})
    assert development["server"]["secret_key"] == secret


def test_the_shipped_files_take_their_own_secrets_only() -> None:
    testing = str(config.CONFIG_DIR / "testing.toml")
    assert config.load(environ={"PBEM_CONFIG": testing})["server"]["secret_key"]
    development_key = config._read_toml(config.CONFIG_DIR / "development.toml")["server"]["secret_key"]
    with pytest.raises(ConfigError, match=r"published in development\.toml"):
        config.load(environ={"PBEM_CONFIG": testing, "PBEM_SERVER_SECRET_KEY": development_key})


def test_a_misspelt_variable_is_named() -> None:
    with pytest.raises(ConfigError, match="PBEM_MAIL_SMTP_PROT names no setting"):
        config.load(environ={"PBEM_SERVER_SECRET_KEY": SECRET, "PBEM_MAIL_SMTP_PROT": "25"})


def test_a_wrong_type_is_named_with_its_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"smtpd.port \(from the environment\) must be a whole number"):
        config.load(environ={"PBEM_SERVER_SECRET_KEY": SECRET, "PBEM_SMTPD_PORT": "twenty-five"})
    path = tmp_path / "bad.toml"
    path.write_text(f"[server]\nsecret_key = '{SECRET}'\nwho = 1\n")
    with pytest.raises(ConfigError, match=r"Unknown setting server\.who"):
        config.load(environ={"PBEM_CONFIG": str(path)})


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        config.load(environ={"PBEM_CONFIG": str(tmp_path / "nope.toml")})


def test_the_shipped_files_load() -> None:
    for name in ("development.toml", "testing.toml"):
        assert config.load(environ={"PBEM_CONFIG": str(config.CONFIG_DIR / name)})["server"]["secret_key"]
    example = config.CONFIG_DIR / "production.example.toml"
    settings = config.load(environ={"PBEM_CONFIG": str(example), "PBEM_SERVER_SECRET_KEY": SECRET})
    assert settings["database"]["url"].startswith("postgresql")


@pytest.mark.parametrize(("setting", "pragma"), [(None, 2), ("normal", 1), ("FULL", 2)])
def test_sqlite_commits_reach_the_disk_unless_told_otherwise(tmp_path: Path, setting: str | None,
                                                             pragma: int) -> None:
    # A stored mail has been acknowledged to the sending MTA, so by default a commit waits for the disk
    # (synchronous=FULL is 2 in SQLite's answer, NORMAL is 1).
    from sqlalchemy import text

    from pbem import create_app
    from pbem.core.extensions import db

    database = {"url": f"sqlite:///{tmp_path}/sync.db"}
    if setting is not None:
        database["sqlite_synchronous"] = setting
    app = create_app({"server": {"secret_key": SECRET, "instance_path": str(tmp_path)}, "database": database})
    with app.app_context():
        assert db.session.execute(text("PRAGMA synchronous")).scalar() == pragma
        db.session.remove()
        db.engine.dispose()


def test_an_unknown_sqlite_synchronous_is_refused() -> None:
    with pytest.raises(ConfigError, match='sqlite_synchronous must be "full" or "normal"'):
        config.load(environ={"PBEM_SERVER_SECRET_KEY": SECRET, "PBEM_DATABASE_SQLITE_SYNCHRONOUS": "off"})
