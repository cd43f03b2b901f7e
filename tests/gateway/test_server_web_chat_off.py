"""While the web chat is off (the default), ``/chat`` answers a 404 that says so and names the key that turns it
on: the person opening the page in a browser does not read the start log. Its API paths keep their JSON 404, and
with the chat on, a page under ``/chat`` that is not there keeps aiohttp's plain one."""

from __future__ import annotations

import aiohttp

from tests.web_client import WebChat

SECRET = "chat-off-test-secret-0123"


async def test_chat_page_while_off_says_how_to_enable_it(tmp_path) -> None:
    chat = await WebChat(tmp_path, platforms={"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}}
                         ).start()
    try:
        async with aiohttp.ClientSession() as http:
            for path in ("/chat", "/chat/", "/chat/static/chat.js", "/chat?chat=team"):
                async with http.get(chat.base + path) as response:
                    text = await response.text()
                    assert response.status == 404, path
                    assert "web chat is not enabled" in text and "platforms.web.enabled: true" in text, path
                    assert response.content_type == "text/plain", path
                    assert response.headers["X-Content-Type-Options"] == "nosniff", path
                    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"], path
                    assert response.headers["Cache-Control"] == "no-cache", path
            async with http.get(chat.base + "/chat/api/history?chat=c1") as response:
                assert response.status == 404
                assert await response.json() == {"error": "no such path in this API"}
            for path in ("/chatroom", "/nowhere"):
                async with http.get(chat.base + path) as response:
                    assert response.status == 404, path
                    assert await response.text() == "404: Not Found", path
    finally:
        await chat.stop()


async def test_chat_on_keeps_the_plain_404_for_a_missing_file(tmp_path) -> None:
    chat = await WebChat(tmp_path).start()
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(chat.base + "/chat") as response:
                assert response.status == 200
            async with http.get(chat.base + "/chat/static/nope.js") as response:
                assert response.status == 404
                assert await response.text() == "404: Not Found"
    finally:
        await chat.stop()
