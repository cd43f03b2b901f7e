"""A loopback receiver for webhook deliveries, and signed-request helpers, for tests and for users.

`WebhookReceiver` is a small aiohttp server on 127.0.0.1 to point a route's
``deliver_url`` at. It checks each delivery's signature the way a real receiver
should, records it, and deduplicates by ``Idempotency-Key`` (the gateway retries a
delivery whose answer it did not get, so the same message can arrive twice):

    async with WebhookReceiver(secret="s3cret") as receiver:
        adapter = WebhookAdapter({"alerts": Route("s3cret", receiver.url)})
        ...
        await receiver.wait_for(lambda: receiver.unique)
        assert receiver.payloads[0]["text"] == "done"

What a test reads and drives:

- ``deliveries``: every request, in order, as `Delivery` (headers, raw body, JSON,
  the status answered or None for a dropped or held connection, why the signature was
  refused, whether its key was seen before).
- ``unique``: the first accepted delivery per ``Idempotency-Key``, in arrival order;
  ``payloads`` their JSON bodies.
- ``fail_next(count, status=500, retry_after=None)``: answer the next ``count``
  requests with ``status`` (and a ``Retry-After`` header when ``retry_after`` is
  given: seconds, or an HTTP date as a string); ``drop_next(count)``: close their
  connections without an answer; ``hold_next(count)``: take them and answer nothing
  until ``heal()`` or ``close()`` (a receiver that stores a delivery, then hangs).
- ``wait_for(predicate, timeout)``: wait until a condition holds.

Answers: 200 ``{"ok": true, "duplicate": bool}``; 401 for a missing, bad or stale
signature (when the receiver has a secret); 400 for a body that is not JSON or a
missing ``Idempotency-Key``.

`signed_post` and `signed_get` send requests to the gateway's webhook routes signed
with a route's secret (or deliberately not: pass ``signature=""`` to leave the header
out, or a wrong one).

Run it standalone with ``python -m platforms.fakes.webhook_receiver --secret s3cret``;
it prints its URL alone on the first line, then each delivery as a JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientSession, web
from yarl import URL

from platforms.fakes._waiting import wait_until
from platforms.webhook_signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, TOLERANCE, get_payload, sign, verify


@dataclass(frozen=True, slots=True)
class Delivery:
    headers: Mapping[str, str]
    body: bytes
    json: Any
    """The parsed body; None when it was not JSON."""
    status: int | None
    """What the receiver answered; None when it dropped the connection."""
    reason: str | None = None
    """Why the signature was refused; None when it verified (or the receiver has no secret)."""
    duplicate: bool = False
    """Accepted before under the same ``Idempotency-Key``."""

    @property
    def idempotency_key(self) -> str | None:
        return self.headers.get("Idempotency-Key")


class WebhookReceiver:
    """Without ``secret`` every signature is accepted unchecked. ``clock`` is the time
    signatures are checked against (give it the adapter's clock when that is injected)."""

    def __init__(
        self,
        secret: str | None = None,
        *,
        port: int = 0,
        path: str = "/deliveries",
        clock: Callable[[], float] = time.time,
        tolerance: float = TOLERANCE,
    ) -> None:
        self.secret = secret
        self.path = path
        self.url = ""
        self.deliveries: list[Delivery] = []
        self.unique: dict[str, Delivery] = {}
        self._port = port
        self._clock = clock
        self._tolerance = tolerance
        self._faults: deque[tuple[int, str | None] | str | None] = deque()
        self._released = asyncio.Event()
        """Set by `heal` and `close`: held deliveries get their answer."""
        self._runner: web.AppRunner | None = None

    @property
    def payloads(self) -> list[Any]:
        return [delivery.json for delivery in self.unique.values()]

    def fail_next(self, count: int = 1, status: int = 500, retry_after: float | str | None = None) -> None:
        header = None if retry_after is None else (retry_after if isinstance(retry_after, str) else f"{retry_after:g}")
        self._faults.extend([(status, header)] * count)

    def drop_next(self, count: int = 1) -> None:
        self._faults.extend([None] * count)

    def hold_next(self, count: int = 1) -> None:
        self._released.clear()
        self._faults.extend(["hold"] * count)

    def heal(self) -> None:
        """Forget scripted failures not yet used: from now on every request is answered normally,
        and held ones are let go (answered 503)."""
        self._faults.clear()
        self._released.set()

    async def start(self) -> WebhookReceiver:
        app = web.Application()
        app.router.add_post(self.path, self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self._port).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}{self.path}"
        return self

    async def close(self) -> None:
        """Stop serving. Idempotent."""
        runner, self._runner = self._runner, None
        self._released.set()
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> WebhookReceiver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Wait until ``predicate()`` is truthy and return its value; TimeoutError after ``timeout``."""
        return await wait_until(predicate, timeout, poll=0.01)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = dict(request.headers)
        try:
            data = json.loads(body)
        except ValueError:
            data = None

        def record(status: int | None, **kw: Any) -> None:
            self.deliveries.append(Delivery(headers, body, data, status, **kw))

        if self._faults:
            fault = self._faults.popleft()
            record(fault[0] if isinstance(fault, tuple) else None)
            if fault is None:
                assert request.transport is not None
                request.transport.abort()  # the sender sees the connection close before any answer
                return web.Response()
            if fault == "hold":
                await self._released.wait()
                return web.json_response({"error": "held"}, status=503)
            status, retry_after = fault
            extra = {"Retry-After": retry_after} if retry_after is not None else None
            return web.json_response({"error": "scripted failure"}, status=status, headers=extra)
        if self.secret is not None:
            reason = verify(self.secret, request.headers.get(TIMESTAMP_HEADER), request.headers.get(SIGNATURE_HEADER),
                            body, now=self._clock(), tolerance=self._tolerance)
            if reason is not None:
                record(401, reason=reason)
                return web.json_response({"error": reason}, status=401)
        key = request.headers.get("Idempotency-Key")
        if data is None or not key:
            record(400)
            return web.json_response({"error": "expected a JSON body and an Idempotency-Key"}, status=400)
        duplicate = key in self.unique
        record(200, duplicate=duplicate)
        if not duplicate:
            self.unique[key] = self.deliveries[-1]
        return web.json_response({"ok": True, "duplicate": duplicate})


# -- signed requests to the gateway ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def signed_post(
    url: str,
    secret: str,
    payload: Mapping[str, Any] | bytes,
    *,
    timestamp: str | None = None,
    signature: str | None = None,
    headers: Mapping[str, str] | None = None,
    session: ClientSession | None = None,
) -> Reply:
    """POST ``payload`` (a JSON object, or raw bytes sent as they are) signed with ``secret``.
    ``timestamp`` defaults to now; ``signature`` to the right one. An empty string for
    either leaves that header out."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return await _request("POST", url, secret, body, body, timestamp, signature, headers, session)


