"""The ledger of background delegations: results delivered exactly once, across restarts;
interrupted children reported (or resumed); /retry; /agents after a restart; failures shown."""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.commands import RETRY_ARGS
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import PROCESS_EXIT, SubagentState
from tests.gateway.wire import call, is_child, openai_model
from tests.polling import until

BACKGROUND = {"display": {"interim_assistant_messages": True}}
TASKS = {"tasks": [{"goal": "alpha"}, {"goal": "beta"}]}


def parent(*, completion: dict | None = None):
    """Delegates on "delegate", acknowledges the dispatch, answers results with ``completion``."""

    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith("[Background delegation results]"):
            return completion or {"text": "results: " + ("alpha" if "alpha" in content else "?")}
        if last["role"] == "user" and "delegate" in content:
            return {"tool_calls": [{"name": "delegate_task", "arguments": TASKS}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"text": f"echo {content}"}

    return script


async def start(gateways, tmp_path, leaf, *, completion=None, **sections):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(completion=completion), "leaf": leaf})
    gateway = await gateways(make_config(tmp_path, **{**BACKGROUND, **sections}), [chat], model=model)
    return chat, model, gateway


def rows(gateway):
    return gateway.store.delegations.running()


async def test_results_that_ran_but_were_not_delivered_arrive_once_after_a_restart(tmp_path, gateways):
    completion = {"wait": "completion turn", "text": "never said"}
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"text": f"found {r.metadata['goal']}"},
                                       completion=completion)
    await chat.say("please delegate")
    await model.reached("completion turn")  # the children ran; their completion turn is under way
    await gateway.stop(grace=0)  # ...when the process stops
    assert chat.texts() == ["on it"]

    chat2, _, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "not run again"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    assert chat2.texts() == ["results: alpha"]
    assert gateway2.store.delegations.running() == []
    await gateway2.stop(grace=0)

    chat3, model3, gateway3 = await start(gateways, tmp_path, lambda r: {"text": "x"})
    await settled(gateway3)
    assert chat3.messages == [] and model3.requests == []  # delivered: never again


async def test_children_a_restart_interrupted_are_reported_listed_and_retried(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"text": "partial notes",
                                                                      "tool_calls": [{"name": "list_files"}]}
                                       if r.iteration == 0 else {"wait": "forever"})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    async with asyncio.timeout(5):
        for _ in range(2):
            await model.reached("forever")
    await gateway.stop(grace=0)

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": f"redone {r.metadata['goal']}"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [report] = chat2.texts()
    assert report.startswith("⚠️ The gateway restarted") and "/retry" in report
    assert "Interrupted: alpha — partial output: partial notes" in report and "beta" in report
    await chat2.say("/agents")
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    listing = chat2.texts()[1]
    assert "interrupted by a restart" in listing and listing.count("interrupted by the restart") == 2

    await chat2.say("/retry")
    await chat2.wait_for(lambda: len(chat2.messages) == 4)
    await settled(gateway2)
    assert chat2.texts()[2] == "Retrying 2 subagents: alpha; beta. The results will follow."
    assert chat2.texts()[3] == "results: alpha"
    await chat2.say("/retry")
    await chat2.wait_for(lambda: len(chat2.messages) == 5)
    assert chat2.texts()[4].startswith("Nothing to retry: every subagent")


