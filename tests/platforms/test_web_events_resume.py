"""A page that reconnects after being away for more than ``history_limit`` messages gets every message since the
newest one it holds (``after``, or ``Last-Event-ID``), in order, none twice; before, it got the last
``history_limit`` only and kept what it showed above them, the replies in between missing without a sign. When
the store no longer has that message, the history says ``"gap": true`` (the page replaces what it shows). The
events that bring messages carry the newest one's id. Over loopback HTTP, the adapter alone."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from platforms.base import Outbound
from platforms.web import WebChatAdapter
from tests.web_client import Intake, serve

LIMIT = 3


def said(n: int) -> dict[str, Any]:
    return {"id": f"m{n}", "role": "assistant", "kind": "reply", "text": f"reply {n}", "time": float(n),
            "edited": False}


@pytest.fixture
async def served(tmp_path) -> AsyncIterator[tuple[WebChatAdapter, Intake, str]]:
    intake = Intake()
    intake.messages = [said(n) for n in range(1, 11)]
    adapter = WebChatAdapter(history_reader=intake.history, history_limit=LIMIT, files_dir=tmp_path / "files")
    await adapter.start(intake.take)
    runner, base = await serve(adapter)
    yield adapter, intake, base
    await adapter.stop()
    await runner.cleanup()


async def read_event(response: aiohttp.ClientResponse) -> dict[str, str]:
    """The next event's fields (``id``, ``event``, ``data``), comments skipped."""
    fields: dict[str, str] = {}
    while True:
        line = (await response.content.readline()).decode()
        assert line, "the stream ended"
        line = line.rstrip("\n")
        if line.startswith(":"):
            continue
        if not line:
            if fields:
                return fields
            continue
        field, _, value = line.partition(": ")
        fields[field] = value


async def first_history(http: aiohttp.ClientSession, base: str, *, after: str | None = None,
                        last_event_id: str | None = None) -> tuple[dict[str, str], dict[str, Any]]:
    params = {"chat": "c1"} | ({"after": after} if after is not None else {})
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    async with http.get(f"{base}/chat/api/events", params=params, headers=headers) as response:
        assert response.status == 200
        event = await read_event(response)
    assert event["event"] == "history"
    return event, json.loads(event["data"])


def ids(history: dict[str, Any]) -> list[str]:
    return [m["id"] for m in history["messages"]]


@pytest.mark.parametrize("how", ["after", "last_event_id"])
async def test_a_page_away_for_longer_than_the_history_gets_every_message_since_its_newest(served, http, how):
    _, _, base = served
    _, history = await first_history(http, base, **{how: "m2"})
    assert ids(history) == [f"m{n}" for n in range(2, 11)]  # from the one it holds on, in order, none twice
    assert history["gap"] is False


async def test_a_page_whose_newest_is_among_the_last_messages_gets_those(served, http) -> None:
    _, _, base = served
    _, history = await first_history(http, base, after="m9")
    assert ids(history) == ["m8", "m9", "m10"]  # the whole window: edits of those before its newest show too
    assert history["gap"] is False


async def test_a_page_whose_newest_the_store_no_longer_has_is_told(served, http) -> None:
    _, intake, base = served
    del intake.messages[:5]  # gone: older than the store keeps
    _, history = await first_history(http, base, after="m2")
    assert ids(history) == ["m8", "m9", "m10"]
    assert history["gap"] is True


async def test_without_after_the_history_is_the_last_messages_as_before(served, http) -> None:
    _, _, base = served
    _, history = await first_history(http, base)
    assert ids(history) == ["m8", "m9", "m10"]
    assert "gap" not in history


async def test_events_that_bring_messages_carry_the_newest_ones_id(served, http) -> None:
    adapter, _, base = served
    async with http.get(f"{base}/chat/api/events", params={"chat": "c1"}) as response:
        assert (await read_event(response))["id"] == "m10"
        await adapter.typing("c1", None)
        assert "id" not in await read_event(response)  # keeps the last id: no message of its own
        await adapter.send(Outbound(chat_id="c1", thread_id=None, text="hi", idempotency_key="k-11"))
        event = await read_event(response)
        assert (event["event"], event["id"]) == ("message", "k-11")
        await adapter.edit("c1", None, "k-11", "hi!")
        assert "id" not in await read_event(response)


async def post(http: aiohttp.ClientSession, base: str) -> tuple[int, Any]:
    async with http.post(f"{base}/chat/api/messages", json={"chat": "c1", "text": "q", "key": "key-resume-1"}) as r:
        return r.status, await r.json()


async def test_a_persons_message_event_carries_its_id(served, http) -> None:
    _, _, base = served
    async with http.get(f"{base}/chat/api/events", params={"chat": "c1"}) as response:
        await read_event(response)
        assert (await post(http, base))[0] == 202
        event = await read_event(response)
        assert (event["event"], event["id"]) == ("user", "user:key-resume-1")
