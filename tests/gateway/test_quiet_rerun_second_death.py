"""A turn cut short after its ``send_message`` by a death, whose rerun the next start hands back but that start dies
too before the rerun begins: its message is no longer marked begun (the start's `Inbox.reopen`), as that of a turn
that ended with its messages alone is. The start after must run it again as any other, and answer (taken for one
that ended, it ran quietly and its answer never went out); so must a turn whose begin mark the store refused."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.ledger_restarts import stopped
from tests.gateway.test_dead_letters import execute, killed_now
from tests.gateway.test_quiet_rerun_edges import sending

SAID = {"tool_calls": [{"name": "send_message", "arguments": {"text": "on it"}}]}


class KilledAsItStarts(RecordingAdapter):
    """Keeps the state a SIGKILL leaves while the gateway starts this platform (the events it hands back are
    reopened by then, none of their turns begun): `restore` puts it back once the gateway has stopped."""

    async def start(self, sink, commands=()) -> None:
        self.restore = killed_now(self.tmp_path)
        await super().start(sink, commands)


async def test_a_turn_cut_short_after_its_message_answers_after_a_second_death_before_it_ran(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    first = ScriptedModel({"parent": [[SAID, {"wait": "never", "text": "lost"}]]})
    gateway = await gateways(config, [chat], model=first)
    await chat.say("hello", event_id="ev-1")
    await first.reached("never")
    await stopped(gateway, tmp_path, crash=True)
    assert chat.texts() == ["on it"]

    starting = KilledAsItStarts()
    starting.tmp_path = tmp_path
    second = ScriptedModel({"parent": [[SAID, {"wait": "never", "text": "lost"}]]})
    gateway2 = await gateways(config, [starting], model=second)
    await gateway2.stop(grace=0)
    starting.restore()  # it died there, before the turn ran again

    gateway3 = await gateways(config, [chat], model=ScriptedModel({"parent": [sending("on it", answer="done")]}))
    await settled(gateway3)
    # Before, taken for a turn that had ended with its message alone, it ran quiet: "done" never went out.
    assert chat.texts() == ["on it", "done"]
    assert gateway3.store.inbox.settled("chat", "ev-1")


REFUSE_BEGIN = ("CREATE TRIGGER refuse BEFORE UPDATE OF status ON gateway_inbox WHEN NEW.status='begun'"
                " BEGIN SELECT RAISE(ABORT, 'database is locked'); END")


async def test_a_turn_whose_begin_was_refused_answers_after_a_death_after_its_message(tmp_path, gateways):
    config, chat = make_config(tmp_path), RecordingAdapter()
    first = ScriptedModel({"parent": [[SAID, {"wait": "never", "text": "lost"}]]})
    gateway = await gateways(config, [chat], model=first)
    gateway.store.db.write(REFUSE_BEGIN)  # a moment's lock: the turn runs all the same, unmarked
    await chat.say("hello", event_id="ev-1")
    await first.reached("never")
    await stopped(gateway, tmp_path, crash=True)
    execute(tmp_path, "DROP TRIGGER refuse")
    assert chat.texts() == ["on it"]

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": [sending("on it", answer="done")]}))
    await settled(gateway2)
    # Before, taken for a turn that had ended with its message alone, it ran quiet: "done" never went out.
    assert chat.texts() == ["on it", "done"]
