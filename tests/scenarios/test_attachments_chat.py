"""Files from chat to model, end to end: a user posts a photo, a document or a voice message into a
fake chat; the real SDK in the adapter receives it and downloads it from the fake over HTTP; the
gateway stores it in the session's workspace and the model gets it. What the model was sent is
read from FakeOpenAIServer (the real OpenAI provider) or from the scripted model."""

from __future__ import annotations

import base64
import contextlib
import io
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeOpenAIServer
from gateway.app import Gateway
from gateway.attachments import VOICE_UNSUPPORTED
from gateway.config import config_from_mapping
from gateway.platform_factory import build_adapters
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.discord import FakeDiscord, Upload
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, join_heartbeat_threads
from tests.pictures import PNG, photo, picture


@pytest.fixture
async def openai() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(api_key="sk-test", default_text="Nice picture.") as server:
        yield server


def openai_model(server: FakeOpenAIServer, **extra) -> dict:
    return {"provider": "openai", "name": "fake-model", "base_url": server.base_url, "api_key": "sk-test",
            "max_retries": 0, **extra}


def user_content(request: dict) -> object:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


class Telegram:
    """A gateway with the Telegram adapter on FakeTelegram; the workspace is ``workspace``."""

    def __init__(self, fake: FakeTelegram, tmp_path: Path) -> None:
        self.fake, self.tmp_path, self.gateway = fake, tmp_path, None

    @property
    def workspace(self) -> Path:
        return self.tmp_path / "state" / "workspace"

    async def start(self, *, model: dict | None = None, script=None, cap: int = 20 * 1024 * 1024,
                    toolsets: tuple[str, ...] = ()) -> Gateway:
        config = make_config(self.tmp_path, platforms={"telegram": {"allow_all": True, "toolsets": list(toolsets)}},
                             model=model or {})
        adapter = TelegramAdapter(self.fake.token, api_base=self.fake.base_url, polling_timeout=10,
                                  max_attachment_bytes=cap)
        self.gateway = await start_gateway(config, [adapter], script=script)
        return self.gateway

    def replies(self) -> list[str]:
        return [m["text"] for m in self.fake.messages["42"]]

    async def answered(self, count: int = 1) -> list[str]:
        await self.fake.wait_for(lambda: len(self.replies()) >= count, timeout=10)
        return self.replies()


@pytest.fixture
async def telegram(tmp_path) -> AsyncIterator[Telegram]:
    async with FakeTelegram() as fake:
        chat = Telegram(fake, tmp_path)
        yield chat
        if chat.gateway is not None:
            await chat.gateway.stop(grace=0)


# -- Telegram ------------------------------------------------------------------------------------


async def test_a_photo_reaches_a_vision_model_as_an_image_part(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.push_photo(42, PNG, caption="what is in this picture?")
    assert await telegram.answered() == ["Nice picture."]
    text, image = user_content(openai.requests[0])
    assert text == {"type": "text", "text": "what is in this picture?"}
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and base64.b64decode(url.split(",", 1)[1]) == PNG
    (stored,) = (telegram.workspace / "attachments").glob("telegram/42/photo-*.jpg")
    assert stored.read_bytes() == PNG


async def test_an_album_is_one_turn_that_sees_every_photo(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.push_album(42, [PNG, PNG + b"second"], caption="which one is sharper?")
    assert await telegram.answered() == ["Nice picture."]
    assert len(openai.requests) == 1
    text, *images = user_content(openai.requests[0])
    assert text == {"type": "text", "text": "which one is sharper?"} and len(images) == 2


async def test_a_photo_that_cannot_be_decoded_is_named_to_the_model(telegram: Telegram,
                                                                     openai: FakeOpenAIServer) -> None:
    # A JPEG cut short: its first bytes say JPEG, so it is taken as a photo, but Pillow cannot decode it
    # to fit it. It used to vanish: the model saw one picture of two, or none and only the caption.
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.push_album(42, [PNG, photo((800, 600))[:5000]], caption="which one is sharper?")
    assert await telegram.answered() == ["Nice picture."]
    text, *images = user_content(openai.requests[0])
    assert len(images) == 1 and base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1]) == PNG
    first, missed = text["text"].split("\n\n")
    assert first == "which one is sharper?"
    assert missed.startswith("[Files the user sent that did not reach you: photo-") and missed.endswith("]")
    assert ".jpg (cannot be decoded as an image: OSError: image file is truncated" in missed
    telegram.fake.push_photo(42, photo((800, 600))[:5000])
    await telegram.answered(2)
    content = user_content(openai.requests[1])  # nothing usable: the text says so, and names no image path
    assert content.startswith("(The user sent an image without a caption.)\n\n[Files the user sent that did not"
                              " reach you: photo-") and "cannot be decoded as an image" in content
    assert "[Image attached at" not in content


