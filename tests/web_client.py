"""The web chat for tests: a gateway serving it (`WebChat`) or an adapter served alone (`serve`),
and a small client of its API."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Handler

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import settled
from platforms.base import Accepted, Inbound
from platforms.web import WebChatAdapter
from platforms.webhook import WebhookAdapter


class Intake:
    """A stand-in for the gateway behind a `WebChatAdapter` alone: takes each key once, in the order the
    page's POSTs reach it, and answers the history from `messages` (which a test may change, as the
    gateway's store changes)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.messages: list[dict[str, Any]] = []

    async def take(self, inbound: Inbound) -> Accepted:
        duplicate = any(m["id"] == inbound.event_id for m in self.messages)
        if not duplicate:
            self.texts.append(inbound.text)
            self.messages.append({"id": inbound.event_id, "role": "user", "kind": "user", "text": inbound.text,
                                  "time": 1.0, "edited": False})
        return Accepted(None, f"web|{inbound.chat_id}|", duplicate)

    def history(self, chat_id: str, limit: int) -> list[dict[str, Any]]:
        return [dict(m) for m in self.messages[-limit:]]


class WebChat:
    """One gateway with the web chat on a state directory; `restart` (or `stop`, then `start`)
    starts a new one on it, on the same port, as systemd restarting the real gateway does, so an
    open page can find it again. ``agent_model``: a model object (a `ScriptedModel`) instead of the
    one the ``model`` section configures."""

    def __init__(self, tmp_path, *, agent_model: Any = None, **sections: Any) -> None:
        raw = {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
               "model": {"demo": {"child_steps": 1, "step_seconds": 0}},
               "platforms": {"web": {"enabled": True}}, **sections}
        self.config = config_from_mapping(raw).config
        self.agent_model = agent_model
        self.gateway: Gateway | None = None
        self.server: Server | None = None
        self.port = 0  # a free one at the first start, then that one again

    @property
    def base(self) -> str:
        assert self.server is not None
        return self.server.url

    async def start(self) -> WebChat:
        self.gateway = Gateway(AgentHost(self.config, model=self.agent_model), build_adapters(self.config))
        self.server = Server(self.gateway, "127.0.0.1", self.port)
        await self.gateway.start()
        await self.server.start()
        self.port = self.server.port
        return self

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()
        if self.gateway is not None:
            await self.gateway.stop(grace=0)
        self.server = self.gateway = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def settled(self) -> None:
        assert self.gateway is not None
        await settled(self.gateway, timeout=10)


async def serve(adapter: WebChatAdapter | WebhookAdapter) -> tuple[web.AppRunner, str]:
    """The adapter's routes alone (web chat or webhook), without a gateway, on a loopback port: (runner, base url)."""
    return await serve_routes(adapter.web_routes())


def replies(texts: Iterable[str]) -> list[dict[str, Any]]:
    """A history of the agent's replies ``texts``, as the store reads it back: ids m0, m1, …, in order."""
    return [{"id": f"m{n}", "role": "assistant", "kind": "reply", "text": text, "time": float(n), "edited": False}
            for n, text in enumerate(texts)]


@contextlib.asynccontextmanager
async def chat_alone(intake: Intake, files_dir: Path, **options: Any) -> AsyncIterator[tuple[WebChatAdapter, str]]:
    """A web chat adapter handing what it takes to ``intake``, its routes served alone (`serve`): (adapter, base
    url); stopped when the block ends. ``options``: the adapter's (``history_limit=10``)."""
    adapter = WebChatAdapter(history_reader=intake.history, files_dir=files_dir, **options)
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    try:
        yield adapter, base
    finally:
        await adapter.stop()
        await runner.cleanup()


async def serve_from(adapter: WebChatAdapter, peer: list[str]) -> tuple[web.AppRunner, str]:
    """`serve`, each request seen as coming from ``peer[0]`` (as one from another machine is: by its socket's
    address, which a test on loopback cannot make any other way)."""
    @web.middleware
    async def from_peer(request: web.Request, handler: Handler) -> web.StreamResponse:
        return await handler(request.clone(remote=peer[0]))

    return await serve_routes(adapter.web_routes(), middlewares=[from_peer])


