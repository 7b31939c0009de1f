"""The API's operations, registered once: each view is declared with its path, method, schemas and
errors by :func:`operation`, which loads the request through the schemas and dumps the answer; the
OpenAPI 3.1 document (apispec's marshmallow plugin) and the API page are generated from the same list.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from flask import Response, current_app, jsonify, render_template, request, session
from flask_login import current_user
from marshmallow import EXCLUDE, Schema

from pbem.api import auth, bp, kept
from pbem.api.errors import ApiError
from pbem.api.schemas import ErrorSchema
from pbem.core import inputs
from pbem.core.site import base_url

VERSION = "1.0.0"
# The largest JSON body the API reads; its requests are a move or a game's settings.
MAX_BODY = 64 * 1024
# The largest id a database integer holds: a larger one in a path names nothing.
MAX_ID = 2**31 - 1
# The longest query string and header value the API reads.  The proxies in front are set to pass longer
# ones (deploy/: gunicorn 16 KB, nginx 32 KB), so that a client is told in JSON, not by their HTML pages.
MAX_QUERY = 4096
MAX_HEADER = 8192

# What each error status means in every operation that can answer it.
ERROR_WORDS = {
    400: "Bad JSON, or a refusal the player can fix: an illegal move (with legal_moves), no challenge or "
         "draw offer to answer, a game no longer waiting.",
    401: "No token, or a wrong or revoked one.",
    403: "Not yours to do (not a player of this game).",
    404: "No such game or player, or not one you may see.",
    409: "Too late or out of date: not your turn, a stale expect, the game is over.",
    413: "The body is too large.",
    414: "The query string is too long.",
    422: "A field or parameter is missing, of the wrong type or out of range, or a text holds a control "
         "character (such as NUL); fields says which.",
    429: "Too many requests with this token.",
    431: "A header (a token, say) is too long.",
}
COMMON_ERRORS = (401, 414, 429, 431)


@dataclass
class Operation:
    """One documented route of the API."""

    rule: str
    method: str
    name: str
    summary: str
    description: str
    body: type[Schema] | None = None
    query: type[Schema] | None = None
    response: type[Schema] | None = None
    status: int = 200
    errors: tuple[int, ...] = ()
    tags: list[str] = field(default_factory=list)
    body_required: bool = True
    public: bool = False
    conditional: bool = False

    @property
    def path(self) -> str:
        """The path as OpenAPI writes it: ``/api/v1/games/{game_id}``."""
        return "/api" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", self.rule)

    @property
    def path_parameters(self) -> list[tuple[str, str]]:
        """The path's parameters with their OpenAPI types."""
        return [(name, "integer" if kind == "int" else "string")
                for kind, name in re.findall(r"<(?:(\w+):)?(\w+)>", self.rule)]


OPERATIONS: list[Operation] = []


def _json_body() -> Any:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise ApiError(413, "too-large", f"The body is too large: at most {MAX_BODY} bytes.")
    try:
        data = request.get_json(force=True, silent=True)
    except RecursionError:  # Nested deeper than the parser goes.
        data = None
    if data is None:
        raise ApiError(400, "bad-json", "The body must be a JSON object.")
    try:
        inputs.check_json(data)
    except inputs.TooDeep as exc:
        raise ApiError(400, "bad-json", f"The body is nested too deep: {exc}.") from None
    except inputs.BadInput as exc:
        raise ApiError(422, "invalid", f"The request was refused: {exc}",
                       fields={exc.where or "body": [exc.message]}) from None
    return data


@bp.before_request
def _bounded_request() -> None:
    """Refuse a query string or a header longer than the API reads, in JSON (414, 431)."""
    if len(request.query_string) > MAX_QUERY:
        raise ApiError(414, "uri-too-long", f"The query string is too long: at most {MAX_QUERY} bytes.")
    for name, value in request.headers.items():
        if len(value) > MAX_HEADER:
            raise ApiError(431, "header-too-large",
                           f"The {name} header is too long: at most {MAX_HEADER} characters.")


