"""Serving the web chat's and the operator console's own files (the page, its script and style).

Every one of them goes out with `PAGE_HEADERS`, not only the page at ``/chat`` or ``/console``:
the page is also one of the files, so ``/chat/static/index.html`` is the whole working page, and
served without them it could be framed by another site (a hidden Stop button under a visitor's
click) whatever ``/chat`` says. Only the files the folder held at start are served, by name: no
sub-folders, nothing added later, no path that could lead out of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from aiohttp import web

PAGE_HEADERS: Mapping[str, str] = {
    # Only the page's own files, and no framing: the page holds a token, and its buttons act.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def page_response(path: Path) -> web.FileResponse:
    """``path`` (one of the shipped files) with `PAGE_HEADERS`."""
    return web.FileResponse(path, headers=PAGE_HEADERS)


def static_route(prefix: str, folder: Path, extra: Mapping[str, Path] | None = None) -> web.RouteDef:
    """``GET <prefix>/<name>``: the file ``name`` of ``folder`` (or of ``extra``, by name), 404 for
    any other name."""
    files = {p.name: p for p in folder.iterdir() if p.is_file()} | dict(extra or {})

    async def serve(request: web.Request) -> web.StreamResponse:
        path = files.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound()
        return page_response(path)

    return web.get(prefix + "/{name}", serve)
