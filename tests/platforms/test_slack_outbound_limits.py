"""What Slack refuses or quietly changes on the way out, over the real slack-sdk and the loopback FakeSlack:
a ``rate_limited`` answer (chat.postMessage documents it beside the 429's ``ratelimited``), chat.update's
``parse``, whose default (``client``, unlike chat.postMessage's) keeps an edit's links escaped, and a file
over the size the workspace's admins allow."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.outbox_part import describe
from gateway.part_notes import file_reason
from gateway.store import GatewayStore
from platforms.base import BadRequest, Outbound, OutboundFile, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, running_slack

fake = fake_slack()
slack = running_slack()


async def test_rate_limited_with_a_200_is_a_rate_limit_not_a_refusal(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "rate_limited")  # HTTP 200, as Slack answers its documented errors
    with pytest.raises(RateLimited) as caught:
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="the answer"))
    assert caught.value.retry_after == 1.0 and caught.value.chat_id == "C1"


async def test_an_answer_slack_rate_limits_so_still_arrives(fake: FakeSlack, slack: SlackAdapter, tmp_path) -> None:
    # Taken for a refusal (BadRequest), the outbox failed the answer for good: the chat never read it.
    fake.fail_next("chat.postMessage", "rate_limited")
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "the answer", kind="completion", key="a1")
        assert await outbox.wait_sent("a1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["the answer"] and len(fake.calls_to("chat.postMessage")) == 2


async def test_an_edit_keeps_its_links(fake: FakeSlack, slack: SlackAdapter) -> None:
    sent = await slack.send(Outbound(chat_id="C1", thread_id="1.5", text="⏳ reading [the docs](https://x.org/a)"))
    await slack.edit("C1", "1.5", sent.message_id, "✓ read [the docs](https://x.org/a) and https://x.org/b")
    assert fake.texts("C1", "1.5") == ["✓ read <https://x.org/a|the docs> and <https://x.org/b>"]


async def test_the_fake_reads_an_edit_as_slack_does(fake: FakeSlack) -> None:
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_base)
    posted = await client.chat_postMessage(channel="C1", text="<https://x.org|x>")
    await client.chat_update(channel="C1", ts=posted["ts"], text="<https://x.org|y>")
    assert fake.texts("C1") == ["&lt;https://x.org|y&gt;"]  # parse "client", chat.update's default
    await client.chat_update(channel="C1", ts=posted["ts"], text="<https://x.org|z>", parse="none")
    assert fake.texts("C1") == ["<https://x.org|z>"]
    for text, error in (("", "no_text"), ("x" * 40_001, "msg_too_long")):
        with pytest.raises(SlackApiError) as caught:  # api_call: slack-sdk warns of a missing text itself
            await client.api_call("chat.update", json={"channel": "C1", "ts": posted["ts"], "text": text})
        assert caught.value.response["error"] == error
    assert fake.texts("C1") == ["<https://x.org|z>"]


async def test_a_file_over_the_workspaces_limit_is_noted_as_too_large(fake: FakeSlack, slack: SlackAdapter,
                                                                      tmp_path) -> None:
    # Said as "the platform refused it", the user could not tell what to do about it.
    path = tmp_path / "big.zip"
    path.write_bytes(b"zip" * 100)
    fake.fail_next("files.getUploadURLExternal", "file_upload_size_restricted")
    with pytest.raises(BadRequest) as caught:
        await slack.send_file(Outbound(chat_id="C1", thread_id=None, text=""),
                              OutboundFile(str(path), "big.zip", path.stat().st_size))
    assert file_reason(describe(caught.value), gave_up=False) == "it is larger than this chat takes"
