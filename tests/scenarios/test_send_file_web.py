"""``send_file`` on the web chat, end to end over HTTP: the model's file goes through the outbox
to the page's event stream and history as a message with a download link, in the chat's
order, and the link serves the exact bytes after the outbox's copy is gone and after a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from tests.web_client import EventStream, get_history, post_message, web_chats

DATA = b"region,total\nnorth,12\n" + bytes(range(256))


def sending(path: str, caption: str) -> ScriptedModel:
    return ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": path, "caption": caption}}]},
        {"text": "done"}]]})  # fmt: skip


@pytest.fixture
async def chat(tmp_path) -> AsyncIterator[Any]:
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    async with web_chats(tmp_path) as start:
        yield start


async def download(http: aiohttp.ClientSession, base: str, file_id: str) -> bytes:
    async with http.get(f"{base}/chat/api/files/{file_id}", params={"chat": "c1"}) as response:
        assert response.status == 200, await response.text()
        assert response.content_disposition is not None
        assert response.content_disposition.filename == "q3 report.csv"
        return await response.read()


async def test_a_file_the_model_sends_shows_in_order_and_its_link_downloads_the_exact_bytes(
        chat, http, tmp_path) -> None:
    workspace = tmp_path / "state" / "workspace"
    (workspace / "q3 report.csv").write_bytes(DATA)
    model = sending("q3 report.csv", "**Q3** totals")
    web = await chat(agent_model=model, agent={"toolsets": ["file"]})
    async with EventStream(http, web.base, "c1") as stream:
        await stream.until("history")
        await post_message(http, web.base, "c1", "the numbers please", key="key-00000001")
        live = await stream.until("message")
        reply = await stream.until("message")
    await web.settled()
    assert live["file"] == {"id": live["id"], "name": "q3 report.csv", "size": len(DATA)}
    assert (live["text"], reply["text"]) == ("**Q3** totals", "done")  # the file first: the chat's order
    (workspace / "q3 report.csv").write_bytes(b"changed afterwards")  # what was sent is what was asked for
    shown = await get_history(http, web.base)
    assert [(m["kind"], m["text"]) for m in shown] == [
        ("user", "the numbers please"), ("interim", "**Q3** totals"), ("reply", "done")]
    assert shown[1]["id"] == live["id"] and shown[1]["file"] == live["file"]
    assert not list((Path(web.config.state_dir) / "outbox-files").iterdir())  # the outbox's copy went
    assert await download(http, web.base, live["id"]) == DATA
    await web.restart()
    assert (await get_history(http, web.base))[1]["file"] == live["file"]
    assert await download(http, web.base, live["id"]) == DATA


async def test_a_file_over_the_web_chats_limit_is_refused_to_the_model(chat, http, tmp_path) -> None:
    with (tmp_path / "state" / "workspace" / "huge.bin").open("wb") as f:
        f.truncate(100 * 1000 * 1000 + 1)  # sparse: no 100 MB written
    model = sending("huge.bin", "")
    web = await chat(agent_model=model, agent={"toolsets": ["file"]})
    await post_message(http, web.base, "c1", "send it", key="key-00000001")
    await web.settled()
    [result] = [str(m.get("content")) for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "larger than the 100,000,000 bytes a file sent on web may be; nothing was sent" in result
    assert [m["text"] for m in await get_history(http, web.base)] == ["send it", "done"]
