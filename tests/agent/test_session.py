import asyncio
import contextlib
import json
import threading

import pytest

from agent import (
    AgentSession,
    HookRegistry,
    ModelResponse,
    ToolError,
    ToolRegistry,
    TurnInProgress,
    TurnObserver,
    active_turn,
)
from agent._session import STEER_NOTE
from agent._tool_calls import CUT_OFF
from agent.models import OpenAIModel
from agent.models.scripted import ScriptedModel
from agent.settings import ModelSettings
from agent.testing import FakeOpenAIServer

OBJ = {"type": "object", "properties": {"x": {"type": "string"}}}


def call(name, **args):
    return {"name": name, "arguments": args}


def registry(**handlers):
    reg = ToolRegistry()
    for name, fn in handlers.items():
        reg.add(name, name, OBJ, fn, toolset="test")
    return reg.resolve()


def session(script, tools=None, **kw):
    return AgentSession(model=ScriptedModel({"parent": script}), tools=tools or {}, **kw)


@contextlib.asynccontextmanager
async def served_model(server: FakeOpenAIServer):
    """The real OpenAI-compatible client against ``server``, closed on leaving."""
    model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                      max_retries=0, timeout_seconds=10), env={})
    try:
        yield model
    finally:
        await model.aclose()


async def test_tool_calls_then_final_text_with_trace():
    tools = registry(echo=lambda a, c: f"echo:{a['x']}")
    s = session([[{"tool_calls": [call("echo", x="hi")]}, {"text": "done"}]], tools)
    result = await s.run_turn("go")
    assert result.exit_reason == "completed"
    assert result.text == "done"
    assert result.api_calls == 2
    assert result.usage.total_tokens == 30
    (entry,) = result.tool_trace
    assert (entry.name, entry.argument_keys, entry.ok) == ("echo", ("x",), True)
    assert entry.output_bytes == len("echo:hi")
    assert s.messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "echo:hi"}


async def test_budget_runs_out_as_max_iterations_keeping_last_text():
    tools = registry(echo=lambda a, c: "ok")
    step = {"text": "still going", "tool_calls": [call("echo", x="a")]}
    s = session([[step] * 10], tools, max_iterations=3)
    result = await s.run_turn("go")
    assert result.exit_reason == "max_iterations"
    assert result.api_calls == 3
    assert result.text == "still going"


async def test_tool_errors_become_tool_results():
    def broken(args, ctx):
        raise RuntimeError("disk on fire")

    def refusing(args, ctx):
        raise ToolError("not allowed here")

    tools = registry(broken=broken, refusing=refusing)
    s = session(
        [[{"tool_calls": [call("broken"), call("refusing"), call("missing"), {"name": "refusing", "arguments": "{bad"}]},
          {"text": "recovered"}]],
        tools,
    )
    result = await s.run_turn("go")
    assert result.exit_reason == "completed"
    outputs = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert "RuntimeError: disk on fire" in outputs[0]
    assert outputs[1] == "Error: not allowed here"
    assert "unknown tool 'missing'" in outputs[2]
    assert "not valid JSON" in outputs[3]
    assert [e.ok for e in result.tool_trace] == [False, False, False, False]


async def test_a_tool_failing_with_megabytes_of_text_is_told_to_the_model_by_its_ends():
    # The whole text was the tool's result, which the model read again in every later request of the conversation.
    def choking(args, ctx):
        raise ValueError("cannot parse: <" + "x" * 1_000_000 + ">")

    s = session([[{"tool_calls": [call("choking")]}, {"text": "recovered"}]], registry(choking=choking))
    result = await s.run_turn("go")
    (output,) = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert result.exit_reason == "completed" and len(output) < 1_000
    assert output.startswith("Error: choking failed: ValueError: cannot parse: <xxx") and output.endswith("xxx>")
    assert "[…999616 characters…]" in output


async def test_invalid_arguments_are_reported_to_the_model():
    tools = registry(echo=lambda a, c: "ok")
    s = session([[{"tool_calls": [call("echo", x=5)]}, {"text": "fine"}]], tools)
    await s.run_turn("go")
    assert "invalid arguments for echo" in s.messages[2]["content"]


