"""Mail is composed one way: every mail the server writes into the outbox has its body from its templates
under templates/mail/ through pbem.mailout.compose.compose, and every template there is used."""

from __future__ import annotations

import ast
import re

from flask import Flask
from sqlalchemy import select

from pbem.core.extensions import db
from pbem.core.models import OutboxMail
from pbem.core.site import base_url
from pbem.mailout import outbox
from tests.conftest import ROOT

PBEM = ROOT / "pbem"
MAIL_TEMPLATES = ROOT / "templates" / "mail"
# The one module that renders mail templates.
COMPOSER = PBEM / "mailout" / "compose.py"


def _is_call_of(node: ast.AST | None, name: str) -> bool:
    """Whether ``node`` calls ``name`` or ``something.name``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return ((isinstance(func, ast.Name) and func.id == name)
            or (isinstance(func, ast.Attribute) and func.attr == name))


class _Enqueues(ast.NodeVisitor):
    """Finds each ``enqueue`` call whose body is not a composed one: straight from ``compose(...)``, or a
    name that the same function (or module) bound to ``compose(...)`` and to nothing else."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, bool]] = [{}]
        self.offences: list[int] = []

    def _scope(self, node: ast.AST) -> None:
        names: dict[str, bool] = {}
        for inner in ast.walk(node):
            if isinstance(inner, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                composed = not isinstance(inner, ast.AugAssign) and _is_call_of(inner.value, "compose")
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            names[name.id] = names.get(name.id, True) and composed
        self.scopes.append(names)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _scope

    def visit_Module(self, node: ast.Module) -> None:
        self._scope(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _is_call_of(node, "enqueue"):
            bodies = [*node.args[2:3], *(k.value for k in node.keywords if k.arg == "body")]
            composed = bool(bodies) and all(
                _is_call_of(body, "compose")
                or (isinstance(body, ast.Name) and self.scopes[-1].get(body.id, False))
                for body in bodies
            )
            if not composed or any(k.arg == "body_html" for k in node.keywords):
                self.offences.append(node.lineno)
        if _is_call_of(node, "render_template") and node.args and _names_mail(node.args[0]):
            self.offences.append(node.lineno)  # A mail template rendered past the composer.
        self.generic_visit(node)


def _names_mail(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("mail/")


def _offences(source: str) -> list[int]:
    """The lines of ``source`` that write a mail whose body was not composed from its templates."""
    finder = _Enqueues()
    finder.visit(ast.parse(source))
    return sorted(set(finder.offences))


def test_every_mail_written_has_its_body_composed_from_its_templates() -> None:
    offenders = []
    for path in sorted(PBEM.rglob("*.py")):
        source = path.read_text()
        where = path.relative_to(ROOT)
        offenders += [f"{where}:{line}" for line in _offences(source)]
        # Templates are turned into words in one place: a Jinja template got or built anywhere else
        # would be a second way of writing a mail.
        if path != COMPOSER and re.search(r"\bget_template\(|\bfrom_string\(|\bTemplate\(", source):
            offenders.append(f"{where}: renders a template itself")
    assert offenders == [], offenders


def test_the_check_finds_a_mail_written_another_way() -> None:
    """The check of the test above flags a body made in Python or rendered past the composer, and
    passes a composed one."""
    assert _offences('outbox.enqueue(user, subject, f"Hello {user.handle}", kind="hello")') == [1]
    assert _offences('def f():\n    text = "Hi " + name\n    enqueue(to, s, text, kind="k")\n') == [3]
    assert _offences('body = render_template("mail/verify.txt", user=u)\n'
                     'outbox.enqueue(u, s, body, kind="verify")\n') == [1, 2]
    assert _offences('outbox.enqueue(u, s, compose("mail/a.txt").text, kind="a", body_html="<p>")') == [1]
    assert _offences('def f():\n    body = compose("mail/a.txt", html=True)\n'
                     '    outbox.enqueue(u, s, body, kind="a")\n') == []
    assert _offences('outbox.enqueue(u, s, compose("mail/a.txt", user=u), kind="a")') == []


def _named_templates() -> set[str]:
    """Every mail template named by the code (as a string "mail/…") or by another template (an include
    or an extends), with the HTML twin of each text template named."""
    named: set[str] = set()
    for path in PBEM.rglob("*.py"):
        named |= {node.value for node in ast.walk(ast.parse(path.read_text())) if _names_mail(node)}
    used_by_template = re.compile(r'\{%-?\s*(?:include|extends|import|from)\s+"(mail/[^"]+)"')
    for path in MAIL_TEMPLATES.iterdir():
        named |= set(used_by_template.findall(path.read_text()))
    twins = {name.removesuffix(".txt") + ".html" for name in named if name.endswith(".txt")}
    return named | {twin for twin in twins if (ROOT / "templates" / twin).exists()}


def test_every_mail_template_is_used_and_every_one_named_exists() -> None:
    there = {f"mail/{path.name}" for path in MAIL_TEMPLATES.iterdir()}
    named = _named_templates()
    assert sorted(named - there) == []
    assert sorted(there - named) == []


def test_the_operators_test_mail_says_what_it_always_said(ctx: Flask, sink) -> None:
    sent, _answer, message_id = outbox.send_test("dora@example.org")
    assert sent
    row = db.session.scalars(select(OutboxMail).where(OutboxMail.message_id == message_id)).one()
    assert row.subject == "pbem test mail" and row.body_html is None
    assert row.body_text == (
        f"This is a test mail from the play-by-email server at {base_url()}, sent by an operator's\n"
        "`pbem mail test` to see that its mail goes out.  It went the way every mail of the server goes:\n"
        "through its outbound mail server, from the address players see, with an envelope sender of its "
        "own.\n"
        "\n"
        "Nothing needs doing; you may delete it.\n"
    )