def operation(rule: str, method: str, summary: str, *, body: type[Schema] | None = None,
              query: type[Schema] | None = None, response: type[Schema] | None = None, status: int = 200,
              errors: tuple[int, ...] = (), tag: str = "games", body_required: bool = True,
              public: bool = False, stamp: Callable[[Any], str] | None = None,
              keep: kept.Stamp | None = None) -> Callable:
    """Declare an API view: ``rule`` under ``/api``, the schemas of its body, query and answer.

    The view is called with the caller (a :class:`~pbem.core.models.User`; None for a call without a token
    to a ``public`` view, which then answers what a visitor of the site sees), the path's arguments, and
    ``body``/``query`` loaded through their schemas; it returns what ``response`` dumps.  A body that is
    not ``body_required`` may be left out altogether (an empty request), and is then loaded as ``{}``.

    With a ``stamp`` (a function of the caller reading, in one cheap statement, everything the answer
    depends on), the answer carries it as a weak ETag, and a request whose ``If-None-Match`` names the
    stamp still in force is answered 304 with no body and without running the view: a program polling
    for news costs the server that one statement.

    With ``keep`` (a GET's stamp for :mod:`pbem.api.kept`: called with the caller and the path's
    arguments, it reads what the answer is made of), each caller's answer is kept in the process and
    served again while that read is equal."""

    def decorate(view: Callable) -> Callable:
        # The docstring is the operation's description; people read it without reST's quotes.
        description = inspect.cleandoc(view.__doc__ or "").replace("``", "")
        OPERATIONS.append(Operation(rule, method, view.__name__, summary, description, body, query, response,
                                    status, errors, [tag], body_required, public, stamp is not None))

        def respond(path_args: dict[str, Any], conditional: bool = True) -> Response:
            """The operation's answer; ``conditional``: 304 to a request naming its ETag."""
            kwargs: dict[str, Any] = dict(path_args)
            kwargs["user"] = auth.caller(optional=public)
            etag = stamp(kwargs["user"]) if stamp is not None else None
            if conditional and etag is not None and request.if_none_match.contains_weak(etag):
                unchanged = Response(status=304)
                unchanged.set_etag(etag, weak=True)
                return unchanged
            if query is not None:
                kwargs["query"] = query(unknown=EXCLUDE).load(request.args.to_dict())
            if body is not None:
                # No bytes at all, whatever the Content-Type says (clients send theirs on every call).
                left_out = (not body_required and not request.content_length
                            and "Transfer-Encoding" not in request.headers)
                kwargs["body"] = body().load({} if left_out else _json_body())
            result = view(**kwargs)
            answer = jsonify(response().dump(result) if response is not None else result)
            answer.status_code = status
            if etag is not None:
                answer.set_etag(etag, weak=True)
                # Each caller's own answer: a cache may keep it only to ask again with the tag.
                answer.headers["Cache-Control"] = "private, no-cache"
            return answer

        @wraps(view)
        def endpoint(**path_args: Any) -> Response:
            if keep is not None:
                return kept.serve(keep, public, path_args, lambda fresh: respond(path_args, fresh))
            return respond(path_args)

        bp.add_url_rule(rule, endpoint=view.__name__, view_func=endpoint, methods=[method])
        return endpoint

    return decorate


_BUILT = "pbem_openapi"


