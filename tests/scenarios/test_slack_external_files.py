"""A Google Drive (or Dropbox, OneDrive…) file shared on Slack is a link Slack lists as a file (``mode: external``),
with no copy on Slack to download. It was dropped without a word: the user, who shared it to ask about it, got an
answer as if nothing came with the words. Now the user is told, and the model knows it did not get the file."""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import make_config, settled, start_gateway
from platforms import slack_files
from platforms.base import Attachment, NotFound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()


def drive_file(file_id: str = "F0DRIVE01") -> dict[str, Any]:
    """How Slack lists a Google Drive file someone shared: its ``url_private`` is Google's, not Slack's."""
    return {"id": file_id, "name": "Q3 budget", "title": "Q3 budget",
            "mimetype": "application/vnd.google-apps.spreadsheet", "filetype": "gsheet", "mode": "external",
            "is_external": True, "external_type": "gdrive",
            "url_private": "https://docs.google.com/spreadsheets/d/abc/edit", "user": "U1"}


async def share(fake: FakeSlack, text: str, *files: dict[str, Any]) -> None:
    channel, ts = fake.dm_channel("U1"), f"{time.time():.6f}"  # now: an old one is answered as late
    await fake.push_event({"type": "message", "subtype": "file_share", "channel": channel, "user": "U1",
                           "text": text, "files": list(files), "upload": False, "ts": ts, "event_ts": ts,
                           "channel_type": "im", "team": fake.team_id})


async def test_an_external_file_arrives_and_its_download_is_refused_without_asking_slack(fake: FakeSlack) -> None:
    adapter, sink = slack_on(fake, max_attachment_bytes=1000), Sink()
    await adapter.start(sink)
    try:
        await share(fake, "what's in this?", drive_file())
        await fake.wait_for(lambda: sink.inbound)
        (linked,) = sink.inbound[0].attachments
        assert (linked.kind, linked.name) == ("document", "Q3 budget")
        with pytest.raises(NotFound, match="kept outside Slack"):
            await adapter.download(linked)
        assert fake.calls_to("files.info") == [] and fake.downloads == []
    finally:
        await adapter.stop()


async def test_a_file_files_info_says_is_external_is_never_fetched_with_the_bot_token() -> None:
    # Its url_private is Google's: a GET of it with the bot token would hand the token to another company.
    fetched: list[str] = []

    async def info(file_id: str) -> dict:
        fetched.append(file_id)
        return {"file": drive_file(file_id)}

    async with aiohttp.ClientSession() as session:
        with pytest.raises(NotFound, match="kept outside Slack"):
            await slack_files.download(info, session, "xoxb-secret", Attachment("document", "Q3 budget", None, None,
                                                                                "F0DRIVE01"), 1000)
    assert fetched == ["F0DRIVE01"]


def answering_model(request: ModelRequest) -> dict:
    return {"text": f"I was sent: {request.messages[-1]['content']}"}


async def test_the_user_is_told_the_external_file_did_not_reach_the_model(tmp_path) -> None:
    async with FakeSlack() as fake:
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": answering_model}))
        try:
            channel = fake.dm_channel("U1")
            await share(fake, "summarise this", drive_file())
            await fake.wait_for(lambda: len(fake.texts(channel)) >= 2, timeout=10)
            await settled(gateway)
            note, answer = fake.texts(channel)
            assert "Q3 budget" in note and "upload the file itself" in note
            assert answer.startswith("I was sent: summarise this")
            assert "did not reach you: Q3 budget (" in answer
        finally:
            await gateway.stop(grace=0)


async def test_an_external_file_shared_without_words_is_answered_by_its_note(tmp_path) -> None:
    model = ScriptedModel({"parent": answering_model})
    async with FakeSlack() as fake:
        config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            channel = fake.dm_channel("U1")
            await share(fake, "", drive_file())
            await fake.wait_for(lambda: fake.texts(channel), timeout=10)
            await settled(gateway)
            (note,) = fake.texts(channel)
            assert "Q3 budget" in note and "upload the file itself" in note
        finally:
            await gateway.stop(grace=0)
