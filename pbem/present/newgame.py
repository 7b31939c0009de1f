"""The new-game form: its option fields drawn from the engine's options schema, and the reading of a
submitted form into the arguments of :func:`pbem.lobby.challenges.new_game`, with a message per field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flask import current_app
from marshmallow import ValidationError, fields, missing, validate

import games
from pbem.accounts import accounts, bots
from pbem.core.errors import PlayError
from pbem.core.models import User
from pbem.game import clock
from pbem.lobby import challenges


@dataclass
class OptionField:
    """One engine option as a form control: ``kind`` is select, number, checkbox or text."""

    name: str
    label: str
    kind: str
    default: Any
    choices: list[tuple[str, str]] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    help: str = ""


@dataclass
class NewGame:
    """A submitted form read into what :func:`pbem.lobby.challenges.new_game` takes, or the errors by
    field."""

    engine: games.Engine
    seats: list[User | None] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    public: bool = True
    rated: bool = True
    time_control: dict[str, Any] = field(default_factory=dict)
    min_rating: int | None = None
    max_rating: int | None = None
    errors: dict[str, str] = field(default_factory=dict)


def default_time_choice() -> str:
    """The time control the form offers first: the configured days per move."""
    return f"days:{current_app.config['PBEM']['games']['default_days_per_move']}"


def option_fields(engine: games.Engine) -> list[OptionField]:
    """The engine's options as form controls: OneOf becomes a select, Range the bounds of a number."""
    out = []
    for name, schema_field in engine.options.fields.items():
        default = schema_field.load_default
        if default is missing or callable(default):
            default = None
        one_of = next((v for v in schema_field.validators if isinstance(v, validate.OneOf)), None)
        bounds = next((v for v in schema_field.validators if isinstance(v, validate.Range)), None)
        label = schema_field.metadata.get("label") or name.replace("_", " ").capitalize()
        hint = schema_field.metadata.get("description", "")
        if one_of is not None:
            labels = list(one_of.labels) or [str(c) for c in one_of.choices]
            choices = [(str(c), str(lab)) for c, lab in zip(one_of.choices, labels, strict=False)]
            out.append(OptionField(name, label, "select", default, choices=choices, help=hint))
        elif isinstance(schema_field, fields.Boolean):
            out.append(OptionField(name, label, "checkbox", bool(default), help=hint))
        elif isinstance(schema_field, fields.Number):
            out.append(OptionField(
                name, label, "number", default,
                minimum=bounds.min if bounds is not None else None,
                maximum=bounds.max if bounds is not None else None,
                help=hint or ("blank for the usual" if default is None else ""),
            ))
        else:
            out.append(OptionField(name, label, "text", default or "",
                                   help=hint or ("blank for the usual" if not default else "")))
    return out


def read(engine: games.Engine, form: Any, creator: User) -> NewGame:
    """Read a submitted new-game form; ``errors`` maps each refused field to its message."""
    result = NewGame(engine=engine, public=bool(form.get("public")), rated=bool(form.get("rated")))
    result.options = read_options(engine, form, result.errors)
    strength = form.get("computer", "")
    result.seats = (_computer_seats(engine, form, creator, strength, result.errors) if strength
                    else _read_seats(engine, form, creator, result.errors))
    try:
        result.time_control = clock.time_control_from_choice(form.get("time", ""),
                                                             bool(form.get("weekend_pause")))
    except clock.TimeControlError as exc:
        result.errors["time"] = str(exc)
    if not result.public and None in result.seats:
        result.errors["public"] = (
            "A private game cannot have open seats: name every player, or make it public.")
    result.min_rating = _read_rating(form, "min_rating", result.errors)
    result.max_rating = _read_rating(form, "max_rating", result.errors)
    if not {"min_rating", "max_rating", "players"} & set(result.errors):
        try:
            challenges.check_rating_range(result.min_rating, result.max_rating,
                                          open_seats=None in result.seats)
        except PlayError as exc:
            result.errors["min_rating"] = exc.message
    return result


def _read_rating(form: Any, name: str, errors: dict[str, str]) -> int | None:
    """A rating bound of the form: a whole number, or None when left blank."""
    value = form.get(name, "").strip()
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 5:
        errors[name] = (f"Write a whole number from {challenges.LOWEST_RATING} to "
                        f"{challenges.HIGHEST_RATING}, or leave it blank for no bound.")
        return None
    return int(value)


def read_options(engine: games.Engine, form: Any, errors: dict[str, str]) -> dict[str, Any]:
    """The game's options in a submitted form (fields ``opt-NAME``); each refused one noted in ``errors``."""
    raw: dict[str, Any] = {}
    for option in option_fields(engine):
        if option.kind == "checkbox":
            raw[option.name] = bool(form.get(f"opt-{option.name}"))
            continue
        value = form.get(f"opt-{option.name}", "").strip()
        if value != "":
            raw[option.name] = value
    try:
        engine.options.load(raw)
    except ValidationError as exc:
        for name, messages in exc.normalized_messages().items():
            text = " ".join(messages) if isinstance(messages, list) else str(messages)
            errors[f"opt-{name}"] = text
    return raw


def _computer_seats(engine: games.Engine, form: Any, creator: User, strength: str,
                    errors: dict[str, str]) -> list[User | None]:
    """The seats of a game against the computer at ``strength``: the player and the bot, the player in
    the seat chosen (the first unless ``computer_seat`` is 2)."""
    computer = bots.computer_for(engine.slug, strength)
    if computer is None or 2 not in engine.players:
        errors["computer"] = f"No computer plays {engine.title} at the strength {strength!r}."
        return []
    return [computer, creator] if form.get("computer_seat") == "2" else [creator, computer]


def _read_seats(engine: games.Engine, form: Any, creator: User, errors: dict[str, str]) -> list[User | None]:
    try:
        count = int(form.get("players", ""))
    except ValueError:
        count = 0
    if count not in engine.players:
        low, high = engine.players.start, engine.players.stop - 1
        errors["players"] = f"{engine.title} is for {low} to {high} players." if low != high \
            else f"{engine.title} is for {low} players."
        return []
    seats: list[User | None] = []
    for number in range(count):
        name = form.get(f"seat-{number}", "").strip()
        if name.lower() in ("", "open"):
            seats.append(None)
        elif name.lower() == "me" or accounts.handle_key(name) == creator.handle_key:
            seats.append(creator)
        else:
            user = accounts.find_user(name)
            if user is None:
                errors[f"seat-{number}"] = f"There is no player called {name!r}."
            seats.append(user)
    if not errors and not any(u is not None and u.id == creator.id for u in seats):
        errors["seat-0"] = "Put yourself in one of the seats (your handle, or 'me')."
    return seats
