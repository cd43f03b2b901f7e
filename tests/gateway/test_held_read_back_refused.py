"""Messages a session holds in the store (`session_registry.QUEUED`) whose read-back the store refused once the
turns in memory ran out: read back again by themselves, backing off, once the store takes reads again, not with the
chat's next message (maybe never) or a restart."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway import session_registry
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_session_queue_bound import echoing


async def test_held_messages_whose_read_back_was_refused_are_answered_once_the_store_reads_again(
        tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    clock = FakeClock(autojump=False)
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model,
                             clock=clock)
    await chat.say("m0")
    await model.reached("first")
    for n in (1, 2, 3):
        await chat.say(f"m{n}")
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (2, 1)

    def refused(*args):
        raise OSError("disk I/O error")

    with monkeypatch.context() as disk:
        disk.setattr(gateway.store.sessions, "held", refused)
        model.release("first")
        await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
        await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the worker ended, m3 still held
        assert session.held == 1 and not gateway.runner.busy and gateway.outbox.idle
        # Not quiet, though no worker runs: a terminal chat whose piped input had ended stopped here
        # (`serve._stop_once_quiet`), its held messages unanswered until the next start.
        assert not gateway.quiet
    clock.advance(PAY_AGAIN_FIRST)  # the store reads again; no message from the chat
    await chat.wait_for(lambda: len(chat.texts("reply")) == 4)
    await settled(gateway)
    assert chat.texts("reply") == [f"re: m{n}" for n in range(4)]
    assert session.held == 0 and gateway.quiet
