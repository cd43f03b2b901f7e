"""A refusal counts as given only once its answer is saved (`gateway.refusals`): one the store refused (a full
disk) is given when the event is handled again. Counted first, the event handled again found the stranger told
already and was closed without an answer: they heard nothing for an hour."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing.clock import FakeClock
from gateway.refusals import Refusals
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Inbound
from tests.sqlite_errors import full_disk


async def test_a_refusal_the_store_refused_to_save_is_given_when_its_event_is_handled_again(
        tmp_path, gateways, monkeypatch):
    chat = RecordingAdapter("telegram")
    model = ScriptedModel({"parent": [[{"text": "never"}]]})
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["42"]}})
    gateway = await gateways(config, [chat], model=model, clock=FakeClock())
    enqueue, refused = gateway.outbox.enqueue, []

    def full_disk_once(*args, key: str, **kwargs):
        if key.startswith("cmd-") and not refused:
            refused.append(key)
            raise full_disk()
        return enqueue(*args, key=key, **kwargs)

    monkeypatch.setattr(gateway.outbox, "enqueue", full_disk_once)
    await chat.say("let me in", user="999", chat="-100123", private=False, message_id="7")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert refused and len(chat.messages) == 1 and "only answers people" in chat.texts()[0]
    assert gateway.store.inbox.unfinished() == [] and model.requests == []


def test_undoing_a_slash_commands_refusal_keeps_the_refusal_given_before():
    # A slash command's refusal is never counted (`Refusals.due`): undone, it must not forget the message's.
    refusals = Refusals(FakeClock())
    said = Inbound("slack", "C1", None, "U2", None, "hi", "e1")
    command = Inbound("slack", "C1", None, "U2", None, "/new", "e2", is_command=True, reply_token="tok")
    assert refusals.due(said) and refusals.due(command)
    refusals.undo(command)
    assert not refusals.due(said)
    refusals.undo(said)
    assert refusals.due(said)
