"""What the fake Slack records and hands out: Web API calls, scripted failures, Socket Mode
envelopes and their acks, and the Socket Mode connections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Key = tuple[str, str | None]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None


@dataclass
class Failure:
    error: str
    status: int = 200
    retry_after: float | None = None
    after: bool = False
    """The call takes effect, then its answer is this failure (an answer lost on the way)."""
    drop: bool = False
    """No answer at all: the connection closes (with ``after``, once the call took effect)."""
    body: str | None = None
    """A body of its own in place of Slack's JSON, as ``content_type`` (a proxy's page, a body cut short)."""
    content_type: str = "text/html"


@dataclass
class Envelope:
    envelope_id: str
    type: str
    payload: dict[str, Any]
    retry_attempt: int = 0
    retry_reason: str | None = None
    acked: bool = False
    deliveries: list[int] = field(default_factory=list)
    """Ids of the connections this envelope was sent on, in order."""

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "envelope_id": self.envelope_id,
            "type": self.type,
            "payload": self.payload,
            "accepts_response_payload": self.type != "events_api",
        }
        if self.type == "events_api":
            out.update(retry_attempt=self.retry_attempt, retry_reason=self.retry_reason or "")
        return out


@dataclass
class Ack:
    envelope_id: str
    connection: int
    payload: dict[str, Any] | None


@dataclass
class Connection:
    id: int
    ws: web.WebSocketResponse
    request: web.Request
    stalled: bool = False
    """Half-open (`SlackSocketMode.stall`): nothing goes out on it, what comes in is ignored."""

    @property
    def open(self) -> bool:
        return not self.ws.closed