async def test_double_encoded_arguments_are_accepted():
    tools = registry(echo=lambda a, c: a["x"])
    s = session([[{"tool_calls": [{"name": "echo", "arguments": '"{\\"x\\": \\"y\\"}"'}]}, {"text": "ok"}]], tools)
    await s.run_turn("go")
    assert s.messages[2]["content"] == "y"


async def test_soft_interrupt_stops_after_the_current_tool_and_keeps_partial_output():
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(args, ctx):
        started.set()
        await release.wait()
        return "slow done"

    tools = registry(slow=slow, echo=lambda a, c: "never")
    s = session([[{"text": "working on it", "tool_calls": [call("slow"), call("echo")]}, {"text": "final"}]], tools)
    task = asyncio.create_task(s.run_turn("go"))
    await started.wait()
    assert s.interrupt("user said stop") is True
    release.set()
    result = await task
    assert result.exit_reason == "interrupted"
    assert result.text == "working on it"
    assert result.interrupt_reason == "user said stop"
    tool_msgs = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert tool_msgs == ["slow done", "[not run: the turn was interrupted]"]


async def test_hard_interrupt_cancels_a_running_tool():
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(args, ctx):
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    class Ends(TurnObserver):
        ended = []

        async def on_tool_end(self, name, ok):
            self.ended.append((name, ok))

    from agent import HookRegistry

    hooks, heard = HookRegistry(), []
    hooks.register("tool_end", lambda **e: heard.append((e["tool_name"], e["ok"], e["output"])))
    tools = registry(forever=forever)
    s = session([[{"text": "first thoughts", "tool_calls": [call("forever")]}]], tools, hooks=hooks)
    task = asyncio.create_task(s.run_turn("go", observer=Ends()))
    await started.wait()
    s.interrupt("stop now", hard=True)
    result = await asyncio.wait_for(task, 5)
    assert cancelled.is_set()
    assert result.exit_reason == "interrupted"
    assert result.text == "first thoughts"
    assert s.activity.current_tool is None
    # The cancelled call is accounted for like any failed one: hooks, observer, trace and tool log.
    cancelled_text = "[cancelled: the turn was interrupted]"
    assert heard == [("forever", False, cancelled_text)] and Ends.ended == [("forever", False)]
    assert [(e.name, e.ok) for e in result.tool_trace] == [("forever", False)] == [(e.name, e.ok) for e in s.tool_log]
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == [cancelled_text]


async def test_hard_interrupt_cancels_an_in_flight_model_call():
    from agent import HookRegistry

    hooks, heard = HookRegistry(), []
    hooks.register("model_call", lambda **e: heard.append((e["role"], e["error"], e["prompt_tokens"])))
    s = session([[{"hang": True}]], hooks=hooks)
    task = asyncio.create_task(s.run_turn("go"))
    while s.activity.api_calls == 0:
        await asyncio.sleep(0)
    s.interrupt("stop", hard=True)
    result = await asyncio.wait_for(task, 5)
    assert result.exit_reason == "interrupted"
    assert result.text == ""
    assert heard == [("parent", "interrupted", 0)]  # the call that was cancelled, as the hooks see it


async def test_cancelling_the_turn_itself_still_propagates():
    s = session([[{"hang": True}]])
    task = asyncio.create_task(s.run_turn("go"))
    while s.activity.api_calls == 0:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not s.running


async def test_interrupt_without_a_running_turn_is_a_no_op():
    s = session([[{"text": "hi"}]])
    assert s.interrupt("nothing") is False
    assert (await s.run_turn("go")).exit_reason == "completed"


async def test_steer_is_delivered_in_order_at_the_next_boundary():
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def wait_tool(args, ctx):
        entered.set()
        await gate.wait()
        return "tool output"

    tools = registry(wait_tool=wait_tool)
    model = ScriptedModel({"parent": [[{"tool_calls": [call("wait_tool")]}, {"text": "done"}]]})
    s = AgentSession(model=model, tools=tools)
    task = asyncio.create_task(s.run_turn("go"))
    await entered.wait()
    s.steer("first")
    s.steer("second")
    gate.set()
    await task
    tool_msg = s.messages[2]["content"]
    assert tool_msg == f"tool output\n\n{STEER_NOTE}\nfirst\nsecond"
    # The second model call saw the steer inside the tool result, not twice.
    assert sum(STEER_NOTE in str(m.get("content")) for m in model.requests[1].messages) == 1


