"""How a mail's words are written: every mail the server sends is composed here, from its templates.

The words of a mail are in ``templates/mail/``: a ``.txt`` template per mail, and for a mail that has
an HTML part, its ``.html`` template (or, for one without its own, ``mail/plain.html``: the text as
preformatted HTML).  :func:`compose` renders both into a :class:`Body`, which is what
:func:`pbem.mailout.outbox.enqueue` takes (and a passage shown inside another mail, such as the help in
a mail command's answer, is a composed body's text); Python code computes the values a template shows
(a board, a list of moves, a link), never the mail's sentences.  The subject's ``[pbem]`` tag is added by
:func:`pbem.mailout.outbox.subject`, and the thread headers by :func:`pbem.mailout.outbox.enqueue`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from flask import current_app
from jinja2 import Environment, Template

# The HTML part of a mail whose template has no ``.html`` twin: its text, preformatted.
PLAIN_HTML = "mail/plain.html"

# The plain forms of ``{% include %}`` and ``{% extends %}`` of a mail template that are written into the
# template that names them (see :func:`_flat_source`); any other form is left to Jinja.
_INCLUDE = re.compile(r'\{% include "(mail/[\w.]+)" %\}')
_EXTENDS = re.compile(r'\A\{% extends "(mail/[\w.]+)" %\}')
_BLOCK = re.compile(r"\{% block (\w+) %\}(.*?)\{% endblock %\}", re.DOTALL)
# Jinja drops one newline at the end of a template (``keep_trailing_newline`` is off).
_TRAILING_NEWLINE = re.compile(r"(\r\n|\r|\n)\Z")


class Body(NamedTuple):
    """The words of one mail: its text, and its HTML alternative when it has one."""

    text: str
    html: str | None = None


def compose(template: str, /, *, html: bool = False, **context: Any) -> Body:
    """The body of a mail from ``template`` (``mail/NAME.txt``) and ``context``: its text, and with
    ``html`` its HTML part from ``mail/NAME.html`` (else :data:`PLAIN_HTML`), given the text as ``text``.

    Rendered by Jinja alone: Flask's ``render_template`` adds what pages use (its context processors'
    ``g``, ``request`` and ``session``, and the signals page tests listen to), which no mail template
    reads; for the two mails of a move that cost about a fifth of their rendering.  The environment's
    globals and filters are still there: the globals merged with ``context`` once, into the one dict
    both parts read (Jinja's ``render`` copies its variables and merges the globals anew for each).
    """
    templates = _templates()
    variables = {**templates.globals, **context}
    text = templates.render(template, variables)
    if not html:
        return Body(text)
    variables["text"] = text
    return Body(text, templates.render(templates.html_twin(template), variables))


def kind_of(template: str) -> str:
    """The kind of mail (the outbox's ``kind``) a template writes: ``draw-offered`` for
    ``mail/draw_offered.txt``."""
    return template.rsplit("/", 1)[-1].split(".")[0].replace("_", "-")


def _templates() -> MailTemplates:
    """The app's mail templates, made once per app."""
    templates = current_app.extensions.get("pbem_mail_templates")
    if templates is None:
        templates = current_app.extensions["pbem_mail_templates"] = MailTemplates(current_app.jinja_env)
    return templates


class MailTemplates:
    """An app's mail templates, each compiled once with the pieces it includes and the layout it extends
    written into it (:func:`_flat_source`), and the globals they all read.

    Each ``{% include %}`` costs Jinja a template lookup and a new context for every mail, and a move
    request has five; the output is the same, byte for byte (``tests/server/test_mail_golden.py``).
    Where Jinja reloads edited templates (``auto_reload``, debug), so does this, by the same checks.
    The globals are the environment's as a dict of their own, not Jinja's chain of a template's over the
    environment's: every render reads them from its context, and copying a 25-name chain key by key was
    a third of a render.  The app registers its globals when it is made, before any mail.
    """

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.globals = dict(environment.globals)
        self._compiled: dict[str, tuple[Template, list[Callable[[], bool]]]] = {}
        self._names: frozenset[str] | None = None

    def render(self, name: str, variables: dict[str, Any]) -> str:
        """What the template ``name`` writes reading ``variables`` (the globals among them), which it
        shares rather than copies: Jinja's ``render`` but for the copy."""
        template = self.template(name)
        try:
            return self.environment.concat(
                template.root_render_func(template.new_context(variables, shared=True)))
        except Exception:
            self.environment.handle_exception()

    def template(self, name: str) -> Template:
        """The mail template ``name``, compiled with its pieces and layout written in."""
        environment = self.environment
        entry = self._compiled.get(name)
        if entry is not None and (not environment.auto_reload or all(fresh() for fresh in entry[1])):
            return entry[0]
        fresh_checks: list[Callable[[], bool]] = []
        source, filename = _flat_source(environment, name, fresh_checks)
        code = environment.compile(source, name, filename)
        template = environment.template_class.from_code(environment, code, self.globals)
        self._compiled[name] = (template, fresh_checks)
        return template

    def html_twin(self, template: str) -> str:
        """The HTML template of the mail ``template`` writes: its own, or :data:`PLAIN_HTML`."""
        html = template.removesuffix(".txt") + ".html"
        if self._names is None:
            # Listed once: looking for a missing template costs a search of the template folders every
            # time, and most mails have no HTML template of their own.
            self._names = frozenset(self.environment.list_templates())
        return html if html in self._names else PLAIN_HTML


def _flat_source(
    environment: Environment, name: str, fresh: list[Callable[[], bool]]
) -> tuple[str, str | None]:
    """The source of template ``name`` with each plain ``{% include "mail/…" %}`` replaced by the
    included template's source, and a plain ``{% extends "mail/…" %}`` by its layout's source with the
    child's blocks in place of the layout's empty ones; and its file name.  ``fresh`` gets
    each source's up-to-date check.

    The included source loses its last newline, as Jinja drops it, and sits in an ``{% autoescape %}``
    block when it escapes otherwise than the template around it (``_clocks.txt`` in an HTML part is not
    escaped); anything else (an include with options, a block calling ``super()``) is left to Jinja.
    """
    assert environment.loader is not None
    source, filename, uptodate = environment.loader.get_source(environment, name)
    if uptodate is not None:
        fresh.append(uptodate)
    escapes = _escapes(environment, name)
    source = _extended(environment, source, escapes, fresh)

    def included(match: re.Match[str]) -> str:
        part = match.group(1)
        text, _ = _flat_source(environment, part, fresh)
        if _EXTENDS.match(text):
            return match.group(0)
        text = _TRAILING_NEWLINE.sub("", text)
        if _escapes(environment, part) != escapes:
            text = f"{{% autoescape {str(not escapes).lower()} %}}{text}{{% endautoescape %}}"
        return text

    return _INCLUDE.sub(included, source), filename


def _extended(environment: Environment, source: str, escapes: bool, fresh: list[Callable[[], bool]]) -> str:
    """``source``, a child of a plain ``{% extends "mail/…" %}`` escaping as its layout does
    (``escapes``), as its layout with the child's blocks written in; else ``source`` as it is."""
    match = _EXTENDS.match(source)
    if match is None or _escapes(environment, match.group(1)) != escapes:
        return source
    blocks = {m.group(1): m.group(2) for m in _BLOCK.finditer(source)}
    outside = _BLOCK.sub("", source[match.end():])
    if outside.strip() or any("{% block" in body or "super()" in body for body in blocks.values()):
        return source
    layout, _ = _flat_source(environment, match.group(1), fresh)
    for block, body in blocks.items():
        empty = f"{{% block {block} %}}{{% endblock %}}"
        if layout.count(empty) != 1:
            return source
        layout = layout.replace(empty, f"{{% block {block} %}}{body}{{% endblock %}}")
    return layout


def _escapes(environment: Environment, name: str) -> bool:
    """Whether Jinja autoescapes the template ``name`` (Flask: the HTML ones)."""
    autoescape = environment.autoescape
    return bool(autoescape(name) if callable(autoescape) else autoescape)