async def test_in_a_group_the_restart_report_replies_to_the_message_that_asked(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"})
    await chat.say("please delegate", private=False, message_id="m-7")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    async with asyncio.timeout(5):
        for _ in range(2):
            await model.reached("forever")
    await gateway.stop(grace=0)

    chat2, _, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "not run again"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [report] = chat2.messages
    assert report.text.startswith("⚠️ The gateway restarted") and report.outbound.reply_to == "m-7"
    assert chat.messages[0].outbound.reply_to == "m-7"  # as the acknowledgement did


async def test_with_on_restart_resume_interrupted_children_run_again(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"},
                                       lifecycle={"on_restart": "resume"})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("forever")
    await gateway.stop(grace=0)

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "done after all"},
                                          lifecycle={"on_restart": "resume"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    assert chat2.texts() == ["results: alpha"]
    assert len([r for r in model2.requests if r.role == "leaf"]) == 2


@pytest.mark.parametrize("max_attempts, said", [(2, "2 attempts"), (1, "1 attempt")])
async def test_resume_gives_up_after_max_attempts_and_reports(tmp_path, gateways, max_attempts, said):
    settings = {"lifecycle": {"on_restart": "resume", "max_attempts": max_attempts}}
    for attempt in range(max_attempts + 1):
        chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"}, **settings)
        if attempt == 0:
            await chat.say("please delegate")
            await chat.wait_for(lambda: chat.texts() == ["on it"])
        if attempt < max_attempts:
            await model.reached("forever")
            await gateway.stop(grace=0)
    await chat.wait_for(lambda: chat.messages)
    [report] = chat.texts()
    assert f"Interrupted (lost after {said}): alpha" in report


@pytest.mark.parametrize("answer", ["NO_REPLY", "All went fine."])
async def test_a_failed_child_is_visible_even_when_the_model_says_nothing(tmp_path, gateways, answer):
    def leaf(request):
        if request.metadata["goal"] == "beta":
            return {"error": "server_error", "message": "model exploded"}
        return {"text": "fine"}

    chat, model, gateway = await start(gateways, tmp_path, leaf, completion={"text": answer})
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    completion = chat.texts()[1]
    assert completion.endswith("⚠️ Subagent failed: beta: model exploded")
    assert ("All went fine." in completion) == (answer != "NO_REPLY")


@pytest.mark.parametrize("silence", ["NO_REPLY", "`NO_REPLY`."])  # as asked, and as models often write it
async def test_no_reply_to_results_without_failures_sends_nothing_and_settles(tmp_path, gateways, silence):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"text": "fine"},
                                       completion={"text": silence})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["on it"]
    [row] = gateway.store.delegations.latest(next(iter(gateway.sessions)).session_id, 1)
    assert (row.status, row.reason) == ("suppressed", "NO_REPLY")
    await chat.say("/agents")  # the model read them and chose silence: not a failure to deliver
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert "results read, nothing to tell the chat (NO_REPLY)" in chat.texts()[1]


