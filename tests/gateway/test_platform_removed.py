"""A platform taken out of the configuration between two runs (the operator disabled Telegram): what its
chats left — a message whose turn had not ended, the undelivered results of a background delegation, a
reply not sent yet, a dead letter handed back — is neither run nor lost. The start says so in one line
and leaves it all as it is; a start that configures the platform again takes it up."""

from __future__ import annotations

import json
import logging
import time

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import REQUEUE_POLL_SECONDS
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Inbound, NetworkError, Outbound, Sent
from tests.gateway.test_ledger import BACKGROUND, TASKS
from tests.polling import until


class Unreachable(RecordingAdapter):
    """The ``other`` platform, whose chat ``o3`` cannot be reached: the reply to it stays pending."""

    def __init__(self) -> None:
        super().__init__("other")

    async def send(self, message: Outbound) -> Sent:
        if message.chat_id == "o3":
            raise NetworkError("unreachable", method="send", chat_id="o3")
        return await super().send(message)


def parent(*, waits: bool):
    """``delegate`` delegates in the background (its results answered with "results: alpha"), any other
    message is echoed; with ``waits`` the answers to ``ping`` and to the results wait for the test."""

    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith("[Background delegation results]"):
            return {"wait": "completion turn", "text": "results: alpha"} if waits else {"text": "results: alpha"}
        if last["role"] == "user" and content.endswith("delegate"):
            return {"tool_calls": [{"name": "delegate_task", "arguments": TASKS}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        if content.endswith("ping") and waits:
            return {"wait": "answer", "text": "pong"}
        return {"text": f"echo {content.rsplit(' ', 1)[-1]}"}

    return script


def model(*, waits: bool) -> ScriptedModel:
    return ScriptedModel({"parent": parent(waits=waits), "leaf": lambda r: {"text": "found alpha"}})


def inbox_rows(store: GatewayStore) -> list[tuple]:
    return store.db.read("SELECT platform, event_id, status, attempts, last_error FROM gateway_inbox"
                                 " WHERE platform='other' ORDER BY event_id")


async def test_a_platform_taken_out_of_the_configuration_keeps_its_chats_work_until_it_is_back(tmp_path, gateways,
                                                                                               caplog):
    config = make_config(tmp_path, **BACKGROUND)
    first = model(waits=True)
    other = Unreachable()
    gateway = await gateways(config, [RecordingAdapter("chat"), other], model=first)
    await other.say("please delegate", chat="o1", event_id="ev-delegate")
    await first.reached("completion turn")  # its children ran; the answer to their results is under way
    await other.say("ping", chat="o2", event_id="ev-ping")
    await first.reached("answer")
    await other.say("hello", chat="o3", event_id="ev-hello")
    await until(lambda: any(row.chat_id == "o3" for row in gateway.store.outbox.pending_messages()))
    await gateway.stop(grace=0)  # both turns run again after the next start; the reply to o3 waits
    store = GatewayStore(tmp_path / "state" / STATE_DB)
    try:
        left = inbox_rows(store)
        [delegation] = store.delegations.running()
        # a dead letter of the platform handed back meanwhile (`switchboard inbox retry`)
        back = Inbound("other", "o4", None, "u1", "alice", "handed back", "ev-back")
        store.inbox.requeue("other", "ev-back", json.dumps(back.to_json()), "t-back", time.time())
        pending = [(row.key, row.status) for row in store.outbox.pending_messages() if row.platform == "other"]
    finally:
        store.close()
    assert pending

    caplog.clear()
    caplog.set_level(logging.INFO)
    chat = RecordingAdapter("chat")
    second = model(waits=False)
    gateway2 = await gateways(config, [chat], model=second)  # other is no longer configured
    await settled(gateway2)
    said = (f"other is not configured: 2 message(s) to answer, 1 background result(s) to deliver and {len(pending)}"
            " message(s) to send are kept, untouched, until it is configured again")
    assert said in caplog.messages
    assert second.requests == []  # nothing of it ran, nor was its model paid
    assert all(session.running is None for session in gateway2.sessions)
    assert inbox_rows(gateway2.store) == [("other", "ev-back", "requeued", 0, None), *left]
    assert gateway2.store.delegations.running() == [delegation]
    assert [(row.key, row.status) for row in gateway2.store.outbox.pending_messages()
            if row.platform == "other"] == pending
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await chat.say("ping")  # the configured platform's chats go on as ever
    await chat.wait_for(lambda: chat.texts() == ["echo ping"])
    await gateway2.stop(grace=0)

    other3 = RecordingAdapter("other")
    gateway3 = await gateways(config, [RecordingAdapter("chat"), other3], model=model(waits=False))
    await other3.wait_for(lambda: len(other3.messages) == 4)
    await settled(gateway3)
    assert sorted((m.outbound.chat_id, m.text) for m in other3.messages) == [
        ("o1", "results: alpha"), ("o2", "echo ping"), ("o3", "echo hello"), ("o4", "echo back")]
    assert gateway3.store.delegations.running() == []
    assert all(status == "done" for _, _, status, _, _ in inbox_rows(gateway3.store))


async def test_a_running_gateway_leaves_a_handed_back_event_of_a_platform_it_does_not_configure(tmp_path,
                                                                                                gateways):
    chat, clock = RecordingAdapter("chat"), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], clock=clock, script={"parent": [[{"text": "answered"}]]})
    for platform, event_id in (("other", "ev-other"), ("chat", "ev-chat")):  # as `switchboard inbox retry` does
        inbound = Inbound(platform, "c1", None, "u1", "alice", "handed back", event_id)
        gateway.store.inbox.requeue(platform, event_id, json.dumps(inbound.to_json()), f"t-{event_id}", clock.time())
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
    clock.advance(REQUEUE_POLL_SECONDS)
    await chat.wait_for(lambda: chat.texts() == ["answered"])
    await settled(gateway)
    assert gateway.store.db.read("SELECT event_id, status FROM gateway_inbox ORDER BY event_id") == [
        ("ev-chat", "done"), ("ev-other", "requeued")]
