"""In a group, an option's number answers the bot's question (``clarify``) with the bot's mention beside it, as a
message there often must be written to reach the bot: Telegram (`@bot 2`, `2 @bot`, any case) and a Slack thread
(`<@BOT> 2`). The real aiogram and slack-bolt clients inside their adapters against the loopback fakes, with the real
`Gateway` behind them. Before, Telegram handed the question `@bot 2`, which picked nothing: the model read the answer
as written instead of the option."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.asking_model import asking_parent
from tests.clock_steps import run_clock_until

BOT = "sb_question_mention_bot"
GROUP = -1002
CAROL = dict(chat_type="supergroup", user_id=6, username="carol")


@pytest.fixture
async def telegram(tmp_path) -> AsyncIterator[tuple[FakeTelegram, FakeClock]]:
    """A group's gateway whose model asks before it deploys, on a clock the test moves (a group's messages are
    paced three seconds apart)."""
    clock = FakeClock(autojump=False, start=time.time())
    display = {"progress": "off", "long_running_notifications": False}
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}}, display=display)
    async with FakeTelegram(username=BOT) as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": asking_parent}), clock=clock)
        try:
            yield fake, clock
        finally:
            await gateway.stop(grace=0)


def push(fake: FakeTelegram, clock: FakeClock, text: str, **kw) -> None:
    """Carol writes ``text`` in the group, dated by ``clock`` (else taken for written before the question)."""
    update = fake.message_update(GROUP, text, **CAROL, **kw)
    update["message"]["date"] = int(clock.time())
    fake.push_update(update)


def texts(fake: FakeTelegram) -> list[str]:
    return [m["text"] for m in fake.messages[str(GROUP)]]


async def answered(fake: FakeTelegram, clock: FakeClock, answer: str, **kw) -> str:
    """What the model deployed to, the question answered with ``answer``."""
    push(fake, clock, f"@{BOT} please deploy the app", **kw.pop("asking", {}))
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 1)
    assert texts(fake)[0].startswith("❓ Which environment?")
    push(fake, clock, answer, **kw)
    await run_clock_until(fake, clock, lambda: len(texts(fake)) == 2)
    return texts(fake)[1]


@pytest.mark.parametrize("answer", [f"@{BOT} 2", f"2 @{BOT}", f"@{BOT.upper()} 2", f"@{BOT}, 2", f"@{BOT}: (2)"])
async def test_a_number_beside_the_bots_mention_picks_that_option_on_telegram(telegram, answer):
    assert await answered(*telegram, answer) == "deploying to: [@carol] production"


async def test_a_mention_picked_from_the_member_list_is_words_of_its_own_passed_on_as_written(telegram):
    # A text_mention: words the user chose, linked to the bot; not its @username, and no address to pass over.
    fake, clock = telegram
    mention = {"type": "text_mention", "offset": 0, "length": len("Switchboard"), "user": fake.bot_user}
    assert await answered(fake, clock, "Switchboard 2", entities=[mention]) == "deploying to: [@carol] Switchboard 2"


async def test_a_number_no_option_has_beside_the_mention_is_passed_on_as_written(telegram):
    assert await answered(*telegram, f"@{BOT} 7") == f"deploying to: [@carol] @{BOT} 7"


async def test_a_mention_of_the_bot_elsewhere_in_the_answer_stays_where_it_was_written(telegram):
    assert await answered(*telegram, f"2 or 1, @{BOT} knows") == f"deploying to: [@carol] 2 or 1, @{BOT} knows"


async def test_the_bots_mention_with_a_number_in_slack_thread_picks_that_option(tmp_path):
    fake = await FakeSlack().start()
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, display={"progress": "off"})
    gateway: Gateway = await start_gateway(config, [adapter], model=ScriptedModel({"parent": asking_parent}))
    try:
        thread = (await fake.push_mention("C1", "U1", "please deploy the app"))["event"]["ts"]

        def said() -> list[str]:
            return [m.get("text", "") for m in fake.messages.get(("C1", thread), []) if m.get("bot_id")]

        await fake.wait_for(lambda: any("Which environment?" in text for text in said()))
        await fake.push_message("C1", "U1", f"<@{fake.bot_user_id}> 2", thread_ts=thread)
        await fake.wait_for(lambda: any(text.startswith("deploying to:") for text in said()))
        await settled(gateway)
        assert said()[-1] == "deploying to: [user U1] production"
    finally:
        await gateway.stop(grace=0)
        await fake.close()