async def test_a_small_picture_of_too_many_pixels_is_named_to_the_model_not_decoded(telegram: Telegram,
                                                                                   openai: FakeOpenAIServer) -> None:
    # 49 million pixels in a 50 KB PNG: under Pillow's own bomb limit (89 million, which only warns
    # below twice that), so it used to be decoded whole for fitting, gigabytes of memory for one
    # small file any user could send, and several such at once could take the gateway down.
    bomb = picture("PNG", (7000, 7000), "L", compress_level=9)
    assert len(bomb) < 100_000
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.push_album(42, [PNG, bomb], caption="which one is sharper?")
    assert await telegram.answered() == ["Nice picture."]
    text, *images = user_content(openai.requests[0])
    assert len(images) == 1 and base64.b64decode(images[0]["image_url"]["url"].split(",", 1)[1]) == PNG
    missed = text["text"].split("\n\n")[1]
    assert missed.startswith("[Files the user sent that did not reach you: photo-")
    assert ".jpg (has too many pixels to decode safely: 7000×7000 is more than 40,000,000 pixels)]" in missed


async def test_without_vision_the_photo_is_a_workspace_path(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai))
    telegram.fake.push_photo(42, PNG)
    await telegram.answered()
    content = user_content(openai.requests[0])
    assert isinstance(content, str) and "[Image attached at: attachments/" in content
    assert "(The user sent an image without a caption.)" in content


async def test_a_long_non_latin_file_name_is_stored_and_the_caption_answered(telegram: Telegram,
                                                                              openai: FakeOpenAIServer) -> None:
    # 90 characters, 270 bytes in UTF-8: more than a file name may have on most file systems.
    await telegram.start(model=openai_model(openai))
    telegram.fake.push_document(42, b"quarterly numbers", "季度报告" * 22 + "終.txt", mime_type="text/plain",
                                caption="summarise this")
    assert await telegram.answered() == ["Nice picture."]
    (stored,) = (telegram.workspace / "attachments").glob("telegram/42/*.txt")
    assert stored.read_bytes() == b"quarterly numbers" and stored.name.startswith("季度报告")
    content = user_content(openai.requests[0])
    assert content.startswith("summarise this") and stored.name in content


@pytest.mark.parametrize("vision", [True, False])
async def test_a_file_labelled_an_image_that_is_not_one_is_listed_as_a_file(telegram: Telegram,
                                                                          openai: FakeOpenAIServer,
                                                                          vision: bool) -> None:
    await telegram.start(model=openai_model(openai, supports_vision=vision))
    telegram.fake.push_document(42, b"%PDF-1.7 not a picture", "scan.png", mime_type="image/png",
                                caption="what does this say?")
    assert await telegram.answered() == ["Nice picture."]
    content = user_content(openai.requests[0])
    assert isinstance(content, str) and content.startswith("what does this say?")
    assert "- attachments/" in content
    assert "/scan.png (stated image/png, but the content is a PDF document, 22 bytes)" in content


