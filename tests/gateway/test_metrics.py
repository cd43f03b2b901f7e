"""/metrics: what Prometheus reads of a gateway, parsed with prometheus_client's own parser."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import aiohttp

from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Forbidden, NetworkError, Outbound, RateLimited, Sent
from tests.gateway.observing import LIST, FailingAdapter, restarted_with_children_on_temporal, samples, served

TOKEN = "console-token-0123456789"


LIVE = ("pending", "starting", "running", "cancel_requested")


async def scrape(base: str, headers: dict[str, str] | None = None):
    async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics", headers=headers) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return samples(await response.text())


async def test_turns_children_deliveries_429s_duplicates_and_what_the_outbox_holds(tmp_path, gateways) -> None:
    chat = FailingAdapter()
    config = make_config(tmp_path, model={"demo": {"child_steps": 2, "step_seconds": 0.05}}, inbox={"max_attempts": 1})
    gateway = await gateways(config, [chat])
    started = asyncio.Event()

    async def child_started(**_: object) -> None:
        started.set()

    gateway.host.hooks.register("subagent_start", child_started)
    async with served(gateway) as server:
        await chat.say(LIST, event_id="ev-list")  # background here: an acknowledgement, then the results
        await started.wait()
        live = await scrape(server.url)
        assert sum(live("switchboard_subagents", state=s) for s in ("pending", "starting", "running")) == 2
        await settled(gateway, timeout=10)
        await chat.say(LIST, event_id="ev-list")  # a redelivery
        chat.fail_next(RateLimited("slow down", retry_after=0.01))
        await chat.say("hello", chat="c2")
        await settled(gateway)
        chat.fail_next(Forbidden("the bot was blocked"))
        await chat.say("hello again", chat="c3")
        await settled(gateway)

        def refuse(row):
            raise sqlite3.OperationalError("database or disk is full")

        gateway.store.sessions.save = refuse  # a new chat's event cannot be handled: a dead letter
        await chat.say("doomed", chat="c4")
        await settled(gateway)
        value = await scrape(server.url)

    assert value("switchboard_turns_total", platform="chat", kind="message", outcome="done") == 3
    assert value("switchboard_turns_total", platform="chat", kind="completion", outcome="done") == 1
    assert value("switchboard_turn_duration_seconds_count", platform="chat", kind="message") == 3
    assert value("switchboard_subagent_runs_total", role="leaf", status="completed") == 2
    assert value("switchboard_subagent_duration_seconds_count", role="leaf", status="completed") == 2
    assert sum(value("switchboard_subagents", state=s) for s in ("pending", "starting", "running")) == 0
    assert value.labels("switchboard_subagents", "state") == {"pending", "starting", "running", "cancel_requested"}
    assert value("switchboard_inbound_events_total", platform="chat") == 5  # the redelivery too
    assert value("switchboard_inbound_duplicates_total", platform="chat") == 1
    assert value("switchboard_platform_rate_limited_total", platform="chat") == 1
    assert value("switchboard_deliveries_total", platform="chat", kind="reply", outcome="sent") == 2
    assert value("switchboard_deliveries_total", platform="chat", kind="reply", outcome="failed") == 1
    assert value("switchboard_deliveries_total", platform="chat", kind="completion", outcome="sent") == 1
    assert value("switchboard_outbox_messages", status="pending") == 0
    assert value("switchboard_outbox_messages", status="failed") == 1
    assert value("switchboard_outbox_messages", status="dead") == 1
    assert value("switchboard_model_calls_total", model="demo", role="parent", outcome="ok") >= 4
    assert value("switchboard_model_calls_total", model="demo", role="leaf", outcome="ok") >= 2
    assert value("switchboard_sessions") == 3  # c4's never got stored


async def test_model_tokens_and_cost_by_model_and_role(tmp_path, gateways) -> None:
    from agent.models.scripted import ScriptedModel

    chat = RecordingAdapter()
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look"}}]}, {"text": "done"}]],
        "leaf": [[{"text": "found it"}]],
    }, name="gpt-test", cost_usd=0.25)
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "inline"}), [chat], model=model)
    async with served(gateway) as server:
        await chat.say("look something up")
        await settled(gateway)
        value = await scrape(server.url)
    assert value("switchboard_model_tokens_total", model="gpt-test", role="parent", type="input") == 2 * 10
    assert value("switchboard_model_tokens_total", model="gpt-test", role="parent", type="output") == 2 * 5
    assert value("switchboard_model_tokens_total", model="gpt-test", role="leaf", type="input") == 10
    assert value("switchboard_model_cost_usd_total", model="gpt-test", role="parent") == 0.5
    assert value("switchboard_model_cost_usd_total", model="gpt-test", role="leaf") == 0.25


async def test_seconds_since_the_last_inbound_event_per_platform(tmp_path, gateways) -> None:
    clock = FakeClock(autojump=False)
    telegram, slack = RecordingAdapter("telegram"), RecordingAdapter("slack")
    gateway = await gateways(make_config(tmp_path), [telegram, slack], script={"parent": [[{"text": "hi"}]]},
                             clock=clock)
    async with served(gateway) as server:
        clock.advance(30)
        await telegram.say("hello")
        await telegram.wait_for(lambda: telegram.messages)
        clock.advance(12)
        value = await scrape(server.url)
    assert value("switchboard_last_inbound_age_seconds", platform="telegram") == 12
    assert value("switchboard_last_inbound_age_seconds", platform="slack") == 42  # silent since the start
    assert value("switchboard_inbound_duplicates_total", platform="slack") == 0  # there from the start


async def test_the_metrics_are_the_ones_docs_console_md_lists(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    served_names = {family.name + ("_total" if family.type == "counter" else ""): family.type
                    for family in gateway.metrics.registry.collect()}
    console_md = (Path(__file__).resolve().parents[2] / "docs" / "console.md").read_text(encoding="utf-8")
    listed = dict(re.findall(r"^\| `(switchboard_\w+)` \| (\w+) \|", console_md, re.M))
    assert listed == served_names


async def test_the_storage_gauge_says_how_long_it_stays_down(tmp_path, gateways) -> None:
    # The HELP line is what an operator reads when the gauge alerts: it must name the recovery
    # window the database applies, not claim that one write that goes through ends it.
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    help_text = next(f.documentation for f in gateway.metrics.registry.collect() if f.name == "switchboard_storage_up")
    assert f"until writes have gone through for {gateway.store.db.recovery_seconds:g} s with none refused" in help_text


async def test_each_gateway_counts_in_its_own_registry(tmp_path, gateways) -> None:
    one, two = RecordingAdapter(), RecordingAdapter()
    first = await gateways(make_config(tmp_path / "a"), [one])
    second = await gateways(make_config(tmp_path / "b"), [two])
    await one.say("hello")
    await settled(first)
    assert first.metrics.registry is not second.metrics.registry
    assert samples(first.metrics.exposition().decode())("switchboard_inbound_events_total", platform="chat") == 1
    assert samples(second.metrics.exposition().decode())("switchboard_inbound_events_total", platform="chat") == 0


async def test_metrics_need_the_console_token_when_one_is_set(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path, server={"console_token": TOKEN}), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/metrics") as response:
            assert response.status == 401 and response.headers["WWW-Authenticate"].startswith("Bearer")
            assert TOKEN not in await response.text()
        await scrape(server.url, {"Authorization": f"Bearer {TOKEN}"})


async def test_without_a_token_metrics_answer_only_on_a_loopback_host(tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    async with served(gateway) as server, aiohttp.ClientSession() as http:
        async with http.get(f"{server.url}/metrics", headers={"Host": "attacker.example"}) as response:
            assert response.status == 403
            assert "server.console_token" in (await response.json())["error"]
        await scrape(server.url)


class LosingAdapter(FailingAdapter):
    """Its first send goes out and then fails as if the answer were lost; it can look sends up."""

    def __init__(self) -> None:
        super().__init__()
        self.lose_next = True

    async def send(self, message: Outbound) -> Sent:
        sent = await super().send(message)
        if self.lose_next:
            self.lose_next = False
            raise NetworkError("the answer was lost")
        return sent

    async def find_sent(self, message: Outbound, since: float) -> str | None:
        return next((m.message_id for m in self.messages if m.outbound.idempotency_key == message.idempotency_key),
                    None)


async def test_a_lookup_that_finds_a_lost_send_is_counted_and_nothing_is_sent_twice(tmp_path, gateways) -> None:
    chat = LosingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "once"}]]})
    async with served(gateway) as server:
        await chat.say("hello")
        await settled(gateway)
        value = await scrape(server.url)
    assert chat.texts() == ["once"]
    assert value("switchboard_outbox_lookups_total", platform="chat", outcome="found") == 1
    assert value("switchboard_deliveries_total", platform="chat", kind="reply", outcome="sent") == 1


async def test_children_running_on_temporal_after_a_restart_count_though_their_session_is_not_loaded(
        tmp_path, gateways, temporal_server) -> None:
    async with restarted_with_children_on_temporal(tmp_path, gateways, temporal_server, "stopped") as (
            gateway, chat), served(gateway) as server:
        value = await scrape(server.url)
        assert value("switchboard_sessions") == 1  # c1's, for its delegation; c2's is not loaded
        assert value("switchboard_subagents", state="running") == 4  # mid-call on the worker
        for chat_id in ("c1", "c2"):
            await chat.say("/stop", chat=chat_id)
        await chat.wait_for(lambda: len(chat.texts("command")) == 2)
        await settled(gateway, timeout=15)
        value = await scrape(server.url)
    assert sum(value("switchboard_subagents", state=s) for s in LIVE) == 0


async def test_children_on_temporal_workers_count_in_the_model_metrics_once(tmp_path, gateways,
                                                                            temporal_server) -> None:
    import uuid

    from agent import ToolRegistry
    from agent.models.scripted import ScriptedModel
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    def leaf(request):
        goal = next(m["content"] for m in request.messages if m["role"] == "user")
        if "doomed" in goal:  # one answered call, then the provider refuses the second
            return {"tool_calls": [{"name": "nothing", "arguments": {}}]} if request.iteration == 0 else {
                "error": "quota", "message": "out of credit"}
        return {"text": "found it", "cost_usd": 0.25}

    chat = RecordingAdapter()
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {
            "tasks": [{"goal": "look"}, {"goal": "doomed search"}]}}]}, {"text": "done"}]],
        "leaf": leaf,
    }, name="gpt-test", cost_usd=0.5)
    settings = TemporalSettings(address=temporal_server.address, task_queue=f"metrics-{uuid.uuid4().hex[:10]}")
    config = make_config(tmp_path, delegation={"gateway_mode": "inline"}, lifecycle={
        "engine": "temporal", "temporal": {"address": settings.address, "task_queue": settings.task_queue}})
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: model)
    async with ChildWorker(await connect(settings), settings.task_queue, toolbox, heartbeat_seconds=0.2):
        gateway = await gateways(config, [chat], model=model)
        async with served(gateway) as server:
            await chat.say("look two things up")
            await settled(gateway, timeout=30)
            value = await scrape(server.url)
    assert value("switchboard_subagent_runs_total", role="leaf", status="completed") == 1
    assert value("switchboard_subagent_runs_total", role="leaf", status="failed") == 1
    # The worker runs no hooks: each child is counted once, from its outcome, when it ends.
    assert value("switchboard_model_calls_total", model="gpt-test", role="leaf", outcome="ok") == 2
    assert value("switchboard_model_calls_total", model="gpt-test", role="leaf", outcome="quota") == 1
    assert value("switchboard_model_tokens_total", model="gpt-test", role="leaf", type="input") == 2 * 10
    assert value("switchboard_model_tokens_total", model="gpt-test", role="leaf", type="output") == 2 * 5
    assert value("switchboard_model_cost_usd_total", model="gpt-test", role="leaf") == 0.25 + 0.5
    assert value("switchboard_model_calls_total", model="gpt-test", role="parent", outcome="ok") == 2
    assert value("switchboard_model_cost_usd_total", model="gpt-test", role="parent") == 2 * 0.5