def build_spec() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every declared operation, built once per app: it changes only with
    the code and the settings, and building it cost more than any answer of the API.  Read-only."""
    built: dict[str, Any] | None = current_app.extensions.get(_BUILT)
    if built is None:
        built = current_app.extensions[_BUILT] = {"spec": _build_spec()}
    spec: dict[str, Any] = built["spec"]
    return spec


def _build_spec() -> dict[str, Any]:
    # Imported here: only a request for the document builds it, and a worker that is never asked for it
    # need not carry apispec.
    from apispec import APISpec
    from apispec.ext.marshmallow import MarshmallowPlugin

    spec = APISpec(
        title="pbem API", version=VERSION, openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={"description": "Play turn-based board games by program: list and start games, answer "
                             "challenges, read a position with its legal moves, and move. Authenticate "
                             "with 'Authorization: Bearer <token>' (make a token in Settings)."},
        servers=[{"url": base_url()}],
    )
    spec.components.security_scheme("bearer", {"type": "http", "scheme": "bearer"})
    spec.components.schema("Error", schema=ErrorSchema)
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        doc: dict[str, Any] = {
            "operationId": op.name, "summary": op.summary, "description": op.description, "tags": op.tags,
            # A public operation may be called with a token or without one (an empty requirement).
            "security": [{"bearer": []}, {}] if op.public else [{"bearer": []}], "parameters": [],
            "responses": {},
        }
        for name, kind in op.path_parameters:
            schema = ({"type": kind, "minimum": 1, "maximum": MAX_ID} if kind == "integer"
                      else {"type": kind, "maxLength": 32})
            doc["parameters"].append({"in": "path", "name": name, "required": True, "schema": schema})
        if op.query is not None:
            doc["parameters"].append({"in": "query", "schema": op.query})
        if op.body is not None:
            doc["requestBody"] = {"required": op.body_required,
                                  "content": {"application/json": {"schema": op.body}}}
        answer: dict[str, Any] = {"description": op.summary}
        if op.response is not None:
            answer["content"] = {"application/json": {"schema": op.response}}
        doc["responses"][str(op.status)] = answer
        if op.conditional:
            answer["headers"] = {"ETag": {"schema": {"type": "string"}, "description":
                                          "Send it back as If-None-Match: 304 while nothing has changed."}}
            doc["parameters"].append({"in": "header", "name": "If-None-Match", "required": False,
                                      "schema": {"type": "string"}})
            doc["responses"]["304"] = {"description": "Nothing has changed since the ETag sent."}
        for status in sorted({*op.errors, *COMMON_ERRORS, *((400, 413, 422) if op.body else ())}):
            doc["responses"][str(status)] = {
                "description": ERROR_WORDS[status],
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
        paths.setdefault(op.path, {})[op.method.lower()] = doc
    for path, operations in paths.items():
        spec.path(path=path, operations=operations)
    return spec.to_dict()


@bp.get("/openapi.json")
def openapi_document() -> Response:
    """The OpenAPI 3.1 document of the API (its JSON written once per app, as the document is built)."""
    spec = build_spec()
    built = current_app.extensions[_BUILT]
    if "json" not in built:
        built["json"] = jsonify(spec).get_data()
    return current_app.response_class(built["json"], mimetype="application/json")


def _schema_name(content: dict[str, Any] | None) -> str | None:
    """The component a body or answer refers to (``#/components/schemas/Game`` gives ``Game``)."""
    ref = ((content or {}).get("application/json") or {}).get("schema", {}).get("$ref", "")
    return ref.rsplit("/", 1)[-1] or None


@bp.get("/")
def page() -> str:
    """The API explained for people: authentication, errors, and each operation with its fields.

    Rendered once per app (and script root) for visitors signed in nowhere, as the document is built
    once: what it shows changes only with the code and the settings.  A signed-in player's layout shows
    them, so their page is rendered each time."""
    if session or current_user.is_authenticated:
        return _page()
    build_spec()
    pages: dict[str, str] = current_app.extensions[_BUILT].setdefault("pages", {})
    kept = pages.get(request.script_root)
    if kept is None:
        kept = _page()
        if not session.modified:
            pages[request.script_root] = kept
    return kept


def _page() -> str:
    spec = build_spec()
    described = []
    for op in OPERATIONS:
        doc = spec["paths"][op.path][op.method.lower()]
        described.append({
            "op": op, "doc": doc,
            "body": _schema_name(doc.get("requestBody", {}).get("content")),
            "answer": _schema_name(doc["responses"][str(op.status)].get("content")),
            "query": [p for p in doc["parameters"] if p["in"] == "query"],
            "errors": [(int(code), answer["description"]) for code, answer in doc["responses"].items()
                       if int(code) >= 400],
        })
    return render_template("api.html", operations=described, schemas=spec["components"]["schemas"],
                           version=VERSION)