def reading_model(request: ModelRequest) -> dict:
    """Reads the first file the user's message names, then answers with what it found."""
    last = request.messages[-1]
    if last["role"] == "user":
        path = next(line.split(" ")[1] for line in str(last["content"]).splitlines() if line.startswith("- "))
        return {"tool_calls": [{"name": "read_file", "arguments": {"path": path}}]}
    return {"text": f"The file says: {last['content'].splitlines()[-1].split('|')[-1].strip()}"}


async def test_a_document_is_a_workspace_path_the_model_reads(telegram: Telegram) -> None:
    await telegram.start(script={"parent": reading_model}, toolsets=("file",))  # reading files is opted into
    telegram.fake.push_document(42, b"line one\nthe secret is 42\n", "notes.txt", mime_type="text/plain",
                                caption="what does it say?")
    assert await telegram.answered() == ["The file says: the secret is 42"]


async def test_voice_without_transcription_gets_a_clear_reply(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai))
    telegram.fake.push_voice(42, b"OggS voice")
    assert await telegram.answered() == [VOICE_UNSUPPORTED]
    assert openai.requests == [] and telegram.fake.downloads == []  # the reply ended the turn: no model call


async def test_in_a_group_a_file_that_did_not_reach_the_model_is_answered_by_its_note_alone(
        telegram: Telegram, openai: FakeOpenAIServer) -> None:
    # Read with its sender ([@bob]) before its files were looked at, a message without a caption had a
    # text all the same: a turn ran for nothing, its answer after the note, on the model's bill.
    await telegram.start(model=openai_model(openai), cap=100)
    group = dict(chat_type="supergroup", user_id=5, username="bob", reply_to_bot=True)
    telegram.fake.push_voice(-1001, b"OggS voice", **group)
    # Answered before the next is sent: a message sent while a turn runs interrupts it (the default
    # busy_input_mode), and nothing more of that turn is sent, its note neither.
    await telegram.fake.wait_for(lambda: telegram.fake.messages["-1001"], timeout=10)
    telegram.fake.push_document(-1001, b"x" * 5000, "big.pdf", mime_type="application/pdf", **group)
    await telegram.fake.wait_for(lambda: len(telegram.fake.messages["-1001"]) >= 2, timeout=10)
    await settled(telegram.gateway)
    assert [m["text"] for m in telegram.fake.messages["-1001"]] == [
        VOICE_UNSUPPORTED, "big.pdf is 4.9 KB, which is larger than the 100 bytes I can take on telegram; "
                           "please send a smaller file."]
    assert openai.requests == []


async def test_in_a_group_the_model_reads_who_sent_a_picture_and_that_it_came_without_a_caption(
        telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.push_photo(-1001, PNG, chat_type="supergroup", user_id=5, username="bob", reply_to_bot=True)
    await telegram.fake.wait_for(lambda: telegram.fake.messages["-1001"], timeout=10)
    content = user_content(openai.requests[0])
    assert content[0] == {"type": "text", "text": "[@bob] (The user sent an image without a caption.)"}


async def test_a_transcribed_voice_message_is_the_turns_text(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    openai.push_transcription("please summarise my inbox")
    await telegram.start(model=openai_model(openai, transcription={"name": "whisper-1"}))
    telegram.fake.push_voice(42, b"OggS voice")
    assert await telegram.answered() == ["Nice picture."]
    (sent,) = openai.transcriptions
    assert (sent["model"], sent["audio"], sent["filename"].endswith(".ogg")) == ("whisper-1", b"OggS voice", True)
    assert user_content(openai.requests[0]) == "please summarise my inbox"


async def test_a_failed_transcription_is_explained_and_the_caption_answered(telegram: Telegram,
                                                                          openai: FakeOpenAIServer) -> None:
    openai.push_transcription(status=400)
    await telegram.start(model=openai_model(openai, transcription={"name": "whisper-1"}))
    telegram.fake.push_voice(42, b"OggS voice", caption="and the details are in here")
    refusal, answer = await telegram.answered(2)
    assert refusal == "I couldn't transcribe that voice message; please type it instead." and answer == "Nice picture."
    content = user_content(openai.requests[0])
    assert content.startswith("and the details are in here")
    assert "did not reach you: voice-" in content and "transcription failed)" in content


async def test_an_over_cap_file_is_refused_clearly_and_nothing_is_stored(telegram: Telegram,
                                                                       openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai), cap=100)
    telegram.fake.push_document(42, b"x" * 5000, "big.pdf", mime_type="application/pdf")
    (reply,) = await telegram.answered()
    assert reply == "big.pdf is 4.9 KB, which is larger than the 100 bytes I can take on telegram; " \
                    "please send a smaller file."
    assert openai.requests == [] and telegram.fake.downloads == []
    assert not (telegram.workspace / "attachments").exists()


async def test_a_refused_file_is_named_as_sent_not_as_markdown(telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai), cap=100)
    telegram.fake.push_document(42, b"x" * 5000, "__init__.py", mime_type="text/x-python")
    await telegram.fake.wait_for(lambda: telegram.fake.messages["42"], timeout=10)  # not interrupted by the next
    telegram.fake.push_document(42, b"x" * 5000, "1. *draft*.md", mime_type="text/markdown")
    first, second = await telegram.answered(2)
    assert first.startswith("__init__.py is 4.9 KB") and second.startswith("1. *draft*.md is 4.9 KB")
    assert all(not m["entities"] for m in telegram.fake.messages["42"])  # no bold "init", no list, no italics


