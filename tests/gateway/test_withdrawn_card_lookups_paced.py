"""The lookups a restart makes for cards withdrawn after a crash keep Slack's pace for reads of a
channel's history, as every other lookup does (`gateway.pacing`): the real SlackAdapter against the
loopback FakeSlack, on a fake clock."""

from __future__ import annotations

import asyncio

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.store import GatewayStore
from platforms.fakes._slack_limits import Window
from tests.clock_steps import run_clock_until
from tests.platforms.slack_client import bot_posts, fake_slack, started_slacks

WAIT = 5.0

fake = fake_slack()
adapters = started_slacks()


def card(outbox: Outbox, channel: str, run_id: str) -> ProgressMessage:
    """The progress card of the turn in ``channel``, as the run ``run_id`` writes it."""
    return ProgressMessage(outbox, ("slack", channel, None), f"card-{channel}", turn_id=f"t-{channel}", run_id=run_id)


async def test_cards_withdrawn_after_a_crash_are_looked_up_at_slacks_pace(tmp_path, fake, adapters):
    # Each withdrawn card a dead process was posting is looked up once after the restart; those lookups
    # skipped the per-workspace spacing of reads, so four channels asked Slack at once and drew 429s.
    # Slack's 50 reads a minute, scaled down to 2 in 2 s (the outbox reads every 1.2 s).
    clock, path = FakeClock(autojump=False), tmp_path / "state.db"
    channels = [f"C{n}" for n in range(4)]
    store = GatewayStore(path, clock=clock)
    dead_adapter = await adapters()
    dead = Outbox(store.outbox, {"slack": dead_adapter}, clock=clock)
    await dead.start()
    released = fake.hold("chat.postMessage")
    for channel in channels:
        card(dead, channel, "r1").publish("⏳ Working…", 0)
    await fake.wait_for(lambda: len(fake.calls_to("chat.postMessage")) == len(channels))
    await dead.close()  # the process dies with every card's post in flight
    released.set()  # Slack posts them all the same
    await fake.wait_for(lambda: all(bot_posts(fake, c) for c in channels))
    await dead_adapter.stop()
    store.close()

    limits = fake.enforce_rate_limits(clock, tiers={"conversations.history": Window(2, 2.0)})
    store = GatewayStore(path, clock=clock)
    adapter = await adapters()
    again = Outbox(store.outbox, {"slack": adapter}, clock=clock)
    for channel in channels:  # each turn, run again, ends before its card's turn to be sent
        card(again, channel, "r2").finish("✓ Done", delete=True)
    await again.start()
    flushed = asyncio.ensure_future(again.flush(timeout=None))
    await run_clock_until(fake, clock, flushed.done, timeout=60)
    await again.close()
    await adapter.stop()
    store.close()
    assert [r for r in limits.refused if r.method == "conversations.history"] == []
    assert [bot_posts(fake, c) for c in channels] == [[]] * len(channels)  # each found and deleted


async def test_a_withdrawn_cards_lookup_waits_out_a_refused_token_and_then_finishes_the_card(tmp_path, fake,
                                                                                            adapters):
    # A card whose post lost its answer is withdrawn while Slack refuses the bot's token: its lookup went to
    # Slack with the refused token at once, whatever the hold, and the card was left reading ⏳ for good.
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = await adapters()
    outbox = Outbox(store.outbox, {"slack": adapter}, clock=clock)
    await outbox.start()
    progress = card(outbox, "C1", "r1")
    fake.fail_next("chat.postMessage", after=True, drop=True)  # posted; the connection drops before the answer
    progress.publish("⏳ Working…", 0)
    await fake.wait_for(lambda: bot_posts(fake, "C1"))
    fake.bot_token_revoked = True
    lookups = lambda: len(fake.calls_to("conversations.history"))  # noqa: E731
    await run_clock_until(fake, clock, lookups, WAIT)  # its retry looks first, and is refused: the platform is held
    progress.finish("✓ Done", delete=True)  # the turn ends meanwhile
    await run_clock_until(fake, clock, lambda: lookups() >= 2, WAIT)  # it asks again, the token still refused
    fake.bot_token_revoked = False  # the operator fixes it
    flushed = asyncio.ensure_future(outbox.flush(timeout=None))
    await run_clock_until(fake, clock, flushed.done, WAIT)
    await outbox.close()
    await adapter.stop()
    store.close()
    assert bot_posts(fake, "C1") == [] and len(fake.calls_to("chat.postMessage")) == 1  # found and deleted
