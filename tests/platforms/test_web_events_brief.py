"""A phone on the web chat: a reconnect that asks ``brief=1`` gets the messages it holds (up to ``after``) as their
ids alone, not the whole ``history_limit`` again at every lock or network switch; an edited message or a file still
comes whole. The page, its scripts and the API's larger answers are gzipped for a client that takes gzip, the event
stream too, each event flushed as it goes. Over loopback HTTP, the adapter alone."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from platforms.base import Outbound
from platforms.web import SCOPE_PURPOSE, STATIC_DIR, WebChatAdapter
from platforms.web_pages import SCOPE_META
from tests.web_client import Intake, chat_alone

LONG = "a long answer, " * 200
GZIP = {"Accept-Encoding": "gzip"}


def said(n: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"{LONG}{n}", "time": float(n),
            "edited": False, **extra}


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    intake.messages = [said(n) for n in range(1, 11)]
    async with chat_alone(intake, tmp_path / "files", history_limit=5) as (adapter, base):
        yield adapter, intake, base


async def first_event(http: aiohttp.ClientSession, base: str, headers: dict[str, str] | None = None,
                      **params: str) -> tuple[aiohttp.ClientResponse, dict[str, Any]]:
    """The stream's answer and its first event's data (the history), the stream closed after it."""
    async with http.get(f"{base}/chat/api/events", params={"chat": "c1", **params}, headers=headers) as response:
        assert response.status == 200
        block = (await response.content.readuntil(b"\n\n")).decode()
    data = next(line.removeprefix("data: ") for line in block.splitlines() if line.startswith("data: "))
    return response, json.loads(data)


async def test_a_brief_reconnect_gets_what_it_holds_as_ids_and_what_came_since_whole(served, http) -> None:
    _, intake, base = served
    intake.messages[6] = said(7, kind="notice", text="✓ Done in 42 s", edited=True)  # edited while the page was away
    intake.messages[7] = said(8, file=True)
    _, history = await first_event(http, base, after="m9", brief="1")
    assert history["messages"] == [
        {"id": "m6"}, intake.messages[6], intake.messages[7] | {"file": {"expired": True}}, {"id": "m9"},
        intake.messages[9]]
    assert history["gap"] is False


async def test_without_brief_or_after_or_with_a_gap_the_history_is_whole_as_before(served, http) -> None:
    _, intake, base = served
    whole = intake.messages[-5:]
    assert (await first_event(http, base, after="m9"))[1]["messages"] == whole
    assert (await first_event(http, base, brief="1"))[1]["messages"] == whole
    gap = (await first_event(http, base, after="gone", brief="1"))[1]
    assert (gap["messages"], gap["gap"]) == (whole, True)


async def test_a_brief_reconnect_away_for_longer_than_the_history_gets_the_rest_whole(served, http) -> None:
    _, intake, base = served
    _, history = await first_event(http, base, after="m3", brief="1")
    assert history["messages"] == [{"id": "m3"}, *intake.messages[3:]]


async def test_the_page_and_its_files_are_gzipped_for_a_client_that_takes_it(served, http) -> None:
    adapter, _, base = served
    # The page at /chat links its files relative to it (tests/platforms/test_web_pages_relative_links.py): as shipped,
    # it is the one under /chat/static, but for the gateway's name (tests/platforms/test_web_page_scope.py).
    for path, file in [("/chat/static/index.html", "index.html"), ("/chat/static/chat.js", "chat.js")]:
        shipped = (STATIC_DIR / file).read_bytes()
        if file == "index.html":
            sheet = b'<link rel="stylesheet"'
            shipped = shipped.replace(sheet, SCOPE_META % adapter.files.derived_id(SCOPE_PURPOSE).encode() + sheet)
        async with http.get(base + path, headers=GZIP, auto_decompress=False) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert response.headers["Vary"] == "Accept-Encoding"
            assert response.headers["X-Content-Type-Options"] == "nosniff"
            assert gzip.decompress(await response.read()) == shipped
            etag = response.headers["ETag"]
        async with http.get(base + path, headers=GZIP | {"If-None-Match": etag}) as response:
            assert response.status == 304  # a reload finds it unchanged
        for plain in ({}, {"Accept-Encoding": "gzip;q=0, deflate"}, {"Accept-Encoding": "identity"}):
            async with http.get(base + path, headers=plain, auto_decompress=False,
                                skip_auto_headers=["Accept-Encoding"]) as response:
                assert "Content-Encoding" not in response.headers
                assert await response.read() == shipped
                assert response.headers["ETag"] != etag
                assert response.headers["Content-Type"].startswith(("text/html", "text/javascript"))


async def test_the_history_is_gzipped_and_a_small_answer_is_not(served, http) -> None:
    _, intake, base = served
    async with http.get(f"{base}/chat/api/history", params={"chat": "c1"}, headers=GZIP,
                        auto_decompress=False) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert json.loads(gzip.decompress(await response.read()))["messages"] == intake.messages[-5:]
    async with http.get(f"{base}/chat/api/history", params={"chat": "c1", "before": "m6"}, headers=GZIP,
                        auto_decompress=False) as response:
        assert response.headers["Content-Encoding"] == "gzip"
    async with http.get(f"{base}/chat/api/history", params={"chat": "no!"}, headers=GZIP,
                        auto_decompress=False) as response:
        assert response.status == 400
        assert "Content-Encoding" not in response.headers
        assert "error" in json.loads(await response.read())


async def test_the_event_stream_is_gzipped_and_each_event_comes_as_it_is_sent(served, http) -> None:
    adapter, intake, base = served
    async with http.get(f"{base}/chat/api/events", params={"chat": "c1"}, headers=GZIP) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        history = (await response.content.readuntil(b"\n\n")).decode().strip()
        assert json.loads(history.splitlines()[-1].removeprefix("data: "))["messages"] == intake.messages[-5:]
        await adapter.send(Outbound(chat_id="c1", thread_id=None, text="live",
                                    idempotency_key="m11"))
        event = (await response.content.readuntil(b"\n\n")).decode()  # not held back until more comes
        assert event.startswith("id: m11\nevent: message\n")
        await adapter.close_streams()
        assert await response.content.read() == b""  # a whole gzip stream: its end reads cleanly


async def test_an_unknown_file_is_404_and_a_head_is_answered_as_its_get(tmp_path: Path, http) -> None:
    intake = Intake()
    async with chat_alone(intake, tmp_path / "files") as (_, base):
        async with http.get(f"{base}/chat/static/nope.js", headers=GZIP) as response:
            assert response.status == 404
        async with http.head(f"{base}/chat/static/chat.css", headers=GZIP) as response:
            assert response.status == 200
            assert response.headers["Content-Encoding"] == "gzip"
