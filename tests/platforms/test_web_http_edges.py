"""The web chat's API at its edges, over loopback HTTP: a text of 32,000 characters whatever its JSON
escapes, a store that fails to read a chat's history, and a key sent again with another text."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from platforms.base import Accepted, Inbound
from platforms.web import MAX_BODY, MAX_TEXT, WebChatAdapter
from tests.web_client import EventStream, Intake, post_message, serve

JSON = {"Content-Type": "application/json"}


class Sink:
    def __init__(self) -> None:
        self.inbound: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> Accepted:
        self.inbound.append(inbound)
        return Accepted(f"turn-{len(self.inbound)}", f"web|{inbound.chat_id}|", False)


class BrokenStore:
    """A history reader whose database fails, its error naming where the database is."""

    def __call__(self, chat_id: str, limit: int) -> list[dict[str, Any]]:
        raise OSError(5, "Input/output error: /srv/switchboard/state/gateway.sqlite3")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def started() -> AsyncIterator[Any]:
    running = []

    async def start(intake: Intake | None = None, **kw: Any) -> tuple[WebChatAdapter, Sink, str]:
        """With an ``intake``, it is the gateway (its history too); else a `Sink`."""
        sink = Sink()
        if intake is not None:
            kw["history_reader"] = intake.history
        adapter = WebChatAdapter(**kw)
        await adapter.start(intake.take if intake is not None else sink)
        runner, url = await serve(adapter)
        running.append((adapter, runner))
        return adapter, sink, url

    yield start
    for adapter, runner in running:
        await adapter.stop()
        await runner.cleanup()


@pytest.mark.parametrize("character", ["😀", "\u0001", "é"])
async def test_a_text_of_the_most_characters_allowed_is_taken_however_its_json_escapes_them(
        started, http, character: str) -> None:
    _, sink, base = await started()
    text = character * MAX_TEXT
    # Python's json.dumps writes each emoji as "\ud83d\ude00": 12 bytes for one character.
    body = json.dumps({"chat": "c1", "text": text, "key": "key-00000001"}).encode()
    async with http.post(f"{base}/chat/api/messages", data=body, headers=JSON) as response:
        assert response.status == 202, await response.text()
    assert [i.text for i in sink.inbound] == [text]
    over = json.dumps({"chat": "c1", "text": text + character, "key": "key-00000002"}).encode()
    assert len(over) <= MAX_BODY  # one character too many is refused for its length in characters, by name
    async with http.post(f"{base}/chat/api/messages", data=over, headers=JSON) as response:
        assert response.status == 400
        assert (await response.json())["error"] == f'"text" must be at most {MAX_TEXT} characters'


@pytest.mark.parametrize("path", ["/chat/api/history?chat=c1", "/chat/api/events?chat=c1"])
async def test_a_history_the_store_fails_to_read_is_a_json_500_naming_nothing_of_the_store(
        started, http, caplog, path: str) -> None:
    caplog.set_level(logging.INFO)
    _, _, base = await started(history_reader=BrokenStore())
    async with http.get(base + path) as response:
        assert response.status == 500
        assert response.content_type == "application/json"
        body = await response.json()
    assert body == {"error": "internal error; retry later"}
    assert "reading the history of chat c1 failed" in caplog.text  # the operator learns why, in the log


async def user_events_until(stream: EventStream, last_id: str) -> list[dict[str, Any]]:
    """The ``user`` events the stream carries up to the one of ``last_id``."""
    seen = []
    while not seen or seen[-1]["id"] != last_id:
        seen.append(await stream.until("user"))
    return seen


async def test_a_key_sent_again_with_another_text_shows_every_page_the_text_the_gateway_took(started, http) -> None:
    intake = Intake()
    _, _, base = await started(intake)
    async with EventStream(http, base, "c1") as stream:
        await stream.until("history")
        assert (await post_message(http, base, "c1", "first", key="key-00000001"))[0] == 202
        status, body = await post_message(http, base, "c1", "second", key="key-00000001")
        assert status == 202 and body["duplicate"] is True
        assert (await post_message(http, base, "c1", "third", key="key-00000002"))[0] == 202
        seen = await user_events_until(stream, "user:key-00000002")
    assert intake.texts == ["first", "third"]
    # Pages replace a message by its id: "second" would have stood in every open page for "first".
    assert {(e["id"], e["text"]) for e in seen} == {("user:key-00000001", "first"), ("user:key-00000002", "third")}


async def test_a_lone_surrogate_shows_live_as_the_gateway_took_it(started, http) -> None:
    intake = Intake()
    _, _, base = await started(intake)
    async with EventStream(http, base, "c1") as stream:
        await stream.until("history")
        assert (await post_message(http, base, "c1", "bad \ud800 text", key="key-00000001"))[0] == 202
        (event,) = await user_events_until(stream, "user:key-00000001")
    assert event["text"] == intake.texts[0] == "bad \ufffd text"  # as the history shows it after a reload
