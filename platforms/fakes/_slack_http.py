"""The fake Slack's signed HTTP delivery: events and slash commands POSTed to a gateway with a
v0 signature, and Slack's retries of events that were not answered with 200 (never of a slash
command, whatever became of its request)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass
class HttpResult:
    status: int
    text: str
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.text)


def sign(secret: str, timestamp: str, body: str) -> str:
    """Slack's v0 request signature over ``v0:<timestamp>:<body>``."""
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return f"v0={digest}"


class SlackHttpDelivery:
    """HTTP delivery for `FakeSlack`, which holds the state (`events_url`, `http_results`, the
    client session) and mixes this in."""

    async def _deliver_http(self, kind: str, payload: dict[str, Any]) -> None:
        assert self.events_url and self.signing_secret, "set events_url and signing_secret for HTTP delivery"
        for attempt, delay in enumerate((0.0, *self.http_retry_delays)):
            await asyncio.sleep(delay)
            retry = attempt or None
            try:
                if kind == "events_api":
                    result = await self.send_http_event(self.events_url, payload, self.signing_secret, retry_num=retry)
                else:
                    result = await self.send_http_command(self.events_url, payload, self.signing_secret)
                    if result.status == 200 and result.text:
                        json_body = result.headers.get("Content-Type", "").startswith("application/json")
                        self._answered_in_ack(payload, result.json() if json_body else result.text)
            except (aiohttp.ClientError, TimeoutError):
                if kind != "events_api":
                    return  # Slack shows the user an error and never sends a slash command again
                continue
            if result.status == 200 or kind != "events_api":
                return

    async def send_http_event(
        self, url: str, payload: dict[str, Any], signing_secret: str, *, retry_num: int | None = None,
        retry_reason: str = "http_timeout", timestamp: int | str | None = None, signature: str | None = None,
    ) -> HttpResult:
        """POST one Events API payload (JSON) to ``url``, signed unless ``signature`` is given."""
        headers = {"Content-Type": "application/json"}
        if retry_num is not None:
            headers.update({"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": retry_reason})
        return await self._post_signed(url, json.dumps(payload), headers, signing_secret, timestamp, signature)

    async def send_http_command(
        self, url: str, form: dict[str, Any], signing_secret: str, *, timestamp: int | str | None = None,
        signature: str | None = None,
    ) -> HttpResult:
        """POST one slash command (form-encoded) to ``url``, signed unless ``signature`` is given."""
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return await self._post_signed(url, urllib.parse.urlencode(form), headers, signing_secret, timestamp, signature)

    async def _post_signed(
        self, url: str, body: str, headers: dict[str, str], secret: str, timestamp: Any, signature: str | None
    ) -> HttpResult:
        assert self._http is not None, "start the fake first"
        ts = str(int(time.time()) if timestamp is None else timestamp)
        headers = {**headers, "X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature or sign(secret, ts, body)}
        async with self._http.post(url, data=body.encode(), headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=3)) as resp:
            result = HttpResult(resp.status, await resp.text(), dict(resp.headers))
        self.http_results.append(result)
        self._bump()
        return result
