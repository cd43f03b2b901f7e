"""`PrefixProxy`: a reverse proxy on loopback that publishes the gateway under a path prefix and strips it,
as nginx's ``location /sb/ { proxy_pass http://gateway/; }`` does, for tests of the pages behind one.

``/sb/<rest>`` goes on to the gateway's ``/<rest>`` (query, method, body, the browser's own ``Host``, as
``proxy_set_header Host $http_host`` passes it, port and all); its answer comes back as it arrives, so a stream of
Server-Sent Events is not held back. A path outside the prefix is 404, and kept in `PrefixProxy.strays`: what a
page asked for at the proxy's root is what would have gone astray.

``to`` publishes the gateway's path under another name, as ``location /talk { proxy_pass http://gateway/chat; }``
does: ``/talk``, ``/talk/<rest>`` (and ``/talk?…``) go on to ``/chat``, ``/chat/<rest>``. `also` puts another gateway
under another prefix of the same origin (the same port), as one proxy in front of two gateways does.
"""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import hdrs, web
from yarl import URL

# Hop-by-hop (RFC 9110 7.6.1), and the framing the proxy sets again for what it writes.
_NOT_PASSED = frozenset(h.lower() for h in (
    hdrs.CONNECTION, "Keep-Alive", hdrs.PROXY_AUTHENTICATE, hdrs.PROXY_AUTHORIZATION, hdrs.TE, hdrs.TRAILER,
    hdrs.TRANSFER_ENCODING, hdrs.UPGRADE, hdrs.CONTENT_LENGTH))  # fmt: skip


class PrefixProxy:
    """``async with PrefixProxy(upstream, "/sb") as proxy``: ``proxy.url`` is ``http://127.0.0.1:<port>/sb``."""

    def __init__(self, upstream: str, prefix: str = "/sb", *, to: str = "") -> None:
        self.prefix = prefix
        self._published: list[tuple[str, str, str]] = []  # (prefix, upstream, to), the longest prefix first
        self.also(prefix, upstream, to=to)
        self.strays: list[str] = []
        self.passed: list[str] = []
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self._port = 0
        self._streaming: set[asyncio.Task[object]] = set()

    def also(self, prefix: str, upstream: str, *, to: str = "") -> PrefixProxy:
        """Publish ``upstream`` under ``prefix`` too (before entering)."""
        self._published.append((prefix, upstream.rstrip("/"), to))
        self._published.sort(key=lambda published: -len(published[0]))
        return self

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def url(self) -> str:
        return f"{self.origin}{self.prefix}"

    def _upstream(self, path: str) -> str | None:
        """The gateway's address ``path`` goes on to, or None for a path outside every prefix."""
        for prefix, upstream, to in self._published:
            rest = path[len(prefix):]
            if path.startswith(prefix) and (rest.startswith("/") or to and rest[:1] in ("", "?")):
                return upstream + to + rest
        return None

    async def __aenter__(self) -> PrefixProxy:
        # Bodies as they are (gzip too) and no time limit: an event stream stays open for the whole test.
        self._http = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None))
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None and self._http is not None
        for task in self._streaming:  # event streams still open: the runner's cleanup would wait for them
            task.cancel()
        await self._runner.cleanup()
        await self._http.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._http is not None
        path = request.raw_path
        target = self._upstream(path)
        if target is None:
            self.strays.append(f"{request.method} {path}")
            raise web.HTTPNotFound(text="not under the proxy's prefix")
        self.passed.append(f"{request.method} {path}")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_PASSED}
        async with self._http.request(request.method, URL(target, encoded=True),
                                      headers=headers, data=await request.read(), allow_redirects=False) as upstream:
            answer = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers={
                k: v for k, v in upstream.headers.items() if k.lower() not in _NOT_PASSED})
            if upstream.status in (204, 304) or request.method == "HEAD":
                answer.headers[hdrs.CONTENT_LENGTH] = "0"
                await answer.prepare(request)
                return answer
            await answer.prepare(request)
            task = asyncio.current_task()
            assert task is not None
            self._streaming.add(task)
            try:
                async for chunk in upstream.content.iter_any():
                    await answer.write(chunk)
            except (aiohttp.ClientError, ConnectionResetError):
                return answer  # the gateway or the browser ended it: cut off, as a proxy does
            finally:
                self._streaming.discard(task)
            await answer.write_eof()
            return answer
