"""The name a file the model sends goes out under (`gateway.outbox_files.sent_name`): a workspace
file's name may hold a newline or a right-to-left override, which no platform's upload takes as
written (aiohttp refuses a CR or LF in a multipart header): such a file never reached the chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from gateway.outbox_files import sent_name
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username="sb_names_bot") as fake:
        yield fake


def test_control_and_direction_characters_become_underscores_and_the_rest_stays():
    assert sent_name("q3\r\n.csv") == "q3__.csv"
    assert sent_name("photo\u202egnp.exe") == "photo_gnp.exe"  # shown reversed, as "exe.png"
    assert sent_name("bad\udcff.txt") == "bad_.txt"  # a byte of a name that is not UTF-8
    assert sent_name("отчёт 👨\u200d👩.pdf") == "отчёт 👨\u200d👩.pdf"  # a joiner in an emoji is part of it


async def test_a_file_whose_name_holds_a_newline_reaches_the_chat_under_a_name_without_it(fake, tmp_path):
    config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"telegram": {"allow_all": True}})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "q3\n.csv").write_text("region,total\n")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "q3\n.csv"}}]},
                                       {"text": "done"}]]})
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], model=model)
    try:
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        fake.push_message(42, "the numbers please")
        # Before, aiohttp refused the name: the send failed for good, the model told it was queued.
        await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
        await settled(gateway)
        document, reply = fake.messages["42"]
        assert document["document"]["file_name"] == "q3_.csv"
        assert document["document"]["data"] == b"region,total\n"
        assert reply["text"] == "done"
        [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
        assert "q3_.csv (13 bytes) is queued to this chat" in result
    finally:
        await gateway.stop(grace=0)
