"""A long-running notice the journal refused (a full disk) is not counted as sent: the next one is
sent as the first, not as an edit of a message that never was. Counted, every later notice went out as
a new message that no turn end finalised, and where the platform cannot edit (the webhook: only a
turn's first notice goes out) the turn got no notice at all."""

from __future__ import annotations

import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing.clock import FakeClock
from gateway.notices import Notifier
from gateway.testing import RecordingAdapter, make_config, settled


async def test_a_notice_the_journal_refused_is_sent_as_the_first_at_the_next_interval():
    clock = FakeClock(autojump=False)
    calls: list[tuple[str, int]] = []

    def send(text: str, n: int) -> None:
        calls.append((text, n))
        if len(calls) == 1:
            raise sqlite3.OperationalError("database or disk is full")

    notifier = Notifier(interval=180, mode="generic", send=send, detail=lambda: None, clock=clock)
    notifier.start()
    try:
        for _ in range(3):
            await clock.until_sleeping(lasting=180)
            clock.advance(180)
        await clock.until_sleeping(lasting=180)
    finally:
        notifier.disarm()
    assert calls == [("⏳ Still working — 3 min", 0), ("⏳ Still working — 6 min", 0),
                     ("⏳ Still working — 9 min", 1)]
    assert notifier.sent == 2


async def test_a_notice_after_a_refused_first_one_is_finalised_when_the_turn_ends(tmp_path, gateways, monkeypatch):
    # Before, the refused first notice counted as sent: each later one was an edit of a message never journaled,
    # sent as a new message of its own, and none was finalised (the notice "never existed"): the chat kept
    # "⏳ Working — 6 min" bubbles for a turn that was over.
    model = ScriptedModel({"parent": [[{"wait": "answer", "text": "all done"}]]})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, display={"progress": "off"}, agent={"gateway_notify_interval": 180})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    enqueue, refused = gateway.outbox.enqueue, []

    def full_disk_once(*args, key: str, **kwargs):
        if key.endswith(":notice") and not refused:
            refused.append(key)
            raise sqlite3.OperationalError("database or disk is full")
        return enqueue(*args, key=key, **kwargs)

    monkeypatch.setattr(gateway.outbox, "enqueue", full_disk_once)
    await chat.say("take your time")
    await model.reached("answer")
    for _ in range(3):
        await clock.until_sleeping(lasting=180)
        clock.advance(180)
    await chat.wait_for(lambda: len(chat.messages) > 1 or chat.messages and chat.messages[0].edits)  # two notices
    assert refused
    model.release("answer")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply"]
    assert chat.messages[0].text == "✓ Done in 9 min"
