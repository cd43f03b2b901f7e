"""A slash command's answer through its ``response_url``: a 429 is tried again through the URL, and any 2xx is an
answer shown (a 204 was taken for a refusal and posted again through ``chat.postEphemeral``: shown twice). The real
slack-sdk webhook client against the loopback fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound, Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_commands import inbound_of

WAIT = 5.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=10.0)
    await adapter.start(_ignore, [])
    yield adapter
    await adapter.stop()


def command(fake: FakeSlack, response_url: str | None = None) -> Inbound:
    return inbound_of("slack", {"channel_id": "C1", "user_id": "U1", "command": "/stop", "text": "",
                                "trigger_id": "R1.1", "response_url": response_url or f"{fake.base_url}/response/R1"})


def answer_to(inbound: Inbound) -> Outbound:
    return Outbound("C1", None, "stopped", kind="command", reply_token=inbound.reply_token)


def shown(fake: FakeSlack) -> list[tuple[str, str]]:
    return [(e["text"], e["via"]) for e in fake.ephemeral]


async def outbox_sends(slack: SlackAdapter, inbound: Inbound, tmp_path: Path) -> str | None:
    """The outbox's outcome for the answer: its message id once sent, None once it failed for good."""
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack})
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "stopped", kind="command", key="c1", reply_token=inbound.reply_token)
        return await outbox.wait_sent("c1:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()


async def test_a_429_is_retried_through_the_url(fake: FakeSlack, slack: SlackAdapter, tmp_path: Path) -> None:
    inbound = command(fake)
    fake.fail_next("response_url", "ratelimited", status=429, retry_after=0)
    with pytest.raises(RateLimited):
        await slack.send(answer_to(inbound))
    assert (await outbox_sends(slack, inbound, tmp_path) or "").startswith("ephemeral:")
    assert shown(fake) == [("stopped", "response_url")]


async def test_a_2xx_other_than_200_is_shown_not_posted_the_other_way(fake: FakeSlack, slack: SlackAdapter) -> None:
    inbound = command(fake)
    fake.fail_next("response_url", "", status=204, after=True)
    assert (await slack.send(answer_to(inbound))).message_id.startswith("ephemeral:")
    assert fake.calls_to("chat.postEphemeral") == []


async def _ignore(_inbound: Inbound) -> None:
    return None
