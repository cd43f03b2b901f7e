"""A progress card whose post reached the platform but whose answer was lost, and which the outbox
then gave up on (`give_up_after`): it may be in the chat reading ``⏳``. Where the platform can be
asked (Slack by the post's key), it is found when the card next changes and is edited, not posted
again nor left ``⏳``; where it cannot (Telegram), the answer still reaches the chat."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.store import GatewayStore
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, started_slacks

WAIT = 5.0
CHAT = ("slack", "C1", None)

fake = fake_slack()
adapters = started_slacks()


def bot_posts(fake: FakeSlack) -> list[str]:
    return [m["text"] for m in fake.messages.get(("C1", None), []) if m.get("bot_id")]


async def card_given_up_on(fake: FakeSlack, outbox: Outbox, store: GatewayStore, run_id: str = "r1") -> ProgressMessage:
    """Slack takes the card's post but its answer is lost (a 500), and the lookup at the deadline meets
    the outage too (a 503): the card's send is given up on, though it is in the channel."""
    card = ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id=run_id)
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", "service_unavailable", status=503)
    card.publish("⏳ Thinking — 2 s", 0)
    assert await outbox.wait_sent("t:card:0", timeout=WAIT) is None
    assert store.outbox.message("t:card:0").status == "failed"
    assert bot_posts(fake) == ["⏳ Thinking — 2 s"]
    return card


@pytest.mark.parametrize("delete", [False, True], ids=["finalised", "deleted"])
async def test_a_card_given_up_on_after_its_answer_was_lost_is_found_and_finished(tmp_path, fake, adapters, delete):
    clock = FakeClock()  # the chat's pacing and the backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": await adapters()}, give_up_after={"slack": 0.1}, clock=clock)
    await outbox.start()
    card = await card_given_up_on(fake, outbox, store)
    card.finish("✓ Done in 6 s", delete=delete)  # the turn ends
    outbox.enqueue(*CHAT, "the answer", kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    await outbox.close()
    assert bot_posts(fake) == (["the answer"] if delete else ["✓ Done in 6 s", "the answer"])
    assert len(fake.calls_to("chat.postMessage")) == 2  # the card once, the answer once
    assert store.outbox.message("t:card:0").status == "sent"
    store.close()


async def test_a_card_given_up_on_after_its_answer_was_lost_is_edited_not_posted_again(tmp_path, fake, adapters):
    # The turn runs on: the card's next state edits the card found in the channel; posted anew, the
    # first would read ⏳ for good above it.
    clock = FakeClock()  # the chat's pacing and the backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": await adapters()}, give_up_after={"slack": 0.1}, clock=clock)
    await outbox.start()
    card = await card_given_up_on(fake, outbox, store)
    card.publish("⏳ Running search — 4 s", 1)
    assert await outbox.wait_sent("t:card-edit-r1-1:0", timeout=WAIT) is not None
    card.finish("✓ Done in 6 s", delete=False)
    assert await outbox.flush(timeout=WAIT)
    await outbox.close()
    assert bot_posts(fake) == ["✓ Done in 6 s"]
    assert len(fake.calls_to("chat.postMessage")) == 1
    store.close()


async def test_a_card_given_up_on_before_a_restart_is_found_and_finished_by_the_turn_run_again(
        tmp_path, fake, adapters):
    clock = FakeClock()  # the chat's pacing and the backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    first = Outbox(store.outbox, {"slack": await adapters()}, give_up_after={"slack": 0.1}, clock=clock)
    await first.start()
    await card_given_up_on(fake, first, store)
    await first.close()  # the process stops before the turn ends; the turn runs again after the restart
    again = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await again.start()
    ProgressMessage(again, CHAT, "t:card", turn_id="t", run_id="r2").finish("✓ Done in 6 s", delete=False)
    assert await again.flush(timeout=WAIT)
    await again.close()
    assert bot_posts(fake) == ["✓ Done in 6 s"]
    assert len(fake.calls_to("chat.postMessage")) == 1
    store.close()


async def test_a_card_refused_for_good_is_withdrawn_without_asking_slack(tmp_path, fake, adapters):
    # Refused with an answer (the bot is not in the channel), the card cannot be in the channel: nothing to look up.
    clock = FakeClock()  # the chat's pacing and the backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    card = ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id="r1")
    fake.fail_next("chat.postMessage", "not_in_channel")
    card.publish("⏳ Thinking — 2 s", 0)
    assert await outbox.wait_sent("t:card:0", timeout=WAIT) is None
    card.finish("✓ Done in 6 s", delete=False)
    outbox.enqueue(*CHAT, "the answer", kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    await outbox.close()
    assert bot_posts(fake) == ["the answer"]
    assert fake.calls_to("conversations.history") == []
    assert store.outbox.message("t:card:0").status == "dropped"
    store.close()


async def test_on_telegram_the_answer_still_reaches_the_chat_under_a_card_given_up_on(tmp_path):
    # Telegram cannot be asked whether the card went out: it stays as it was posted, and the answer
    # goes out all the same (no final line of a card the gateway cannot point at follows it).
    async with FakeTelegram() as fake:
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url)
        await adapter.start(Sink())
        clock = FakeClock()  # the chat's pacing and the backoffs pass at once
        store = GatewayStore(tmp_path / "state.db", clock=clock)
        outbox = Outbox(store.outbox, {"telegram": adapter}, give_up_after={"telegram": 0.1}, clock=clock)
        await outbox.start()
        try:
            chat = ("telegram", "42", None)
            card = ProgressMessage(outbox, chat, "t:card", turn_id="t", run_id="r1")
            fake.drop_next("sendMessage", after_processing=True)  # sent; the answer is lost
            for _ in range(20):
                fake.drop_next("sendMessage")  # and Telegram stays out of reach past the deadline
            card.publish("⏳ Thinking — 2 s", 0)
            assert await outbox.wait_sent("t:card:0", timeout=WAIT) is None
            fake._faults["sendmessage"].clear()  # Telegram is back
            card.finish("✓ Done in 6 s", delete=False)
            outbox.enqueue(*chat, "the answer", kind="reply", key="t:reply", turn_id="t")
            assert await outbox.flush(timeout=WAIT)
            assert [m["text"] for m in fake.messages.get("42", [])] == ["⏳ Thinking — 2 s", "the answer"]
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()