async def test_with_a_caption_the_turn_goes_on_without_the_refused_file(telegram: Telegram,
                                                                       openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai), cap=100)
    telegram.fake.push_document(42, b"x" * 5000, "big.pdf", caption="can you read this?")
    refusal, answer = await telegram.answered(2)
    assert refusal.startswith("big.pdf is 4.9 KB") and answer == "Nice picture."
    assert "did not reach you: big.pdf (too large)" in user_content(openai.requests[0])


async def test_a_photo_whose_getfile_telegram_rate_limits_still_reaches_the_model(telegram: Telegram,
                                                                                  openai: FakeOpenAIServer) -> None:
    # getFile answering 429 "retry after 1" refused the photo at once ("I couldn't download…"), though
    # a second later Telegram served it: the user's photo was lost for that turn.
    await telegram.start(model=openai_model(openai, supports_vision=True))
    telegram.fake.fail_next("getFile", 429, retry_after=1)
    telegram.fake.push_photo(42, PNG, caption="what is in this picture?")
    assert await telegram.answered() == ["Nice picture."]
    text, image = user_content(openai.requests[0])
    assert text == {"type": "text", "text": "what is in this picture?"}
    assert base64.b64decode(image["image_url"]["url"].split(",", 1)[1]) == PNG
    assert len(telegram.fake.calls_to("getFile")) == 2  # the 429, then the one that took


async def test_a_download_cut_off_midway_is_tried_again_and_only_the_whole_file_stored(
        telegram: Telegram, openai: FakeOpenAIServer) -> None:
    await telegram.start(model=openai_model(openai))
    telegram.fake.cut_next_download(after=1000)
    telegram.fake.push_document(42, b"x" * 200_000, "report.pdf", mime_type="application/pdf",
                                caption="summarise this")
    assert await telegram.answered() == ["Nice picture."]  # no "I couldn't download report.pdf"
    assert "did not reach you" not in user_content(openai.requests[0])
    stored = [p for p in (telegram.workspace / "attachments").rglob("*") if p.is_file()]
    assert [p.name for p in stored] == ["report.pdf"] and stored[0].read_bytes() == b"x" * 200_000


