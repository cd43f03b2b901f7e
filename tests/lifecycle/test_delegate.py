"""delegate_task with scripted children: batches, roles, budgets, liveness, contracts, images, control."""

import asyncio
import base64
import dataclasses
import json
import re

import pytest

from agent import SYSTEM_CLOCK, AgentSession, HookRegistry, ToolContext, ToolError, active_turn
from agent.models.scripted import ScriptedModel
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from agent.tools.file_scope import FileScope
from lifecycle import SubagentLaunchRequest, SubagentState, delegate_tool
from lifecycle._children import ChildSpec
from lifecycle._entries import apply_summary_budget
from lifecycle._liveness import BUDGET_WARNING
from lifecycle.settings import DelegationSettings
from tests.lifecycle.conftest import child_script
from tests.pictures import PNG


async def delegate(env, args, *, mode="inline", on_dispatch=None):
    tool = delegate_tool(env.service, mode=mode, on_dispatch=on_dispatch)
    return await tool.invoke(args, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))


class Host:
    """What a host does with a background dispatch: wait for its children, then read their results."""

    def __init__(self, env) -> None:
        self.view, self.workspace = env.service.host_view(), env.parent.workspace
        self.dispatches: list = []
        self.delivered: asyncio.Queue = asyncio.Queue()

    def __call__(self, dispatch) -> None:
        self.dispatches.append(dispatch)
        asyncio.ensure_future(self._deliver(dispatch))

    async def _deliver(self, dispatch) -> None:
        entries = await self.view.finished_entries([(t.spec.task_index, t.subagent_id) for t in dispatch.tasks],
                                                   self.workspace)
        await self.delivered.put((dispatch, entries))


async def results(env, args, **kw):
    return json.loads(await delegate(env, args, **kw))["results"]


@pytest.fixture
async def denv(make_env):
    return await make_env(delegate=True)


@pytest.mark.both_engines
async def test_a_batch_runs_in_parallel_and_returns_in_task_order(denv):
    tasks = [{"goal": "[gate:slow] slow"}, {"goal": "[sleep:0.01] fast"}, {"goal": "plain", "context": "ctx"}]
    batch = asyncio.ensure_future(delegate(denv, {"tasks": tasks}))
    await denv.child_model.reached("slow")
    # In parallel: the later tasks make their model calls while the first one's is still waiting
    # (an event, not a wall-clock bound: a loaded machine must not fail this).
    async with asyncio.timeout(5):
        while sum(r.role == "leaf" for r in denv.child_model.requests) < 3:
            await asyncio.sleep(0.005)
    assert not batch.done()
    denv.child_model.release("slow")
    payload = json.loads(await batch)
    assert [r["task_index"] for r in payload["results"]] == [0, 1, 2]
    assert [r["summary"] for r in payload["results"]] == [
        "done: [gate:slow] slow", "done: [sleep:0.01] fast", "done: plain"]
    entry = payload["results"][2]
    assert entry["status"] == "completed" and entry["exit_reason"] == "completed" and entry["truncated"] is False
    assert entry["api_calls"] == 1 and entry["tokens"] == {"input": 10, "output": 5} and entry["model"] == "scripted"
    assert entry["error"] is None and entry["tool_trace"] == []
    for name in ("timeout_seconds", "timed_out_after_seconds", "last_event_age", "timeout_phase"):
        assert entry[name] is None


@pytest.mark.both_engines
async def test_single_task_and_json_string_tasks(denv):
    (single,) = await results(denv, {"goal": "alone", "context": "c"})
    assert single["summary"] == "done: alone"
    batch = await results(denv, {"tasks": json.dumps([{"goal": "a"}, {"goal": "b"}])})
    assert [r["summary"] for r in batch] == ["done: a", "done: b"]


