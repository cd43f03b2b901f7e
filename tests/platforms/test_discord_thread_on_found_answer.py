"""An answer whose post lost its answer (Discord's 2xx unreadable) is found by its nonce (`platforms.discord_sent`),
its id learned by the outbox only then: a thread a member opened on it meanwhile was asked of the store, which named
no such answer yet, and kept as a thread of no answer's: its messages until then, for the bot, were never heard. The
answer joins the bot's answers as its post is heard over the gateway (`discord_opened.Answers.posted`), the store not
asked. Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`, with the real outbox and store on a
fake clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.sink import Sink
from tests.platforms.test_discord_thread_on_stored_answer import BOB, CHANNEL, GUILD, heard

MESSAGES = "POST /channels/{channel_id}/messages"
JSON = {"Content-Type": "application/json"}

fake = fake_discord()


async def test_a_thread_opened_on_an_answer_before_the_outbox_learned_its_id_is_heard(
        fake: FakeDiscord, tmp_path: Path) -> None:
    clock = FakeClock(autojump=False)  # the outbox's back-off holds the lookup while the thread is opened
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    asked: list[str] = []

    def sent_answer(message_id: str) -> bool:
        asked.append(message_id)
        return store.outbox.sent_answer("discord", message_id)

    sink = Sink()
    adapter = adapter_for(fake)
    adapter.bind_answers(sent_answer)
    await adapter.start(sink)
    outbox = Outbox(store.outbox, {"discord": adapter}, clock=clock)
    await outbox.start()
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True)
        await fake.wait_for(lambda: sink.inbound)
        fake.fail_next(MESSAGES, 200, headers=JSON, text="{}", after=True)  # posted, its answer unreadable
        outbox.enqueue("discord", str(CHANNEL), None, "about 3 MB", kind="reply", key="t1")
        [answer] = await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
        await fake.wait_for(lambda: adapter._posted.get(answer.nonce))  # its MESSAGE_CREATE came
        await clock.until_sleeping()  # the outbox backs off before it looks the part up
        assert await heard(fake, sink, answer.id, "and compressed?") == ["and compressed?"]  # was [], not heard
        assert asked == []
        sending = asyncio.ensure_future(outbox.wait_sent("t1:0", timeout=5.0))
        while not sending.done():  # the back-off's end: the part is looked up, found by its nonce
            clock.advance(1.0)
            await asyncio.sleep(0.005)
        assert await sending == answer.id
        assert await heard(fake, sink, answer.id, "and zipped?") == ["and zipped?"]  # was []: ignored for good
    finally:
        await outbox.close()
        await adapter.stop()
        await join_heartbeat_threads()
        store.close()
