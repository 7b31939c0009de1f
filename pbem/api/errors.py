"""The API's errors: every refusal is JSON ``{"error": message, "code": machine_code}``."""

from __future__ import annotations

from typing import Any

from flask import Response, jsonify, request
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException

from pbem.api import bp
from pbem.core.errors import PlayError

# The codes of the HTTP errors the framework itself raises.
_HTTP_CODES = {400: "bad-request", 401: "unauthorized", 403: "forbidden", 404: "not-found",
               405: "method-not-allowed", 413: "too-large", 415: "unsupported-media-type",
               429: "rate-limited", 500: "server-error"}


class ApiError(Exception):
    """A refusal of the API's own (authentication, bad JSON, unknown game …)."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def is_api_request() -> bool:
    """Whether the request is to the API (its errors are answered in JSON, never as pages)."""
    return request.path == "/api" or request.path.startswith("/api/")


def error_response(status: int, code: str, message: str, **extra: Any) -> tuple[Response, int]:
    """An error answer."""
    return jsonify(error=message, code=code, **extra), status


def http_error(exc: HTTPException) -> tuple[Response, int]:
    """An HTTP error (no such route, wrong method, rate limit …) in the API's JSON."""
    status = exc.code or 500
    code = _HTTP_CODES.get(status, "error")
    if status == 429:
        message = "Too many requests with this token in a short time; wait a little and try again."
    elif status == 404:
        message = "There is nothing here (or it is not yours to see)."
    else:
        message = exc.description or exc.name
    response, status = error_response(status, code, message)
    retry = getattr(exc, "retry_after", None)
    if retry:
        response.headers["Retry-After"] = str(retry)
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response, status


@bp.errorhandler(ApiError)
def _api_error(exc: ApiError) -> tuple[Response, int]:
    response, status = error_response(exc.status, exc.code, exc.message, **exc.extra)
    if status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    return response, status


@bp.errorhandler(PlayError)
def _play_error(exc: PlayError) -> tuple[Response, int]:
    return error_response(exc.http_status, exc.code, exc.message)


@bp.errorhandler(ValidationError)
def _invalid(exc: ValidationError) -> tuple[Response, int]:
    messages = _string_keys(exc.normalized_messages())
    words = "; ".join(f"{name}: {' '.join(m) if isinstance(m, list) else m}" for name, m in messages.items())
    return error_response(422, "invalid", f"The request was refused: {words}", fields=messages)


def _string_keys(messages: Any) -> Any:
    """Messages with every key a string (list items are numbered by int; JSON wants strings, sorted)."""
    if isinstance(messages, dict):
        return {str(key): _string_keys(value) for key, value in messages.items()}
    return messages


@bp.errorhandler(HTTPException)
def _http(exc: HTTPException) -> tuple[Response, int]:
    return http_error(exc)
