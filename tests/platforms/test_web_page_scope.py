"""The name the gateway gives its web chat's pages to keep their browser storage under (``<meta
name="switchboard-scope">``, read by live.js): the same at every address of the page and after a restart, another
gateway's (another state directory) another. Without it the page scoped its storage by its own address, so one gateway
a proxy published at two paths was two conversations in one browser (tests/scenarios/test_web_chat_one_gateway_two_
paths.py drives that in a browser)."""

from __future__ import annotations

import base64
import logging
import re
from pathlib import Path

from platforms.web import WebChatAdapter
from tests.web_client import serve

SCOPE = re.compile(r'<meta name="switchboard-scope" content="([A-Za-z0-9_-]{16})">')


async def scopes(http, adapter: WebChatAdapter) -> list[str]:
    """What each address of the page names its storage by ("" for a page that names nothing)."""
    runner, base = await serve(adapter)
    try:
        found = []
        for address in ("/chat", "/chat/", "/chat/static/index.html"):
            async with http.get(base + address) as response:
                assert response.status == 200, address
                found.append(next(iter(SCOPE.findall(await response.text())), ""))
        return found
    finally:
        await runner.cleanup()


async def test_every_address_of_the_page_names_the_gateway_the_same_after_a_restart_too(http, tmp_path) -> None:
    first = await scopes(http, WebChatAdapter(files_dir=tmp_path / "a" / "web-files"))
    assert first[0] and first == [first[0]] * 3
    assert await scopes(http, WebChatAdapter(files_dir=tmp_path / "a" / "web-files")) == first
    assert await scopes(http, WebChatAdapter(files_dir=tmp_path / "b" / "web-files")) != first  # another gateway
    # Made from the files' key (an HMAC under it), not the key itself written out.
    key = (tmp_path / "a" / "web-files" / ".id-key").read_bytes()
    assert first[0] not in base64.urlsafe_b64encode(key).decode() + key.hex()


async def test_a_page_without_a_store_of_its_own_names_nothing_and_makes_nothing(http, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert await scopes(http, WebChatAdapter()) == [""] * 3  # scoped by its address, as before
    assert list(tmp_path.iterdir()) == []


async def test_a_key_that_cannot_be_read_leaves_the_pages_scoped_by_their_address(http, tmp_path, caplog) -> None:
    files = tmp_path / "web-files"
    files.mkdir()
    (files / ".id-key").write_bytes(b"short")  # not a key: the files' ids say so when a file is sent
    with caplog.at_level(logging.WARNING, logger="platforms.web"):
        assert await scopes(http, WebChatAdapter(files_dir=files)) == [""] * 3
    assert "under their address" in caplog.text and str(Path(files / ".id-key")) in caplog.text