async def signed_get(
    url: str,
    secret: str,
    *,
    timestamp: str | None = None,
    signature: str | None = None,
    headers: Mapping[str, str] | None = None,
    session: ClientSession | None = None,
) -> Reply:
    """GET ``url`` signed over ``"GET " + path`` (see `platforms.webhook_signing`)."""
    return await _request("GET", url, secret, None, get_payload(URL(url).raw_path), timestamp, signature, headers,
                          session)


async def _request(
    method: str,
    url: str,
    secret: str,
    body: bytes | None,
    signed: bytes,
    timestamp: str | None,
    signature: str | None,
    extra: Mapping[str, str] | None,
    session: ClientSession | None,
) -> Reply:
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    signature = sign(secret, timestamp, signed) if signature is None else signature
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if timestamp:
        headers[TIMESTAMP_HEADER] = timestamp
    if signature:
        headers[SIGNATURE_HEADER] = signature
    headers.update(extra or {})
    client = session or ClientSession()
    try:
        # BytesIO, not bytes: aiohttp warns that a large bytes body may block the loop.
        data = None if body is None else io.BytesIO(body)
        async with client.request(method, url, data=data, headers=headers) as response:
            return Reply(response.status, await response.read())
    finally:
        if session is None:
            await client.close()


async def _serve(port: int, secret: str | None) -> None:
    async with WebhookReceiver(secret, port=port) as receiver:
        print(receiver.url, flush=True)  # alone on the first line, for scripts
        seen = 0
        while True:
            await asyncio.sleep(0.1)
            for delivery in receiver.deliveries[seen:]:
                print(json.dumps({"status": delivery.status, "reason": delivery.reason, "duplicate": delivery.duplicate,
                                  "idempotency_key": delivery.idempotency_key, "json": delivery.json}), flush=True)
            seen = len(receiver.deliveries)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m platforms.fakes.webhook_receiver",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--secret", help="the route's secret; without it signatures are not checked")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args.port, args.secret))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