@pytest.mark.parametrize(("args", "message"), [
    ({}, "Provide either `goal`"),
    ({"goal": "  "}, "task 0: `goal` must be a non-empty string"),
    ({"tasks": ["just a string"]}, "task 0 must be an object"),
    ({"goal": "x", "bogus": 1}, "unknown argument(s) bogus"),
    ({"goal": 5}, "`goal` must be a string"),
    ({"tasks": []}, "must be a non-empty list"),
    ({"tasks": "[not json"}, "not valid JSON"),
    ({"tasks": "[" * 5000}, "`tasks` is a string but not valid JSON (nested too deeply)"),
    ({"goal": "x", "output_schema": "[" * 5000}, "task 0: output_schema must be a JSON object (a JSON Schema), "
                                                  "got a string nested too deeply to read"),
    ({"tasks": [{"goal": "x"}] * 11}, "Too many tasks: got 11, but at most 10 run at once"),
    ({"goal": "x", "output_schema": {"type": "strng"}}, "task 0: output_schema is not a valid JSON Schema"),
    ({"tasks": [{"goal": "x"}, {"goal": "y", "output_schema": {"description": "x" * 32_000}}]},
     "task 1: output_schema is 32018 characters as JSON; at most 32000."),
    ({"tasks": [{"goal": "x"}, {"goal": "y", "contxt": "c", "Goal": "z"}]},
     "task 1: unknown argument(s) Goal, contxt; a task takes goal, context, role, route, output_schema, images"),
    ({"goal": "a", "tasks": [{"goal": "b"}]},
     "`goal` cannot be given next to `tasks`: put it inside each task instead."),
    ({"tasks": [{"goal": "b"}], "context": "c", "output_schema": {"type": "object"}, "images": ["a.png"]},
     "`context`, `output_schema` and `images` cannot be given next to `tasks`: put them inside each task instead."),
])
async def test_bad_calls_are_tool_errors_that_say_what_to_do(denv, args, message):
    with pytest.raises(ToolError, match=re.escape(message)):
        await delegate(denv, args)
    assert denv.service.host_view().children("parent-1") == ()


async def test_null_is_the_same_as_leaving_an_optional_argument_out(denv):
    nulls = dict.fromkeys(("context", "role", "route", "output_schema", "images", "action", "subagent_id", "message"))
    (single,) = await results(denv, {"goal": "a", "tasks": None, **nulls})
    task = {"goal": "b", **dict.fromkeys(("context", "role", "route", "output_schema", "images"))}
    (batch,) = await results(denv, {"goal": None, "tasks": [task], **nulls})
    assert (single["summary"], batch["summary"]) == ("done: a", "done: b")
    host = Host(denv)
    dispatched = json.loads(await delegate(denv, {"goal": "c", **nulls}, mode="background", on_dispatch=host))
    assert dispatched["status"] == "dispatched" and dispatched["goals"] == ["c"]
    await asyncio.wait_for(host.delivered.get(), 5)


@pytest.mark.both_engines
async def test_the_concurrency_limit_is_configurable_without_a_ceiling(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_concurrent_children=12))
    assert len(await results(env, {"tasks": [{"goal": f"t{i}"} for i in range(12)]})) == 12


@pytest.mark.both_engines
async def test_the_iteration_budget_ends_as_max_iterations_and_truncated(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_iterations=3))
    (entry,) = await results(env, {"goal": "[tools-forever]"})
    assert (entry["exit_reason"], entry["truncated"], entry["status"]) == ("max_iterations", True, "completed")
    assert entry["summary"] == "step 2" and entry["api_calls"] == 3
    assert [t["tool"] for t in entry["tool_trace"]] == ["list_files"] * 3


async def test_children_use_the_delegation_model_when_configured(make_env):
    env = await make_env(delegate=True)
    cheap = ScriptedModel({"*": lambda req: {"text": "from the cheap model"}}, name="cheap")
    env.service.host = dataclasses.replace(env.service.host, child_model=lambda parent: cheap)
    (entry,) = await results(env, {"goal": "x"})
    assert (entry["summary"], entry["model"]) == ("from the cheap model", "cheap")


async def test_orchestrators_delegate_inline_within_the_depth_limit(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_spawn_depth=2))
    handle_tools = []
    env.hooks.register("subagent_start", lambda **e: handle_tools.append(e["child_role"]))
    tool = delegate_tool(env.service)
    (record,) = await env.service._supervisor.submit(env.parent, "t", [ChildSpec(goal="[show-prompt]", role="orchestrator")])
    await record.waiter()
    assert handle_tools == ["orchestrator"]
    seen = [r for r in env.child_model.requests if r.role == "orchestrator"][-1]
    names = {t["function"]["name"] for t in seen.tools}
    assert "delegate_task" in names and "clarify" not in names
    assert tool.name == "delegate_task"


async def test_an_orchestrator_launched_without_the_delegation_toolset_runs_and_shows_as_a_leaf(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_spawn_depth=3))
    roles = []
    env.hooks.register("subagent_start", lambda **e: roles.append(e["child_role"]))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[show-prompt] plan", role="orchestrator",
                                                                allowed_toolsets=("file",)))
        await env.service.wait(handle, timeout_seconds=5)
        result = await env.service.result(handle)
    assert (handle.role, roles) == ("leaf", ["leaf"])
    assert "delegate_task" not in json.loads(result.summary)["system"]