async def test_steer_before_a_model_call_becomes_a_note():
    s = session([[{"text": "ok"}]])
    s.steer("use metric units")
    await s.run_turn("go")
    assert s.messages[1] == {"role": "user", "content": f"{STEER_NOTE}\nuse metric units"}


async def test_model_error_ends_the_turn_with_error_and_partial_text():
    tools = registry(echo=lambda a, c: "ok")
    s = session([[{"text": "half way", "tool_calls": [call("echo")]}, {"error": "server_error", "message": "502"}]], tools)
    result = await s.run_turn("go")
    assert result.exit_reason == "error"
    assert result.error == "502"
    assert result.text == "half way"


async def test_sync_tools_run_in_a_thread_that_sees_the_active_turn():
    seen = {}

    def probe(args, ctx):
        turn = active_turn()
        seen["thread"] = threading.current_thread() is not threading.main_thread()
        seen["session"] = turn.session if turn else None
        return "ok"

    s = session([[{"tool_calls": [call("probe")]}, {"text": "done"}]], registry(probe=probe))
    await s.run_turn("go")
    assert seen == {"thread": True, "session": s}
    assert active_turn() is None


async def test_a_host_turn_id_names_the_turn_its_tools_and_its_result():
    seen = {}

    async def probe(args, ctx):
        seen["ctx"] = ctx.turn_id
        seen["active"] = active_turn().turn_id
        return "ok"

    s = session([[{"tool_calls": [call("probe")]}, {"text": "done"}]], registry(probe=probe))
    result = await s.run_turn("go", turn_id="t-host-1")
    assert result.turn_id == "t-host-1"
    assert seen == {"ctx": "t-host-1", "active": "t-host-1"}


async def test_interim_text_goes_to_the_observer_never_the_final_text():
    class Recorder(TurnObserver):
        def __init__(self):
            self.interim, self.tools = [], []

        async def on_interim(self, text):
            self.interim.append(text)

        async def on_tool_start(self, name, args):
            self.tools.append(name)

    rec = Recorder()
    s = session([[{"text": "let me look", "tool_calls": [call("echo")]}, {"text": "answer"}]],
                registry(echo=lambda a, c: "x"))
    result = await s.run_turn("go", observer=rec)
    assert rec.interim == ["let me look"]
    assert rec.tools == ["echo"]
    assert result.text == "answer"


async def test_one_turn_at_a_time():
    s = session([[{"hang": True}]])
    task = asyncio.create_task(s.run_turn("go"))
    await asyncio.sleep(0)
    with pytest.raises(TurnInProgress):
        await s.run_turn("again")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cost_is_summed_when_the_provider_reports_it():
    model = ScriptedModel({"parent": [[{"text": "a"}]]}, cost_usd=0.25)
    s = AgentSession(model=model)
    result = await s.run_turn("go")
    assert result.cost_usd == 0.25
    assert s.total_cost_usd == 0.25


async def test_spend_handed_in_for_a_turn_counts_in_it_or_in_the_next_one_exactly_once():
    from agent import Usage

    s = AgentSession(model=ScriptedModel({"parent": [
        [{"wait": "child", "tool_calls": [{"name": "nothing"}]}, {"text": "a"}], [{"text": "b"}]]}, cost_usd=0.25))
    first = asyncio.ensure_future(s.run_turn("go", turn_id="t-1"))
    await s.model.reached("child")
    s.add_cost(Usage(100, 50), 1.0, 3, turn_id="t-1")  # a child of this turn, while it runs
    s.add_cost(Usage(7, 7), None, 1, turn_id="t-0")  # one an earlier turn launched
    s.model.release("child")
    result = await first
    assert (result.api_calls, result.usage, result.cost_usd) == (2 + 3, Usage(120, 60), 1.5)
    assert result.text == "a"  # its script goes by the turn's own calls, not its children's
    s.add_cost(Usage(1, 1), 0.5, 1, turn_id="t-1")  # one that ended after its turn
    second = await s.run_turn("again")
    assert (second.api_calls, second.usage, second.cost_usd) == (1 + 1 + 1, Usage(18, 13), 0.75)
    assert (s.total_api_calls, s.total_usage, s.total_cost_usd) == (8, Usage(138, 73), 2.25)


