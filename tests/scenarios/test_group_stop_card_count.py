"""A group member's ``/stop`` that drops their own waiting messages and leaves the running turn going on (it was sent
before that turn's message, handed over late: `gateway.commands.STOP_SENT_BEFORE`): the turn's progress card stops
counting the dropped messages at once, as it does for a deletion, not at its next refresh minutes later. The real
aiogram client in `TelegramAdapter` against the loopback `FakeTelegram`, with the real `Gateway`."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.commands import STOP_SENT_BEFORE
from gateway.testing import make_config, start_gateway
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_turns import BOB, BOT, CAROL, GROUP, handled, texts

WAITING = "⋯ 1 more message waiting, answered after this"


def pushed(fake: FakeTelegram, text: str, who: dict, *, ago: int = 0) -> int:
    """``who`` wrote ``text`` in the group ``ago`` seconds before Telegram hands it over."""
    update = fake.message_update(GROUP, text, **who)
    update["message"]["date"] -= ago
    return fake.push_update(update)


async def test_a_members_late_stop_drops_their_waiting_message_from_the_cards_count_at_once(tmp_path):
    model = ScriptedModel({"parent": [
        [{"wait": "bob", "tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "answer for bob"}]]})
    async with FakeTelegram(username=BOT) as fake:
        # The card is refreshed every 180 s, or as something happens: a stop that drops a message is something.
        config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}},
                             display={"busy_input_mode": "queue", "progress": "card", "progress_delay": 0},
                             agent={"gateway_notify_interval": 180})
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter], model=model)
        try:
            await fake.wait_for(lambda: fake.calls_to("getUpdates"))
            pushed(fake, f"@{BOT} how big is the release?", BOB)
            await model.reached("bob")
            carols = pushed(fake, f"@{BOT} who is on call tonight?", CAROL, ago=120)  # handed over late
            await fake.wait_for(lambda: handled(gateway, carols))
            await fake.wait_for(lambda: len(texts(fake)) == 1 and texts(fake)[0].endswith(f"\n{WAITING}"))
            pushed(fake, f"/stop@{BOT}", CAROL, ago=60)  # sent before Bob's message: his turn goes on
            await fake.wait_for(lambda: len(texts(fake)) == 2)
            assert texts(fake)[1].startswith(STOP_SENT_BEFORE)
            await fake.wait_for(lambda: "waiting" not in texts(fake)[0], timeout=10)  # a group's edits are paced
            assert texts(fake)[0].startswith("⏳ ")
            assert gateway.store.inbox.settled("telegram", f"{fake.bot_user['id']}:{carols}")  # dropped
        finally:
            await gateway.stop(grace=0)
    assert not any("on call" in str(m["content"]) for request in model.requests for m in request.messages)