async def test_stop_settles_the_delegation_and_nothing_arrives_later(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await chat.say("/stop")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    assert chat.texts()[1].startswith("Stopped 2 subagents")
    [row] = gateway.store.delegations.latest(next(iter(gateway.sessions)).session_id, 1)
    assert (row.status, row.reason) == ("suppressed", "/stop")


async def test_a_launch_cut_short_by_a_follow_up_leaves_no_pending_child(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"})
    journal = gateway.host.lifecycle.journal
    real_sync = journal.sync_launch
    reached, release = asyncio.Event(), asyncio.Event()

    async def slow_sync(subagent_ids):
        reached.set()
        await release.wait()  # the launch's commit is slow: the turn is interrupted meanwhile
        await real_sync(subagent_ids)

    journal.sync_launch = slow_sync
    await chat.say("please delegate")
    await reached.wait()
    journal.sync_launch = real_sync
    await chat.say("/stop")
    await chat.wait_for(lambda: chat.messages)
    release.set()  # committed: the launch happened, and its children end as /stop said
    await settled(gateway)
    session = next(iter(gateway.sessions))
    assert gateway.host.children.children(session.session_id) == ()  # none left PENDING
    recent = gateway.host.children.recent(session.session_id)
    assert [c.state.value for c in recent] == ["INTERRUPTED", "INTERRUPTED"]
    # What /stop says it stopped is what ended because of it.
    assert chat.texts()[0] == "Stopped the running turn and 2 subagents. Their partial results are listed by /agents."


@pytest.mark.parametrize("leaf, ended", [
    ({"text": "found"}, (SubagentState.SUCCEEDED, None)),  # before the stop
    ({"wait": "forever"}, (SubagentState.INTERRUPTED, PROCESS_EXIT)),  # with the process
], ids=["finished", "interrupted"])
async def test_a_turn_replayed_after_a_restart_delegates_once_as_far_as_the_chat_can_tell(tmp_path, gateways,
                                                                                           caplog, leaf, ended):
    def acknowledge_never(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "tool":
            return {"wait": "ack"}  # the process stops after the dispatch, before the acknowledgement
        return parent()(request)

    chat = RecordingAdapter()
    model = ScriptedModel({"parent": acknowledge_never, "leaf": lambda r: leaf})
    config = make_config(tmp_path, **BACKGROUND)
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate", event_id="ev-1")
    await model.reached("ack")
    await until(lambda: len([r for r in model.requests if r.role == "leaf"]) == 2)
    await gateway.stop(grace=0)
    assert chat.messages == []

    caplog.set_level(logging.INFO)
    caplog.clear()
    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "found"})
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    await settled(gateway2)
    assert chat2.texts() == ["on it", "results: alpha"]  # one acknowledgement, one set of results
    first, second = sorted(gateway2.store.delegations.latest(next(iter(gateway2.sessions)).session_id, 5),
                           key=lambda r: r.dispatched_at)
    assert (first.status, first.reason) == ("suppressed", "replayed") and second.status == "delivered"
    # In-process, the first run's children ended before the process or with it: nothing is left to stop.
    old = await gateway2.host.children.lookup([t.subagent_id for t in first.tasks])
    assert [(c.state, c.error) for c in old.values()] == [ended] * 2
    assert not any("whose turns run again are being stopped" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_replayed_turns_children_still_running_on_temporal_are_stopped_before_it_runs_again(
        tmp_path, gateways, temporal_server, caplog):
    """On Temporal the first run's children outlive the gateway: followed on, they would run to their
    end for no one (their delegation delivers nothing), their work done twice by the turn run again."""
    import uuid

    from temporalio.client import WorkflowExecutionStatus

    from agent import ToolRegistry
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    def acknowledge_never(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "tool":
            return {"wait": "ack"}  # the process stops after the dispatch, before the acknowledgement
        return parent()(request)

    first_run = [True]
    leaves = ScriptedModel({"leaf": lambda r: {"wait": "first run", "text": "ran for no one"} if first_run[0]
                            else {"text": "found"}})
    settings = TemporalSettings(address=temporal_server.address, task_queue=f"replay-{uuid.uuid4().hex[:10]}")
    config = make_config(tmp_path, **BACKGROUND, lifecycle={
        "engine": "temporal", "temporal": {"address": settings.address, "task_queue": settings.task_queue}})
    client = await connect(settings)
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: leaves)
    async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
        try:
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": acknowledge_never}))
            await chat.say("please delegate", event_id="ev-1")
            await until(lambda: len(leaves.requests) == 2, 15)  # both children are in their model calls
            [row] = rows(gateway)
            old = [t.subagent_id for t in row.tasks]
            await gateway.stop(grace=0)  # the children run on; the turn is left unfinished
            first_run[0] = False

            caplog.set_level(logging.INFO, logger="gateway.ledger")
            chat2 = RecordingAdapter()
            gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent()}))
            view = gateway2.host.children
            async with asyncio.timeout(15):
                await view.wait_finished(old)
            # Their calls, cut off, end now rather than as the worker stops: this test is about the gateway,
            # not a worker stopping with answers on their way to Temporal (CI once hung here 60 s, cause unseen).
            leaves.release("first run")
            found = await view.lookup(old)
            assert [(found[sid].state, found[sid].error) for sid in old] == [(SubagentState.INTERRUPTED,
                                                                              PROCESS_EXIT)] * 2
            for sid in old:
                assert (await client.get_workflow_handle(sid).describe()).status is not WorkflowExecutionStatus.RUNNING
            assert "2 subagent(s) of delegations whose turns run again are being stopped" in caplog.messages
            await chat2.wait_for(lambda: len(chat2.messages) == 2, timeout=15)
            await settled(gateway2, timeout=15)
            assert chat2.texts() == ["on it", "results: alpha"]  # one acknowledgement, one set of results
            assert len(leaves.requests) == 4  # the old two, the new two: none run again
            await chat2.say("/agents")
            await chat2.wait_for(lambda: len(chat2.messages) == 3)
            listing = chat2.texts()[2]
            assert f"Background task {row.delegation_id} (results not delivered (replayed)):" in listing
            assert all(f"{sid} — " in listing for sid in old)
            assert listing.count("interrupted by the restart") == 2
        finally:
            leaves.release("first run")