@pytest.mark.both_engines
async def test_an_orchestrator_is_one_only_where_its_engine_can_give_it_delegate_task(make_env, engine_name):
    # Temporal's workers give no child delegate_task: planned an orchestrator there, a child was shown as one and
    # told to split its task with a tool it lacked (and at depth 1 "of at most 1", whatever the limit).
    env = await make_env(delegate=True, delegation=DelegationSettings(max_spawn_depth=3))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="[show-prompt] plan", role="orchestrator"))
        await env.service.wait(handle, timeout_seconds=30)
        result = await env.service.result(handle)
    system = json.loads(result.summary)["system"]
    if engine_name == "temporal":
        assert handle.role == "leaf" and "delegate_task" not in system
    else:
        assert handle.role == "orchestrator" and "you are at depth 1 of at most 3" in system


async def test_orchestrators_filling_every_slot_lend_them_to_their_own_children(make_env):
    # Each orchestrator waits inside a slot for children that need one: holding it, they waited for ever.
    env = await make_env(delegate=True, max_running=2, delegation=DelegationSettings(max_spawn_depth=2))
    engine = env.service._supervisor.engine
    busy = []

    def script(request):
        busy.append(engine.running)
        if request.role == "orchestrator" and request.iteration == 0:
            tasks = [{"goal": f"{request.metadata['goal']} part {n}"} for n in (1, 2)]
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}
        return child_script(request)

    env.child_model.script.update(orchestrator=script, leaf=script)
    tasks = [{"goal": f"plan {n}", "role": "orchestrator"} for n in (1, 2)]
    entries = await asyncio.wait_for(results(env, {"tasks": tasks}), 10)
    assert [(e["status"], e["role"]) for e in entries] == [("completed", "orchestrator")] * 2
    leaves = [r for r in env.child_model.requests if r.role == "leaf"]
    assert len(leaves) == 4
    assert max(busy) <= 2  # lending never lets more than max_running children run at once
    assert (engine.running, engine.pending) == (0, 0)


async def test_a_stopped_orchestrator_waiting_for_its_children_gives_its_slot_back(make_env):
    env = await make_env(delegate=True, max_running=1, delegation=DelegationSettings(max_spawn_depth=2))
    engine = env.service._supervisor.engine

    def script(request):
        if request.role == "orchestrator" and request.iteration == 0:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "[gate:leaf] dig"}}]}
        return child_script(request)

    env.child_model.script["orchestrator"] = script
    batch = asyncio.ensure_future(results(env, {"goal": "plan", "role": "orchestrator"}))
    await env.child_model.reached("leaf")
    assert engine.running == 1  # the leaf, on the slot its orchestrator lent it
    assert await env.service.host_view().interrupt_children("parent-1", "stopped by /stop") == 2  # the leaf too
    (entry,) = await asyncio.wait_for(batch, 10)  # the stop reaches the leaf through its orchestrator
    assert entry["status"] == "interrupted"
    assert (engine.running, engine.pending) == (0, 0)
    (after,) = await asyncio.wait_for(results(env, {"goal": "after the stop"}), 10)  # the slot is free again
    assert after["status"] == "completed"


@pytest.mark.both_engines
async def test_a_stall_between_turns_times_out_with_its_fields(make_env):
    settings = DelegationSettings(stale_between_turns_seconds=0.1, heartbeat_interval_seconds=0.01)
    env = await make_env(delegate=True, delegation=settings, clock=SYSTEM_CLOCK)
    (entry,) = await results(env, {"goal": "[stall-model]"})
    assert (entry["status"], entry["exit_reason"]) == ("timeout", "timeout")
    # It hangs in its first model call: none had answered, and the text counts as api_calls does.
    assert entry["timeout_seconds"] == 0.1 and entry["timeout_phase"] == "before_first_llm_call"
    assert entry["api_calls"] == 0 and "after 0 API call(s)" in entry["error"]
    assert entry["last_event_age"] >= 0.1 and entry["timed_out_after_seconds"] >= 0.1
    assert "stopped making progress" in entry["error"]


@pytest.mark.both_engines
async def test_a_stall_inside_a_tool_uses_the_in_tool_threshold(make_env):
    settings = DelegationSettings(stale_between_turns_seconds=0.05, stale_in_tool_seconds=0.3,
                                  heartbeat_interval_seconds=0.01)
    env = await make_env(delegate=True, delegation=settings, clock=SYSTEM_CLOCK)
    (entry,) = await results(env, {"goal": "[stall-tool]"})
    assert entry["status"] == "timeout" and entry["timeout_seconds"] == 0.3
    assert entry["last_event_age"] >= 0.3


class ManualClock:
    """Monotonic time that moves only when a test advances it; sleepers wake as it passes."""

    def __init__(self):
        self.now = 1000.0
        self.moved = asyncio.Condition()

    def time(self):
        return self.now

    def monotonic(self):
        return self.now

    async def sleep(self, seconds):
        target = self.now + seconds
        async with self.moved:
            await self.moved.wait_for(lambda: self.now >= target)

    async def advance(self, seconds, step=1.0):
        end = self.now + seconds
        while self.now < end:
            async with self.moved:
                self.now = min(end, self.now + step)
                self.moved.notify_all()
            for _ in range(20):
                await asyncio.sleep(0)


