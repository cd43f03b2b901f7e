"""A start after a death charges the turns the death cut short an attempt (`DeadLetterPolicy.cut_short`,
`Ledger.cut_short`). Charging one can fail otherwise than by the store's refusal (a bug meeting an odd
row, an engine that cannot look a child up): that one is logged and kept for the next start, and the
start goes on for every other chat."""

from __future__ import annotations

import logging

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.ledger_failures import UNDELIVERABLE
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_completion_failures import BACKGROUND, died, found, parent
from tests.gateway.test_dead_letters import echo


@pytest.fixture
async def broken_gateways():
    """Start gateways with a fault put in before their start (``breaking(gateway)``); each is stopped after."""
    started = []

    async def make(config, adapters, model, breaking=lambda gateway: None):
        gateway = Gateway(AgentHost(config, model=model), adapters)
        started.append(gateway)
        breaking(gateway)
        await gateway.start()
        return gateway

    yield make
    for gateway in started:
        await gateway.stop(grace=0)


def a_bug(*args, **kw):
    raise TypeError("a bug met this row")


async def test_an_event_whose_death_cannot_be_charged_for_a_bug_is_kept_and_the_start_goes_on(
        tmp_path, broken_gateways, caplog):
    config = make_config(tmp_path, inbox={"max_attempts": 2})
    chat, model = RecordingAdapter(), ScriptedModel({"parent": [[{"wait": "forever"}]]})
    gateway = await broken_gateways(config, [chat], model)
    await chat.say("this one brings it down", chat="c1", event_id="ev-poison")
    await model.reached("forever")
    await gateway.stop(grace=0)
    died(tmp_path)

    def break_counting(gateway):
        gateway.store.inbox.failed = a_bug

    caplog.set_level(logging.ERROR, logger="gateway.dead_letters")
    chat = RecordingAdapter()
    gateway = await broken_gateways(config, [chat], ScriptedModel({"parent": echo}), break_counting)
    await chat.say("are you there?", chat="c2")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["re: are you there?"]  # serving; the event it could not count is not run
    [error] = [r for r in caplog.records if "ev-poison" in r.getMessage()]
    assert "kept for the next start" in error.getMessage() and "a bug met this row" in error.exc_text
    assert [e.event_id for e, _ in gateway.store.inbox.unfinished()] == ["ev-poison"]
    assert gateway.store.dead_letters.all() == []
    await gateway.stop(grace=0)

    chat = RecordingAdapter()  # mended: the next start takes it up
    await broken_gateways(config, [chat], ScriptedModel({"parent": echo}))
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["re: this one brings it down"]


async def test_a_completion_turn_whose_giving_up_fails_for_a_bug_is_kept_and_the_start_goes_on(
        tmp_path, broken_gateways, caplog):
    config = make_config(tmp_path, **BACKGROUND, inbox={"max_attempts": 1})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent({"wait": "brings it down"}), "leaf": found})
    gateway = await broken_gateways(config, [chat], model)
    await chat.say("please delegate")
    await model.reached("brings it down")
    [row] = gateway.store.delegations.running()
    await gateway.stop(grace=0)
    died(tmp_path)

    def break_results_as_they_are(gateway):
        enqueue_long = gateway.outbox.enqueue_long  # results sent as they are are split off the loop

        async def failing(*args, **kw):
            if str(kw.get("key", "")).endswith(":undelivered"):
                a_bug()
            return await enqueue_long(*args, **kw)

        gateway.outbox.enqueue_long = failing

    caplog.set_level(logging.ERROR, logger="gateway.ledger")
    chat, asked = RecordingAdapter(), []
    model = ScriptedModel({"parent": parent({"text": "never asked"}, asked), "leaf": found})
    gateway = await broken_gateways(config, [chat], model, break_results_as_they_are)
    await chat.say("hello", chat="c2")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["echo hello"]  # serving; the delivery it could not give up on is not run
    assert asked == []
    [error] = [r for r in caplog.records if row.delegation_id in r.getMessage() and "kept" in r.getMessage()]
    assert "kept for the next start" in error.getMessage() and "a bug met this row" in error.exc_text
    assert [r.delegation_id for r in gateway.store.delegations.running()] == [row.delegation_id]
    await gateway.stop(grace=0)

    chat, asked = RecordingAdapter(), []  # mended: the next start delivers the results
    model = ScriptedModel({"parent": parent({"text": "results are in"}, asked), "leaf": found})
    gateway = await broken_gateways(config, [chat], model)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["results are in"] and len(asked) == 1
    assert not any(UNDELIVERABLE in text for text in chat.texts())
    assert gateway.store.delegations.running() == []
