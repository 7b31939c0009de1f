"""The ``pbem`` command: each subcommand builds the app itself, as a worker process does."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any, TextIO

import click
from flask import Flask
from flask.cli import ScriptInfo

from pbem import create_app
from pbem.core.config import ConfigError, default_base_url
from pbem.core.config import load as load_settings

log = logging.getLogger(__name__)

EX_OK, EX_DATAERR, EX_TEMPFAIL = 0, 65, 75


def _app(overrides: dict[str, dict[str, Any]] | None = None) -> Flask:
    """The app a command works on: built from the configuration (and ``overrides``, by section), as a
    worker process builds it, unless the command runs under Flask's test runner
    (``app.test_cli_runner()``), which hands in its app."""
    context = click.get_current_context(silent=True)
    info = context.find_object(ScriptInfo) if context is not None else None
    if info is not None and info.create_app is not None:
        return info.create_app()
    try:
        return create_app(overrides, role=context.command_path if context is not None else "pbem")
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _logging(verbose: bool = False) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    # aiosmtpd logs every connection at INFO; our own handlers log what matters.
    logging.getLogger("mail.log").setLevel(logging.WARNING)
    # APScheduler logs every run of every job at INFO (the outbox every few seconds); our jobs log what
    # they did, and APScheduler still logs a job that fails or is missed.
    logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
    # Alembic (`pbem run --upgrade` on a database behind) logs each of its plugins at INFO; the migrations
    # it runs are what matters.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


@click.group()
def main() -> None:
    """pbem: a play-by-email and asynchronous turn server for abstract board games."""


# The database ---------------------------------------------------------------------------


@main.group()
def db() -> None:
    """Database schema commands."""


@db.command("upgrade")
def db_upgrade() -> None:
    """Create or upgrade the database schema to the latest migration."""
    _upgrade(_app())
    click.echo("The database is up to date.")


def _upgrade(app: Flask) -> None:
    """Bring the database's schema to the latest migration."""
    import flask_migrate

    with app.app_context():
        flask_migrate.upgrade()


# A migration file's own revision and the one it follows (several for a merge), as Alembic writes them.
_REVISION_LINE = re.compile(r"^(revision|down_revision)\s*(?::[^=]*)?=(.*)$", re.MULTILINE)


