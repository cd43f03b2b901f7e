"""The web chat end to end over HTTP, without a browser: a real gateway, its server, the demo model.

What the page relies on: one turn per idempotency key, a stream that starts with the
durable history and then carries every message, edit and deletion, and a history that
survives a restart of the gateway.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gateway.config import Config
from gateway.display import delegation_mode, turn_display
from platforms.web import WebChatAdapter
from tests.web_client import EventStream, get_history, post_message, web_chats

LIST = "Compare these:\n- apples\n- pears"


@pytest.fixture
async def chat(tmp_path) -> AsyncIterator[Any]:
    async with web_chats(tmp_path) as start:
        yield start


def test_the_web_chat_delegates_in_the_background_and_shows_interim_messages_and_notices() -> None:
    config, tier = Config(), WebChatAdapter.tier
    assert delegation_mode(config, "web", tier) == "background"  # gateway_mode: auto
    display = turn_display(config, "web", tier)
    assert display.interim_assistant_messages is True and display.long_running_notifications is True


async def test_a_message_is_answered_live_and_kept_in_the_history(chat, http) -> None:
    web = await chat()
    async with EventStream(http, web.base, "c1") as stream:
        first = await stream.until("history")
        assert first["messages"] == [] and {"stop", "new", "agents"} <= {c["name"] for c in first["commands"]}
        status, accepted = await post_message(http, web.base, "c1", "hello", key="key-00000001")
        assert status == 202 and accepted["turn_id"] and not accepted["duplicate"]
        assert (await stream.until("user"))["id"] == "user:key-00000001"
        reply = await stream.until("message")
        assert reply["kind"] == "reply" and reply["text"].startswith("[demo]")
    await web.settled()
    shown = await get_history(http, web.base, "c1")
    assert [(m["id"], m["role"], m["kind"]) for m in shown] == [
        ("user:key-00000001", "user", "user"), (reply["id"], "assistant", "reply")]
    assert await get_history(http, web.base, "c2") == []


async def test_a_retried_post_with_the_same_key_runs_one_turn(chat, http) -> None:
    web = await chat()
    answers = await asyncio.gather(*(post_message(http, web.base, "c1", LIST, key="key-retried-1") for _ in range(3)))
    assert [status for status, _ in answers] == [202, 202, 202]
    assert len({body["turn_id"] for _, body in answers}) == 1
    assert sorted(body["duplicate"] for _, body in answers) == [False, True, True]
    await web.settled()
    status, again = await post_message(http, web.base, "c1", LIST, key="key-retried-1")  # after the turn, too
    assert status == 202 and again["duplicate"] and again["turn_id"] == answers[0][1]["turn_id"]
    await web.settled()
    kinds = [m["kind"] for m in await get_history(http, web.base, "c1")]
    assert kinds == ["user", "reply", "completion"]  # background delegation: acknowledgement, then results


async def test_the_conversation_survives_a_restart_and_a_reconnect_starts_from_it(chat, http) -> None:
    web = await chat()
    await post_message(http, web.base, "c1", LIST, key="key-00000001")
    await web.settled()
    before = await get_history(http, web.base, "c1")
    assert [m["kind"] for m in before] == ["user", "reply", "completion"]
    await web.restart()
    async with EventStream(http, web.base, "c1") as stream:
        assert (await stream.until("history"))["messages"] == before  # same ids and texts: a page merges, not doubles
        await post_message(http, web.base, "c1", "/help", key="key-00000002")
        answer = await stream.until("message", kind="command")
        assert "/stop" in answer["text"]
    await web.settled()
    assert [m["kind"] for m in await get_history(http, web.base, "c1")] == ["user", "reply", "completion", "user",
                                                                         "command"]


async def test_a_notice_is_edited_in_place_and_deleted_when_the_turn_ends(chat, http) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.05},
                     model={"demo": {"child_steps": 4, "step_seconds": 0.05}},
                     display={"progress_final": "delete"})
    async with EventStream(http, web.base, "c1") as stream:
        await stream.until("history")
        await post_message(http, web.base, "c1", LIST, key="key-00000001")
        notice = await stream.until("message", kind="notice")
        assert notice["text"].startswith("⏳")
        edit = await stream.until("edit", id=notice["id"])
        assert edit["text"] != notice["text"]
        seen = []  # the reply goes first (progress gives way to answers), then the notice is deleted
        while ("delete", notice["id"]) not in seen:
            event, data = await stream.next()
            seen.append((event, data.get("id") if event == "delete" else data.get("kind")))
        assert ("message", "reply") in seen  # one message: inline
    await web.settled()
    assert [m["kind"] for m in await get_history(http, web.base, "c1")] == ["user", "reply"]  # the notice is gone


async def test_a_finalised_notice_shows_its_last_edit_in_the_history(chat, http) -> None:
    web = await chat(delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.05},
                     model={"demo": {"child_steps": 4, "step_seconds": 0.05}})
    await post_message(http, web.base, "c1", LIST, key="key-00000001")
    await web.settled()
    shown = await get_history(http, web.base, "c1")
    assert [m["kind"] for m in shown] == ["user", "notice", "reply"]
    assert shown[1]["text"].startswith("✓ Done in") and shown[1]["edited"] is True


async def test_stopping_the_server_ends_open_streams_at_once(chat, http) -> None:
    web = await chat()
    async with EventStream(http, web.base, "c1") as stream:
        await stream.until("history")
        assert web.server is not None
        async with asyncio.timeout(5):  # not the minute aiohttp would wait for an open handler
            await web.server.stop()
        with pytest.raises(EOFError):
            await stream.next()
