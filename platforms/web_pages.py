"""Serving the web chat's and the operator console's own files (the page, its script and style).

Every one of them goes out with `PAGE_HEADERS`, not only the page at ``/chat`` or ``/console``:
the page is also one of the files, so ``/chat/static/index.html`` is the whole working page, and
served without them it could be framed by another site (a hidden Stop button under a visitor's
click) whatever ``/chat`` says. Only the files the folder held at start are served, by name: no
sub-folders, nothing added later, no path that could lead out of it.

Each is read once, at start, and gzipped then for a client that takes it (`accepts_gzip`): the page's scripts are
about 100 KB, a third of that gzipped, on a phone's data at every load. `compressed` does the same for an answer of
the API. With an ``ETag`` per encoding, a reload that finds them unchanged is answered 304, as before.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import mimetypes
import re
from collections.abc import Mapping
from pathlib import Path

from aiohttp import hdrs, web
from aiohttp.web import ContentCoding

PAGE_HEADERS: Mapping[str, str] = {
    # Only the page's own files, and no framing: the page holds a token, and its buttons act.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)
STYLESHEET = re.compile(rb'<link rel="stylesheet" href="[^"]*">')
RENAMED_PAGE = (Path(__file__).parent / "renamed_page.js").read_bytes()
"""Put inline after a page's stylesheet link (`page_routes`): a page published by a proxy under another name without
a trailing slash goes on to that name with one, where its files' links resolve."""
SCOPE_META = b'<meta name="switchboard-scope" content="%s">\n  '
"""Put before a page's stylesheet link when the gateway names itself (`page_routes`'s ``scope``): live.js keeps what
the page stores in the browser under that name, the same at every address the gateway is published at."""
GZIP_FROM = 1024
"""Bytes from which an answer is gzipped: below, gzip's framing and the work gain next to nothing."""


def accepts_gzip(request: web.BaseRequest) -> bool:
    """Whether the request's ``Accept-Encoding`` takes gzip: named (or ``*``, unless gzip is named) with a ``q``
    above 0. aiohttp's own test looks for the word anywhere, and took ``gzip;q=0`` (RFC 9110's "not acceptable")."""
    wildcard = False
    for part in request.headers.get(hdrs.ACCEPT_ENCODING, "").split(","):
        coding, _, params = part.partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        coding = coding.strip().lower()
        if coding in ("gzip", "x-gzip"):
            return q > 0
        if coding == "*":
            wildcard = q > 0
    return wildcard


def compressed(request: web.BaseRequest, response: web.Response) -> web.Response:
    """``response`` (a whole body, such as JSON), gzipped as it goes out when the client takes it and it is
    `GZIP_FROM` bytes or more; ``Vary`` says it depends on ``Accept-Encoding`` either way."""
    body = response.body
    if isinstance(body, bytes) and len(body) >= GZIP_FROM:
        response.headers[hdrs.VARY] = hdrs.ACCEPT_ENCODING
        if accepts_gzip(request):
            response.enable_compression(ContentCoding.gzip)
    return response


class Shipped:
    """One shipped file, read once: served from memory with `PAGE_HEADERS`, gzipped for a client that takes it."""

    def __init__(self, path: Path, body: bytes | None = None) -> None:
        self.body = path.read_bytes() if body is None else body
        self.gzipped = gzip.compress(self.body, mtime=0) if len(self.body) >= GZIP_FROM else None
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self.content_type = kind + ("; charset=utf-8" if kind.startswith("text/") else "")
        self.etag = hashlib.sha256(self.body).hexdigest()[:24]
        self.headers = dict(PAGE_HEADERS)
        # A page's own inline script (`RENAMED_PAGE`, which finds the page's files under a name a proxy gave it), by
        # its hash: no other inline script runs, one written into a message included.
        if kind == "text/html" and (scripts := INLINE_SCRIPT.findall(self.body)):
            allowed = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s).digest()).decode()}'" for s in scripts)
            self.headers["Content-Security-Policy"] += "; script-src 'self' " + allowed

    def response(self, request: web.BaseRequest) -> web.Response:
        gzipped = self.gzipped is not None and accepts_gzip(request)
        etag = self.etag + ("-gzip" if gzipped else "")  # a cache keeps each encoding apart
        headers = dict(self.headers)
        if self.gzipped is not None:
            headers[hdrs.VARY] = hdrs.ACCEPT_ENCODING
        if any(tag.value in (etag, "*") for tag in request.if_none_match or ()):
            response = web.Response(status=304, headers=headers)
        else:
            headers[hdrs.CONTENT_TYPE] = self.content_type
            if gzipped:
                headers[hdrs.CONTENT_ENCODING] = "gzip"
            response = web.Response(body=self.gzipped if gzipped else self.body, headers=headers)
        response.etag = etag
        return response


