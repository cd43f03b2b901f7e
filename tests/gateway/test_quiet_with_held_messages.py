"""A gateway with messages held in the store (`session_registry.QUEUED`) is not quiet while their read-back,
refused by the store, waits to be tried again: no worker runs then, and a terminal chat whose piped input had
ended stopped there (`serve._stop_once_quiet`), its held messages unanswered until the next start."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway import session_registry
from gateway.idle_owed_ends import PAY_AGAIN_FIRST
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_session_queue_bound import echoing


async def test_a_gateway_whose_held_messages_wait_for_a_refused_read_back_is_not_quiet(tmp_path, gateways,
                                                                                      monkeypatch):
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

    def refused(*args):
        raise OSError("disk I/O error")

    with monkeypatch.context() as disk:
        disk.setattr(gateway.store.sessions, "held", refused)
        model.release("first")
        await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
        await clock.until_sleeping(lasting=PAY_AGAIN_FIRST)  # the worker ended, m3 still held
        assert session.held == 1 and not gateway.runner.busy and gateway.outbox.idle
        assert not gateway.quiet
    clock.advance(PAY_AGAIN_FIRST)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 4)
    await settled(gateway)
    assert gateway.quiet and chat.texts("reply") == [f"re: m{n}" for n in range(4)]