async def test_turn_hooks_run_around_every_turn():
    from agent import HookRegistry

    hooks = HookRegistry()
    events = []
    hooks.register("turn_start", lambda **e: events.append(("start", e["session_id"], e["turn_id"])))
    hooks.register("turn_end", lambda **e: events.append(("end", e["exit_reason"], e["turn_id"])))
    s = session([[{"text": "hi"}]], hooks=hooks, session_id="s1")
    result = await s.run_turn("go")
    assert events == [("start", "s1", result.turn_id), ("end", "completed", result.turn_id)]


async def test_a_hook_registered_after_the_session_was_built_runs_from_its_next_turn():
    from agent import HookRegistry

    hooks = HookRegistry()
    s = session([[{"text": "one"}], [{"text": "two"}]], hooks=hooks)
    await s.run_turn("go")
    assert hooks.registered == frozenset()
    ended = []
    hooks.register("turn_end", lambda **e: ended.append(e["exit_reason"]))
    assert hooks.registered == {"turn_end"} and hooks.has("turn_end") and not hooks.has("turn_start")
    await s.run_turn("again")
    assert ended == ["completed"]


async def test_interrupt_listeners_hear_every_interrupt_of_a_running_turn():
    heard = []
    started = asyncio.Event()

    async def waiting(args, ctx):
        ctx.session.interrupt_listeners.append(lambda reason, hard: heard.append((reason, hard)))
        started.set()
        await asyncio.Event().wait()

    s = session([[{"tool_calls": [call("waiting")]}]], registry(waiting=waiting))
    task = asyncio.create_task(s.run_turn("go"))
    await started.wait()
    s.interrupt("soft first")
    s.interrupt("then hard", hard=True)
    await task
    assert heard == [("soft first", False), ("then hard", True)]


async def test_model_and_tool_hooks_see_every_call_with_its_usage_and_outcome():
    from agent import HookRegistry

    hooks = HookRegistry()
    events = []

    for name in ("model_call", "tool_start", "tool_end"):
        hooks.register(name, lambda _n=name, **e: events.append((_n, e)))
    script = [[{"tool_calls": [call("echo", text="hi")]}, {"error": "server_error", "message": "boom"}]]
    s = session(script, registry(echo=lambda args, ctx: args["text"]), hooks=hooks, session_id="s1")
    result = await s.run_turn("go")
    assert result.exit_reason == "error"
    names = [name for name, _ in events]
    assert names == ["model_call", "tool_start", "tool_end", "model_call"]
    first_call, start, end, failed = (e for _, e in events)
    assert (first_call["session_id"], first_call["turn_id"], first_call["role"]) == ("s1", result.turn_id, "parent")
    assert (first_call["prompt_tokens"], first_call["completion_tokens"], first_call["error"]) == (10, 5, None)
    assert first_call["model"] == "scripted" and first_call["duration_seconds"] >= 0
    assert (start["tool_name"], start["arguments"], start["turn_id"]) == ("echo", {"text": "hi"}, result.turn_id)
    assert (end["tool_name"], end["call_id"], end["ok"], end["output"]) == ("echo", start["call_id"], True, "hi")
    assert (failed["error"], failed["prompt_tokens"]) == ("server_error", 0)


async def test_a_replaced_tool_serves_from_the_next_turn_and_a_running_turn_keeps_its_own():
    gate = asyncio.Event()

    async def old(args, ctx):
        await gate.wait()
        return "old tool"

    tools = registry(lookup=old)
    s = session([[{"tool_calls": [call("lookup")]}, {"text": "first"}],
                 [{"tool_calls": [call("lookup")]}, {"text": "second"}]], tools)
    task = asyncio.create_task(s.run_turn("one"))
    while s.activity.current_tool != "lookup":
        await asyncio.sleep(0)
    new = ToolRegistry()
    new.add("lookup", "the new lookup", OBJ, lambda a, c: "new tool", toolset="test")
    assert s.replace_tool(new.get("lookup")) is True
    assert s.tools["lookup"] is tools["lookup"]  # not while the turn runs
    gate.set()
    await task
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == ["old tool"]
    await s.run_turn("two")
    assert [m["content"] for m in s.messages if m["role"] == "tool"] == ["old tool", "new tool"]
    assert s.model.requests[-1].tools[0]["function"]["description"] == "the new lookup"
    assert s.replace_tool(ToolRegistry().add("absent", "x", OBJ, lambda a, c: "", toolset="t")) is False


