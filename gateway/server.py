"""The HTTP server: health, the webhook platform, the web chat, and platform webhooks (Telegram, Slack)."""

from __future__ import annotations

import logging

from aiohttp import web

from gateway.app import Gateway
from platforms.base import Streaming

log = logging.getLogger("gateway.server")


def build_app(gateway: Gateway) -> web.Application:
    app = web.Application(client_max_size=2 * 1024 * 1024)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "platforms": sorted(gateway.adapters)})

    app.router.add_get("/healthz", healthz)
    for adapter in gateway.adapters.values():
        app.router.add_routes(list(adapter.web_routes()))

    async def end_streams(app: web.Application) -> None:
        # Before the server waits for its handlers: an open event stream would hold it for a minute.
        for adapter in gateway.adapters.values():
            if isinstance(adapter, Streaming):
                await adapter.close_streams()

    app.on_shutdown.append(end_streams)
    return app


class Server:
    """Runs the app on ``server.host``:``server.port`` (port 0 picks a free one)."""

    def __init__(self, gateway: Gateway, host: str, port: int) -> None:
        self.app = build_app(gateway)
        self.host, self.port = host, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        sockets = site._server.sockets if site._server else []  # aiohttp exposes no public accessor
        if sockets:
            self.port = sockets[0].getsockname()[1]
        log.info("listening on http://%s:%d", self.host, self.port)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