def _scoped(page: bytes, scope: str | None) -> bytes:
    """``page`` with `SCOPE_META` naming ``scope`` (none without)."""
    if scope is None:
        return page
    meta = SCOPE_META % html.escape(scope).encode()
    return STYLESHEET.sub(lambda link: meta + link[0], page, 1)


def page_routes(path: str, folder: Path, extra: Mapping[str, Path] | None = None,
                scope: str | None = None) -> list[web.RouteDef]:
    """``GET <path>`` and ``GET <path>/``: the page ``folder/index.html``; ``extra`` and ``scope`` as for
    `static_route`.

    The page links its own files by bare name (``src="chat.js"``), right where `static_route` serves it too
    (``<path>/static/index.html``). Served at ``<path>``, each such link becomes ``<last segment>/static/<name>``,
    at ``<path>/``, ``static/<name>``: relative, so the browser resolves it against the address it asked for,
    under whatever prefix a reverse proxy took off on the way (``/sb/chat`` loads ``/sb/chat/static/chat.js``),
    which an absolute ``/chat/static/chat.js`` would take to the proxy's own root. ``<base>`` would do the same
    in the page but is barred by the policy's ``base-uri 'none'``. After the stylesheet's link goes `RENAMED_PAGE`,
    for a proxy that publishes the page under a name of its own without the trailing slash."""
    page = folder / "index.html"
    names = "|".join(re.escape(name) for name in {p.name for p in folder.iterdir() if p.is_file()} | set(extra or {}))
    linked = re.compile(rf'(\s(?:src|href)=")({names})"'.encode())
    body = STYLESHEET.sub(lambda link: link[0] + b"\n  <script>" + RENAMED_PAGE + b"</script>",
                          _scoped(page.read_bytes(), scope), 1)

    def relinked(prefix: str) -> Shipped:
        return Shipped(page, linked.sub(rb'\1' + prefix.encode() + rb'\2"', body))

    bare, slashed = relinked(path.rsplit("/", 1)[-1] + "/static/"), relinked("static/")

    async def serve(request: web.Request) -> web.StreamResponse:
        return (slashed if request.path.endswith("/") else bare).response(request)

    return [web.get(path, serve), web.get(path + "/", serve)]


def static_route(prefix: str, folder: Path, extra: Mapping[str, Path] | None = None,
                 scope: str | None = None) -> web.RouteDef:
    """``GET <prefix>/<name>``: the file ``name`` of ``folder`` (or of ``extra``, by name), 404 for
    any other name. ``scope``: the gateway's name for its pages' storage (`SCOPE_META`), put into each page."""
    paths = {p.name: p for p in folder.iterdir() if p.is_file()} | dict(extra or {})
    files = {name: Shipped(path, _scoped(path.read_bytes(), scope) if path.suffix == ".html" else None)
             for name, path in paths.items()}

    async def serve(request: web.Request) -> web.StreamResponse:
        shipped = files.get(request.match_info["name"])
        if shipped is None:
            raise web.HTTPNotFound()
        return shipped.response(request)

    return web.get(prefix + "/{name}", serve)
