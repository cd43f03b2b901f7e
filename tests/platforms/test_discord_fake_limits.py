"""FakeDiscord's opt-in rate limits: a bucket per channel route, Discord's ``X-RateLimit-*`` headers
on every answer, and the 429 Discord gives past a bucket or the global limit."""

from __future__ import annotations

import aiohttp

from agent.testing import FakeClock
from platforms.fakes._discord_limits import Window
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord

fake = fake_discord()


async def post(http: aiohttp.ClientSession, fake: FakeDiscord, channel: str, text: str) -> aiohttp.ClientResponse:
    async with http.post(f"{fake.api_base}/channels/{channel}/messages", json={"content": text},
                         headers={"Authorization": f"Bot {fake.token}"}) as response:
        await response.read()
        return response


async def test_a_channel_route_past_its_bucket_is_refused_as_discord_refuses_it(fake: FakeDiscord) -> None:
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(Window(2, 5.0), clock=clock)
    channel, other = fake.dm_channel(1), fake.dm_channel(2)
    async with aiohttp.ClientSession() as http:
        first = await post(http, fake, channel, "one")
        assert (first.headers["X-RateLimit-Limit"], first.headers["X-RateLimit-Remaining"]) == ("2", "1")
        assert first.headers["X-RateLimit-Reset-After"] == "5.000" and first.headers["X-RateLimit-Bucket"]
        clock.advance(1.0)
        assert (await post(http, fake, channel, "two")).headers["X-RateLimit-Remaining"] == "0"
        assert (await post(http, fake, other, "another channel")).status == 200  # a bucket of its own
        async with http.post(f"{fake.api_base}/channels/{channel}/messages", json={"content": "three"},
                             headers={"Authorization": f"Bot {fake.token}"}) as refused:
            body = await refused.json()
        assert refused.status == 429 and refused.headers["Via"] and refused.headers["X-RateLimit-Scope"] == "user"
        assert body == {"message": "You are being rate limited.", "retry_after": 4.0, "global": False, "code": 0}
        assert refused.headers["Retry-After"] == "4"
        assert [m.content for m in fake.bot_messages(channel)] == ["one", "two"]  # refused: nothing said
        clock.advance(4.0)
        assert (await post(http, fake, channel, "three")).headers["X-RateLimit-Remaining"] == "1"
    assert len(limits.calls) == 4 and [r.scope for r in limits.refused] == ["user"]


async def test_past_the_global_limit_every_route_is_refused_with_global(fake: FakeDiscord) -> None:
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(Window(5, 5.0), global_window=Window(2, 1.0), clock=clock)
    async with aiohttp.ClientSession() as http:
        for n in range(2):
            await post(http, fake, fake.dm_channel(n), "hi")
        refused = await post(http, fake, fake.dm_channel(9), "hi")
    assert refused.status == 429 and refused.headers["X-RateLimit-Global"] == "true"
    assert limits.refused[-1].scope == "global"
