"""A background delegation's card across a restart its children outlive (on Temporal they run on their
workers while the gateway is down): the next start follows them on the card the stopped process left, the same
message edited, never a second card."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.progress_card import DELEGATE, ProgressCard
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_ledger import BACKGROUND, parent
from tests.gateway.test_ledger_strays import temporal_worker
from tests.polling import until


async def test_a_card_whose_children_outlived_the_restart_follows_them_again(tmp_path, gateways, temporal_server):
    # Before, `resume` only waited for such children's results: the card read `0 of 2 done — 0 s` until the
    # last of them finished, however long that took and however many finished meanwhile.
    leaves = ScriptedModel({"leaf": lambda r: {"wait": r.metadata["goal"], "text": f"found {r.metadata['goal']}"}})
    try:
        async with temporal_worker(temporal_server, leaves) as lifecycle:
            display = {**BACKGROUND["display"], "progress": "card", "progress_delay": 0}
            config = make_config(tmp_path, display=display, lifecycle=lifecycle,
                                 agent={"gateway_notify_interval": 180})
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent()}))
            await chat.say("please delegate")
            await until(lambda: len(leaves.requests) == 2, 15)  # both children are in their model calls
            # The delegation's card: after the acknowledgement (the turn's own, finished, may come before it).
            await chat.wait_for(lambda: "notice" in chat.kinds()[chat.kinds().index("reply"):] if "reply" in
                                chat.kinds() else False, timeout=15)
            card = chat.messages[chat.kinds().index("reply") + 1]
            await gateway.stop(grace=0)  # the children run on
            left = card.text
            assert left.startswith("⏳ Waiting for subagents: 0 of 2 done")

            chat2 = RecordingAdapter()
            chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
            gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent()}))
            leaves.release("alpha")
            await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 1 of 2 done"), timeout=15)
            assert "✓ alpha — succeeded" in card.text and "▸ beta — running" in card.text
            leaves.release("beta")
            await chat2.wait_for(lambda: card.text.startswith("✓ Done in"), timeout=15)
            await chat2.wait_for(lambda: "completion" in chat2.kinds(), timeout=15)
            await settled(gateway2, timeout=15)
            # The card edited, never a second one (each turn's own card, done at once, says no subagents).
            assert [m for m in chat2.messages if "subagents" in " ".join([m.text, *m.edits])] == [card]
            assert chat2.texts("completion") == ["results: alpha"]
            assert card.text.startswith("✓ Done in") and card.text.endswith(" · 2 subagents")
    finally:
        leaves.release("alpha")
        leaves.release("beta")


async def test_a_followed_cards_headline_counts_from_the_dispatch():
    # Counted from the card's own start, it would read as the work having begun anew at the restart.
    clock, published = FakeClock(autojump=False), []
    card = ProgressCard(delay=3, heartbeat=180, mode=True, clock=clock, publish=lambda text, n: published.append(text),
                        children=lambda: (), counts=lambda: (0, 2), ran=65.0)
    card.tool_started(DELEGATE)
    card.start()
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await until(lambda: published)
    card.disarm()
    assert published == ["⏳ Waiting for subagents: 0 of 2 done — 1 min 8 s"]
