"""A 429 from Cloudflare, not Discord (no ``Via`` header, a page that is no JSON, no ``Retry-After``): a ban of the
bot's address for too many refused calls, which lasts about an hour (`platforms.discord_errors.BAN_RETRY_AFTER`).
The real discord.py client against `FakeDiscord`."""

from __future__ import annotations

import pytest

from platforms.base import Inbound, Outbound, RateLimited
from platforms.discord import DiscordAdapter
from platforms.discord_errors import BAN_RETRY_AFTER
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, running_discord

MESSAGES = "POST /channels/{channel_id}/messages"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
PAGE = "<!DOCTYPE html><html><title>Access denied | discord.com used Cloudflare to restrict access</title>" \
       "<body>error code: 1015</body></html>"
USER = 42

fake = fake_discord()


running = running_discord()


@pytest.mark.parametrize("headers", [{"Content-Type": "text/html"}, {"Content-Type": "text/html", "Via": ""}],
                         ids=["no-via", "empty-via"])
async def test_a_post_refused_by_a_cloudflare_ban_waits_minutes_not_a_second(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], headers: dict[str, str]) -> None:
    # Taken for a second's wait, every chat's reply went again every second, each one more refused call that
    # kept the ban up.
    adapter, _ = running
    channel = fake.dm_channel(USER)
    fake.fail_next(MESSAGES, 429, headers=headers, text=PAGE)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(Outbound(channel, None, "hello", idempotency_key="t1:0"))
    assert caught.value.retry_after == BAN_RETRY_AFTER >= 60
    assert [c.status for c in fake.calls_to(MESSAGES)] == [429]


async def test_a_page_from_a_proxy_in_between_still_waits_a_second(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    adapter, _ = running
    fake.fail_next(MESSAGES, 429, headers={"Content-Type": "text/html", "Via": "1.1 proxy"}, text=PAGE)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(Outbound(fake.dm_channel(USER), None, "hello", idempotency_key="t1:0"))
    assert caught.value.retry_after == 1.0


async def test_a_command_answer_refused_by_a_cloudflare_ban_waits_minutes_too(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    adapter, got = running
    fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    [command] = got

    def part(i: int) -> Outbound:
        return Outbound(command.chat_id, None, f"part {i}", kind="command", idempotency_key=f"c1:{i}",
                        reply_token=command.reply_token)

    await adapter.send(part(0))  # replaces "thinking…": the next part is a follow-up
    fake.fail_next(FOLLOW_UP, 429, headers={"Content-Type": "text/html"}, text=PAGE)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(part(1))
    assert caught.value.retry_after == BAN_RETRY_AFTER
