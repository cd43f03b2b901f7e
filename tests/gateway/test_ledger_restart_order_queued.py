"""A chat's work keeps its order across restarts: a completion turn (background results) queued behind a message's
turn when the process died runs again after that message and before the messages that came after its results,
as often as the process dies; one the last process died in keeps its place ahead of the chat's messages through
more deaths before it runs again, charged once for each death while it ran."""

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.app import Gateway
from gateway.dead_letters import CUT_SHORT
from gateway.host import AgentHost
from gateway.ledger import COMPLETION_PREFIX
from gateway.ledger_failures import UNDELIVERABLE
from gateway.store import DelegationRow, GatewayStore
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.ledger_restarts import RESULTS, delegating, parent, started_again, stopped
from tests.gateway.test_dead_letters import killed_now
from tests.gateway.test_turn_end_full_disk import until


def holding(request: ModelRequest) -> dict:
    """Delegates on "please delegate"; holds the turn of "first" at ``first``."""
    last = request.messages[-1]
    said = str(last.get("content"))
    if last["role"] == "user" and said.startswith(RESULTS):
        return {"text": "results"}
    if last["role"] == "user" and "delegate" in said:
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
    if last["role"] == "tool":
        return {"text": "on it"}
    return {"wait": "first", "text": f"re: {said}"} if said == "first" else {"text": f"re: {said}"}


def queued_work(gateway: Gateway) -> list[str]:
    """The chat's queue: a message by its text, a completion turn as ``results``."""
    session = gateway.sessions.find("chat", "c1", None)
    return [] if session is None else ["results" if i.delegation_id else i.text for i in session.queue]


async def died_with_results_queued(tmp_path, gateways):
    """The process died while "first" ran, "second" (sent before the results came) and the completion turn queued
    behind it, then "fourth" (sent after); the config."""
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True})
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": holding, "leaf": lambda request: {"wait": "leaf", "text": "found it"}})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "on it" in chat.texts())
    await chat.say("first")
    await model.reached("first")
    await chat.say("second")
    model.release("leaf")
    await until(lambda: queued_work(gateway) == ["second", "results"])
    await chat.say("fourth")
    await until(lambda: queued_work(gateway) == ["second", "results", "fourth"])
    await stopped(gateway, tmp_path, crash=True)
    return config


@pytest.mark.parametrize("deaths", [1, 2])
async def test_a_completion_turn_queued_when_the_process_died_keeps_its_place_among_the_messages(
        tmp_path, gateways, deaths):
    config = await died_with_results_queued(tmp_path, gateways)
    if deaths == 2:  # dies again while "first" runs again, the rest queued behind it
        model = ScriptedModel({"parent": holding})
        gateway = await gateways(config, [RecordingAdapter()], model=model)
        await model.reached("first")
        await until(lambda: queued_work(gateway) == ["second", "results", "fourth"])
        await stopped(gateway, tmp_path, crash=True)

    gateway, chat, read = await started_again(gateways, config, 4)
    assert chat.texts() == ["re: first", "re: second", "results", "re: fourth"]
    assert not any(text.startswith(COMPLETION_PREFIX) for text in read["second"])
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["fourth"])
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"


async def died_in_its_start(tmp_path, config) -> None:
    """A start that charged the last death to the completion turn and died before that turn began again."""
    gateway = Gateway(AgentHost(config, model=ScriptedModel({"parent": parent(True)})), [RecordingAdapter()])
    restores = []
    resume_first = gateway.ledger.resume_first

    async def dying(rows):  # the death is charged by now
        await gateway.store.durable()
        if not restores:
            restores.append(killed_now(tmp_path))
        await resume_first(rows)

    gateway.ledger.resume_first = dying
    try:
        await gateway.start()
    finally:
        await gateway.stop(grace=0)
    [restore] = restores
    restore()


async def died_in_a_completion_turn(tmp_path, gateways):
    """The process died while a completion turn ran, "second" queued behind it; the config (``inbox.max_attempts``
    2: two deaths charged to the turn give it up)."""
    config = make_config(tmp_path, display={"busy_input_mode": "queue", "interim_assistant_messages": True},
                         inbox={"max_attempts": 2})
    gateway, chat, _ = await delegating(gateways, config)
    await chat.say("second")
    await until(lambda: queued_work(gateway) == ["second"])
    await stopped(gateway, tmp_path, crash=True)
    return config


@pytest.mark.parametrize("deaths_in_start", [1, 2])
async def test_a_completion_turn_charged_a_death_keeps_its_place_when_the_start_dies_before_it_runs(
        tmp_path, gateways, deaths_in_start):
    config = await died_in_a_completion_turn(tmp_path, gateways)
    for _ in range(deaths_in_start):
        await died_in_its_start(tmp_path, config)

    gateway, chat, read = await started_again(gateways, config, 2)
    assert chat.texts() == ["results", "re: second"]  # through the model (charged once of two), first
    assert any(text.startswith(COMPLETION_PREFIX) for text in read["second"])
    [row] = gateway.store.delegations.recent(1)
    assert row.status == "delivered"


async def test_a_completion_turn_charged_a_death_is_charged_another_once_it_runs_again(tmp_path, gateways):
    config = await died_in_a_completion_turn(tmp_path, gateways)
    model = ScriptedModel({"parent": parent(True)})
    gateway = await gateways(config, [RecordingAdapter()], model=model)
    await model.reached("completion")  # begun again
    await stopped(gateway, tmp_path, crash=True)

    gateway, chat, _ = await started_again(gateways, config, 2)
    texts = chat.texts()
    assert texts[0].startswith(UNDELIVERABLE) and "found it" in texts[0]  # given up on, sent as it is, first
    assert texts[1:] == ["re: second"]


def test_a_completion_turn_keeps_its_place_through_a_charged_death_not_a_failure_nor_its_settle(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        table = store.delegations
        for delegation_id in ("cut", "failed", "settled"):
            table.add(DelegationRow(delegation_id, "chat|c1|", "s", "t", 0.0, (), "running"))
            table.queue_delivery(delegation_id)
        table.delivery_failed("cut", CUT_SHORT, keeps_place=True)  # still runs: first in its chat
        table.delivery_failed("failed", "RuntimeError: boom")  # tried again later, at the end of the queue
        table.settle("settled", "delivered")
        assert set(table.delivery_places()) == {"cut"}
        assert table.deliveries_running() == {"cut"} and table.deliveries_begun() == set()
    finally:
        store.close()
