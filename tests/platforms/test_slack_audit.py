"""Slack adapter edges found in an audit: a thread the bot only tried to post in, one line per Slack
Connect file that cannot be described, a file to upload that cannot be read. Real slack-bolt /
slack-sdk against the loopback FakeSlack."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import BadRequest, Forbidden, Inbound, NetworkError, Outbound, OutboundFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


fake = fake_slack()


@pytest.fixture
async def started(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, Sink]]:
    adapter, sink = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                                 ping_interval=0.2), Sink()
    await adapter.start(sink)
    yield adapter, sink
    await adapter.stop()


async def taken_after(fake: FakeSlack, sink: Sink, channel: str, thread_ts: str, text: str) -> list[Inbound]:
    """What the sink holds once an unmentioned reply in the thread was handled (acknowledged: the
    adapter acks after handing a message over)."""
    await fake.push_message(channel, "U1", text, thread_ts=thread_ts)
    await fake.wait_for(lambda: fake.envelopes and all(e.acked for e in fake.envelopes.values()))
    return list(sink.inbound)


async def test_a_post_slack_refused_does_not_put_the_bot_in_the_thread(fake: FakeSlack, started) -> None:
    # A post refused (here the channel is archived) showed nothing there: the people talking in that
    # thread were not answered by the bot, so their next messages are not for it.
    adapter, sink = started
    parent = fake._store("C1", None, {"user": "U1", "text": "people talking"})["ts"]
    fake.fail_next("chat.postMessage", "is_archived")
    with pytest.raises(Forbidden):
        await adapter.send(Outbound(chat_id="C1", thread_id=parent, text="hello", idempotency_key="k1"))
    assert await taken_after(fake, sink, "C1", parent, "not for the bot") == []


async def test_an_upload_slack_refused_does_not_put_the_bot_in_the_thread(fake: FakeSlack, started,
                                                                          tmp_path) -> None:
    adapter, sink = started
    parent = fake._store("C1", None, {"user": "U1", "text": "people talking"})["ts"]
    path = tmp_path / "a.png"
    path.write_bytes(PNG)
    fake.fail_next("files.getUploadURLExternal", "not_in_channel")
    with pytest.raises(Forbidden):
        await adapter.send_file(Outbound(chat_id="C1", thread_id=parent, text=""),
                                OutboundFile(path=str(path), name="a.png", size=len(PNG)))
    assert await taken_after(fake, sink, "C1", parent, "not for the bot") == []


async def test_a_post_whose_answer_was_lost_still_puts_the_bot_in_the_thread(fake: FakeSlack, started) -> None:
    # Slack showed it, but the answer was lost: the outbox finds it (find_sent) rather than send it
    # again, so the thread must be the bot's from this try already.
    adapter, sink = started
    parent = fake._store("C1", None, {"user": "U1", "text": "people talking"})["ts"]
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    with pytest.raises(NetworkError):
        await adapter.send(Outbound(chat_id="C1", thread_id=parent, text="hello", idempotency_key="k1"))
    assert fake.texts("C1", parent) == ["hello"]
    assert [i.text for i in await taken_after(fake, sink, "C1", parent, "for the bot")] == ["for the bot"]


async def test_a_post_that_went_puts_the_bot_in_the_thread(fake: FakeSlack, started) -> None:
    adapter, sink = started
    parent = fake._store("C1", None, {"user": "U1", "text": "people talking"})["ts"]
    await adapter.send(Outbound(chat_id="C1", thread_id=parent, text="hello", idempotency_key="k1"))
    assert [i.text for i in await taken_after(fake, sink, "C1", parent, "for the bot")] == ["for the bot"]


async def test_a_slack_connect_file_files_info_refuses_is_one_warning_naming_the_scope(
        fake: FakeSlack, started, caplog: pytest.LogCaptureFixture) -> None:
    _, sink = started
    fake.files_read_scope = False
    with caplog.at_level(logging.INFO, logger="platforms.slack"):
        await fake.push_file("DU1", "U1", PNG, "chart.png", mimetype="image/png", connect=True)
        await fake.wait_for(lambda: sink.inbound)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "could not be described" in warnings[0] and "files:read" in warnings[0]


async def test_a_file_to_upload_that_cannot_be_read_is_a_bad_request_not_an_outage(fake: FakeSlack, started,
                                                                                  tmp_path) -> None:
    # A NetworkError is retried as Slack failing; a copy that is gone fails alike at every retry.
    adapter, _ = started
    with pytest.raises(BadRequest, match=r"cannot read a\.png to upload it: FileNotFoundError"):
        await adapter.send_file(Outbound(chat_id="C1", thread_id=None, text=""),
                                OutboundFile(path=str(tmp_path / "gone.png"), name="a.png", size=len(PNG)))
    assert not fake.calls_to("files.getUploadURLExternal")
