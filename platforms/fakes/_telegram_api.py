"""The fake Telegram's wire conventions: Bot API errors, parameters as the SDKs send them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class ApiError(Exception):
    """Raised inside a method to answer with a Bot API error."""

    def __init__(self, status: int, description: str, retry_after: int | None = None, *,
                 migrate_to_chat_id: int | None = None):
        super().__init__(description)
        self.status, self.description, self.retry_after = status, description, retry_after
        self.migrate_to_chat_id = migrate_to_chat_id


@dataclass(frozen=True)
class RawAnswer:
    """An answer of its own in place of the Bot API's JSON: a proxy's page, a body cut short."""

    status: int
    body: str
    content_type: str

    def response(self) -> web.Response:
        # As bytes: the Content-Type is sent as it is, JSON or not.
        return web.Response(status=self.status, body=self.body.encode(), headers={"Content-Type": self.content_type})


@dataclass(frozen=True)
class Reshaped:
    """The call carried out as usual, its result answered as ``reshape`` makes it: one a client may not
    read (a newer Bot API's, a server's that keeps to it loosely)."""

    reshape: Callable[[Any], Any]


def int_param(params: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = params.get(key)
    if value is None or value == "":
        if default is None:
            raise ApiError(400, f"Bad Request: {key} is empty")
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, "Bad Request: chat not found" if key == "chat_id" else f"Bad Request: bad {key}") from None


def flag(value: Any) -> bool:
    return value in (True, "true", "True", "1")


def error_response(exc: ApiError) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": exc.status, "description": exc.description}
    if exc.retry_after is not None:
        body["parameters"] = {"retry_after": exc.retry_after}
    if exc.migrate_to_chat_id is not None:
        body["parameters"] = {"migrate_to_chat_id": exc.migrate_to_chat_id}
    return web.json_response(body, status=exc.status)


def drop_connection(request: web.Request) -> web.Response:
    assert request.transport is not None
    request.transport.abort()  # the client sees the server disconnect before any answer
    return web.Response()
