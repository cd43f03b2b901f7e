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


NGINX_HOST = re.compile(r"proxy_set_header\s+Host\s+(\$\w+);")


@pytest.mark.parametrize("published", ["tools.example.com", "tools.example.com:8443"])
async def test_the_documented_nginx_host_header_lets_the_page_post_on_any_port(http, published) -> None:
    # docs/platforms/web.md's nginx block, on the port the proxy listens on: nginx's $host is the name alone, no
    # port, so a browser's Origin "https://tools.example.com:8443" never matched it and every send was 403.
    from platforms.web import WebChatAdapter
    from tests.platforms.test_web_adapter import TOKEN, Sink
    from tests.web_client import post_message, serve

    docs = (Path(__file__).parents[2] / "docs/platforms/web.md").read_text()
    [variable] = NGINX_HOST.findall(docs.split("### Behind a reverse proxy", 1)[1].split("```", 3)[1])
    host = {"$host": published.split(":")[0], "$http_host": published}[variable]  # what nginx sets it to
    adapter = WebChatAdapter(token=TOKEN)
    await adapter.start(Sink())
    runner, base = await serve(adapter)
    try:
        status, body = await post_message(http, base, "c1", "hi", key="key-00000001", headers={
            "Host": host, "Origin": f"https://{published}", "Authorization": f"Bearer {TOKEN}"})
        assert status == 202, body
    finally:
        await adapter.stop()
        await runner.cleanup()