async def beta_failed(tmp_path, gateways, betas: list | None = None):
    """A chat whose background delegation's beta failed, settled; betas run again wait for "retried". Each
    of beta's model requests is added to ``betas``."""
    betas = [] if betas is None else betas

    def leaf(request):
        if request.metadata["goal"] != "beta":
            return {"text": "fine"}
        betas.append(request)
        if len(betas) == 1:
            return {"error": "server_error", "message": "model exploded"}
        return {"wait": "retried", "text": "fine at last"}

    chat, model, gateway = await start(gateways, tmp_path, leaf)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    return chat, model, gateway


async def test_retry_sent_twice_at_once_runs_the_failed_children_once(tmp_path, gateways):
    betas = []
    chat, model, gateway = await beta_failed(tmp_path, gateways, betas)
    await asyncio.gather(chat.say("/retry"), chat.say("/retry"))  # a double send, both handed over at once
    await chat.wait_for(lambda: len(chat.texts("command")) == 2)
    assert sorted(chat.texts("command")) == [
        "Nothing to retry yet: the latest background delegation is still running.",
        "Retrying 1 subagent: beta. The results will follow.",
    ]
    model.release("retried")
    await chat.wait_for(lambda: len(chat.texts("completion")) == 2)
    await settled(gateway)
    assert len(betas) == 2 and len(chat.texts("completion")) == 2


