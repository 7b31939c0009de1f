"""Settings: config/default.toml, then the file named by PBEM_CONFIG, then PBEM_* variables.

A setting that is missing, misspelt or of the wrong type stops the server at start with a message that
names the setting and where it came from, rather than failing later in the middle of a request.
"""

from __future__ import annotations

import logging
import os
import socket
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
DEFAULT_FILE = CONFIG_DIR / "default.toml"

# Variables that start with PBEM_ but are not settings.
_NOT_SETTINGS = {"PBEM_CONFIG"}
_NOT_SETTINGS_PREFIXES = ("PBEM_TEST_",)

Settings = dict[str, dict[str, Any]]


class ConfigError(Exception):
    """A setting is missing or wrong; the message says which and how to fix it."""


def _read_toml(path: Path) -> Settings:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"The config file {path} does not exist (named by PBEM_CONFIG?).") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"The config file {path} is not valid TOML: {exc}") from None


def _coerce(value: Any, default: Any, name: str, source: str) -> Any:
    """Convert ``value`` to the type of the setting's default, or explain why it cannot be."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
            return value.lower() in {"1", "true", "yes", "on"}
        raise ConfigError(f"{name} (from {source}) must be true or false, not {value!r}.")
    if isinstance(default, int):
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} (from {source}) must be a whole number, not {value!r}.") from None
    if isinstance(default, list):
        # A list of numbers (e.g. scheduler.reminder_hours); from the environment, separated by commas.
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list):
            raise ConfigError(f"{name} (from {source}) must be a list of numbers, not {value!r}.")
        try:
            return [float(item) for item in items if not (isinstance(item, str) and not item.strip())]
        except (TypeError, ValueError):
            raise ConfigError(f"{name} (from {source}) must be a list of numbers, not {value!r}.") from None
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} (from {source}) must be a number, not {value!r}.") from None
    if not isinstance(value, str):
        raise ConfigError(f"{name} (from {source}) must be text, not {value!r}.")
    return value


def _merge(settings: Settings, overrides: Mapping[str, Any], source: str) -> None:
    for section, values in overrides.items():
        if section not in settings:
            known = ", ".join(sorted(settings))
            raise ConfigError(f"Unknown section [{section}] in {source}; the sections are: {known}.")
        if not isinstance(values, Mapping):
            raise ConfigError(f"[{section}] in {source} must be a table of settings.")
        for key, value in values.items():
            if key not in settings[section]:
                known = ", ".join(sorted(settings[section]))
                raise ConfigError(f"Unknown setting {section}.{key} in {source}; [{section}] has: {known}.")
            name = f"{section}.{key}"
            settings[section][key] = _coerce(value, settings[section][key], name, source)


def _from_environment(settings: Settings, environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """PBEM_<SECTION>_<KEY> variables as overrides, refusing names that match no setting."""
    found: dict[str, dict[str, str]] = {}
    for var, value in environ.items():
        if not var.startswith("PBEM_") or var in _NOT_SETTINGS or var.startswith(_NOT_SETTINGS_PREFIXES):
            continue
        rest = var[len("PBEM_") :].lower()
        for section in settings:
            if rest.startswith(section + "_") and rest[len(section) + 1 :] in settings[section]:
                found.setdefault(section, {})[rest[len(section) + 1 :]] = value
                break
        else:
            raise ConfigError(
                f"The environment variable {var} names no setting. Settings are PBEM_<SECTION>_<KEY>, "
                "e.g. PBEM_DATABASE_URL or PBEM_MAIL_SMTP_PORT; see config/default.toml."
            )
    return found


def load(
    overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """The settings in force: defaults, the PBEM_CONFIG file, PBEM_* variables, then ``overrides``."""
    environ = os.environ if environ is None else environ
    settings = _read_toml(DEFAULT_FILE)
    if environ.get("PBEM_CONFIG"):
        path = Path(environ["PBEM_CONFIG"])
        _merge(settings, _read_toml(path), str(path))
    _merge(settings, _from_environment(settings, environ), "the environment")
    if overrides:
        _merge(settings, overrides, "the app factory's arguments")
    if settings["mailbox"]["enabled"]:
        # The dev mailbox catches every mail the server sends, so it is the outbound SMTP server: one
        # setting (mailbox.port) moves both, and they can never disagree.
        settings["mail"]["smtp_host"] = settings["mailbox"]["host"]
        settings["mail"]["smtp_port"] = settings["mailbox"]["port"]
    _check(settings)
    _check_secret(settings, environ.get("PBEM_CONFIG"))
    return settings


# A secret key this long (in characters) or longer; `secrets.token_hex(32)` gives 64.
MIN_SECRET_LENGTH = 32
# How an operator makes a secret key, said wherever one is refused.
MAKE_SECRET = "`python3 -c 'import secrets; print(secrets.token_hex(32))'`"
# What the example files ask to be replaced (deploy/pbem.env.example).
_PLACEHOLDER_PREFIXES = ("change-me", "changeme", "replace-me", "secret", "your-")


def _published_secrets() -> dict[str, Path]:
    """The secret keys written in this repository's own config files (development.toml, testing.toml):
    public, so never good enough for a real server."""
    found: dict[str, Path] = {}
    for path in sorted(CONFIG_DIR.glob("*.toml")):
        try:
            key = _read_toml(path).get("server", {}).get("secret_key")
        except ConfigError:
            continue
        if isinstance(key, str) and key:
            found[key] = path
    return found


def _check_secret(settings: Settings, config_file: str | None) -> None:
    """Refuse, outside development, a secret key that is short, a placeholder, or published in this
    repository; the repository's own files may use theirs (``make run`` and the test suite do).  The
    message never shows the key."""
    key = settings["server"]["secret_key"]
    if settings["server"]["development"]:
        return
    published = _published_secrets().get(key)
    if published is not None:
        if config_file and Path(config_file).resolve() == published.resolve():
            return  # This repository's own development or test setup, run as shipped.
        problem = (f"is the one published in {published.name} of pbem's repository, which anyone can read "
                   "(it is accepted only with server.development = true)")
    elif key.lower().startswith(_PLACEHOLDER_PREFIXES):
        problem = "is still the placeholder of the example file"
    elif len(key) < MIN_SECRET_LENGTH:
        problem = f"is too short ({len(key)} characters; at least {MIN_SECRET_LENGTH})"
    elif len(set(key)) < 8:
        problem = "repeats too few characters to be secret"
    else:
        return
    raise ConfigError(
        f"server.secret_key {problem}: it signs sessions, links and reply addresses, so whoever can guess "
        f"it can play for anyone. Make one with {MAKE_SECRET} and put it in PBEM_SERVER_SECRET_KEY (e.g. "
        "in /etc/pbem/pbem.env) or in the file named by PBEM_CONFIG."
    )


def default_base_url() -> str:
    """``server.base_url`` as config/default.toml gives it (the development server's address)."""
    return str(_read_toml(DEFAULT_FILE)["server"]["base_url"])


def _check(settings: Settings) -> None:
    if not settings["server"]["secret_key"]:
        raise ConfigError(
            "server.secret_key is not set. Put it in the file named by PBEM_CONFIG or set "
            f"PBEM_SERVER_SECRET_KEY (for example to the output of {MAKE_SECRET})."
        )
    if not settings["database"]["url"]:
        raise ConfigError("database.url is empty; set PBEM_DATABASE_URL, e.g. sqlite:///pbem.db.")
    if not settings["mail"]["domain"] or "@" in settings["mail"]["domain"]:
        raise ConfigError("mail.domain must be a bare domain such as pbem.example.org.")
    if any(hours <= 0 for hours in settings["scheduler"]["reminder_hours"]):
        raise ConfigError("scheduler.reminder_hours must be hours before the deadline, each above 0.")
    digest_hour = settings["scheduler"]["digest_hour"]
    if not 0 <= digest_hour <= 23:
        raise ConfigError(f"scheduler.digest_hour must be an hour from 0 to 23, not {digest_hour}.")
    _check_limits(settings["ratelimit"])
    if not 0 <= settings["server"]["trusted_proxies"] <= 5:
        raise ConfigError("server.trusted_proxies must be the number of reverse proxies in front of the web "
                          "workers, 0 to 5 (usually 0, or 1 behind nginx).")
    if settings["server"]["password_hash"].split(":")[0] not in ("scrypt", "pbkdf2"):
        raise ConfigError('server.password_hash must be a werkzeug method: "scrypt" (the default) or '
                          '"pbkdf2:sha256:ROUNDS".')
    if not 0 <= settings["pages"]["generation_max_age_seconds"] <= 60:
        raise ConfigError("pages.generation_max_age_seconds must be from 0 to 60 (1 is usual; 0 reads every "
                          "kept answer's stamp).")
    ratings = settings["ratings"]
    if not 0 < ratings["tau"] <= 5:
        raise ConfigError(f"ratings.tau must be above 0 (0.3 to 1.2 are usual), not {ratings['tau']}.")
    if not 0 < ratings["provisional_deviation"] <= ratings["max_deviation"]:
        raise ConfigError("ratings.provisional_deviation must be above 0 and at most ratings.max_deviation.")
    if ratings["periods_per_day"] < 0:
        raise ConfigError("ratings.periods_per_day cannot be negative.")
    for section in ("smtpd", "mailbox"):
        port = settings[section]["port"]
        if not 0 <= port <= 65535:
            raise ConfigError(f"{section}.port must be between 0 and 65535, not {port}.")
    if settings["database"]["sqlite_synchronous"].lower() not in ("full", "normal"):
        raise ConfigError('database.sqlite_synchronous must be "full" or "normal".')
    if settings["mail"]["require_dmarc"] and not settings["mail"]["authserv_id"].strip():
        raise ConfigError("mail.require_dmarc needs mail.authserv_id: the name your MTA writes in the "
                          "Authentication-Results header it adds (see docs/DEPLOY.md).")
    if not 1 <= settings["monitoring"]["heartbeat_seconds"] <= 3600:
        raise ConfigError("monitoring.heartbeat_seconds must be between 1 and 3600.")
    if not 1 <= settings["smtpd"]["workers"] <= 64:
        raise ConfigError(f"smtpd.workers must be between 1 and 64, not {settings['smtpd']['workers']}.")


def _check_limits(limits: dict[str, Any]) -> None:
    """Every [ratelimit] limit must read as limits such as "5 per minute; 30 per hour"."""
    from limits import parse_many

    for name, value in limits.items():
        if name in ("enabled", "storage_uri", "key_prefix"):
            continue
        try:
            parse_many(value)
        except ValueError:
            raise ConfigError(
                f"ratelimit.{name} must be limits such as '5 per minute; 30 per hour', not {value!r}."
            ) from None


def check_limit_storage(settings: Settings, workers: int) -> None:
    """Refuse (ConfigError) outside development, and warn in it, when ``workers`` processes would each
    keep the rate limits' counts in their own memory: every worker would allow the whole limit, and a
    client's requests, spread over the workers, would seldom reach it in any one of them."""
    limits = settings["ratelimit"]
    if workers <= 1 or not limits["enabled"] or not limits["storage_uri"].startswith("memory://"):
        return
    problem = (
        f"ratelimit.storage_uri is {limits['storage_uri']!r}, which counts in each process, and {workers} "
        f"worker processes are starting: each would count on its own, so the limits on password guessing "
        f"and mail floods would allow {workers} times as much, or in practice hardly fire. Point every "
        "worker at one Redis (ratelimit.storage_uri = \"redis://127.0.0.1:6379\", see docs/DEPLOY.md) or "
        "run one worker."
    )
    if not settings["server"]["development"]:
        raise ConfigError(problem + " (Started anyway only with server.development = true.)")
    log.warning("RATE LIMITS DO NOT HOLD: %s", problem)


# The roles (see :func:`application_name`) of the processes that run the mail listener.
LISTENER_ROLES = frozenset({"pbem smtpd", "pbem run"})


def listener_store_threads(settings: Settings) -> int:
    """How many threads of the mail listener store what arrives (and process it, while a processor's
    share is free): one for each processor, and two more, which only store while all are in hand."""
    return int(settings["smtpd"]["workers"]) + 2


def application_name(role: str) -> str:
    """How a process names itself to PostgreSQL: its role, host and process id (at most the 63 bytes
    PostgreSQL keeps), so that ``pg_stat_activity`` says whose each connection is."""
    return f"{role} {socket.gethostname()} pid {os.getpid()}".encode("ascii", "replace")[:63].decode()


def flask_config(settings: Settings, role: str = "pbem web") -> dict[str, Any]:
    """The Flask and extension keys that follow from the settings (``role``: see :func:`application_name`)."""
    mail = settings["mail"]
    engine_options: dict[str, Any] = {}
    if settings["database"]["url"].startswith("postgresql"):
        engine_options["connect_args"] = {"application_name": application_name(role)}
        # A pooled connection whose session the server ended (a restart, a failover, an operator's
        # pg_terminate_backend) is found dead when taken from the pool and replaced, rather than failing
        # the request that takes it: one round trip each time a connection is taken.
        engine_options["pool_pre_ping"] = True
        if role in LISTENER_ROLES:
            # A connection for each of the listener's threads that may hold one at once: those storing
            # (and processing) what they receive, the processors, and one more.  A smaller
            # pool opens a connection for each burst of mail and closes it after, and the server plans
            # a new connection's statements afresh (0.4-1.2 ms of its CPU each, for their first ten
            # runs): with 8 senders, 76-88 messages/s against 147-151 with the pool this size.
            engine_options["pool_size"] = listener_store_threads(settings) + settings["smtpd"]["workers"] + 1
    return {
        "SQLALCHEMY_ENGINE_OPTIONS": engine_options,
        "SECRET_KEY": settings["server"]["secret_key"],
        "SQLALCHEMY_DATABASE_URI": settings["database"]["url"],
        # Sign-in cookies: never sent by another site's links or forms (SameSite=Lax), never read by
        # scripts, and only over HTTPS when the site is served so.
        "SESSION_COOKIE_SECURE": settings["server"]["secure_cookies"],
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SECURE": settings["server"]["secure_cookies"],
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_HTTPONLY": True,
        "MAIL_SERVER": mail["smtp_host"],
        "MAIL_PORT": mail["smtp_port"],
        "MAIL_USERNAME": mail["smtp_username"] or None,
        "MAIL_PASSWORD": mail["smtp_password"] or None,
        "MAIL_USE_TLS": mail["smtp_starttls"],
        "MAIL_USE_SSL": False,
        # Flask-Mail would silently drop mail under app.testing; the tests send real mail.
        "MAIL_SUPPRESS_SEND": False,
        "MAIL_DEFAULT_SENDER": f"{mail['from_name']} <pbem@{mail['domain']}>",
        # Flask-Limiter: one storage shared by the workers (see [ratelimit]); when it is away, limits are
        # counted in each process rather than failing the request.
        "RATELIMIT_ENABLED": settings["ratelimit"]["enabled"],
        "RATELIMIT_STORAGE_URI": settings["ratelimit"]["storage_uri"],
        # The prefix goes to the storage, not to Flask-Limiter's own key_prefix: the limiter is one object
        # for every app of a process, and it keeps the first app's prefix for good.
        "RATELIMIT_STORAGE_OPTIONS": {"key_prefix": settings["ratelimit"]["key_prefix"]},
        "RATELIMIT_HEADERS_ENABLED": True,
        "RATELIMIT_SWALLOW_ERRORS": True,
        "RATELIMIT_IN_MEMORY_FALLBACK_ENABLED": True,
        "PBEM": settings,
    }