async def serve_routes(routes: Iterable[web.AbstractRouteDef], *,
                       middlewares: Iterable[Any] = ()) -> tuple[web.AppRunner, str]:
    """``routes`` on a loopback port: (runner, base url)."""
    app = web.Application(middlewares=list(middlewares))
    app.add_routes(routes)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def get_history(http: aiohttp.ClientSession, base: str, chat: str = "c1") -> list[dict[str, Any]]:
    """The chat's messages as ``GET /chat/api/history`` answers them (asserting a 200)."""
    async with http.get(f"{base}/chat/api/history", params={"chat": chat}) as response:
        assert response.status == 200
        return (await response.json())["messages"]


async def post_message(http: aiohttp.ClientSession, base: str, chat: str, text: str, *, key: str,
                       headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{base}/chat/api/messages", json={"chat": chat, "text": text, "key": key},
                         headers=headers) as response:
        return response.status, await response.json()


class EventStream:
    """``GET /chat/api/events?chat=`` as an async context manager; `next` returns one event as
    ``(type, data)``, skipping comments; EOFError once the server ended the stream."""

    def __init__(self, http: aiohttp.ClientSession, base: str, chat: str, *,
                 headers: dict[str, str] | None = None) -> None:
        self._request = http.get(f"{base}/chat/api/events", params={"chat": chat}, headers=headers)
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> EventStream:
        self._response = await self._request.__aenter__()
        assert self._response.status == 200, await self._response.text()
        assert self._response.headers["Content-Type"].startswith("text/event-stream")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._request.__aexit__(*exc)

    async def next(self) -> tuple[str, dict[str, Any]]:
        while True:
            block = await self._block()
            if block[0] != ":":
                kind, data = "message", []
                for line in block:
                    field, _, value = line.partition(": ")
                    if field == "event":
                        kind = value
                    elif field == "data":
                        data.append(value)
                return kind, json.loads("\n".join(data))

    async def until(self, event: str, /, **match: Any) -> dict[str, Any]:
        """The data of the next event of this type whose fields equal ``match``."""
        while True:
            got, data = await self.next()
            if got == event and all(data.get(k) == v for k, v in match.items()):
                return data

    async def comment(self) -> str:
        """The text of the next comment (a keep-alive), skipping events."""
        while True:
            block = await self._block()
            if block[0] == ":":
                return block[1]

    async def _block(self) -> tuple[str, ...] | list[str]:
        """One event's lines, or (":", text) for a comment."""
        assert self._response is not None
        lines: list[str] = []
        while True:
            raw = await self._response.content.readline()
            if not raw:
                raise EOFError("the server ended the stream")
            line = raw.decode().rstrip("\n")
            if line.startswith(":"):
                return (":", line[1:].strip())
            if line:
                lines.append(line)
            elif lines:
                return lines


@contextlib.asynccontextmanager
async def web_chats(tmp_path) -> AsyncIterator[Callable[..., Awaitable[WebChat]]]:
    """Yields ``start(agent_model=None, **sections)``, which starts a gateway serving the web chat on
    ``tmp_path`` with those config sections; every one started stops on leaving."""
    made: list[WebChat] = []

    async def start(*, agent_model: Any = None, **sections: Any) -> WebChat:
        web = await WebChat(tmp_path, agent_model=agent_model, **sections).start()
        made.append(web)
        return web

    try:
        yield start
    finally:
        for web in made:
            await web.stop()


async def open_chat(page: Any, url: str) -> None:
    """Open the chat page at ``url`` in a Playwright ``page``, once its event stream is connected."""
    await page.goto(url)
    await page.wait_for_selector("body[data-state=connected]")


async def type_message(page: Any, text: str) -> None:
    """Type ``text`` in the page's box and send it, as a user does (Enter)."""
    await page.fill("#input", text)
    await page.press("#input", "Enter")