async def test_after_a_restart_each_report_says_what_runs_its_own_children_again(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"})
    for n in (1, 2):  # two background delegations at work in one chat
        await chat.say("please delegate")
        await chat.wait_for(lambda: chat.texts() == ["on it"] * n)
    async with asyncio.timeout(5):
        while sum(1 for r in model.requests if r.role == "leaf") < 4:
            await model.reached("forever")
            await asyncio.sleep(0)
    older, newer = sorted(rows(gateway), key=lambda r: r.dispatched_at)
    await gateway.stop(grace=0)

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": f"redone {r.metadata['goal']}"})
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    await settled(gateway2)
    first, second = chat2.texts()
    assert first.endswith("Send /agents retry ID to run one of them again "
                          f"({older.tasks[0].subagent_id}, {older.tasks[1].subagent_id}).")
    assert second.endswith("Send /retry to run the interrupted ones again.")
    await chat2.say("/retry")  # what the newer report says runs the newer delegation's children again
    await chat2.wait_for(lambda: "completion" in chat2.kinds()[2:])
    await chat2.say(f"/agents retry {older.tasks[0].subagent_id}")  # and what the older one says, one of its own
    await chat2.wait_for(lambda: chat2.kinds()[2:].count("completion") == 2)
    await settled(gateway2)
    assert chat2.texts("command")[0] == "Retrying 2 subagents: alpha; beta. The results will follow."
    assert chat2.texts("command")[1].startswith(f"Retrying {older.tasks[0].subagent_id} as sa-")


async def test_stop_settles_a_delegation_older_than_the_latest_fifty(tmp_path, gateways):
    def leaf(request):
        return {"wait": "forever"} if request.metadata["goal"] == "slow" else {"text": "quick"}

    def script(request: ModelRequest) -> dict:
        last = request.messages[-1]
        content = str(last.get("content"))
        if last["role"] == "user" and content.startswith("[Background delegation results]"):
            return {"text": "NO_REPLY"}
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": content}}]}
        return {"text": "on it"}

    chat = RecordingAdapter()
    model = ScriptedModel({"parent": script, "leaf": leaf})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    for n, goal in enumerate(["slow", *["quick"] * 50], 1):  # a long session: one slow job, then fifty quick ones
        await chat.say(goal)
        await chat.wait_for(lambda: len(chat.texts()) == n)
    await until(lambda: len(rows(gateway)) <= 1)
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts("command") == ["Stopped 1 subagent. The subagent's partial result is listed by /agents."]
    assert chat.texts("completion") == []  # nothing of the stopped work reaches the chat
    assert rows(gateway) == []


async def test_a_completion_turn_replayed_after_a_restart_delegates_once_as_far_as_the_chat_can_tell(
        tmp_path, gateways):
    def follows_up(ack: dict):
        """Delegates alpha and beta; their completion turn delegates gamma, then says ``ack``."""

        def script(request: ModelRequest) -> dict:
            last = request.messages[-1]
            results = [str(m["content"]) for m in request.messages if m["role"] == "user"][-1]
            if not results.startswith("[Background delegation results]"):
                return parent()(request)
            if "gamma" in results:
                return {"text": "gamma done"}
            if last["role"] == "tool":
                return ack
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": "gamma"}]}}]}

        return script

    def leaf(request: ModelRequest) -> dict:
        return {"wait": "forever"} if request.metadata["goal"] == "gamma" else {"text": "found"}

    chat = RecordingAdapter()
    model = ScriptedModel({"parent": follows_up({"wait": "ack"}), "leaf": leaf})
    config = make_config(tmp_path, **BACKGROUND)
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("ack")  # the completion turn dispatched gamma; the process stops before it ends
    await gateway.stop(grace=0)
    assert chat.texts() == ["on it"]

    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": follows_up({"text": "following up"}), "leaf": lambda r: {"text": "found"}})
    gateway2 = await gateways(config, [chat2], model=model2)
    await chat2.wait_for(lambda: "gamma done" in chat2.texts())
    await settled(gateway2)
    assert chat2.texts() == ["following up", "gamma done"]  # no report on the first run's gamma


async def test_results_whose_delivery_the_store_refused_once_are_delivered_without_a_restart(tmp_path, gateways,
                                                                                               caplog):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "children done", "text": "found"})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])

    def no_reading_delegations(action, table, *_):
        refused = action == sqlite3.SQLITE_READ and table == "gateway_delegations"
        return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK

    connection = gateway.store.db._conn
    connection.set_authorizer(no_reading_delegations)  # a failing disk, while the results are handed on
    model.release("children done")
    await until(lambda: any(r.name == "gateway.ledger" and r.levelno == logging.ERROR for r in caplog.records))
    connection.set_authorizer(None)
    await chat.wait_for(lambda: chat.texts() == ["on it", "results: alpha"])
    await settled(gateway)
    assert rows(gateway) == []


@pytest.mark.parametrize("on_restart", ["report", "resume"])
async def test_children_new_ended_do_not_come_back_after_a_restart(tmp_path, gateways, on_restart):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"wait": "forever"},
                                       lifecycle={"on_restart": on_restart})
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("forever")
    await chat.say("/new")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await gateway.stop(grace=0)

    chat2, model2, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "done after all"},
                                          lifecycle={"on_restart": on_restart})
    await settled(gateway2)
    assert chat2.texts() == [] and not [r for r in model2.requests if r.role == "leaf"]


PROVIDER_KEY = "sk-proj-secret-0123456789"


def provider_error(status: int, message: str, code: str | None) -> tuple:
    return status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}


