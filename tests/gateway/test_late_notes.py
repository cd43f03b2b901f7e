"""Late replies say so: a message sent long after it was written is preceded by a note of its age."""

from __future__ import annotations

import random

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.host import STATE_DB
from gateway.late_notes import age_text, note_text, picked_up_text
from gateway.outbox import Outbox
from gateway.splitting import split_text
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from platforms.base import Inbound, NetworkError
from tests.gateway.observing import FailingAdapter
from tests.gateway.test_outbox import WAIT, FakeAdapter

LATE_AFTER = 600.0


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "1 s"), (59.9, "59 s"), (60, "1 min"), (600, "10 min"), (3599, "59 min"), (3600, "1 h"), (7500, "2 h 5 min"),
    (86_400, "1 day"), (90_000, "1 day 1 h"), (3 * 86_400 + 4 * 3600 + 59, "3 days 4 h"),
])
def test_an_age_reads_as_precisely_as_it_needs(seconds, text) -> None:
    assert age_text(seconds) == text


async def test_a_message_sent_after_a_long_outage_is_preceded_by_its_age_once_across_restarts(tmp_path) -> None:
    clock = FakeClock()
    path = tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    down = Outbox(store.outbox, {"fake": FakeAdapter(clock=clock, text_limit=20)}, clock=clock, late_after=LATE_AFTER)
    down.enqueue("fake", "c1", None, "the answer, in two parts", kind="reply", key="t1:reply", turn_id="t1")
    down.enqueue("fake", "c1", None, "⏳ still working", kind="notice", key="t1:notice", turn_id="t1")
    down.enqueue("fake", "c2", None, "just in time", kind="reply", key="t2:reply", turn_id="t2")
    store.close()  # the gateway was down before it sent any of them
    clock.advance(7500)

    store = GatewayStore(path, clock=clock)
    adapter = FakeAdapter(clock=clock, text_limit=20)
    up = Outbox(store.outbox, {"fake": adapter}, clock=clock, late_after=LATE_AFTER)
    # A message journaled now, in the same chat, is not late.
    up.enqueue("fake", "c2", None, "fresh", kind="reply", key="t3:reply", turn_id="t3")
    await up.start()
    assert await up.flush(timeout=WAIT)
    assert len(split_text("the answer, in two parts", 20)) == 2  # one note, before the first part
    assert adapter.texts("c1") == [note_text(7500), *split_text("the answer, in two parts", 20), "⏳ still working"]
    assert adapter.texts("c2") == [note_text(7500), "just in time", "fresh"]
    assert note_text(7500) == "⏱ Delivered late: what follows was written 2 h 5 min ago."
    assert store.outbox.message("t1:reply:0:late").kind == "reply"
    await up.close()
    store.close()

    store = GatewayStore(path, clock=clock)  # a restart sends nothing again
    again = FakeAdapter(clock=clock, text_limit=20)
    outbox = Outbox(store.outbox, {"fake": again}, clock=clock, late_after=LATE_AFTER)
    await outbox.start()
    assert outbox.enqueue("fake", "c1", None, "the answer, in two parts", kind="reply", key="t1:reply",
                          turn_id="t1") == ["t1:reply:0", "t1:reply:1"]
    assert await outbox.flush(timeout=WAIT)
    assert again.calls == []
    await outbox.close()
    store.close()


async def test_a_message_that_turns_late_while_the_platform_is_down_gets_its_note_before_it(tmp_path) -> None:
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = FakeAdapter(clock=clock)
    adapter.fail_next(*[NetworkError("unreachable")] * 20)  # backs off 0.5 s doubling to 60 s: ~14 min in all
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock, late_after=LATE_AFTER, rng=random.Random(7))
    await outbox.start()
    outbox.enqueue("fake", "c1", None, "at last", kind="reply", key="k")
    assert await outbox.wait_sent("k:0", timeout=WAIT) is not None
    [(note, _, noted_at), (reply, _, sent_at)] = adapter.sent
    assert note.text.startswith("⏱ Delivered late: what follows was written ") and reply.text == "at last"
    assert noted_at - store.outbox.message("k:0").created_at >= LATE_AFTER
    await outbox.close()
    store.close()


@pytest.mark.parametrize("case", ["notes off", "webhook"])
async def test_no_note_when_notes_are_off_or_a_program_reads_the_deliveries(tmp_path, case) -> None:
    clock = FakeClock()
    name = "webhook" if case == "webhook" else "fake"
    path = tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    Outbox(store.outbox, {name: FakeAdapter(name, clock=clock)}, clock=clock).enqueue(
        name, "c1", None, "late", kind="reply", key="k")
    clock.advance(86_400)
    adapter = FakeAdapter(name, clock=clock)
    outbox = Outbox(store.outbox, {name: adapter}, clock=clock, late_after=0.0 if case == "notes off" else LATE_AFTER)
    await outbox.start()
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["late"]
    await outbox.close()
    store.close()


