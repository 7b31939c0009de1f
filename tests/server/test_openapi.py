"""The OpenAPI document: valid OpenAPI 3.1, naming every route of the API, and the API fuzzed against
it with schemathesis (bounded examples): whatever a client sends, the server never fails with a 500."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis.checks import (
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from pbem.accounts import apitokens
from pbem.core.extensions import db
from pbem.core.models import User
from pbem.game import play
from pbem.lobby import challenges

ROUTES = {
    ("get", "/api/v1/games"), ("post", "/api/v1/games"), ("get", "/api/v1/games/{game_id}"),
    ("post", "/api/v1/games/{game_id}/moves"), ("post", "/api/v1/games/{game_id}/accept"),
    ("post", "/api/v1/games/{game_id}/decline"), ("post", "/api/v1/games/{game_id}/resign"),
    ("post", "/api/v1/games/{game_id}/draw"), ("get", "/api/v1/me/turn"),
    ("get", "/api/v1/players/{handle}"),
}


def test_the_document_is_valid_openapi_31_and_names_every_route(app: Flask) -> None:
    document = app.test_client().get("/api/openapi.json").json
    validate(document)
    assert document["openapi"] == "3.1.0"
    named = {(method, path) for path, ops in document["paths"].items() for method in ops}
    assert named >= ROUTES
    move = document["paths"]["/api/v1/games/{game_id}/moves"]["post"]
    body = move["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert set(document["components"]["schemas"][body.rsplit("/", 1)[1]]["properties"]) == {
        "move", "expect", "comment", "seat"}
    assert {"400", "401", "409", "429"} <= set(move["responses"])


@pytest.fixture
def db_url(tmp_path) -> str:
    """The fuzzing runs on SQLite only: it looks for faults of the API's own code, and the suite's time is
    better spent elsewhere (the API's own tests run on both databases)."""
    return f"sqlite:///{tmp_path / 'pbem.db'}"


@pytest.fixture
def fuzzed(app: Flask) -> Iterator[tuple[Flask, str]]:
    """The app with players, games in every state, and alice's token for the fuzzer to call with."""
    from pbem.accounts.accounts import create_user

    with app.app_context():
        alice, bob, carol = (create_user(h, f"{h}@example.org", verified=True)
                             for h in ("alice", "bob", "carol"))
        db.session.commit()
        challenges.new_game(alice, "cambio", [alice, bob])
        active = play.create_game("cambio", [alice, bob])
        play.create_game("truchet", [bob, carol])
        db.session.commit()
        play.submit(active.id, alice, "b3", "web")
        token = apitokens.create(db.session.scalar(db.select(User).where(User.handle == "alice")), "fuzz")[1]
        db.session.remove()
    # The fuzzer must not meet the rate limit before it meets the code.
    app.config["PBEM"]["ratelimit"]["api_per_token"] = "100000 per minute"
    yield app, token


@pytest.mark.parametrize(("method", "path"), sorted(ROUTES))
def test_the_api_fuzzed_against_its_document(fuzzed: tuple[Flask, str], method: str, path: str) -> None:
    app, token = fuzzed
    operation = schemathesis.openapi.from_wsgi("/api/openapi.json", app)[path][method.upper()]

    @given(case=operation.as_strategy())
    @settings(max_examples=12, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    def call(case) -> None:
        case.call_and_validate(
            headers={"Authorization": f"Bearer {token}"},
            checks=[not_a_server_error, status_code_conformance, response_schema_conformance,
                    negative_data_rejection],
        )

    call()
