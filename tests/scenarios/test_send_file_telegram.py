"""``send_file`` on Telegram, end to end: the model's file goes through the outbox and the real
aiogram client to the fake Bot API as a multipart sendDocument (or sendPhoto for a picture),
in the chat's topic, with its caption rendered as Telegram HTML."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

BOT = "sb_files_bot"
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def sending(path: str, caption: str | None = None, then: str = "done") -> dict:
    arguments = {"path": path} | ({"caption": caption} if caption is not None else {})
    return {"parent": [[{"tool_calls": [{"name": "send_file", "arguments": arguments}]}, {"text": then}]]}


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


@pytest.fixture
def config(tmp_path: Path):
    config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"telegram": {"allow_all": True}})
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    return config


@pytest.fixture
async def gateway_on(fake: FakeTelegram, config):
    started = []

    async def start(model: ScriptedModel):
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        started.append(gateway)
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        return gateway

    yield start
    for gateway in started:
        await gateway.stop(grace=0)


def workspace(config) -> Path:
    return Path(config.state_dir) / "workspace"


def tool_results(model: ScriptedModel) -> list[str]:
    return [str(m.get("content")) for m in model.requests[-1].messages if m.get("role") == "tool"]


async def test_a_file_arrives_as_a_document_in_the_topic_with_its_caption_rendered(fake, config, gateway_on):
    (workspace(config) / "q3.csv").write_text("region,total\nnorth,12\n")
    model = ScriptedModel(sending("q3.csv", "**Q3** totals"))
    gateway = await gateway_on(model)
    fake.push_message(-1001, f"@{BOT} the numbers please", chat_type="supergroup", thread_id=7)
    await fake.wait_for(lambda: len(fake.messages["-1001"]) == 2)
    await settled(gateway)
    document, reply = fake.messages["-1001"]
    assert document["document"]["file_name"] == "q3.csv"
    assert document["document"]["data"] == b"region,total\nnorth,12\n"
    assert (document["caption"], document["raw"], document["parse_mode"]) == (
        "Q3 totals", "<b>Q3</b> totals", "HTML")
    assert document["thread_id"] == reply["thread_id"] == 7
    assert reply["text"] == "done"  # after the file: the chat's order
    [call] = fake.calls_to("sendDocument")
    assert call["document"].startswith("attach://")
    assert "q3.csv (22 bytes) is queued to this chat" in tool_results(model)[0]
    assert not list((Path(config.state_dir) / "outbox-files").iterdir())  # the copy went once sent


async def test_a_picture_goes_as_a_photo_and_one_telegram_refuses_as_a_document(fake, config, gateway_on):
    (workspace(config) / "chart.png").write_bytes(PNG)
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "chart.png"}}]},
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "chart.png", "caption": "again"}}]},
        {"text": "done"}]]})
    gateway = await gateway_on(model)
    fake.fail_next("sendPhoto", status=400, description="Bad Request: PHOTO_INVALID_DIMENSIONS")
    fake.push_message(42, "chart?")
    await fake.wait_for(lambda: len(fake.messages["42"]) == 3)
    await settled(gateway)
    first, second, _ = fake.messages["42"]
    assert first["document"]["data"] == PNG and "photo" not in first  # refused as a photo
    assert second["photo"]["data"] == PNG and second["caption"] == "again"


async def test_a_429_is_waited_out_and_the_file_sent_once(fake, config, gateway_on):
    (workspace(config) / "a.txt").write_text("alpha")
    gateway = await gateway_on(ScriptedModel(sending("a.txt")))
    fake.fail_next("sendDocument", status=429, retry_after=1)
    fake.push_message(42, "send a")
    await fake.wait_for(lambda: len(fake.messages["42"]) == 2, timeout=10)
    await settled(gateway)
    assert len(fake.calls_to("sendDocument")) == 2
    assert [m.get("document", {}).get("data") for m in fake.messages["42"]] == [b"alpha", None]


async def test_over_50_mb_and_an_over_long_caption_are_refused_to_the_model(fake, config, gateway_on):
    with (workspace(config) / "huge.bin").open("wb") as f:
        f.truncate(50 * 1000 * 1000 + 1)  # sparse: no 50 MB written
    (workspace(config) / "ok.txt").write_text("fine")
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "huge.bin"}}]},
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "ok.txt", "caption": "x" * 1025}}]},
        {"text": "could not"}]]})
    gateway = await gateway_on(model)
    fake.push_message(42, "send them")
    await fake.wait_for(lambda: fake.messages["42"])
    await settled(gateway)
    too_big, too_long = tool_results(model)
    assert "'huge.bin' is 50,000,001 bytes, larger than the 50,000,000 bytes a file sent on telegram may be" in too_big
    assert "The caption is 1025 characters long, more than the 1024 telegram shows with a file" in too_long
    assert fake.calls_to("sendDocument") == [] and [m["text"] for m in fake.messages["42"]] == ["could not"]


async def test_a_short_caption_with_many_formatted_words_is_sent(fake, config, gateway_on):
    # 30 spans of a 100 Telegram reads: each used to count as 41 characters, 1,229 in all, over 1,024.
    (workspace(config) / "sizes.txt").write_text("fine")
    caption = " ".join(f"**{n}**" for n in range(30))
    model = ScriptedModel(sending("sizes.txt", caption))
    gateway = await gateway_on(model)
    fake.push_message(42, "send it")
    await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
    await settled(gateway)
    document, _ = fake.messages["42"]
    assert document["caption"] == " ".join(str(n) for n in range(30)) and len(document["entities"]) == 30


async def test_a_caption_with_more_spans_than_telegram_reads_is_refused_for_that(fake, config, gateway_on):
    # 101 bold words: 501 characters, well within 1,024, used to be refused as "1025 characters long".
    (workspace(config) / "sizes.txt").write_text("fine")
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "sizes.txt",
                                                            "caption": " ".join(["**b**"] * 101)}}]},
        {"text": "could not"}]]})
    gateway = await gateway_on(model)
    fake.push_message(42, "send it")
    await fake.wait_for(lambda: fake.messages["42"])
    await settled(gateway)
    (refused,) = tool_results(model)
    assert "The caption has 101 formatted spans (bold, italic, code, links), more than the 100 telegram reads" in refused
    assert "characters long" not in refused
    assert fake.calls_to("sendDocument") == [] and [m["text"] for m in fake.messages["42"]] == ["could not"]


async def test_a_caption_of_only_invisible_characters_goes_as_no_caption(fake, config, gateway_on):
    # Zero-width space and joiner, a Braille blank, a byte order mark: it went as the caption, which shows nothing.
    (workspace(config) / "q3.csv").write_text("region,total\n")
    gateway = await gateway_on(ScriptedModel(sending("q3.csv", "\u200b\u200d\u2800 \ufeff")))
    fake.push_message(42, "the numbers please")
    await fake.wait_for(lambda: len(fake.messages["42"]) == 2)
    await settled(gateway)
    document, reply = fake.messages["42"]
    assert (document["document"]["file_name"], document["raw"], reply["text"]) == ("q3.csv", "", "done")
    [call] = fake.calls_to("sendDocument")
    assert "caption" not in call