def schema_at_head(app: Flask) -> bool:
    """Whether the database's schema is at the latest migration, told without loading Alembic (a seventh
    of a start): one read of ``alembic_version`` beside the revisions the migration files name.  What it
    cannot read (no such table, a file it does not understand) says no, and the upgrade runs."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    from pbem import PROJECT_ROOT
    from pbem.core.extensions import db as database

    revisions: set[str] = set()
    followed: set[str] = set()
    for path in (PROJECT_ROOT / "migrations" / "versions").glob("*.py"):
        named = {name: re.findall(r"""['"]([^'"]+)['"]""", value)
                 for name, value in _REVISION_LINE.findall(path.read_text())}
        if len(named.get("revision", ())) != 1 or "down_revision" not in named:
            return False
        revisions.update(named["revision"])
        followed.update(named["down_revision"])
    with app.app_context():
        try:
            with database.engine.connect() as connection:
                stamped = set(connection.scalars(text("SELECT version_num FROM alembic_version")))
        except SQLAlchemyError:
            return False
    return bool(stamped) and stamped == revisions - followed


# Accounts ---------------------------------------------------------------------------


@main.group()
def user() -> None:
    """Player accounts."""


@user.command("add")
@click.argument("handle")
@click.argument("email")
@click.option("--password", help="A password for the web (optional; mail works without one).")
def user_add(handle: str, email: str, password: str | None) -> None:
    """Add a verified player, and print (and mail) their mail key."""
    from pbem.accounts.accounts import AccountError, create_user, mail_new_key
    from pbem.core.extensions import db as database
    from pbem.core.unit_of_work import unit_of_work

    app = _app()
    with app.app_context():
        with unit_of_work() as uow:
            try:
                new = create_user(handle, email, password=password, verified=True)
            except AccountError as exc:
                raise click.ClickException(str(exc)) from None
            database.session.flush()
            key = mail_new_key(new, "welcome")
            uow.commit()
        # Shown this once, for the operator to pass on; it is also in the player's welcome mail.
        click.echo(f"Added {new.handle} <{new.email}>. Mail key: {key}")


@user.command("renew-tokens")
@click.argument("handle")
def user_renew_tokens(handle: str) -> None:
    """Revoke every reply address and move link a player was sent (new ones come with the next mails)."""
    from pbem.accounts.accounts import find_user
    from pbem.core.unit_of_work import unit_of_work
    from pbem.mailout import tokens

    app = _app()
    with app.app_context():
        with unit_of_work() as uow:
            player = find_user(handle)
            if player is None:
                raise click.ClickException(f"There is no player called {handle!r}.")
            tokens.renew(player)
            uow.commit()
        click.echo(f"Every reply address and move link sent to {player.handle} so far is revoked.")


@user.command("token")
@click.argument("handle")
@click.option("--name", default="command line", show_default=True, help="What the token is for.")
def user_token(handle: str, name: str) -> None:
    """Make a new API token for a player and print it (it is shown this once; revoke it in Settings)."""
    from pbem.accounts import apitokens
    from pbem.accounts.accounts import AccountError, find_user

    app = _app()
    with app.app_context():
        player = find_user(handle)
        if player is None:
            raise click.ClickException(f"There is no player called {handle!r}.")
        try:
            _row, token = apitokens.create(player, name)
        except AccountError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(token)


# Computer players ---------------------------------------------------------------------------


def _tokens_file(settings: dict) -> Path:
    """The file of the bots' tokens: ``bots.tokens_file``, else bots.tokens in the instance folder."""
    return Path(settings["bots"]["tokens_file"] or Path(settings["server"]["instance_path"]) / "bots.tokens")


@main.group()
def bot() -> None:
    """Computer players (bot accounts)."""


@bot.command("add")
@click.argument("handle")
@click.option("--game", "slugs", multiple=True, required=True, metavar="SLUG",
              help="A game the bot plays (repeat for several).")
@click.option("--strength", default="medium", show_default=True,
              type=click.Choice(["easy", "medium", "hard"]), help="How hard it plays (its search budget).")
@click.option("--tokens-file", type=click.Path(dir_okay=False, path_type=Path),
              help="Add the bot's token to this file for `pbem bots` (made readable by its owner alone) "
                   "instead of printing it.")