async def test_a_turn_stopped_while_its_file_downloads_says_nothing_of_the_file(telegram: Telegram,
                                                                               openai: FakeOpenAIServer) -> None:
    gateway = await telegram.start(model=openai_model(openai))
    fake = telegram.fake
    fake.hold("getFile")
    fake.fail_next("getFile", 500)  # once let go: the download fails, which the turn would explain
    fake.push_document(42, b"%PDF-1.7 report", "report.pdf", caption="summarise this")
    await fake.wait_for(lambda: fake.calls_to("getFile"))
    fake.push_message(42, "/stop")
    (confirmation,) = await telegram.answered()
    assert confirmation.startswith("Stopped")
    fake.release("getFile")
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway)
    assert telegram.replies() == [confirmation]  # no "I couldn't download report.pdf"
    assert openai.requests == []


@pytest.mark.parametrize("then", ["/stop", "never mind, hello"])
async def test_a_stop_ends_the_wait_to_try_a_download_again(telegram: Telegram, openai: FakeOpenAIServer,
                                                            then: str) -> None:
    # Telegram asks for 20 s: a stop, or a newer message interrupting the turn, does not wait them out.
    gateway = await telegram.start(model=openai_model(openai, supports_vision=True))
    fake = telegram.fake
    fake.fail_next("getFile", 429, retry_after=20)
    fake.push_photo(42, PNG, caption="what is in this picture?")
    await fake.wait_for(lambda: fake.calls_to("getFile"))
    fake.push_message(42, then)
    (reply,) = await telegram.answered()
    await fake.wait_for(lambda: not fake.pending)
    await settled(gateway)  # within 5 s: the turn waits no more
    if then == "/stop":
        assert reply.startswith("Stopped") and openai.requests == []
    else:
        assert reply == "Nice picture." and user_content(openai.requests[0]) == then
    assert telegram.replies() == [reply] and len(fake.calls_to("getFile")) == 1  # not tried again, nor explained


async def test_a_file_sent_while_a_turn_runs_in_steer_mode_reaches_the_model(tmp_path) -> None:
    seen: list[str] = []

    def parent(request: ModelRequest) -> dict:
        seen.append(str(request.messages[-1]["content"]))
        if seen[-1] == "start":
            return {"wait": "tool", "tool_calls": [{"name": "list_files", "arguments": {}}]}
        return {"text": f"answer {len(seen)}"}

    model = ScriptedModel({"parent": parent})
    async with FakeTelegram() as fake:
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}},
                             display={"busy_input_mode": "steer"})
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            fake.push_message(42, "start")
            await model.reached("tool")
            fake.push_photo(42, PNG, caption="and look at this")
            await fake.wait_for(lambda: not fake.pending, timeout=10)  # the photo was taken in
            model.release("tool")
            await fake.wait_for(lambda: any("[Image attached at: attachments/" in c for c in seen), timeout=10)
            await fake.wait_for(lambda: len(fake.messages["42"]) == 2, timeout=10)
            assert any(c.startswith("and look at this") for c in seen)
        finally:
            await gateway.stop(grace=0)


def test_the_cap_is_configured_per_platform(tmp_path) -> None:
    config = config_from_mapping({"state_dir": str(tmp_path), "platforms": {
        "telegram": {"enabled": True, "token": "1:x", "allow_all": True, "max_attachment_bytes": 1234},
        "slack": {"enabled": True, "bot_token": "xoxb", "app_token": "xapp", "allow_all": True},
    }}).config
    caps = {a.name: a.max_attachment_bytes for a in build_adapters(config)}
    assert caps == {"telegram": 1234, "slack": 20 * 1024 * 1024}


# -- Slack and Discord ---------------------------------------------------------------------------


async def test_a_slack_file_share_becomes_a_workspace_path(tmp_path) -> None:
    model = ScriptedModel({"parent": reading_model})
    async with FakeSlack() as fake:
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True, "toolsets": ["file"]}})
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            await fake.push_file("DU1", "U1", b"a,b\n1,the answer\n", "data.csv", mimetype="text/csv")
            await fake.wait_for(lambda: "The file says: 1,the answer" in fake.texts("DU1"), timeout=10)
            assert fake.downloads == [next(iter(fake.files))]
        finally:
            await gateway.stop(grace=0)


