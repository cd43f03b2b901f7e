"""The gateway quoting what a user wrote back into the chat, end to end over the real SDKs and the
loopback fakes: the late note's quote of a message handled hours after it was sent shows the message
as written, not read as Markdown, and an address in it still opens where it says."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

import pytest

from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter

HOURS_AGO = 5 * 3600


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username="sb_quote_test_bot") as fake:
        yield fake


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    fake = await FakeSlack().start()
    yield fake
    await fake.close()


async def test_a_late_notes_quote_on_telegram_shows_the_message_as_typed(telegram, tmp_path):
    # Telegram sends a message's text plain: read as Markdown, the quote showed "2*3*4" as 2, an italic
    # 3 and 4, "&amp;" as "&", and made "[bill](https://evil.example)" a link in the bot's words.
    typed = "2*3*4 = 24 & [bill](https://evil.example) &amp; `x`?"
    update = telegram.message_update(42, typed)
    update["message"]["date"] -= HOURS_AGO
    telegram.push_update(update)
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    adapter = TelegramAdapter(telegram.token, api_base=telegram.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter], script={"parent": [[{"text": "yes"}]]})
    try:
        await telegram.wait_for(lambda: len(telegram.messages["42"]) == 2)
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    note, answer = telegram.messages["42"]
    assert note["text"] == f"⏱ Answering your message from 5 h ago: “{typed}”" and answer["text"] == "yes"
    assert not note.get("entities")


async def test_a_late_notes_quote_on_slack_links_an_address_without_the_closing_quote(slack, tmp_path):
    # The bare address ran on into the note's closing “”” (and a full stop before it): Slack was sent
    # <https://example.com/report.”>, a link to a page that is not there.
    channel = slack.dm_channel("U1")
    ts = f"{time.time() - HOURS_AGO:.6f}"
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}})
    adapter = SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                           ping_interval=0.2)
    gateway = await start_gateway(config, [adapter], script={"parent": [[{"text": "read it"}]]})
    try:
        await slack.push_event({"type": "message", "channel": channel, "user": "U1", "ts": ts, "event_ts": ts,
                                "text": "please read https://example.com/report_2.", "channel_type": "im",
                                "team": slack.team_id, "client_msg_id": str(uuid.uuid4())})
        await slack.wait_for(lambda: "read it" in slack.texts(channel))
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    note = next(t for t in slack.texts(channel) if t.startswith("⏱"))
    assert note.endswith(" ago: “please read <https://example.com/report_2>.”")
