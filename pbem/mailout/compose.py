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

from typing import Any, NamedTuple

from flask import current_app

# The HTML part of a mail whose template has no ``.html`` twin: its text, preformatted.
PLAIN_HTML = "mail/plain.html"


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
    globals and filters are still there.
    """
    environment = current_app.jinja_env
    text = environment.get_template(template).render(context)
    if not html:
        return Body(text)
    context["text"] = text
    return Body(text, environment.get_template(_html_twin(template)).render(context))


def kind_of(template: str) -> str:
    """The kind of mail (the outbox's ``kind``) a template writes: ``draw-offered`` for
    ``mail/draw_offered.txt``."""
    return template.rsplit("/", 1)[-1].split(".")[0].replace("_", "-")


def _html_twin(template: str) -> str:
    """The HTML template of the mail ``template`` writes: its own, or :data:`PLAIN_HTML`."""
    html = template.removesuffix(".txt") + ".html"
    return html if html in _mail_templates() else PLAIN_HTML


def _mail_templates() -> frozenset[str]:
    """The names of the templates there are, listed once per app: looking for a missing template costs a
    search of the template folders every time, and most mails have no HTML template of their own."""
    names = current_app.extensions.get("pbem_templates")
    if names is None:
        names = current_app.extensions["pbem_templates"] = frozenset(current_app.jinja_env.list_templates())
    return names