async def test_the_idle_cap_warns_once_per_window_and_rearms_after_progress(make_env):
    clock = ManualClock()
    settings = DelegationSettings(child_timeout_seconds=10, heartbeat_interval_seconds=1)  # below 30: becomes 30
    env = await make_env(delegate=True, delegation=settings, clock=clock)
    gate = asyncio.Event()
    steps = []

    def script(request):
        steps.append([m["content"] for m in request.messages if BUDGET_WARNING in str(m.get("content"))])
        if request.iteration == 0:
            return {"text": "working", "tool_calls": [{"name": "wait_gate"}]}
        return {"hang": True}

    entered = asyncio.Event()

    async def wait_gate(args, ctx):
        entered.set()
        await gate.wait()
        return "gate opened"

    env.service.host.tools.add("wait_gate", "w", {"type": "object"}, wait_gate, toolset="file")
    env.parent.tools["wait_gate"] = env.service.host.tools.get("wait_gate")
    env.child_model.script["leaf"] = script
    task = asyncio.create_task(delegate(env, {"goal": "idle test"}))
    await asyncio.wait_for(entered.wait(), 5)
    await clock.advance(100)  # inside a tool: the idle cap is suspended
    assert not task.done()
    gate.set()  # progress: a new window starts, the child now hangs in its model call
    async with asyncio.timeout(5):
        while len(steps) < 2:  # polling for the child's second model call
            await asyncio.sleep(0.001)
    await clock.advance(25)  # 80 % of 30 s: the warning is queued once
    (run,) = env.service.engine._runs.values()  # the one live child
    assert list(run.session._steer) and list(run.session._steer)[0].startswith(BUDGET_WARNING)
    assert len(run.session._steer) == 1
    await clock.advance(10)
    entry = json.loads(await asyncio.wait_for(task, 5))["results"][0]
    assert entry["status"] == "timeout" and entry["timeout_seconds"] == 30
    assert entry["timeout_phase"] == "after_llm_calls"
    assert "timed out after 30s idle" in entry["error"]


async def test_a_paused_process_does_not_count_the_pause_as_its_childrens_silence(make_env):
    # docker pause, SIGSTOP: the monotonic clock goes on while nothing in the process runs, the
    # children and the liveness monitor alike; the monitor's next heartbeat comes 20 min late.
    clock = ManualClock()
    settings = DelegationSettings(stale_between_turns_seconds=450, heartbeat_interval_seconds=5)
    env = await make_env(delegate=True, delegation=settings, clock=clock)
    calls = []

    def script(request):
        calls.append(request)
        return {"hang": True}  # a long model call: no progress to see until it answers

    env.child_model.script["leaf"] = script
    task = asyncio.create_task(delegate(env, {"goal": "paused"}))
    async with asyncio.timeout(5):
        while not calls:  # polling for the child's model call
            await asyncio.sleep(0.001)
    await clock.advance(10, step=5)  # two heartbeats: the child is watched
    await clock.advance(1200, step=1200)  # paused for 20 min, then continued
    await clock.advance(10, step=5)
    assert not task.done()  # not stalled for a silence the whole process kept
    await clock.advance(450, step=5)
    entry = json.loads(await asyncio.wait_for(task, 5))["results"][0]
    assert entry["status"] == "timeout" and entry["last_event_age"] < 480


@pytest.mark.both_engines
async def test_output_schemas_pass_correct_or_keep_the_work(denv):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    tasks = [{"goal": g, "output_schema": schema} for g in ("[json-good]", "[json-fenced]", "[json-fixable]", "[json-bad]")]
    good, fenced, fixed, bad = await results(denv, {"tasks": tasks})
    assert good["schema_valid"] is True and "schema_errors" not in good
    assert fenced["schema_valid"] is True
    assert fixed["schema_valid"] is True and fixed["summary"] == '{"answer": 1}' and fixed["api_calls"] == 2
    assert bad["status"] == "completed" and bad["schema_valid"] is False
    assert bad["summary"] == "I refuse to write JSON" and bad["schema_errors"] and bad["schema_note"]
    correction = [r for r in denv.child_model.requests if r.turn_index == 1 and "[json-fixable]" in r.metadata["goal"]]
    (note,) = [m["content"] for m in correction[0].messages if m["role"] == "user" and "integer" in str(m["content"])]
    assert "'one' is not of type 'integer'" in note and '"required"' not in note
    plain = (await results(denv, {"goal": "no schema"}))[0]
    assert "schema_valid" not in plain