def bot_add(handle: str, slugs: tuple[str, ...], strength: str, tokens_file: Path | None) -> None:
    """Make a bot account and its API token (printed this once, or added to --tokens-file)."""
    from pbem.accounts import bots
    from pbem.accounts.accounts import AccountError

    app = _app()
    with app.app_context():
        try:
            made, token = bots.add(handle, list(slugs), strength)
        except AccountError as exc:
            raise click.ClickException(str(exc)) from None
        what = f"{made.handle} ({strength}; {', '.join(bots.games_of(made))})"
    if tokens_file is None:
        click.echo(f"Added the bot {what}. Its API token, shown this once, for `pbem bots`:")
        click.echo(token)
        return
    tokens_file.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(os.open(tokens_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as out:
        out.write(f"{token} {made.handle}\n")
    click.echo(f"Added the bot {what}; its token is in {tokens_file}.")


@bot.command("list")
def bot_list() -> None:
    """List the bot accounts, with their games and strengths."""
    from pbem.accounts import bots

    app = _app()
    with app.app_context():
        for each in bots.all_bots():
            click.echo(f"{each.handle}: {each.bot_strength}; {', '.join(bots.games_of(each))}")


@main.command("bots")
@click.option("--server", help="The server's address (default: bots.server, else server.base_url).")
@click.option("--tokens-file", type=click.Path(dir_okay=False, path_type=Path),
              help="The bots' tokens, one a line (default: bots.tokens_file).")
def bots_command(server: str | None, tokens_file: Path | None) -> None:
    """Play for every bot of the tokens file, through the server's API, until stopped."""
    from pbem.bots import runner
    from pbem.core import config

    _logging()
    try:
        settings = config.load()
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    path = tokens_file or _tokens_file(settings)
    tokens = runner.read_tokens(path)
    if not tokens:
        raise click.ClickException(f"There are no bot tokens in {path}: make a bot with "
                                   f"`pbem bot add NAME --game SLUG --tokens-file {path}`.")
    address = server or settings["bots"]["server"] or settings["server"]["base_url"]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    log.info("bots playing on %s with %d token(s) (pid %s)", address, len(tokens), os.getpid())
    runner.run(address, tokens, settings["bots"]["poll_seconds"], settings["bots"]["max_games"], stop)
    log.info("bots stopped")


# Checking ---------------------------------------------------------------------------


@main.command()
def verify() -> None:
    """Replay every game from its record and report any whose stored state differs, and any tournament
    result that is not what its game's record gives; check the players' tallies (standings, records)
    against the games and rebuild them where they differ."""
    from pbem.game import replaycheck as verifying
    from pbem.tournament import standings

    app = _app()
    with app.app_context():
        problems = list(verifying.check_all())
        results = list(standings.check_all())
        wrong_tallies = verifying.fix_tallies()
    for problem in problems:
        click.echo(f"game #{problem.game_id}: {problem.problem}")
    if problems:
        click.echo(f"{len(problems)} game(s) do not match their records.")
    else:
        click.echo("Every game matches its record.")
    for result in results:
        click.echo(f"tournament #{result.tournament_id}, game #{result.game_id}: {result.problem}")
    if results:
        click.echo(f"{len(results)} tournament result(s) do not match their games' records.")
    else:
        click.echo("Every tournament result matches its game.")
    for line in wrong_tallies:
        click.echo(line)
    if wrong_tallies:
        count = f"{len(wrong_tallies)} tallies" if len(wrong_tallies) > 1 else "1 tally"
        click.echo(f"{count} did not match the games; rebuilt from them.")
    else:
        click.echo("Every player's tallies match their games.")
    if problems or results or wrong_tallies:
        sys.exit(1)


# Records ---------------------------------------------------------------------------


@main.command("export")
@click.option("--game", "engine", metavar="SLUG", help="Only games of this game.")
@click.option("--since", metavar="DATE", help="Only games finished on or after this date (2026-03-31).")
def export_records(engine: str | None, since: str | None) -> None:
    """Write the records of finished games to standard output, one JSON line each (docs/RECORDS.md)."""
    import games
    from pbem.archive import records

    try:
        slug = games.get(engine).slug if engine else None
        start = date.fromisoformat(since) if since else None
    except (games.UnknownGame, ValueError) as exc:
        raise click.BadParameter(str(exc)) from None
    app = _app()
    with app.app_context():
        for line in records.export(slug, start):
            click.echo(line)


@main.command("import")
@click.argument("path", type=click.File("r", encoding="utf-8"))
def import_records(path: TextIO) -> None:
    """Import the records of a JSON-lines file (as `pbem export` writes), replaying every move; a record
    that does not replay to its result is refused with the reason.  Exits 65 if any was refused."""
    from pbem.archive import records

    app = _app()
    with app.app_context():
        report = records.import_lines(path)
    for line, reason in report.refused or []:
        click.echo(f"line {line}: refused: {reason}", err=True)
    click.echo(f"{report.added} game(s) imported, {report.already} already here, "
               f"{len(report.refused or [])} refused.")
    if report.refused:
        sys.exit(EX_DATAERR)


@main.command()
@click.option("--inbound-minutes", default=10, show_default=True, type=click.IntRange(1),
              help="Inbound mail waiting or stuck longer than this (here or in the MTA's queue) is a "
                   "problem.")
@click.option("--outbox-minutes", default=30, show_default=True, type=click.IntRange(1),
              help="An unsent mail older than this is a problem.")
@click.option("--sweep-minutes", default=10, show_default=True, type=click.IntRange(1),
              help="A reminder or deadline due longer than this is a problem.")
@click.option("--silent-minutes", default=3, show_default=True, type=click.IntRange(1),
              help="A listener or scheduler without a heartbeat for this long is a problem.")
@click.option("--mta-queue/--no-mta-queue", default=True, show_default=True,
              help="Read the local Postfix's queue (`postqueue -j`) for mail to the mail domain, where "
                   "Postfix is installed.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def status(inbound_minutes: int, outbox_minutes: int, sweep_minutes: int, silent_minutes: int,
           mta_queue: bool, as_json: bool) -> None:
    """Print what to monitor: stuck inbound mail, the outbox's age, the sweep's lag, silent listeners and
    schedulers, mail waiting in the local MTA (exit 1 on a problem)."""
    import json
    from datetime import timedelta

    from pbem.schedule import status as health

    app = _app()
    queue = health.postfix_queue(app.config["PBEM"]["mail"]["domain"]) if mta_queue else None
    with app.app_context():
        found = health.check(health.Limits(
            inbound=timedelta(minutes=inbound_minutes), outbox=timedelta(minutes=outbox_minutes),
            sweep=timedelta(minutes=sweep_minutes), silent=timedelta(minutes=silent_minutes),
        ), queue)
    click.echo(json.dumps(found.to_dict(), indent=2) if as_json else "\n".join(found.lines()))
    if found.problems:
        sys.exit(1)


# Mail ---------------------------------------------------------------------------


@main.command()
@click.option("--lmtp", is_flag=True, help="Speak LMTP (for an MTA such as Postfix) instead of SMTP.")
@click.option("--host", help="Address to listen on (default: smtpd.host).")
@click.option("--port", type=int, help="Port to listen on (default: smtpd.port).")
def smtpd(lmtp: bool, host: str | None, port: int | None) -> None:
    """Receive mail: store each message, then process it."""
    from pbem.mailin import smtpd as listener

    _logging()
    app = _app()
    cfg = app.config["PBEM"]["smtpd"]
    server = listener.controller(app, host or cfg["host"], port or cfg["port"], lmtp=lmtp)
    # What was made while starting (modules, the app) lives as long as the process: frozen, it is left out
    # of the collector's full passes, as in pbem.wsgi, which otherwise walk all of it every so often in
    # the middle of a message.
    gc.freeze()
    stop = _stop_signals()  # Before starting: a SIGTERM while starting stops the listener cleanly too.
    server.start()
    log.info("listening for %s on %s:%s (pid %s)", "LMTP" if lmtp else "SMTP", server.hostname, server.port,
             os.getpid())
    received = stop()
    log.info("%s: no longer listening; finishing the messages in hand", received)
    server.stop()
    log.info("listener stopped")


@main.command()
@click.option("--sender", metavar="ADDRESS",
              help="The envelope sender (Postfix's pipe: --sender=${sender}, with null_sender= for bounces).")
@click.option("--recipient", "recipients", metavar="ADDRESS", multiple=True,
              help="An envelope recipient (Postfix's pipe: --recipient=${recipient}); may be repeated.")
def ingest(sender: str | None, recipients: tuple[str, ...]) -> None:
    """Store one message read from standard input (for an MTA pipe), then process what waits.

    Exits 0 when stored (or already stored), 65 for a message that is not mail or is too large, 75 on a
    temporary failure (settings that cannot be read included), so the MTA keeps the message and retries.
    Without --sender and --recipient the envelope is read from the Return-Path and Delivered-To headers.
    """
    from pbem.mailin import process, receive

    try:
        app = create_app(role="pbem ingest")
    except ConfigError as exc:
        # A setting missing where the MTA runs us (the pipe passes no environment): the operator can fix
        # it, and the mail must wait for that rather than bounce back to the player.
        click.echo(f"Temporary failure: the settings cannot be read: {exc}", err=True)
        sys.exit(EX_TEMPFAIL)
    limit = app.config["PBEM"]["smtpd"]["max_message_bytes"]
    raw = sys.stdin.buffer.read(limit + 1)
    if len(raw) > limit:
        click.echo(f"Rejected: the message is larger than {limit} bytes (smtpd.max_message_bytes).", err=True)
        sys.exit(EX_DATAERR)
    try:
        with app.app_context():
            receive.store(raw, sender or "", list(recipients))
            process.after_store()
    except receive.MalformedMessage as exc:
        click.echo(f"Rejected: {exc}", err=True)
        sys.exit(EX_DATAERR)
    except Exception as exc:
        click.echo(f"Temporary failure: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EX_TEMPFAIL)


@main.group()
def outbox() -> None:
    """The outbound mail queue."""


@outbox.command("deliver")
def outbox_deliver() -> None:
    """Send every due mail once and say how it went."""
    from pbem.mailout import outbox as queue

    app = _app()
    with app.app_context():
        sent, failed = queue.deliver_due()
        click.echo(f"{sent} sent, {failed} failed, {queue.pending_count()} waiting.")


@main.group("mail")
def inbound() -> None:
    """The inbound mail queue."""


@inbound.command("test")
@click.argument("address")
def mail_test(address: str) -> None:
    """Send a test mail to ADDRESS now, the way the scheduler sends every mail, and print what the
    outbound MTA answered (exit 1 if it did not take it)."""
    from pbem.mailout import outbox as queue

    _logging()
    if not address.isascii() or address.count("@") != 1 or any(c.isspace() for c in address):
        raise click.BadParameter(f"{address!r} is not a mail address in plain ASCII.", param_hint="ADDRESS")
    app = _app()
    cfg = app.config["PBEM"]["mail"]
    with app.app_context():
        taken, answer, message_id = queue.send_test(address)
    through = f"{cfg['smtp_host']}:{cfg['smtp_port']}"
    if not taken:
        click.echo(f"Not sent to {address} through {through}: {answer}", err=True)
        sys.exit(1)
    click.echo(f"Sent to {address} through {through}, Message-ID {message_id}. The MTA answered: {answer}")


@inbound.command("process")
@click.option("--stuck", "list_stuck", is_flag=True,
              help="Only list the messages that need an operator (failed, interrupted, or processing "
                   "for more than ten minutes); change nothing.")
def inbound_process(list_stuck: bool) -> None:
    """Process every stored message still waiting (the listener does this itself as mail arrives and
    when it starts; this is for an operator, e.g. after fixing what made messages wait)."""
    from pbem.mailin import process

    _logging()
    app = _app()
    with app.app_context():
        if list_stuck:
            rows = process.stuck()
            for row in rows:
                click.echo(f"#{row.id} {row.status:<11} {row.received_at:%Y-%m-%d %H:%M} from "
                           f"{row.mail_from or '?'}: {(row.note or '')[:120]}")
            click.echo(f"{len(rows)} message(s) need an operator.")
            return
        click.echo(f"{process.process_pending()} message(s) processed.")


# The scheduler's work, one pass at a time ------------------------------------------------------------


def _set_time(at: str | None) -> None:
    """Make the server's clock read ``at`` (an ISO 8601 time, UTC) for this command."""
    from pbem.core.models import set_clock

    if at is not None:
        try:
            set_clock(parse_time(at))
        except ValueError:
            raise click.BadParameter(
                f"{at!r} is not a time; write it as ISO 8601, e.g. 2025-03-03T12:00 (UTC).", param_hint="--at"
            ) from None
        # Only for this command: the process may go on (a test runs commands in its own process).
        click.get_current_context().call_on_close(lambda: set_clock(None))


@main.command()
@click.option("--at", help="Sweep as if it were this time (ISO 8601, UTC), e.g. 2025-03-03T12:00.")
def sweep(at: str | None) -> None:
    """Run one deadline sweep now: end run-out vacations, send due reminders, time out absent players."""
    from pbem.schedule import sweep as sweeping

    _set_time(at)
    app = _app()
    with app.app_context():
        click.echo(f"Sweep: {sweeping.sweep()}.")


@main.command()
@click.option("--at", help="As if it were this time (ISO 8601, UTC).")
def digest(at: str | None) -> None:
    """Write the daily digests that are due into the outbox."""
    from pbem.mailout import digest as digests

    _set_time(at)
    app = _app()
    with app.app_context():
        click.echo(f"{digests.send_due()} digest(s) written.")


# Processes ---------------------------------------------------------------------------


@main.command()
@click.option("--name", default="scheduler", show_default=True,
              help="This scheduler's name in `pbem status`, after the host's: give each of several on one "
                   "host its own.")
def scheduler(name: str) -> None:
    """Run the scheduler: outbox delivery, deadline sweeps (reminders, timeouts, vacations) and digests."""
    from apscheduler.schedulers.blocking import BlockingScheduler

    from pbem.schedule import scheduler as jobs

    _logging()
    app = _app()
    blocking = BlockingScheduler(timezone="UTC")
    jobs.add_jobs(blocking, app, name)
    jobs.started(app, name)
    log.info("scheduler %r running (pid %s); SIGTERM or Ctrl-C stops it", name, os.getpid())
    # SIGTERM (systemd's stop) ends the loop as Ctrl-C does; a job in hand is let finish.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        blocking.start()
    log.info("scheduler %r stopping: letting the job in hand finish", name)
    with contextlib.suppress(Exception):
        blocking.shutdown(wait=True)
    jobs.stopped(app, name)
    log.info("scheduler %r stopped", name)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
def web(host: str, port: int) -> None:
    """Serve the web pages with the built-in server (use a WSGI server such as gunicorn in production:
    ``gunicorn pbem.wsgi:app``)."""
    _logging()
    app = _app()
    app.run(host=host, port=port, threaded=True, use_reloader=False)


def _run_overrides(host: str, port: int, mail_port: int | None) -> dict[str, dict[str, Any]]:
    """The settings `pbem run --port P --mail-port M` changes: the mail listener on M and the dev mailbox
    on M + 1; and, while ``server.base_url`` is the development default, the base URL to this server's
    own address, so that the links it mails (a confirmation, a move) lead back to it."""
    overrides: dict[str, dict[str, Any]] = {}
    if mail_port is not None:
        overrides["smtpd"] = {"port": mail_port}
        overrides["mailbox"] = {"port": mail_port + 1}
    try:
        base_url = load_settings()["server"]["base_url"]
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if base_url == default_base_url():
        shown_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        overrides["server"] = {"base_url": f"http://{shown_host}:{port}"}
    return overrides


def _listen(controller: Any, what: str) -> None:
    """Start a mail controller, or stop with a message saying which port is taken and what to do."""
    try:
        controller.start()
    except OSError as exc:
        raise click.ClickException(
            f"The {what} cannot listen on {controller.hostname}:{controller.port} ({exc.strerror or exc}): "
            "another server (a second `pbem run`?) has that port. Give this one ports of its own, e.g. "
            "`make run PORT=5101 MAIL_PORT=2625` or `pbem run --port 5101 --mail-port 2625`."
        ) from None


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int, help="The web server's port.")
@click.option("--mail-port", type=int,
              help="The mail listener's port (default: smtpd.port); the dev mailbox takes the next one.")
@click.option("--upgrade", is_flag=True,
              help="Create or upgrade the database schema first, as `pbem db upgrade` does (`make run`).")
def run(host: str, port: int, mail_port: int | None, upgrade: bool) -> None:
    """Everything on one machine: web, mail listener, scheduler and the dev mailbox, in one process."""
    from apscheduler.schedulers.background import BackgroundScheduler

    from pbem.mailin import smtpd as listener
    from pbem.mailout import devmail
    from pbem.schedule import scheduler as jobs

    _logging()
    app = _app(_run_overrides(host, port, mail_port))
    if upgrade:
        # In this process, and only when the schema is behind: a process of its own for it took most of
        # `make run`'s start.
        if not schema_at_head(app):
            # Alembic's env.py sets the root logger up its own way (warnings only, its format): the
            # server's log goes on as configured above.
            root = logging.getLogger()
            handlers, level = list(root.handlers), root.level
            _upgrade(app)
            root.handlers[:] = handlers
            root.setLevel(level)
        click.echo("The database is up to date.")
    settings = app.config["PBEM"]
    started = []
    if settings["mailbox"]["enabled"]:
        sink = devmail.controller(sink_path(app), settings["mailbox"]["host"], settings["mailbox"]["port"])
        _listen(sink, "dev mailbox")
        started.append(sink)
        click.echo(f"Dev mailbox: SMTP sink on {sink.hostname}:{sink.port}, kept in {sink_path(app)}")
    inbound = listener.controller(app, settings["smtpd"]["host"], settings["smtpd"]["port"])
    try:
        _listen(inbound, "mail listener")
    except click.ClickException:
        for controller in started:
            controller.stop()
        raise
    started.append(inbound)
    click.echo(f"Mail listener: SMTP on {inbound.hostname}:{inbound.port}")
    click.echo(f"Links in mails point at {settings['server']['base_url']}")
    background = BackgroundScheduler(timezone="UTC")
    jobs.add_jobs(background, app)
    jobs.started(app, "scheduler")
    background.start()
    bots_stop = _start_bots(settings, f"http://{host}:{port}")
    click.echo(f"Web: http://{host}:{port}/")
    try:
        app.run(host=host, port=port, threaded=True, use_reloader=False)
    finally:
        bots_stop.set()
        background.shutdown(wait=False)
        jobs.stopped(app, "scheduler")
        for controller in reversed(started):
            controller.stop()


def sink_path(app: Flask) -> Path:
    """Where the dev mailbox keeps the mail it catches."""
    return Path(app.instance_path) / "mailbox"
def _start_bots(settings: dict, server: str) -> threading.Event:
    """The bots of the tokens file, playing on ``server`` in a thread of their own (as `pbem bots` does
    in its process); the event that stops them.  Without tokens nothing starts."""
    stop = threading.Event()
    path = _tokens_file(settings)
    if path.exists():
        # Imported only when there may be bots to run: the runner loads the computer players' search.
        from pbem.bots import runner

        tokens = runner.read_tokens(path)
        if tokens:
            thread = threading.Thread(target=runner.run, name="pbem bots", daemon=True, args=(
                server, tokens, settings["bots"]["poll_seconds"], settings["bots"]["max_games"], stop))
            thread.start()
            click.echo(f"Bots: {len(tokens)} playing through the API ({path})")
            return stop
    click.echo(f"Bots: none (`pbem bot add NAME --game SLUG --tokens-file {path}` makes one)")
    return stop


def _stop_signals() -> Callable[[], str]:
    """Catch SIGTERM (systemd's stop) and SIGINT (Ctrl-C) from now on; returns the wait for one of them,
    which answers the name of the signal that came."""
    stop = threading.Event()
    received: list[str] = []

    def note(number: int, _frame: object) -> None:
        received.append(signal.Signals(number).name)
        stop.set()

    signal.signal(signal.SIGTERM, note)
    signal.signal(signal.SIGINT, note)

    def wait() -> str:
        stop.wait()
        return received[0]

    return wait


def parse_time(text: str) -> datetime:
    """An ISO 8601 time as naive UTC (for commands that take --at)."""
    return datetime.fromisoformat(text).replace(tzinfo=None)
