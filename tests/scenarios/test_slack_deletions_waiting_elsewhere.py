"""A Slack message its user deletes while it waits somewhere other than its session's queue: still in the adapter
(waiting for a mention's name), or held in the store behind the messages the session keeps in memory
(`session_registry.QUEUED`). Dropped all the same: never answered, never sent to the model, its text kept nowhere;
and the running turn's progress card stops counting it at once. The real slack-bolt client inside `SlackAdapter`
against the loopback `FakeSlack` over Socket Mode, with the real `Gateway` (`gateway.message_edits`)."""

from __future__ import annotations

from gateway import session_registry
from gateway.testing import settled
from platforms.fakes.slack import FakeSlack
from tests.scenarios.test_slack_chat import DM, PLACEHOLDER, slack_chat  # noqa: F401  (the fixture)
from tests.scenarios.test_slack_edits import gated_echo, waiting

ALICE = "U0ALICE"


async def deletion_acked(fake: FakeSlack) -> None:
    """Every ``message_deleted`` pushed so far has been acked: the adapter has handed it over."""
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()
                                    if e.payload.get("event", {}).get("subtype") == "message_deleted"))


def model_read(model, text: str) -> bool:
    return any(text in str(m) for request in model.requests for m in request.messages)


def stored_anywhere(gateway, text: str) -> bool:
    rows = [*gateway.store.db.read("SELECT payload FROM gateway_inbox"),
            *gateway.store.db.read("SELECT item FROM gateway_held")]
    return any(text in str(row) for row in rows)


async def test_a_message_deleted_while_the_adapter_waits_for_a_name_in_it_is_not_answered(slack_chat):  # noqa: F811
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    fake.add_user(ALICE, "alice")
    await fake.push_dm("U1", "first")
    await model.reached("first")
    names = fake.hold("users.info")
    try:
        pasted = (await fake.push_dm("U1", f"<@{ALICE}> my password is hunter2"))["event"]["ts"]
        await fake.wait_for(lambda: fake.calls_to("users.info"))  # in the adapter, not handed over yet
        await fake.push_deletion(DM, pasted)
        await deletion_acked(fake)  # the gateway had no such message: nothing dropped there
    finally:
        names.set()
    await fake.push_dm("U1", "last")
    await fake.wait_for(lambda: waiting(gateway) >= 1)
    model.release("first")
    await fake.wait_for(lambda: "re: last" in chat.bot_texts())
    await settled(gateway)
    assert [t for t in chat.bot_texts() if t != PLACEHOLDER] == ["re: first", "re: last"]
    assert not model_read(model, "hunter2") and not stored_anywhere(gateway, "hunter2")


async def test_a_message_held_in_the_store_behind_the_queue_is_dropped_when_deleted(slack_chat,  # noqa: F811
                                                                                     monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    model = gated_echo()
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue"})
    fake, gateway = chat.fake, chat.gateway
    await fake.push_dm("U1", "first")
    await model.reached("first")
    sent = {text: (await fake.push_dm("U1", text))["event"]["ts"]
            for text in ("one", "two", "my password is hunter2", "three")}
    session = chat.session()
    await fake.wait_for(lambda: (len(session.queue), session.held) == (2, 2))
    pasted = sent["my password is hunter2"]
    await fake.push_deletion(DM, pasted)
    await deletion_acked(fake)
    assert session.held == 1
    assert gateway.store.inbox.settled("slack", f"{DM}:{pasted}")
    model.release("first")
    await fake.wait_for(lambda: "re: three" in chat.bot_texts())
    await settled(gateway)
    assert [t for t in chat.bot_texts() if t != PLACEHOLDER] == ["re: first", "re: one", "re: two", "re: three"]
    assert not model_read(model, "hunter2") and not stored_anywhere(gateway, "hunter2")
    assert gateway.store.db.read("SELECT COUNT(*) FROM gateway_held") == [(0,)]


async def test_the_card_stops_counting_a_waiting_message_as_it_is_deleted(slack_chat):  # noqa: F811
    model = gated_echo()
    # The card is refreshed every 180 s, or as something happens: a deletion is something.
    chat = await slack_chat(llm=model, display={"busy_input_mode": "queue", "progress": "card", "progress_delay": 0},
                            agent={"gateway_notify_interval": 180})
    fake, gateway = chat.fake, chat.gateway

    def waiting_lines() -> list[str]:
        return [line for text in chat.bot_texts() for line in text.splitlines() if "waiting, answered" in line]

    await fake.push_dm("U1", "first")
    await model.reached("first")
    await fake.push_dm("U1", "one")
    pasted = (await fake.push_dm("U1", "my password is hunter2"))["event"]["ts"]
    await fake.wait_for(lambda: waiting_lines() == ["⋯ 2 more messages waiting, answered after this"])
    await fake.push_deletion(DM, pasted)
    await fake.wait_for(lambda: waiting_lines() == ["⋯ 1 more message waiting, answered after this"])
    model.release("first")
    await fake.wait_for(lambda: "re: one" in chat.bot_texts())
    await settled(gateway)
    assert not model_read(model, "hunter2")
