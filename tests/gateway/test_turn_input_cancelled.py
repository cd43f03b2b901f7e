"""A turn whose files' fetching raises a CancelledError of its own (a future it awaited that something else
cancelled), with no stop: taken for a stop's cancellation, the turn ended with no answer for its chat, and
counted done. It is a failure: the chat is told, the turn counted failed."""

from __future__ import annotations

import asyncio

import aiohttp

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.replies import CRASHED
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.messages import Attachment
from tests.gateway.observing import samples, served


class CancelledDownloads(RecordingAdapter):
    max_attachment_bytes = 1000

    async def download(self, attachment: Attachment) -> bytes:
        awaited = asyncio.get_running_loop().create_future()
        awaited.cancel()  # by someone else: the turn was not stopped
        return await awaited


async def test_a_download_raising_cancelled_error_unstopped_fails_the_turn_and_tells_the_chat(tmp_path) -> None:
    chat = CancelledDownloads()
    host = AgentHost(make_config(tmp_path), model=ScriptedModel({"parent": [[{"text": "unused"}]]}))
    gateway = Gateway(host, [chat])
    await gateway.start()
    try:
        async with served(gateway) as server:
            await chat.say("read this", attachments=[Attachment("document", "r.txt", "text/plain", 5, "f1")])
            await settled(gateway)
            async with aiohttp.ClientSession() as http, http.get(f"{server.url}/metrics") as response:
                value = samples(await response.text())
    finally:
        await gateway.stop(grace=0)
    assert chat.texts() == [CRASHED]
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="failed") == 1
    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="done") == 0
