"""FakeSlack's opt-in rate limits, as slack-sdk's own client meets them: chat.postMessage one a second
per channel, the tiered methods per workspace, HTTP 429 with ``Retry-After`` and ``ratelimited``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.testing import FakeClock
from platforms.fakes._slack_limits import Window
from platforms.fakes.slack import FakeSlack


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def client(fake: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token=fake.bot_token, base_url=fake.api_base)


async def refused(call) -> SlackApiError:
    with pytest.raises(SlackApiError) as caught:
        await call
    return caught.value


async def test_off_by_default(fake: FakeSlack, client: AsyncWebClient) -> None:
    for n in range(5):
        await client.chat_postMessage(channel="C1", text=f"m{n}")
    assert fake.rate_limits is None and len(fake.texts("C1")) == 5


async def test_a_second_post_within_a_second_in_one_channel_is_refused_as_slack_refuses_it(
        fake: FakeSlack, client: AsyncWebClient) -> None:
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock)
    first = await client.chat_postMessage(channel="C1", text="one")
    await client.chat_postMessage(channel="C2", text="another channel")
    clock.advance(0.4)
    error = await refused(client.chat_postMessage(channel="C1", text="too soon", thread_ts=first["ts"]))  # threads too
    assert error.response.status_code == 429 and error.response["error"] == "ratelimited"
    assert error.response.headers["Retry-After"] == "1"
    assert fake.texts("C1", first["ts"]) == [] and [r.limit for r in limits.refused] == ["channel"]
    await client.chat_update(channel="C1", ts=first["ts"], text="edited")  # chat.update is counted apart
    clock.advance(0.6)
    await client.chat_postMessage(channel="C1", text="now")
    assert [c.method for c in limits.calls] == ["chat.postMessage"] * 2 + ["chat.update", "chat.postMessage"]


async def test_tiered_methods_are_counted_per_workspace_and_a_failed_call_is_not(
        fake: FakeSlack, client: AsyncWebClient) -> None:
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, tiers={"chat.update": Window(2, 60.0)})
    one = await client.chat_postMessage(channel="C1", text="one")
    clock.advance(1.0)
    two = await client.chat_postMessage(channel="C2", text="two")
    await refused(client.chat_update(channel="C1", ts="0.1", text="no such message"))  # message_not_found: not counted
    await client.chat_update(channel="C1", ts=one["ts"], text="one, edited")
    clock.advance(10.0)
    await client.chat_update(channel="C2", ts=two["ts"], text="two, edited")
    clock.advance(10.0)
    error = await refused(client.chat_update(channel="C2", ts=two["ts"], text="again"))
    assert (error.response.status_code, error.response.headers["Retry-After"]) == (429, "40")
    assert limits.refused[-1].limit == "tier" and fake.texts("C2") == ["two, edited"]
