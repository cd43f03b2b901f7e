"""Two different refusals of one Telegram group within the outbox's 10 minutes: the bot first lacks the right to
send text, then is kicked. Each is its own WARNING: folded by the error's kind alone (both `Forbidden`), the kick
was counted as "more like" the missing right, and the operator read nothing of it for 10 minutes. The real outbox
and `TelegramAdapter` against `FakeTelegram`, on a fake clock."""

from __future__ import annotations

import logging

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

GROUP = "-1001234"
NO_RIGHTS = "Forbidden: not enough rights to send text messages to the chat"
KICKED = "Forbidden: bot was kicked from the supergroup chat"
WAIT = 5.0


async def test_a_second_different_refusal_of_the_chat_is_a_warning_of_its_own(tmp_path, caplog):
    caplog.set_level(logging.INFO)
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        outbox = Outbox(store.outbox, {"telegram": adapter}, clock=clock)
        await outbox.start()
        try:
            for turn, refusal in (("t1", NO_RIGHTS), ("t2", KICKED)):
                fake.fail_next("sendMessage", 403, description=refusal)
                outbox.enqueue("telegram", GROUP, None, "an answer", kind="reply", key=f"{turn}:reply", turn_id=turn)
                assert await outbox.flush(timeout=WAIT)
                clock.advance(60)  # well within the 10 minutes
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()
    assert len(fake.calls_to("sendMessage")) == 2
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"outbox: telegram chat {GROUP}: t1:reply:0 failed: {NO_RIGHTS}",
        f"outbox: telegram chat {GROUP}: t2:reply:0 failed: {KICKED}"]