async def test_a_slack_file_whose_files_info_is_rate_limited_still_reaches_the_model(tmp_path) -> None:
    model = ScriptedModel({"parent": reading_model})
    async with FakeSlack() as fake:
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True, "toolsets": ["file"]}})
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            fake.fail_next("files.info", status=429, retry_after=0.05)
            await fake.push_file("DU1", "U1", b"a,b\n1,the answer\n", "data.csv", mimetype="text/csv")
            await fake.wait_for(lambda: "The file says: 1,the answer" in fake.texts("DU1"), timeout=10)
            assert len(fake.calls_to("files.info")) == 2 and fake.downloads == [next(iter(fake.files))]
        finally:
            await gateway.stop(grace=0)


@contextlib.asynccontextmanager
async def discord_chat(tmp_path, openai: FakeOpenAIServer) -> AsyncIterator[FakeDiscord]:
    """A gateway on FakeDiscord whose model, served by ``openai``, sees images; stopped on leaving."""
    async with FakeDiscord() as fake:
        config = make_config(tmp_path, platforms={"discord": {"allow_all": True}},
                             model=openai_model(openai, supports_vision=True))
        gateway = await start_gateway(config, [adapter_for(fake)])
        try:
            yield fake
        finally:
            await gateway.stop(grace=0)
            await join_heartbeat_threads()


async def test_a_discord_image_reaches_the_model_as_an_image_part(tmp_path, openai: FakeOpenAIServer) -> None:
    async with discord_chat(tmp_path, openai) as fake:
        channel = fake.dm_channel(7)
        fake.push_dm(7, "and this?", files=[Upload("chart.png", PNG, "image/png")])
        await fake.wait_for(lambda: fake.bot_messages(channel), timeout=10)
        text, image = user_content(openai.requests[0])
        assert text["text"] == "and this?" and image["image_url"]["url"].startswith("data:image/png;base64,")


async def test_a_phone_photo_reaches_the_model_fitted_once_for_every_later_turn(tmp_path) -> None:
    # A 4000×3000 photo of megabytes went as it was, in this request and every later one of the
    # chat, past the 5 MB per image an Anthropic-compatible gateway accepts: every turn then failed.
    original = photo()
    async with (FakeOpenAIServer(api_key="sk-test", max_request_bytes=5 * 1024 * 1024) as openai,
                discord_chat(tmp_path, openai) as fake):
        channel = fake.dm_channel(7)
        answers = lambda: [m for m in fake.bot_messages(channel) if m.content == openai.default_text]  # noqa: E731
        fake.push_dm(7, "what is this?", files=[Upload("IMG_2041.jpg", original, "image/jpeg")])
        # the answer, not a progress card: fitting the photo can take seconds on a loaded machine
        await fake.wait_for(lambda: len(answers()) == 1, timeout=20)
        fake.push_dm(7, "and its colour?")
        await fake.wait_for(lambda: len(answers()) == 2, timeout=20)
    sent = [[part["image_url"]["url"] for m in request["messages"] if m["role"] == "user"
             and isinstance(m["content"], list) for part in m["content"] if part["type"] == "image_url"]
            for request in openai.requests]
    assert len(sent) == 2 and sent[0] == sent[1]  # the second turn re-sends the first's image, fitted once
    (url,) = sent[0]
    data = base64.b64decode(url.split(",", 1)[1])
    assert url.startswith("data:image/jpeg;base64,") and len(data) < 5 * 1024 * 1024 < len(original)
    assert Image.open(io.BytesIO(data)).size == (2048, 1536)
    (stored,) = (tmp_path / "state" / "workspace" / "attachments").glob("discord/*/IMG_2041.jpg")
    assert stored.read_bytes() == original  # the file tools still read the photo as it was sent
    with sqlite3.connect(tmp_path / "state" / "switchboard.db") as db:
        transcript = [row[0] for row in db.execute("SELECT message FROM gateway_transcript")]
    assert sum(len(message) for message in transcript) < len(url) + 10_000  # the fitted image, stored once
