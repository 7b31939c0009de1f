"""The Flask extensions, created here unbound and bound to the app in the factory."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_mail import Mail
from flask_migrate import Migrate
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
migrate = Migrate()
mail = Mail()
login_manager = LoginManager()
csrf = CSRFProtect()
# Rate limits: the storage and the limits come from the [ratelimit] settings (see pbem.core.config), so
# several web workers share one count when the storage is Redis.  Routes name their own limits; there is
# no default.
limiter = Limiter(get_remote_address)
