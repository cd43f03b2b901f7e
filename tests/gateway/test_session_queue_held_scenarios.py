"""Messages held in the store (`session_registry.QUEUED`) across what else happens to their chat: a SIGKILL
restart, a group member's /stop or /new, interrupting messages, and a retention sweep while they wait."""

from __future__ import annotations

from gateway import session_registry
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_session_queue_bound import echoing


async def flooded(gateways, config, sent: int, *, private: bool = True, user=lambda n: "u1"):
    """A chat's first message runs, held at the model, while it sends ``sent - 1`` more."""
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(config, [chat], model=model)
    await chat.say("m0", private=private)
    await model.reached("first")
    for n in range(1, sent):
        await chat.say(f"m{n}", private=private, user=user(n), name=user(n))
    return gateway, chat, model


async def test_a_sigkill_with_messages_held_answers_each_once_in_order_after_the_start(tmp_path, gateways,
                                                                                         monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    gateway, _, _ = await flooded(gateways, config, 10)
    session = next(iter(gateway.sessions))
    assert (len(session.queue), session.held) == (3, 6)
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=echoing(gate_first=False))
    await chat2.wait_for(lambda: len(chat2.texts("reply")) == 10)
    await settled(gateway2)
    assert chat2.texts("reply") == [f"re: m{n}" for n in range(10)]
    assert gateway2.store.inbox.unfinished() == []


async def test_a_group_members_stop_drops_their_held_messages_and_the_others_are_answered_in_order(
        tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    users = {n: "u1" if n % 2 else "u2" for n in range(1, 9)}
    gateway, chat, model = await flooded(gateways, config, 9, private=False, user=users.get)
    session = next(iter(gateway.sessions))
    assert (len(session.queue), session.held) == (2, 6)
    await chat.say("/stop", private=False, user="u2", name="u2")
    model.release("first")
    await settled(gateway)
    answers = [text for text in chat.texts("reply") if text.startswith("re: ")]
    assert answers == [f"re: [@u1] m{n}" for n in range(1, 9, 2)]
    assert session.held == 0 and gateway.store.inbox.unfinished() == []
    assert gateway.store.db.read("SELECT COUNT(*) FROM gateway_held") == [(0,)]





async def interrupted_answers(tmp_path, gateways, monkeypatch, queued: int) -> list[str]:
    monkeypatch.setattr(session_registry, "QUEUED", queued)
    config = make_config(tmp_path / str(queued), display={"busy_input_mode": "interrupt"})
    gateway, chat, model = await flooded(gateways, config, 8)
    await settled(gateway)
    assert gateway.store.inbox.unfinished() == []
    return chat.texts()


async def test_messages_interrupting_a_turn_while_others_are_held_fare_as_with_all_in_memory(
        tmp_path, gateways, monkeypatch):
    held = await interrupted_answers(tmp_path, gateways, monkeypatch, 2)
    in_memory = await interrupted_answers(tmp_path, gateways, monkeypatch, 100)
    assert held == in_memory




async def test_a_group_members_new_drops_their_held_messages_and_answers_the_others_in_the_new_session(
        tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    users = {n: "u1" if n % 2 else "u2" for n in range(1, 9)}
    gateway, chat, model = await flooded(gateways, config, 9, private=False, user=users.get)
    session = next(iter(gateway.sessions))
    await chat.say("/new", private=False, user="u1", name="u1")
    assert session.generation == 2 and session.held > 0
    model.release("first")
    await settled(gateway)
    answers = [text for text in chat.texts("reply") if text.startswith("re: ")]
    assert answers == [f"re: [@u2] m{n}" for n in range(2, 9, 2)]
    assert session.held == 0 and gateway.store.inbox.unfinished() == []


async def test_a_retention_sweep_keeps_what_this_process_holds(tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    gateway, chat, model = await flooded(gateways, config, 8)
    session = next(iter(gateway.sessions))
    assert session.held == 5
    gateway.retention.sweep()
    assert gateway.store.db.read("SELECT COUNT(*) FROM gateway_held") == [(5,)]
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 8)
    await settled(gateway)
    assert chat.texts("reply") == [f"re: m{n}" for n in range(8)]


async def test_a_stop_whose_steered_message_the_store_cannot_mark_waiting_still_settles_what_it_dropped(
        tmp_path, gateways, monkeypatch):
    # Raised, the stop had taken the dropped messages out of the queue and the store, never to settle them.
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    chat, model = RecordingAdapter(), echoing(gate_first=True)
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await chat.say("m0", private=False)
    await model.reached("first")
    await chat.say("steered", private=False)
    for n in (1, 2, 3):
        await chat.say(f"other {n}", user="u2", name="bob", private=False)
    session = next(iter(gateway.sessions))
    assert (len(session.running.steered), len(session.queue), session.held) == (1, 2, 1)

    def refused(*args):
        raise OSError("disk I/O error")

    with monkeypatch.context() as disk:
        disk.setattr(gateway.store.inbox, "reopen", refused)
        await chat.say("/stop", user="u2", name="bob", private=False)
    model.release("first")
    await settled(gateway)
    assert [text for text in chat.texts("reply") if text.startswith("re: ")] == ["re: [@alice] steered"]
    assert (len(session.queue), session.held) == (0, 0)
    assert gateway.store.inbox.unfinished() == []
