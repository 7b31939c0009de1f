"""The Flask extensions, created here unbound and bound to the app in the factory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import click
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_mail import Mail
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy import MetaData, Table
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    """The declarative base; constraint names are fixed so that migrations name them the same on every
    database."""

    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )
    if TYPE_CHECKING:
        # Every model is mapped to a Table (DeclarativeBase says only FromClause): Core statements take it.
        __table__: ClassVar[Table]


db = SQLAlchemy(model_class=Base)
# The models' base class.  A type checker cannot take an attribute (db.Model) as a base class; what it
# needs to know of it is what Base declares (the typed mapping), so it is shown Base.
if TYPE_CHECKING:
    Model = Base
else:
    Model = db.Model


class Migrations:
    """Flask-Migrate, loaded where a migration runs and nowhere else.

    Alembic and what it brings (Mako, Pygments, every SQL dialect) are 11 MB of a process and a fifth of
    its start, and a web worker, a listener or a scheduler never migrates.  So the app is given
    Flask-Migrate's extension and its ``db`` command as stand-ins that load the real ones when first
    used: by `pbem db upgrade`, ``flask_migrate.upgrade()`` or `flask --app pbem.wsgi db …`."""

    def init_app(self, app: Flask, db: SQLAlchemy, directory: str) -> None:
        """Bind the migrations in ``directory``, of the models of ``db``, to ``app``."""
        app.extensions["migrate"] = _PendingMigrate(app, db, directory)
        app.cli.add_command(_PendingCommand("db", help="Perform database migrations."))


class _PendingMigrate:
    """``app.extensions["migrate"]`` until something reads it; then Flask-Migrate's own, in its place."""

    def __init__(self, app: Flask, db: SQLAlchemy, directory: str) -> None:
        self._app, self._db, self._directory = app, db, directory

    def __getattr__(self, name: str) -> Any:
        from flask_migrate import Migrate

        # Binding puts Flask-Migrate's extension, and its db command, where the stand-ins were.
        Migrate(self._app, self._db, self._directory)
        return getattr(self._app.extensions["migrate"], name)


class _PendingCommand(click.Command):
    """Flask-Migrate's ``db`` command group, loaded when it is run (a help listing only names it)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        """The context of the real group, which Click then invokes."""
        # (Flask-Migrate's type stubs leave its cli module out.)
        from flask_migrate.cli import db  # type: ignore[import-not-found]

        return db.make_context(info_name, args, parent, **extra)


migrate = Migrations()
mail = Mail()
login_manager = LoginManager()
csrf = CSRFProtect()
# Rate limits: the storage and the limits come from the [ratelimit] settings (see pbem.core.config), so
# several web workers share one count when the storage is Redis.  Routes name their own limits; there is
# no default.
limiter = Limiter(get_remote_address)
