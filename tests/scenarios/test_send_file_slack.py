"""``send_file`` on Slack, end to end: the real slack-sdk ``files_upload_v2`` against the fake
(``files.getUploadURLExternal``, the bytes to the upload URL, ``files.completeUploadExternal``),
shared in the chat's thread with the caption rendered as mrkdwn, retried when a step fails."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter

SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "**Q3** & totals"}}]}


@pytest.fixture
async def chat(tmp_path: Path) -> AsyncIterator:
    fake = await FakeSlack().start()
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\n")
    config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"slack": {"allow_all": True}})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": [[SEND, {"text": "done"}]]}))
    yield fake, gateway
    await gateway.stop(grace=0)
    await fake.close()


def shown(fake: FakeSlack, channel: str, thread: str) -> list[dict]:
    return [m for m in fake.messages.get((channel, thread), []) if m.get("bot_id") and m["text"] != "_working…_"]


async def test_a_file_is_shared_in_the_thread_with_its_caption_in_mrkdwn(chat):
    fake, gateway = chat
    mention = await fake.push_mention("C1", "U1", "the numbers?")
    thread = mention["event"]["ts"]
    await fake.wait_for(lambda: len(shown(fake, "C1", thread)) == 2)
    await settled(gateway)
    shared, reply = shown(fake, "C1", thread)
    assert shared["text"] == "*Q3* &amp; totals" and reply["text"] == "done"
    [file] = shared["files"]
    assert (file["name"], fake.files[file["id"]].data, file["user"]) == ("q3.csv", b"region,total\n", "UBOT")
    [ask] = fake.calls_to("files.getUploadURLExternal")
    assert (ask.params["filename"], ask.params["length"]) == ("q3.csv", "13")
    [complete] = fake.calls_to("files.completeUploadExternal")
    assert (complete.params["channel_id"], complete.params["thread_ts"]) == ("C1", thread)


async def test_an_upload_the_upload_url_refuses_with_a_5xx_is_tried_again_and_shared_once(chat):
    fake, gateway = chat
    fake.fail_next("upload", status=503)
    mention = await fake.push_mention("C1", "U1", "the numbers?")
    thread = mention["event"]["ts"]
    await fake.wait_for(lambda: len(shown(fake, "C1", thread)) == 2, timeout=10)
    await settled(gateway)
    assert len(fake.calls_to("upload")) == 2 and len(fake.calls_to("files.completeUploadExternal")) == 1
    assert [len(m.get("files", [])) for m in shown(fake, "C1", thread)] == [1, 0]


async def test_a_caption_of_only_invisible_characters_goes_as_no_comment(tmp_path: Path):
    # Zero-width space and joiner, a Braille blank: Slack showed them as an empty comment above the file.
    fake = await FakeSlack().start()
    (tmp_path / "state" / "workspace").mkdir(parents=True)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\n")
    config = make_config(tmp_path, agent={"toolsets": ["file"]}, platforms={"slack": {"allow_all": True}})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    send = {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "\u200b\u200d\u2800"}}]}
    gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": [[send, {"text": "done"}]]}))
    try:
        mention = await fake.push_mention("C1", "U1", "the numbers?")
        thread = mention["event"]["ts"]
        await fake.wait_for(lambda: len(shown(fake, "C1", thread)) == 2)
        await settled(gateway)
        shared, reply = shown(fake, "C1", thread)
        assert (len(shared["files"]), shared["text"], reply["text"]) == (1, "", "done")
        [complete] = fake.calls_to("files.completeUploadExternal")
        assert "initial_comment" not in complete.params
    finally:
        await gateway.stop(grace=0)
        await fake.close()


async def test_an_upload_slack_refuses_is_one_warning_not_two(chat, caplog):
    # The adapter warned of the upload URL's refusal, and the outbox of the file it failed.
    fake, gateway = chat
    caplog.set_level(logging.INFO)
    fake.fail_next("upload", status=403)
    mention = await fake.push_mention("C1", "U1", "the numbers?")
    thread = mention["event"]["ts"]
    note = "(The file `q3.csv` could not be sent here: the platform refused it.)"
    await fake.wait_for(lambda: [m["text"] for m in shown(fake, "C1", thread)] == [note, "done"], timeout=10)
    await settled(gateway)
    [warning] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "C1" in warning and "403" in warning, warning