@pytest.mark.parametrize(("failure", "reason"), [
    (provider_error(401, f"Incorrect API key provided: {PROVIDER_KEY[:8]}****6789.", "invalid_api_key"),
     "the model provider did not accept this gateway's credentials"),
    (provider_error(429, "You exceeded your current quota, org-a1b2c3.", "insufficient_quota"),
     "this gateway's account with the model provider has run out of credit"),
    (provider_error(400, "This model's maximum context length is 8192 tokens (org-a1b2c3).",
                    "context_length_exceeded"), "its work grew longer than the model can take in"),
    (provider_error(429, "Rate limit reached for gpt-4o in organization org-a1b2c3.", "rate_limit_exceeded"),
     "it could not get an answer from the model just now"),
], ids=["auth", "quota", "context", "rate_limited"])
async def test_a_child_the_model_provider_failed_is_told_to_the_chat_in_its_words_not_the_providers(
        tmp_path, llm, gateways, caplog, failure, reason):
    server = await llm()
    parent_saw = []

    def play(body):
        if is_child(body):
            return None  # the child's call takes the queued failure
        last = body["messages"][-1]
        if str(last.get("content")).startswith("[Background delegation results]"):
            parent_saw.append(last["content"])
            return {"text": "results are in"}
        return {"text": "on it"} if last["role"] == "tool" else call("delegate_task", {"goal": "alpha"})

    server.respond_with(play)
    server.push_error(*failure)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server, api_key=PROVIDER_KEY), **BACKGROUND),
                             [chat])
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await chat.say("/agents")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    await settled(gateway)
    completion, listing = chat.texts()[1:]
    assert completion == f"results are in\n\n⚠️ Subagent failed: alpha: {reason}"
    assert f"— alpha — failed: {reason}" in listing
    provider_words = failure[1]["error"]["message"]
    assert provider_words in parent_saw[0]  # the model reads the detail it can act on; the operator, the log
    assert provider_words in caplog.text
    assert not any("org-a1b2c3" in text or "****" in text for text in chat.texts())


async def test_a_child_that_spent_its_steps_without_an_answer_says_so(tmp_path, gateways):
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"tool_calls": [{"name": "list_files"}]},
                                       delegation={"max_iterations": 2})
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await settled(gateway)
    reason = "it ran out of steps (delegation.max_iterations: 2) before writing an answer"
    assert chat.texts()[1].endswith(f"⚠️ Subagent failed: alpha: {reason}\n⚠️ Subagent failed: beta: {reason}")
    results = [str(m.get("content")) for r in model.requests if r.role == "parent" for m in r.messages
               if str(m.get("content")).startswith("[Background delegation results]")]
    assert f'"error": "{reason}", "exit_reason": "max_iterations", "truncated": true' in results[0]


async def test_the_restart_report_tells_a_child_the_model_provider_failed_in_its_words_not_the_providers(
        tmp_path, gateways):
    provider_words = "model request failed (auth): Incorrect API key provided: sk-proj-****6789 (org-a1b2c3)."

    def leaf(request):
        if request.metadata["goal"] == "alpha":
            return {"error": "auth", "message": provider_words}
        return {"wait": "forever"}

    chat, model, gateway = await start(gateways, tmp_path, leaf)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("forever")
    session_id = next(iter(gateway.sessions)).session_id
    # alpha failed while beta still works: the delegation is not done
    await until(lambda: any(c.state is SubagentState.FAILED for c in gateway.host.children.recent(session_id)))
    await gateway.stop(grace=0)

    chat2, _, gateway2 = await start(gateways, tmp_path, lambda r: {"text": "unused"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [report] = chat2.texts()
    assert "• Failed: alpha — the model provider did not accept this gateway's credentials" in report
    assert "org-a1b2c3" not in report and "****" not in report


async def test_a_background_answer_kept_whole_is_kept_in_its_chats_own_folder(tmp_path, gateways):
    # Cut for the parent past delegation.max_summary_chars, the whole answer is kept in the workspace,
    # which every chat shares: in .switchboard/delegation/ any chat's file tools could read it.
    chat, model, gateway = await start(gateways, tmp_path, lambda r: {"text": f"{r.metadata['goal']} " * 100},
                                       delegation={"max_summary_chars": 200})
    await chat.say("please delegate")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    results = next(str(m["content"]) for r in model.requests for m in r.messages
                   if str(m["content"]).startswith("[Background delegation results]"))
    kept = sorted(re.findall(r"full text: read_file path=(\S+) ", results))
    assert len(kept) == 2 and all(p.startswith("attachments/chat/c1/.switchboard/delegation/sa-") for p in kept)
    workspace = gateway.host.workspace
    assert sorted((workspace / p).read_text().split()[0] for p in kept) == ["alpha", "beta"]


def no_settling(action: int, table: str | None, *_) -> int:
    """An SQLite authorizer refusing the settling of delegations (a failing disk, for those writes alone)."""
    refused = action == sqlite3.SQLITE_UPDATE and table == "gateway_delegations"
    return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK


async def delegating_with_cards(tmp_path, gateways, leaf, *, delegations: int = 1, completion: dict | None = None):
    """A chat that delegated ``delegations`` times, its children at work, each delegation's card shown."""
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent(completion=completion), "leaf": leaf})
    display = {**BACKGROUND["display"], "progress": "card", "progress_delay": 3}
    gateway = await gateways(make_config(tmp_path, display=display, agent={"gateway_notify_interval": 180}),
                             [chat], model=model, clock=clock)
    for n in range(1, delegations + 1):
        await chat.say("please delegate")
        await chat.wait_for(lambda: chat.texts("reply") == ["on it"] * n)
    await clock.until_sleeping(delegations, lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds().count("notice") == delegations)
    return chat, model, gateway, clock