async def test_the_gateway_notes_a_reply_the_platform_took_a_while_to_accept(tmp_path, gateways) -> None:
    # Real time, kept short: the platform refuses twice (backing off 0.5 s, then 1 s, each ±25 %).
    chat = FailingAdapter()
    chat.fail_next(NetworkError("unreachable"), NetworkError("unreachable"))
    config = make_config(tmp_path, delivery={"late_after": 1}, agent={"gateway_notify_interval": 0})
    await gateways(config, [chat], script={"parent": [[{"text": "hi"}]]})
    await chat.say("hello")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    assert chat.texts() == ["⏱ Delivered late: what follows was written 1 s ago.", "hi"]


@pytest.mark.parametrize(("text", "quoted"), [
    ("what is the weather in Lisbon?\nand tomorrow?", ": “what is the weather in Lisbon?”"),
    ("x" * 80, ": “" + "x" * 59 + "…”"),
    ("🇵🇹" * 40, ": “" + "🇵🇹" * 29 + "…”"),  # a flag is two code points: never halved
    ("x " * 40, ": “" + "x " * 29 + "x…”"),
    ("", "."),
])
def test_a_late_message_is_quoted_by_its_first_line(text, quoted) -> None:
    assert picked_up_text(18_000, text) == "⏱ Answering your message from 5 h ago" + quoted


async def test_a_message_that_came_while_the_gateway_was_down_is_answered_with_a_note_once(tmp_path) -> None:
    """The gateway recorded the message and died before its turn ran; it starts again five hours
    later, runs the turn, and says first how old the message is. A second restart repeats nothing."""
    clock = FakeClock(autojump=False)
    config = make_config(tmp_path, agent={"gateway_notify_interval": 0})
    config.state_dir.mkdir(parents=True)
    store = GatewayStore(config.state_dir / STATE_DB, clock=clock)
    store.inbox.accept(Inbound("chat", "c1", None, "u1", "ann", "what is the weather in Lisbon?", "ev-1"), "t-1")
    store.close()
    clock.advance(5 * 3600)
    chat = RecordingAdapter()
    gateway = await start_gateway(config, [chat], clock=clock, script={"parent": [[{"text": "sunny"}]]})
    try:
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert chat.texts() == ["⏱ Answering your message from 5 h ago: “what is the weather in Lisbon?”", "sunny"]

    again = RecordingAdapter()
    gateway = await start_gateway(config, [again], clock=clock, script={"parent": []})
    try:
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert again.texts() == []


async def test_a_message_answered_at_once_gets_no_note(tmp_path, gateways) -> None:
    chat = RecordingAdapter()
    # Time stands still: the turn awaits the commit of its begun mark, in which autojump's loops would move it on.
    await gateways(make_config(tmp_path), [chat], clock=FakeClock(autojump=False),
                   script={"parent": [[{"text": "hi"}]]})
    await chat.say("hello")
    await chat.wait_for(lambda: chat.texts() == ["hi"])


async def test_a_reply_written_across_a_nights_suspend_says_how_old_its_message_is(tmp_path, gateways) -> None:
    # Asked just before the laptop's lid closed, answered once it woke 8 h later: without a word,
    # the answer would pass for one to something said just now.
    clock = FakeClock(autojump=False)
    model = ScriptedModel({"parent": [[{"wait": "thinking", "text": "sunny"}]]})
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path, agent={"gateway_notify_interval": 0}), [chat], model=model, clock=clock)
    await chat.say("what is the weather in Lisbon?")
    await model.reached("thinking")
    clock.jump(8 * 3600)  # suspended mid-turn: the wall clock went on, the monotonic one did not
    model.release("thinking")
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    assert chat.texts() == ["⏱ Answering your message from 8 h ago: “what is the weather in Lisbon?”", "sunny"]


async def test_a_long_turn_awake_gets_no_note(tmp_path, gateways) -> None:
    # Its notices said how long it took; a note would only repeat it.
    clock = FakeClock(autojump=False)
    model = ScriptedModel({"parent": [[{"wait": "thinking", "text": "done"}]]})
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path, agent={"gateway_notify_interval": 0}), [chat], model=model, clock=clock)
    await chat.say("research this")
    await model.reached("thinking")
    clock.advance(3600)
    model.release("thinking")
    await chat.wait_for(lambda: "done" in chat.texts())
    assert [t for t in chat.texts() if t.startswith("⏱")] == []
