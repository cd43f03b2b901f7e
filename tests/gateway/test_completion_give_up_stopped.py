"""Results being sent as they are (`gateway.ledger_failures`), their split under way in a worker thread, when the
gateway stops: nothing is journaled, the delegation stays unsettled, and the next start hands them on once."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import make_config, settled
from tests.gateway.test_completion_failures import parent
from tests.gateway.test_completion_give_up_off_loop import CONFIG, break_completion_replies, found
from tests.gateway.test_long_messages import TakesFiles
from tests.gateway.test_long_messages_sync_paths import Held


async def test_results_being_split_when_the_gateway_stops_are_handed_on_once_after_the_next_start(
        tmp_path, gateways, monkeypatch):
    config = make_config(tmp_path, **CONFIG)
    copies = Held(monkeypatch)
    chat = TakesFiles()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent({"text": "never"}),
                                                                   "leaf": found}))
    break_completion_replies(gateway)
    await chat.say("please delegate")
    assert await asyncio.to_thread(copies.writing.wait, 5)
    [row] = gateway.store.delegations.running()
    await gateway.stop(grace=0)
    copies.release.set()

    chat2 = TakesFiles()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent({"text": "read them"}),
                                                                     "leaf": found}))
    assert not gateway2.outbox.journaled(f"{row.completion_turn_id}:undelivered:0")
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    assert chat2.texts() == ["read them"] and chat2.files == []
    assert gateway2.store.delegations.running() == []
    await gateway2.stop(grace=0)

    chat3 = TakesFiles()
    gateway3 = await gateways(config, [chat3], model=ScriptedModel({"parent": parent({"text": "x"}), "leaf": found}))
    await settled(gateway3)
    assert chat3.messages == [] and not any(UNDELIVERABLE[:50] in t for t in chat.texts())