async def test_a_delegation_whose_settling_the_store_refused_keeps_its_cards_tally_until_it_is_settled(
        tmp_path, gateways):
    # The completion turn's reply is journaled, but the store refuses its delegation's outcome (a failing disk):
    # the turn's end is owed, and paid with the chat's next turn. Before, the ledger dropped how the subagents
    # ended as it first tried to settle: the card, finished once the settle went through, read as a success.
    chat, model, gateway, _ = await delegating_with_cards(
        tmp_path, gateways, lambda r: {"wait": "work", "text": "" if r.metadata["goal"] == "beta" else "found"})
    card = chat.messages[1]

    connection = gateway.store.db._conn
    connection.set_authorizer(no_settling)
    model.release("work")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await until(lambda: not gateway.runner.busy)
    session = next(iter(gateway.sessions))
    assert session.owed and rows(gateway)  # the reply went out; its delegation is not settled yet
    assert card.text.startswith("⏳")
    connection.set_authorizer(None)

    await chat.say("hello")  # its turn pays the end owed before it begins
    await chat.wait_for(lambda: card.text.startswith("✓"))
    assert card.text == "✓ Done in 3 s · 2 subagents (1 failed)"
    await chat.wait_for(lambda: chat.texts()[-1] == "echo hello")
    await settled(gateway)
    assert rows(gateway) == [] and not session.owed


async def test_a_card_whose_results_the_model_chose_not_to_answer_reads_done(tmp_path, gateways):
    # NO_REPLY settles the delegation as suppressed, but its subagents finished and their results were read:
    # the card said "⏹ Stopped", as for a /stop, to a user who stopped nothing.
    chat, model, gateway, _ = await delegating_with_cards(
        tmp_path, gateways, lambda r: {"wait": "work", "text": "found"}, completion={"text": "NO_REPLY"})
    card = chat.messages[1]
    model.release("work")
    await chat.wait_for(lambda: not card.text.startswith("⏳"))
    await settled(gateway)
    assert card.text == "✓ Done in 3 s · 2 subagents"
    assert chat.texts() == ["on it", card.text]


async def test_retry_with_an_id_after_it_retries_nothing_and_says_how_to_retry_one(tmp_path, gateways):
    # "/retry sa-…" ran every failed subagent of the latest delegation again, not the one it named.
    failing = {"alpha", "beta"}

    def leaf(request):
        goal = request.metadata["goal"]
        if goal in failing:
            failing.discard(goal)
            return {"error": "server_error", "message": "model exploded"}
        return {"text": f"found {goal}"}

    chat, _, gateway = await start(gateways, tmp_path, leaf)
    await chat.say("please delegate")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    (row,) = gateway.store.delegations.latest(next(iter(gateway.sessions)).session_id, 1)
    one = row.tasks[0].subagent_id
    await chat.say(f"/retry {one}")
    await chat.wait_for(lambda: chat.texts("command"))
    assert chat.texts("command") == [RETRY_ARGS]
    await settled(gateway)
    assert len(gateway.store.delegations.latest(next(iter(gateway.sessions)).session_id, 5)) == 1
