"""The web chat's and the console's page link their own files relative to the address they are served at, so
that behind a reverse proxy that publishes the gateway under a path prefix (``/sb/chat``, stripped on the way in)
they still load: an absolute ``/chat/static/chat.js`` went to the proxy's root. The browser side of it (the
scripts' API calls) is in tests/scenarios/test_web_chat_behind_prefix_proxy.py."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

import pytest

from gateway.console.routes import SHARED_SCRIPT
from gateway.console.routes import STATIC_DIR as CONSOLE_STATIC_DIR
from platforms.web import STATIC_DIR as WEB_STATIC_DIR
from platforms.web_pages import page_routes, static_route
from tests.web_client import serve_routes

LINK = re.compile(r'\s(?:src|href)="([^"]*)"')


@pytest.mark.parametrize(("page", "folder", "extra"), [
    ("/chat", WEB_STATIC_DIR, {}), ("/console", CONSOLE_STATIC_DIR, {"live.js": SHARED_SCRIPT})])
async def test_each_address_of_the_page_links_its_files_under_the_proxys_prefix(http, page, folder, extra) -> None:
    routes = [*page_routes(page, folder, extra), static_route(f"{page}/static", folder, extra)]
    runner, base = await serve_routes(routes)
    files = {p.name for p in Path(folder).iterdir() if p.is_file()} | set(extra)
    try:
        for address in (page, f"{page}/", f"{page}/static/index.html"):
            async with http.get(base + address + "?chat=c1") as response:
                assert response.status == 200 and response.headers["Content-Encoding"] == "gzip", address
                assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
                links = [link for link in LINK.findall(await response.text()) if not link.startswith("data:")]
            assert len(links) == {"/chat": 4, "/console": 3}[page], address
            # As the browser resolves them where the proxy published the page (its prefix stripped on the way in).
            for link in links:
                resolved = urljoin(f"https://tools.example/sb{address}?chat=c1", link)
                assert resolved.startswith(f"https://tools.example/sb{page}/static/"), (address, link)
                assert resolved.rsplit("/", 1)[1] in files, (address, link)
                async with http.get(base + resolved.removeprefix("https://tools.example/sb")) as file:
                    assert file.status == 200, (address, link)
    finally:
        await runner.cleanup()


async def test_only_links_to_the_folders_files_change(http, tmp_path) -> None:
    (tmp_path / "index.html").write_text('<p title="x.js">x.js</p><script src="x.js"></script><img src="y.png">')
    (tmp_path / "x.js").write_text("")
    runner, base = await serve_routes(page_routes("/p", tmp_path))
    try:
        async with http.get(f"{base}/p") as response:
            assert await response.text() == ('<p title="x.js">x.js</p><script src="p/static/x.js"></script>'
                                             '<img src="y.png">')
    finally:
        await runner.cleanup()