@pytest.mark.both_engines
async def test_a_correction_turn_that_fails_keeps_the_work_of_the_first(denv):
    # The correction turn's model call failing ended the child as failed, its answer and the schema's verdict
    # dropped: the work is kept, unvalidated, as for a correction that is still invalid.
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    (entry,) = await results(denv, {"goal": "[json-correction-fails]", "output_schema": schema})
    assert (entry["status"], entry["summary"], entry["schema_valid"]) == ("completed", "I refuse to write JSON", False)
    assert entry["schema_errors"] and entry["schema_note"] and entry.get("error") is None


@pytest.mark.both_engines
async def test_the_child_sees_its_contract_and_project_rules_from_the_start(denv):
    (denv.parent.workspace / "AGENTS.md").write_text("Always run the linter.")
    (entry,) = await results(denv, {"goal": "[show-prompt]", "output_schema": {"type": "object"}})
    prompt = json.loads(entry["summary"])["system"] if entry["schema_valid"] else None
    seen = [r for r in denv.child_model.requests if r.metadata["goal"] == "[show-prompt]"][0]
    system = seen.messages[0]["content"]
    assert "Always run the linter." in system and "AGENTS.md" in system
    assert "no prose" in system.lower() or "only" in system.lower()
    assert prompt is None or "YOUR TASK" in prompt


@pytest.mark.both_engines
async def test_images_go_native_to_vision_models_and_as_text_otherwise(denv):
    (denv.parent.workspace / "shot.png").write_bytes(PNG)
    images = ["shot.png", "missing.png", "https://example.com/a.png"]
    await results(denv, {"goal": "[show-prompt] text only", "images": images})
    text_first = [r for r in denv.child_model.requests if "text only" in r.metadata["goal"]][0].messages[1]["content"]
    assert isinstance(text_first, str) and "[Image attached at: shot.png]" in text_first
    assert "[Image attached at: missing.png]" not in text_first and "https://example.com/a.png" in text_first
    # The child learns an image it was given is not there, rather than describing a picture it never got.
    missing = "[Images that could not be used: 'missing.png' (does not exist or is not a regular file)]"
    assert text_first.endswith(f"\n\n{missing}")
    denv.child_model.supports_vision = True
    await results(denv, {"goal": "[show-prompt] vision", "images": images})
    parts = [r for r in denv.child_model.requests if "vision" in r.metadata["goal"]][0].messages[1]["content"]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert urls == ["data:image/png;base64," + base64.b64encode(PNG).decode(), "https://example.com/a.png"]
    assert parts[0]["text"].endswith(f"\n\n{missing}")


@pytest.mark.both_engines
async def test_a_subagent_is_never_shown_another_chats_attachment(denv):
    # delegate_task is offered in every chat: its images must not reach what the chat's file tools refuse.
    for chat in ("1", "2"):
        (denv.parent.workspace / "attachments" / "discord" / chat).mkdir(parents=True)
        (denv.parent.workspace / "attachments" / "discord" / chat / "photo.png").write_bytes(PNG)
    denv.parent.services[FILE_SCOPE] = FileScope(("attachments/discord",), own="attachments/discord/1")
    denv.child_model.supports_vision = True
    await results(denv, {"goal": "[show-prompt] peek", "images": ["attachments/discord/2/photo.png"]})
    first = [r for r in denv.child_model.requests if "peek" in r.metadata["goal"]][0].messages[1]["content"]
    assert "base64" not in str(first) and "is not this session's to use" in str(first)


async def test_too_many_images_is_a_tool_error(denv):
    with pytest.raises(ToolError, match="images"):
        await delegate(denv, {"goal": "x", "images": [f"{i}.png" for i in range(9)]})


@pytest.mark.both_engines
async def test_long_summaries_are_cut_head_and_tail_with_the_full_text_kept(make_env):
    env = await make_env(delegate=True, delegation=DelegationSettings(max_summary_chars=1000))
    (entry,) = await results(env, {"goal": "[long]"})
    assert len(entry["summary"]) <= 1000 and entry["summary_truncated"] is True
    assert entry["summary_original_chars"] == 40_000
    assert "characters omitted" in entry["summary"]
    assert (env.parent.workspace / entry["summary_full_path"]).read_text() == "x" * 40_000


def test_the_marker_counts_every_character_it_leaves_out(tmp_path):
    # It said len(summary) - max_chars, leaving out its own length: 39000 omitted where 39109 were.
    for length in (1_001, 1_100, *range(1_905, 1_925), 40_000, 1_000_000):
        item = apply_summary_budget({"subagent_id": "sa-1", "summary": "y" * length}, 1000, tmp_path)
        summary = item["summary"]
        marker = re.search(r"\n\n\[\.\.\. (\d+) characters omitted; [^\]]*\]\n\n", summary)
        assert int(marker.group(1)) == length - (len(summary) - len(marker.group(0))), length
        assert len(summary) == 1000, length