async def test_the_tool_log_keeps_the_latest_calls_as_metadata():
    tools = registry(echo=lambda a, c: "x")
    s = session([[{"tool_calls": [call("echo", x="secret value")]} for _ in range(60)] + [{"text": "done"}]], tools)
    await s.run_turn("go")
    assert len(s.tool_log) == 50 and {e.name for e in s.tool_log} == {"echo"}
    assert s.tool_log[-1].argument_keys == ("x",)


async def test_a_model_call_in_flight_or_cut_off_is_started_but_never_answered():
    s = session([[{"text": "thinking", "tool_calls": [call("nothing")]}, {"hang": True}]])
    task = asyncio.create_task(s.run_turn("go"))
    while s.activity.api_calls < 2:
        await asyncio.sleep(0)
    assert (s.activity.api_calls, s.activity.answered_api_calls) == (2, 1)
    s.interrupt("stop", hard=True)
    result = await task
    assert (s.activity.api_calls, s.activity.answered_api_calls, result.api_calls) == (2, 1, 1)


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000,  # nested past json's recursion limit: RecursionError
        '{"x": ' + "1" * 5_000 + "}",  # past Python's int digit limit: a bare ValueError
        json.dumps("[" * 100_000),  # the same, double-encoded
    ],
    ids=["too-deep", "huge-int", "double-encoded-too-deep"],
)
async def test_arguments_json_cannot_parse_are_reported_to_the_model_not_raised(arguments):
    ran = []
    tools = registry(echo=lambda a, c: ran.append(a) or "ran")
    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"id": "c1", "name": "echo", "arguments": arguments}])
        server.push_text("recovered")
        async with served_model(server) as model:
            result = await AgentSession(model=model, tools=tools).run_turn("go")
        (answered,) = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert (result.exit_reason, result.text, ran) == ("completed", "recovered", [])
    assert answered["tool_call_id"] == "c1"
    assert answered["content"].startswith("Error: tool arguments are not valid JSON")


async def test_tool_output_with_undecodable_bytes_reaches_the_model_instead_of_ending_the_turn():
    # What a tool reads with errors="surrogateescape" (a file name or command output that is
    # not UTF-8) holds lone surrogates, which no UTF-8 request can carry.
    def listing(args, ctx):
        return b"caf\xe9.txt".decode("utf-8", "surrogateescape")

    def missing(args, ctx):
        raise FileNotFoundError(b"no such file: caf\xe9.txt".decode("utf-8", "surrogateescape"))

    tools = registry(listing=listing, missing=missing)
    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"id": "c1", "name": "listing", "arguments": "{}"},
                                {"id": "c2", "name": "missing", "arguments": "{}"}])
        server.push_text("listed")
        async with served_model(server) as model:
            result = await AgentSession(model=model, tools=tools).run_turn("go")
        answered = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert (result.exit_reason, result.text) == ("completed", "listed")
    assert answered[0] == "caf\ufffd.txt"
    assert answered[1] == "Error: missing failed: FileNotFoundError: no such file: caf\ufffd.txt"


async def test_a_turn_that_raises_between_a_tool_call_and_its_result_leaves_every_call_answered():
    # A host's observer that fails (the gateway's, when its outbox cannot journal an interim message
    # on a full disk) ends the turn with an exception after the assistant's calls were added: an
    # unanswered call kept in the conversation would have the server refuse every later request.
    class Failing(TurnObserver):
        async def on_interim(self, text):
            raise RuntimeError("database or disk is full")

    ran = []
    tools = registry(echo=lambda a, c: ran.append(a) or "ran")
    async with FakeOpenAIServer() as server:
        server.push_tool_calls([{"id": "c1", "name": "echo"}, {"id": "c2", "name": "echo"}], text="on it")
        server.push_text("answered")
        async with served_model(server) as model:
            s = AgentSession(model=model, tools=tools)
            with pytest.raises(RuntimeError, match="disk is full"):
                await s.run_turn("go", observer=Failing())
            result = await s.run_turn("and now?")
    assert (result.exit_reason, result.text, ran) == ("completed", "answered", [])
    assert [m.get("tool_call_id") for m in s.messages if m["role"] == "tool"] == ["c1", "c2"]
    assert s.messages[3]["content"] == "[not run: the turn ended before it ran]"


class _Saved(BaseException):
    """Leaves the turn where a workflow continues as new: inside the model call, after taking the turn."""


