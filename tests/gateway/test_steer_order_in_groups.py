"""``busy_input_mode: steer`` in a group: a member's follow-up steered into their own running turn, which ends (or is
stopped) before reading it, runs as a turn of its own behind another member's message that came before it, and each
is answered once, in the order sent, across a restart too (`SessionRegistry.end`, `_put_back`)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway import session_registry
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import killed_now


def answering(request) -> dict:
    """Alice's first message is held at a gate and answered with no second model call: what is steered into its
    turn meanwhile is never read there."""
    said = str(request.messages[-1]["content"])
    return {"wait": "first", "text": f"re: {said}"} if said == "[@alice] start" else {"text": f"re: {said}"}


def waiting(gateway, *texts: str) -> bool:
    """Whether each of ``texts`` is queued, or steered into the running turn."""
    items = [item for session in gateway.sessions
             for item in [*session.queue, *(session.running.steered if session.running else ())]]
    return all(any(item.event is not None and item.event.text == text for item in items) for text in texts)


async def alice_steers_behind_bob(chat: RecordingAdapter, gateway, model: ScriptedModel) -> None:
    """Alice's turn runs; Bob asks, queued; Alice adds a line, steered into her turn."""
    await chat.say("start", private=False)
    await model.reached("first")
    await chat.say("second", private=False, user="u2", name="bob")
    await chat.say("third", private=False)
    assert waiting(gateway, "second", "third")
    [session] = gateway.sessions
    assert [item.event.text for item in session.running.steered] == ["third"]


def replies(chat: RecordingAdapter) -> list[str]:
    return [text for text in chat.texts("reply") if text.startswith("re: ")]


async def test_a_steer_the_turn_never_read_is_answered_after_another_members_earlier_message(tmp_path, gateways):
    # Alice's follow-up went to the front of the queue: answered before Bob's question, sent before it.
    chat, model = RecordingAdapter(), ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await alice_steers_behind_bob(chat, gateway, model)
    model.release("first")
    await chat.wait_for(lambda: len(replies(chat)) == 3)
    await settled(gateway)
    assert replies(chat) == ["re: [@alice] start", "re: [@bob] second", "re: [@alice] third"]
    assert gateway.store.inbox.unfinished() == []


async def test_a_steer_left_by_a_stop_waits_behind_another_members_earlier_message(tmp_path, gateways):
    # Carol's /stop drops only her own messages: Alice's unread steer and Bob's question go on, in the order sent.
    chat, model = RecordingAdapter(), ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await alice_steers_behind_bob(chat, gateway, model)
    await chat.say("/stop", private=False, user="u3", name="carol")
    model.release("first")
    await chat.wait_for(lambda: len(replies(chat)) == 2)
    await settled(gateway)
    assert replies(chat) == ["re: [@bob] second", "re: [@alice] third"]


async def test_a_steer_the_turn_never_read_waits_behind_the_earlier_messages_held_in_the_store(
        tmp_path, gateways, monkeypatch):
    # Put back into the queue, it ran before Bob's message held in the store (`QUEUED`), sent before it.
    monkeypatch.setattr(session_registry, "QUEUED", 3)
    chat, model = RecordingAdapter(), ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await chat.say("start", private=False)
    await model.reached("first")
    for n in range(1, 5):
        await chat.say(f"b{n}", private=False, user="u2", name="bob")
    await chat.say("later", private=False)
    [session] = gateway.sessions
    assert (len(session.queue), session.held, len(session.running.steered)) == (3, 1, 1)
    model.release("first")
    await chat.wait_for(lambda: len(replies(chat)) == 6)
    await settled(gateway)
    assert replies(chat) == ["re: [@alice] start", *(f"re: [@bob] b{n}" for n in range(1, 5)), "re: [@alice] later"]


async def test_after_a_restart_the_messages_are_answered_once_in_the_order_sent(tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": answering})
    gateway = await gateways(config, [chat], model=model)
    await alice_steers_behind_bob(chat, gateway, model)
    await gateway.store.durable()
    restore = killed_now(tmp_path)
    await gateway.stop(grace=0)
    restore()

    chat2, model2 = RecordingAdapter(), ScriptedModel({"parent": answering})
    gateway2 = await gateways(config, [chat2], model=model2)
    await model2.reached("first")  # Alice's turn runs again, Bob's and her follow-up wait
    model2.release("first")
    await chat2.wait_for(lambda: len(replies(chat2)) == 3)
    await settled(gateway2)
    assert replies(chat2) == ["re: [@alice] start", "re: [@bob] second", "re: [@alice] third"]
    assert gateway2.store.inbox.unfinished() == [] and len(model2.requests) == 3