@pytest.mark.both_engines
async def test_interrupting_the_parent_interrupts_children_with_their_partial_output(denv):
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {
            "tasks": [{"goal": "[hang] one"}, {"goal": "[hang] two"}]}}]}, {"text": "after"}]],
        "leaf": child_script,
    })
    parent = AgentSession(model=model, tools=denv.parent.tools, session_id="parent-1", workspace=denv.parent.workspace)
    turn = asyncio.create_task(parent.run_turn("go"))
    async with asyncio.timeout(5):
        # In-process the children call their parent's model; on Temporal, the worker's.
        while sum(1 for m in (model, denv.child_model) for r in m.requests if r.role == "leaf") < 4:
            await asyncio.sleep(0.005)
    parent.interrupt("user said stop")
    result = await asyncio.wait_for(turn, 5)
    assert result.exit_reason == "interrupted"
    payload = json.loads(parent.messages[2]["content"])
    assert [e["status"] for e in payload["results"]] == ["interrupted", "interrupted"]
    assert [e["summary"] for e in payload["results"]] == ["partial thoughts", "partial thoughts"]


@pytest.mark.both_engines
async def test_the_calling_turn_is_the_childrens_parent_turn_without_any_active_turn(denv):
    seen = []
    denv.hooks.register("subagent_start", lambda **e: seen.append(("start", e["parent_turn_id"])))
    denv.hooks.register("subagent_stop", lambda **e: seen.append(("stop", e["parent_turn_id"])))
    host = Host(denv)

    assert active_turn() is None  # the tool context names the turn
    await delegate(denv, {"tasks": [{"goal": "a"}, {"goal": "[hang] b"}]}, mode="background", on_dispatch=host)
    view = denv.service.host_view()
    async with asyncio.timeout(5):
        while view.turn_progress("parent-1", "turn-1") != (1, 2):
            await asyncio.sleep(0.001)
    assert [c.parent_turn_id for c in view.children("parent-1")] == ["turn-1"]
    await view.interrupt_children("parent-1", "done")
    await asyncio.wait_for(host.delivered.get(), 5)
    assert view.turn_progress("parent-1", "turn-1") == (0, 0)
    assert seen.count(("start", "turn-1")) == 2 and seen.count(("stop", "turn-1")) == 2


@pytest.mark.both_engines
async def test_the_completion_path_runs_exactly_once_per_child(denv):
    stops = []
    denv.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
    await results(denv, {"tasks": [{"goal": "a"}, {"goal": "[fail]"}, {"goal": "[cost] c"}]})
    assert sorted(stops) == ["completed", "completed", "failed"]
    assert denv.parent.total_cost_usd == pytest.approx(0.25)


@pytest.mark.both_engines
async def test_background_dispatch_is_handed_to_the_host_which_reads_the_results(denv):
    host = Host(denv)
    handle = json.loads(await delegate(denv, {"tasks": [{"goal": "a"}, {"goal": "[fail] b"}]},
                                       mode="background", on_dispatch=host))
    assert handle["status"] == "dispatched" and handle["goals"] == ["a", "[fail] b"]
    assert handle["delegation_id"].startswith("deleg_") and "do not poll" in handle["note"]
    [dispatch] = host.dispatches  # told before the model saw the handle
    assert (dispatch.delegation_id, dispatch.parent_session_id, dispatch.parent_turn_id) == (
        handle["delegation_id"], "parent-1", "turn-1")
    assert [t.subagent_id for t in dispatch.tasks] == handle["subagent_ids"]
    assert [t.spec.goal for t in dispatch.tasks] == ["a", "[fail] b"]
    _, entries = await asyncio.wait_for(host.delivered.get(), 5)
    assert [e["status"] for e in entries] == ["completed", "failed"]


@pytest.mark.both_engines
async def test_a_host_that_cannot_record_the_dispatch_fails_the_call_and_stops_the_children(denv):
    refused = []

    def refuse(dispatch):
        refused.append(dispatch)
        raise OSError("disk full")

    with pytest.raises(ToolError, match="could not be started"):
        await delegate(denv, {"goal": "[hang] a"}, mode="background", on_dispatch=refuse)
    view = denv.service.host_view()
    ids = [t.subagent_id for t in refused[0].tasks]
    await asyncio.wait_for(view.wait_finished(ids), 5)
    assert [c.state for c in (await view.lookup(ids)).values()] == [SubagentState.INTERRUPTED]


@pytest.mark.both_engines
async def test_results_are_read_from_the_journal_once_memory_forgot_them(denv):
    host = Host(denv)
    handle = json.loads(await delegate(denv, {"goal": "a"}, mode="background", on_dispatch=host))
    await asyncio.wait_for(host.delivered.get(), 5)
    [sid] = handle["subagent_ids"]
    view = denv.service.host_view()  # the child finished before the call: only the journal has its details
    assert (await view.lookup([sid]))[sid].state is SubagentState.SUCCEEDED
    [entry] = await view.finished_entries([(0, sid)], denv.parent.workspace)
    assert entry["status"] == "completed" and entry["summary"] and entry["tool_trace"] == []
    assert await view.lookup(["sa-never"]) == {}