class _SavingModel:
    """Answers as ``model`` does, but at call ``at`` saves the running turn (as JSON would carry it) and leaves."""

    def __init__(self, model, at):
        self.model, self.at, self.calls, self.saved = model, at, 0, None
        self.name, self.context_window = model.name, model.context_window

    async def complete(self, request):
        self.calls += 1
        if self.calls == self.at:
            self.session.steer("read me after")  # came while the call ran: not read yet when the turn is saved
            self.saved = json.loads(json.dumps(self.session.saved_turn()))
            raise _Saved
        return await self.model.complete(request)


def step_script(request):
    if request.iteration < 4:
        return {"text": f"step {request.iteration}", "tool_calls": [call("echo", x=str(request.iteration))]}
    return {"text": f"done after {len(request.messages)} messages"}


async def test_a_turn_saved_at_a_model_call_runs_on_in_another_session_as_if_it_had_not_stopped():
    tools = registry(echo=lambda a, c: f"echo:{a['x']}")
    whole = await session(step_script, tools).run_turn("go", turn_id="t-1")
    saving = _SavingModel(ScriptedModel({"parent": step_script}), at=3)
    first = AgentSession(model=saving, tools=tools)
    saving.session = first
    with pytest.raises(_Saved):
        await first.run_turn("go", turn_id="t-1")
    second = session(step_script, tools)
    second.steer("and me last")  # came to the other session before it ran on: read after the saved one
    resumed = await second.resume_turn(saving.saved)
    assert whole.text == "done after 9 messages"  # and one more, the steered note, below
    assert (resumed.turn_id, resumed.exit_reason, resumed.text) == ("t-1", "completed", "done after 10 messages")
    assert (resumed.api_calls, resumed.usage, resumed.tool_trace[0].name) == (5, whole.usage, "echo")
    assert len(resumed.tool_trace) == len(whole.tool_trace) == 4
    assert (second.total_api_calls, second.turns_run, second.activity.answered_api_calls) == (5, 1, 5)
    assert second.messages[:5] == first.messages[:5]
    assert second.messages[5]["content"] == f"{STEER_NOTE}\nread me after\nand me last"
    bounded = session(step_script, tools, max_iterations=3)  # its steps so far count against the budget
    assert (await bounded.resume_turn(saving.saved)).exit_reason == "max_iterations"


async def test_a_saved_turn_stopped_meanwhile_ends_at_once_with_its_partial_output():
    tools = registry(echo=lambda a, c: "ok")
    saving = _SavingModel(ScriptedModel({"parent": step_script}), at=3)
    first = AgentSession(model=saving, tools=tools)
    saving.session = first
    with pytest.raises(_Saved):
        await first.run_turn("go")
    second = session(step_script, tools)
    resumed = await second.resume_turn(saving.saved, interrupted="stopped by /stop")
    assert (resumed.exit_reason, resumed.interrupt_reason, resumed.text) == ("interrupted", "stopped by /stop", "step 1")
    assert resumed.api_calls == 2 and len(resumed.tool_trace) == 2
    assert second.model.requests == []  # no further model call


async def test_a_lone_surrogate_escape_in_tool_arguments_reaches_the_tool_as_a_replacement_character():
    # "\ud83d" in the arguments' JSON is half an emoji: json.loads makes it a lone surrogate, which no
    # file or note can encode (write_file and memory failed as with a bug).
    got = []
    raw = '{"text": "smile \\ud83d", "\\udc00key": ["\\ud83d"]}'
    s = session([[{"tool_calls": [{"id": "c1", "name": "keep", "arguments": raw}]}, {"text": "kept"}]],
                registry(keep=lambda args, ctx: got.append(args) or "ok"))
    assert (await s.run_turn("go")).text == "kept"
    assert got == [{"text": "smile \ufffd", "\ufffdkey": ["\ufffd"]}]
    json.dumps(got[0], ensure_ascii=False).encode()  # what a file or a note would store: encodable


def cut_off_answer(*calls, text=None):
    """A completion cut off at the output-length limit (``finish_reason: length``) with ``calls``."""
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{
        "index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": text, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "echo", "arguments": a}} for i, a in calls]}}]}


