"""A 429 with a ``Via`` header whose JSON body holds no ``retry_after`` of seconds, on a call discord.py's own
HTTP client makes (a channel post, an edit, a command's "thinking…"): a proxy's or Cloudflare's JSON, or one of
another shape. discord.py indexed it and crashed (``KeyError: 'retry_after'``), which the adapter reported as a
bad request: the part was dropped, never sent again. It is rate limited for what its ``Retry-After`` asks, else
a second (`platforms.discord_answers`). The real discord.py client against the loopback fake."""

from __future__ import annotations

import pytest

from platforms.base import Inbound, Outbound, RateLimited
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, running_discord

MESSAGES = "POST /channels/{channel_id}/messages"
EDIT = "PATCH /channels/{channel_id}/messages/{message_id}"
CALLBACK = "POST /interactions/{interaction_id}/{token}/callback"
USER = 42
JSON = {"Via": "1.1 proxy", "Content-Type": "application/json"}

fake = fake_discord()

BODIES = pytest.mark.parametrize(("headers", "text", "wait"), [
    ({**JSON, "Retry-After": "4"}, '{"message": "You are being rate limited."}', 4.0),
    (JSON, '{"message": "You are being rate limited."}', 1.0),  # nothing readable: a second
    (JSON, '{"retry_after": "2.5", "global": false}', 2.5),  # a wait as text: discord.py compared it (TypeError)
    (JSON, '["rate limited"]', 1.0),  # JSON of another shape
    (JSON, '{"retry_after": NaN}', 1.0),
], ids=["retry-after-header", "nothing", "text-wait", "list", "nan"])


running = running_discord()


@BODIES
async def test_a_post_refused_with_a_json_429_without_retry_after_is_rate_limited_and_sent_at_the_next_try(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], headers: dict[str, str], text: str,
        wait: float) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    part = Outbound(channel, None, "hello", idempotency_key="t1:0")
    fake.fail_next(MESSAGES, 429, headers=headers, text=text)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(part)
    assert caught.value.retry_after == pytest.approx(wait)
    assert [c.status for c in fake.calls_to(MESSAGES)] == [429]
    await adapter.send(part)  # the outbox's next try
    assert [m.content for m in fake.bot_messages(channel)] == ["hello"]


@BODIES
async def test_an_edit_refused_with_a_json_429_without_retry_after_is_rate_limited(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], headers: dict[str, str], text: str,
        wait: float) -> None:
    adapter, _ = running
    channel = fake.dm_channel(USER)
    sent = await adapter.send(Outbound(channel, None, "working", idempotency_key="t1:0"))
    fake.fail_next(EDIT, 429, headers=headers, text=text)
    with pytest.raises(RateLimited) as caught:
        await adapter.edit(channel, None, sent.message_id, "done")
    assert caught.value.retry_after == pytest.approx(wait)
    await adapter.edit(channel, None, sent.message_id, "done")
    assert [m.content for m in fake.bot_messages(channel)] == ["done"]


async def test_a_thinking_call_refused_with_a_json_429_without_retry_after_is_answered_in_the_channel(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]]) -> None:
    # Refused, not "Discord may have taken it": the crash was taken for a call given up on midway, and the
    # first answer waited for Discord's window to ask whether the interaction was acknowledged.
    adapter, got = running
    fake.fail_next(CALLBACK, 429, headers=JSON, text='{"message": "You are being rate limited."}')
    fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    [command] = got
    assert [c.status for c in fake.calls_to(CALLBACK)] == [429]
    sent = await adapter.send(Outbound(command.chat_id, None, "No subagents.", kind="command",
                                       reply_token=command.reply_token))
    assert [m.id for m in fake.bot_messages(command.chat_id)] == [sent.message_id]  # in the channel
    assert [c.route for c in fake.calls if c.route.startswith(("GET /webhooks", "POST /webhooks"))] == []