@pytest.mark.both_engines
async def test_background_list_steer_and_stop(denv):
    host = Host(denv)
    run = lambda args: delegate(denv, args, mode="background", on_dispatch=host)  # noqa: E731
    handle = json.loads(await run({"tasks": [{"goal": "[echo-steer]"}, {"goal": "[hang] stop me"}]}))
    steer_id, stop_id = handle["subagent_ids"]
    async with asyncio.timeout(5):
        while len(json.loads(await run({"action": "list"}))["subagents"]) < 2 or not all(
                c.state is SubagentState.RUNNING for c in denv.service.host_view().children("parent-1")):
            await asyncio.sleep(0.005)
        # The child to stop has answered its first model call (its partial output) and hangs in its second.
        while sum(1 for r in denv.child_model.requests if r.metadata.get("goal") == "[hang] stop me") < 2:
            await asyncio.sleep(0.005)
    listing = json.loads(await run({"action": "list"}))["subagents"]
    assert {s["subagent_id"] for s in listing} == {steer_id, stop_id}
    assert all({"goal", "state", "running_seconds", "last_activity"} <= set(s) for s in listing)
    assert json.loads(await run({"action": "steer", "subagent_id": steer_id, "message": "wrap up"}))["status"] == "queued"
    assert json.loads(await run({"action": "stop", "subagent_id": stop_id}))["status"] == "stopping"
    _, (steered, stopped) = await asyncio.wait_for(host.delivered.get(), 5)
    assert "wrap up" in steered["summary"]
    assert stopped["status"] == "interrupted" and stopped["summary"] == "partial thoughts"
    with pytest.raises(ToolError, match="no running subagent"):
        await run({"action": "stop", "subagent_id": "sa-nope"})


async def test_a_child_being_stopped_is_not_steered(denv):
    host = Host(denv)
    run = lambda args: delegate(denv, args, mode="background", on_dispatch=host)  # noqa: E731
    (sid,) = json.loads(await run({"goal": "[hang] stop me"}))["subagent_ids"]
    async with asyncio.timeout(5):
        while sum(1 for r in denv.child_model.requests if r.metadata.get("goal") == "[hang] stop me") < 2:
            await asyncio.sleep(0.005)
    await run({"action": "stop", "subagent_id": sid})
    answers = []
    async with asyncio.timeout(5):
        while not answers or not answers[-1].startswith("no running subagent"):
            with pytest.raises(ToolError) as refused:  # from the stop's own turn of the loop on
                await run({"action": "steer", "subagent_id": sid, "message": "one more thing"})
            answers.append(str(refused.value))
            await asyncio.sleep(0)
    # Still RUNNING, winding down: never "queued" nor "not running yet", up to the moment it is gone. The stop
    # was asked on the loop's next turn: a steer right after it (the model calls both at once) was "queued".
    assert set(answers[:-1]) == {f"subagent {sid} is being stopped and reads no more messages; its result still "
                                 "arrives as a message"}
    _, (entry,) = await asyncio.wait_for(host.delivered.get(), 5)
    assert entry["status"] == "interrupted" and "one more thing" not in str(entry)


async def test_inline_schemas_have_no_live_control_parameters(denv):
    inline = delegate_tool(denv.service).parameters["properties"]
    background = delegate_tool(denv.service, mode="background", on_dispatch=lambda d: None).parameters["properties"]
    assert not {"action", "subagent_id", "message"} & set(inline)
    assert {"action", "subagent_id", "message"} <= set(background)
    with pytest.raises(ToolError, match="only available for background"):
        await delegate_tool(denv.service).handler({"action": "list"}, ToolContext(denv.parent, "c", denv.parent.workspace, {}))