async def test_a_tool_call_cut_off_at_the_output_limit_is_told_so_and_the_complete_ones_run():
    ran = []
    tools = registry(echo=lambda a, c: ran.append(a) or "ran")
    async with FakeOpenAIServer() as server:
        server.push_raw(cut_off_answer(("c1", '{"x": "short"}'), ("c2", '{"x": "a very long fi')))
        server.push_text("done in parts")
        async with served_model(server) as model:
            result = await AgentSession(model=model, tools=tools).run_turn("write it")
        answered = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert (result.exit_reason, result.text, result.truncated, ran) == ("completed", "done in parts", False,
                                                                         [{"x": "short"}])
    assert answered == ["ran", f"Error: {CUT_OFF}"]


async def test_tool_calls_cut_off_twice_in_a_row_end_the_turn_as_a_cut_off_answer():
    # Each cut-off call is a full paid answer: asking on until max_iterations pays for 90 of them.
    ran = []
    tools = registry(echo=lambda a, c: ran.append(a) or "ran")
    async with FakeOpenAIServer() as server:
        for _ in range(2):
            server.push_raw(cut_off_answer(("c1", '{"x": "a very long fi'), text="Writing the file."))
        server.push_text("next turn")
        async with served_model(server) as model:
            s = AgentSession(model=model, tools=tools)
            result = await s.run_turn("write it")
            following = await s.run_turn("and now?")  # every call of the turn was answered
    assert (result.exit_reason, result.text, result.truncated, result.api_calls) == (
        "completed", "Writing the file.", True, 2)
    assert (following.exit_reason, following.text, ran) == ("completed", "next turn", [])


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"], ids=["deepseek", "openrouter"])
async def test_the_reasoning_a_server_sent_with_tool_calls_goes_back_with_them(field):
    # DeepSeek's thinking mode refuses the next request ("Missing `reasoning_content` field in the
    # assistant message at message index 2") when the message with the calls comes back without it.
    tools = registry(echo=lambda a, c: "ran")
    async with FakeOpenAIServer() as server:
        server.push_raw({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{
            "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, field: "I should look it up",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]}}]})
        server.push_text("done")
        async with served_model(server) as model:
            s = AgentSession(model=model, tools=tools)
            result = await s.run_turn("go")
        sent = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert (result.exit_reason, result.text) == ("completed", "done")
    assert [m[field] for m in sent] == ["I should look it up"]
    assert [m.get(field) for m in s.messages if m["role"] == "assistant"] == ["I should look it up", None]


async def test_a_stop_that_lands_while_before_model_call_runs_makes_no_model_call():
    # Nothing is guarded there, so a hard interrupt cancelled nothing: the model call was made and paid
    # for in full (minutes, for a long answer) and its answer thrown away, while the user waited on /stop.
    asked = []
    tools = registry(echo=lambda a, c: "ok")

    async def stop_meanwhile(s):
        if s.activity.api_calls == 1:  # the second call: after the first answer's tool ran
            s.interrupt("user stop", hard=True)

    s = session([[{"tool_calls": [call("echo", x="a")]}, {"text": "never sent"}]], tools,
                before_model_call=stop_meanwhile)
    s.hooks = HookRegistry()
    s.hooks.register("model_call", lambda **event: asked.append(event["error"]))
    result = await s.run_turn("go")
    assert (result.exit_reason, result.interrupt_reason, result.api_calls) == ("interrupted", "user stop", 1)
    assert asked == [None] and s.activity.api_calls == 1
    assert s.messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "ok"}


async def test_a_child_waiting_in_its_model_call_keeps_few_enough_attributes_to_share_its_dicts_keys():
    # Past 30 attributes (CPython's SHARED_KEYS_MAX_SIZE) an instance's dict stops sharing its keys with
    # the others' and takes 1.3 KB more: a thousand children wait at once, within 8 KB each (issue 15).
    # One attribute more set in __init__ took each waiting child from 7.8 KB to 9.1 KB.
    gate, waiting = asyncio.Event(), []

    class Parked:
        name = "parked"

        async def complete(self, request):
            waiting.append(active_turn().session)
            await gate.wait()
            return ModelResponse(text="done")

    child = AgentSession(model=Parked(), tools={}, system_prompt="you are a child", role="leaf",
                         metadata={"parent_session_id": "s-parent"})
    turn = asyncio.ensure_future(child.run_turn("work"))
    while not waiting:
        await asyncio.sleep(0)
    try:
        assert len(vars(child)) <= 28, sorted(vars(child))
    finally:
        gate.set()
        await turn
