"""A 429 on an answer to a slash command (the edit of "thinking…", a follow-up) that discord.py's webhook
code cannot read: it has a ``Via`` header (a proxy in between adds one), so discord.py takes it for
Discord's own and reads ``retry_after`` from its body, which is text (a proxy's or Cloudflare's page) or
JSON without it. That crashed (TypeError: string indices must be integers; KeyError), and the answer was
refused as a bad request, never sent again. It is rate limited for what its ``Retry-After`` asks, else a
second (`platforms.discord_answers`). The real discord.py client against the loopback fake."""

from __future__ import annotations

import pytest

from platforms.base import Inbound, Outbound, RateLimited
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import fake_discord, running_discord

ORIGINAL = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
USER = 42
PAGE = "<html><body>error code: 1015</body></html>"

fake = fake_discord()


running = running_discord()


@pytest.mark.parametrize("route", [ORIGINAL, FOLLOW_UP], ids=["first-answer", "follow-up"])
@pytest.mark.parametrize(("headers", "text", "wait"), [
    ({"Via": "1.1 proxy", "Retry-After": "7"}, PAGE, 7.0),
    ({"Via": "1.1 proxy"}, PAGE, 1.0),  # nothing readable: a second
    ({"Via": "1.1 proxy", "Retry-After": "4", "Content-Type": "application/json"},
     '{"message": "You are being rate limited."}', 4.0),
    ({"Via": "1.1 proxy", "Content-Type": "application/json"}, '{"retry_after": "2.5", "global": false}', 2.5),
], ids=["text-retry-after", "text-nothing", "json-without-retry-after", "json-retry-after-text"])
async def test_an_answer_refused_with_an_unreadable_429_is_rate_limited_for_its_retry_after(
        fake: FakeDiscord, running: tuple[DiscordAdapter, list[Inbound]], route: str, headers: dict[str, str],
        text: str, wait: float) -> None:
    adapter, got = running
    fake.push_interaction("agents", USER)
    await fake.wait_for(lambda: got)
    [command] = got

    def part(i: int) -> Outbound:
        return Outbound(command.chat_id, None, f"part {i}", kind="command", idempotency_key=f"c1:{i}",
                        reply_token=command.reply_token)

    if route == FOLLOW_UP:
        await adapter.send(part(0))  # replaces "thinking…": the next part is a follow-up
    fake.fail_next(route, 429, headers=headers, text=text)
    with pytest.raises(RateLimited) as caught:
        await adapter.send(part(1))
    assert caught.value.retry_after == pytest.approx(wait)
    assert [c.status for c in fake.calls_to(route)][-1] == 429
    sent = await adapter.send(part(1))  # the outbox's next try
    assert [m.content for m in fake.bot_messages(command.chat_id) if m.id == sent.message_id] == ["part 1"]
