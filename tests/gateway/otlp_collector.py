"""A loopback OTLP/HTTP traces endpoint, as an OpenTelemetry Collector answers: 200 with an empty
``ExportTraceServiceResponse`` (protobuf), 503 while it is `down`, as one overloaded or
restarting does, or nothing at all while it `hangs`, as one behind a dead proxy."""

from __future__ import annotations

import asyncio

from aiohttp import web

from gateway.telemetry import TRACES_PATH


class FakeCollector:
    def __init__(self) -> None:
        self.down = False
        self.hangs = False
        self.hanging = 0
        """Export requests left unanswered."""
        self.accepted = 0
        """Export requests answered 200."""
        self.refused = 0
        """Export requests answered 503."""
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> FakeCollector:
        app = web.Application()
        app.router.add_post(TRACES_PATH, self._traces)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = site._server.sockets[0].getsockname()[:2]  # type: ignore[union-attr]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        self._closing.set()  # hanging requests end now, else the server's clean-up would wait for them
        await self._runner.cleanup()

    async def _traces(self, request: web.Request) -> web.Response:
        await request.read()
        if self.hangs:
            self.hanging += 1
            await self._closing.wait()
            return web.Response(status=503, text="collector closing")
        if self.down:
            self.refused += 1
            return web.Response(status=503, text="collector unavailable")
        self.accepted += 1
        return web.Response(body=b"", content_type="application/x-protobuf")
