"""A shutdown whose grace runs out while the running turn's reply is being journaled (split in a worker thread)
journals the reply and ends the turn, as a ``/new`` or ``/stop`` meanwhile does: the reply is past them all. Cut
short, the turn's message ran again after the restart; after a ``/new`` that waited for that reply, in the new
session, whose conversation then began with the old session's request, and whose answer came under "Started a new
session."."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.splitting import split_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_long_replies import HeldSplit
from tests.polling import until

TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))


def parent(request) -> dict:
    said = str(request.messages[-1]["content"])
    return {"text": TEXT if said == "write a lot" else f"re: {said}"}


async def test_a_new_then_a_shutdown_while_the_reply_is_split_leaves_the_new_session_empty(tmp_path, gateways):
    config, chat = make_config(tmp_path), HeldSplit()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent}))
    await chat.say("write a lot")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    session = next(iter(gateway.sessions))
    old = session.session_id
    new = asyncio.ensure_future(chat.say("/new"))
    await until(lambda: session.session_id != old)  # its acknowledgement waits for the old session's answer
    cancelling = asyncio.Event()
    cancel = gateway.runner.cancel

    async def cancel_then_split(within: float) -> None:
        cancelling.set()
        await cancel(within)

    gateway.runner.cancel = cancel_then_split
    stopping = asyncio.ensure_future(gateway.stop(grace=0))
    await cancelling.wait()  # the workers are being cancelled, the reply still being split
    chat.release.set()
    await stopping
    await new

    chat2 = RecordingAdapter(text_limit=1000)
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent}))
    await settled(gateway2)
    [ack] = [m.text for m in chat.messages + chat2.messages if m.kind == "command"]
    assert ack.startswith("Started a new session.")
    assert [m.text for m in chat.messages + chat2.messages] == [*split_text(TEXT, 1000), ack]
    stored = gateway2.store.sessions.load(session.key)
    assert stored.session_id == session.session_id
    assert not any("write a lot" in str(m.get("content")) for m in stored.transcript)


async def test_a_shutdown_while_the_reply_is_split_sends_it_once_and_runs_nothing_again(tmp_path, gateways):
    config, chat = make_config(tmp_path), HeldSplit()
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("write a lot")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    await stop_while_splitting(gateway, chat)

    chat2 = RecordingAdapter(text_limit=1000)
    model2 = ScriptedModel({"parent": parent})
    gateway2 = await gateways(config, [chat2], model=model2)
    await settled(gateway2)
    assert [m.text for m in chat.messages + chat2.messages] == split_text(TEXT, 1000)
    assert model2.requests == []  # the model was not asked again


class TypingOnTheWire(RecordingAdapter):
    """Nothing clears its typing indicator (`Adapter.typing_interval`), and its typing request is never answered."""

    typing_lapses = True

    def __init__(self) -> None:
        super().__init__(text_limit=1000)
        self.on_the_wire = asyncio.Event()

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        self.on_the_wire.set()
        await asyncio.Event().wait()


async def test_a_shutdown_while_the_reply_waits_for_a_typing_request_journals_it(tmp_path, gateways):
    config, chat, clock = make_config(tmp_path), TypingOnTheWire(), FakeClock(autojump=False)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent}), clock=clock)
    await chat.say("write a lot")
    await chat.on_the_wire.wait()
    session = next(iter(gateway.sessions))
    await until(lambda: session.running is not None and session.running.replying)  # it waits for the request
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter(text_limit=1000)
    model2 = ScriptedModel({"parent": parent})
    gateway2 = await gateways(config, [chat2], model=model2, clock=clock)
    await settled(gateway2)
    assert [m.text for m in chat.messages + chat2.messages] == split_text(TEXT, 1000)
    assert model2.requests == []


class CountedSplit(HeldSplit):
    """`HeldSplit`, counting the splits of the long reply begun (each first measures the whole text)."""

    def __init__(self) -> None:
        super().__init__()
        self.splits = 0

    def measure(self, text: str) -> int:
        self.splits += text == TEXT.strip()
        return super().measure(text)


async def test_a_shutdown_while_the_reply_is_split_finishes_that_split(tmp_path, gateways, caplog):
    # The cancelled split was thrown away and the reply split anew from the start: a long reply (a loaded machine)
    # outlasted the stop's second for the turn, which then logged it as one ignoring its cancellation, left behind.
    config, chat = make_config(tmp_path), CountedSplit()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent}))
    await chat.say("write a lot")
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    await stop_while_splitting(gateway, chat)
    assert chat.splits == 1
    assert not [r for r in caplog.records if "ignores cancellation" in r.getMessage()]

    chat2 = RecordingAdapter(text_limit=1000)
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent}))
    await settled(gateway2)
    assert [m.text for m in chat.messages + chat2.messages] == split_text(TEXT, 1000)


async def stop_while_splitting(gateway, chat) -> None:
    """Stop ``gateway`` with no grace while ``chat``'s split of the reply is held, letting the split go on only
    once the workers are being cancelled."""
    cancelling = asyncio.Event()
    cancel = gateway.runner.cancel

    async def cancel_then_split(within: float) -> None:
        cancelling.set()
        await cancel(within)

    gateway.runner.cancel = cancel_then_split
    stopping = asyncio.ensure_future(gateway.stop(grace=0))
    await cancelling.wait()
    chat.release.set()
    await stopping