async def test_live_control_arguments_never_start_a_child_nor_go_unread(denv):
    # A background call with `subagent_id` and `message` but no `action` (a steer, as the model meant it)
    # started a new child on the message; a stop's `message`, a list's `goal`, and an inline session's
    # `subagent_id`/`message` (its tool has no such parameters) were dropped without a word.
    host = Host(denv)
    background = lambda args: delegate(denv, args, mode="background", on_dispatch=host)  # noqa: E731
    refusals = [
        (background, {"goal": "wrap up", "subagent_id": "sa-1", "message": "wrap up"},
         "`subagent_id` and `message` are only for action=steer or action=stop; set `action`"),
        (background, {"tasks": [{"goal": "a"}], "message": "wrap up"}, "`message` is only for action=steer"),
        (background, {"action": "stop", "subagent_id": "sa-1", "message": "why"},
         "action=stop takes `subagent_id`, not message; to start subagents, call delegate_task without `action`"),
        (background, {"action": "list", "goal": "x"}, "action=list takes no other argument, not goal"),
        (background, {"action": "steer", "subagent_id": "sa-1", "message": "m", "bogus": 1},
         "action=steer takes `subagent_id` and `message`, not bogus"),
        (lambda args: delegate(denv, args), {"goal": "x", "subagent_id": "sa-1", "message": "m"},
         "unknown argument(s) message, subagent_id; use goal/context for one task or tasks for several"),
    ]
    for call, args, message in refusals:
        with pytest.raises(ToolError, match=re.escape(message)):
            await call(args)
    assert host.dispatches == [] and denv.service.host_view().children("parent-1") == ()
    assert not [r for r in denv.child_model.requests if r.role == "leaf"]


async def test_a_task_refused_before_it_started_has_every_field_of_an_entry(denv):
    # It had no `role`: a parent reading each entry's role (which every other entry has) met a missing key.
    refused, ran = await results(denv, {"tasks": [{"goal": "a", "route": "fast"}, {"goal": "b"}]})
    assert refused["route"]["refused"] is True and (refused["subagent_id"], refused["role"]) == (None, None)
    assert set(refused) - {"route"} == set(ran)


async def test_the_schema_states_the_limits_a_call_is_held_to(make_env):
    # The model read none of them (but the images'), and learned each from a refused call.
    env = await make_env(delegate=True, delegation=DelegationSettings(max_concurrent_children=4))
    properties = delegate_tool(env.service).parameters["properties"]
    batch = properties["tasks"]["anyOf"][0]
    task = batch["items"]
    assert (batch["minItems"], batch["maxItems"]) == (1, 4) and "at most 4" in properties["tasks"]["description"]
    assert task["required"] == ["goal"]
    for where in (task["properties"], properties):
        assert (where["goal"]["maxLength"], where["context"]["maxLength"]) == (16_000, 32_000)
    with pytest.raises(ToolError, match=re.escape("Too many tasks: got 5, but at most 4 run at once")):
        await delegate(env, {"tasks": [{"goal": f"t{i}"} for i in range(5)]})


def disk_full(env) -> None:
    db = env.service.journal.db
    (pages,) = db.read_one("PRAGMA page_count")
    db.read(f"PRAGMA max_page_count={pages}")  # SQLite refuses what needs a new page: SQLITE_FULL


async def test_a_background_launch_the_full_disk_refused_is_a_clear_error_and_leaves_no_child(denv, caplog):
    await denv.service.journal.sync()
    disk_full(denv)
    told = []  # the host records the dispatch in the launch's commit, and hears that it was refused
    with pytest.raises(ToolError) as refused:
        await delegate(denv, {"tasks": [{"goal": "a " + "x" * 12_000}, {"goal": "b"}]}, mode="background",
                       on_dispatch=lambda dispatch: told.append)
    text = str(refused.value)
    assert text.startswith("No subagent was started: the state database cannot be written")
    assert "Journal" not in text and "Error" not in text and str(denv.parent.workspace) not in text
    assert told == [False] and denv.service.host_view().children("parent-1") == ()
    denv.service.journal.db.read("PRAGMA max_page_count=1073741823")  # room again
    await denv.service.journal.sync()
    assert await denv.service.journal.unfinished() == []  # a restart finds no child to call INTERRUPTED


@pytest.mark.parametrize("hard", [False, True], ids=["soft", "hard"])
async def test_an_interrupt_while_the_tool_start_hooks_run_starts_no_child(denv, hard):
    # The tool hears interrupts only once it runs (its listeners), and a hard one cancels only a guarded await:
    # one landing while a `tool_start` hook ran was lost, and the inline delegation waited for every child.
    hooks = HookRegistry()
    entered, go = asyncio.Event(), asyncio.Event()

    async def hold(**kw):
        entered.set()
        await go.wait()

    hooks.register("tool_start", hold)
    model = ScriptedModel({
        "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "[gate:never] one"}}]},
                    {"text": "after"}]],
        "leaf": child_script,
    })
    parent = AgentSession(model=model, tools=denv.parent.tools, session_id="parent-1",
                          workspace=denv.parent.workspace, hooks=hooks)
    turn = asyncio.create_task(parent.run_turn("go"))
    await entered.wait()
    parent.interrupt("user said stop", hard=hard)
    go.set()
    result = await asyncio.wait_for(turn, 5)
    assert result.exit_reason == "interrupted"
    assert parent.messages[2]["content"] == "[not run: the turn was interrupted]"
    assert denv.service.host_view().children("parent-1") == ()
