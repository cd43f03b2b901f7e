import asyncio
import signal
import sys
import textwrap
import threading
import types

import pytest

import agent._plugins
from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry
from agent.models.scripted import ScriptedModel

GOOD = """
def register(ctx):
    ctx.register_tool("shout", "upper-case text", {"type": "object", "properties": {"t": {"type": "string"}}},
                      lambda args, c: args["t"].upper(), toolset="loud")
    ctx.register_hook("turn_start", lambda **kw: None)
    ctx.register_command("ping", lambda args, c: "pong", "answers pong")
"""
HALF = """
def register(ctx):
    ctx.register_tool("half", "x", {"type": "object"}, lambda a, c: 1)
    raise RuntimeError("config missing")
"""
RESERVED = """
def register(ctx):
    ctx.register_tool("cron", "x", {"type": "object"}, lambda a, c: 1, toolset="cronjob")
"""


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    for name, body in {"good_plugin": GOOD, "half_plugin": HALF, "reserved_plugin": RESERVED,
                       "no_register_plugin": "X = 1\n", "syntax_plugin": "def broken(:\n"}.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return PluginHost(ToolRegistry(), HookRegistry())


async def test_a_broken_plugin_is_reported_and_the_rest_still_load(plugins, caplog):
    await plugins.load(["syntax_plugin", "half_plugin", "missing_plugin", "no_register_plugin", "reserved_plugin",
                        "good_plugin"])
    assert plugins.loaded == ["good_plugin"]
    messages = [str(f) for f in plugins.failures]
    assert messages[0].startswith("plugin 'syntax_plugin': import failed: SyntaxError")
    assert "register() failed: RuntimeError: config missing" in messages[1]
    assert "import failed: ModuleNotFoundError" in messages[2]
    assert "has no register(ctx) function" in messages[3]
    assert "toolset name 'cronjob' is reserved" in messages[4]
    # Nothing from the half-registered plugin leaked in.
    assert plugins.tools.get("half") is None
    assert plugins.tools.get("shout").toolset == "loud"
    assert plugins.hooks.has("turn_start")
    assert plugins.commands["ping"].description == "answers pong"
    assert "config missing" in caplog.text


async def test_lifecycle_is_reachable_only_when_the_host_provides_it(plugins, tmp_path):
    (tmp_path / "lc_plugin.py").write_text("def register(ctx):\n    ctx.subagent_lifecycle\n")
    await plugins.load(["lc_plugin"])
    assert "lifecycle service is not available" in str(plugins.failures[0])
    sentinel = object()
    (tmp_path / "lc2_plugin.py").write_text("SEEN = []\ndef register(ctx):\n    SEEN.append(ctx.subagent_lifecycle)\n")
    await plugins.load(["lc2_plugin"], lifecycle=sentinel)
    import lc2_plugin
    assert lc2_plugin.SEEN == [sentinel]


async def test_duplicate_tool_names_fail_the_second_plugin(plugins, tmp_path):
    (tmp_path / "dup_plugin.py").write_text(textwrap.dedent(GOOD))
    await plugins.load(["good_plugin", "dup_plugin"])
    assert plugins.loaded == ["good_plugin"]
    assert "already registered: shout, /ping" in str(plugins.failures[0])


async def test_hooks_run_in_order_and_a_failing_hook_does_not_stop_the_rest(caplog):
    hooks = HookRegistry()
    calls = []

    async def first(**kw):
        calls.append(("first", kw))

    def broken(**kw):
        raise ValueError("bad hook")

    hooks.register("subagent_stop", first)
    hooks.register("subagent_stop", broken)
    hooks.register("subagent_stop", lambda **kw: calls.append(("third", kw)))
    await hooks.run("subagent_stop", child="c1")
    assert calls == [("first", {"child": "c1"}), ("third", {"child": "c1"})]
    assert "bad hook" in caplog.text
    with pytest.raises(ValueError, match="unknown hook"):
        hooks.register("subagent_sotp", first)


async def test_a_hook_that_overruns_is_given_up_on_and_the_rest_still_run(caplog):
    hooks = HookRegistry(timeout_seconds=0.05)
    calls, release = [], threading.Event()

    async def stuck(**kw):
        await asyncio.Event().wait()

    def own_timeout(**kw):
        raise TimeoutError("the plugin's own call timed out")

    hooks.register("turn_end", stuck, owner="slow_plugin")
    hooks.register("turn_end", lambda **kw: release.wait(5), owner="blocking_plugin")  # a thread cannot be stopped
    hooks.register("turn_end", own_timeout)
    hooks.register("turn_end", lambda **kw: calls.append(kw))
    try:
        await asyncio.wait_for(hooks.run("turn_end", turn_id="t1"), 5)
    finally:
        release.set()
    assert calls == [{"turn_id": "t1"}]
    lines = [r.getMessage() for r in caplog.records if r.name == "agent.hooks"]
    assert lines[0].startswith("hook turn_end (plugin slow_plugin: ") and "did not finish in 0.05 s" in lines[0]
    assert lines[1].startswith("hook turn_end (plugin blocking_plugin: ") and "did not finish" in lines[1]
    assert lines[2].endswith("own_timeout) failed")  # its own TimeoutError is a failure, not an overrun


async def test_a_hung_synchronous_hook_holds_one_thread_not_one_per_call(caplog):
    # A plugin's blocking call with no timeout of its own: every later event took another worker
    # thread until none was left, and every tool or file read waiting for one hung too.
    hooks = HookRegistry(timeout_seconds=0.01)
    entered, release = [], threading.Event()

    def blocking(**kw):
        entered.append(kw["call_id"])
        release.wait(10)

    hooks.register("tool_end", blocking, owner="blocking_plugin")
    try:
        for n in range(20):
            await hooks.run("tool_end", call_id=n)
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "a free thread"), 2) == "a free thread"
        assert entered == [0]
    finally:
        release.set()
    skipped = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
    assert len(skipped) == 19 and skipped[0].startswith("hook tool_end (plugin blocking_plugin: ")
    async with asyncio.timeout(2):  # once its thread has returned, the hook runs again
        while len(entered) == 1:
            await hooks.run("tool_end", call_id="again")
            await asyncio.sleep(0.01)
    assert entered == [0, "again"]


async def test_a_hook_that_swallows_its_cancellation_is_still_given_up_on(caplog):
    # A plugin that retries whatever interrupts its call (a bare except around a retry loop) took
    # the timeout's cancellation for one more failure: the turn, its /stop and the shutdown waited for good.
    hooks = HookRegistry(timeout_seconds=0.05)
    calls, done = [], asyncio.Event()

    async def stubborn(**kw):
        while not done.is_set():
            try:
                await done.wait()
            except asyncio.CancelledError:
                pass  # tries again

    hooks.register("turn_end", stubborn, owner="stubborn_plugin")
    hooks.register("turn_end", lambda **kw: calls.append(kw))
    running = asyncio.ensure_future(hooks.run("turn_end", turn_id="t1"))
    try:
        finished, _ = await asyncio.wait({running}, timeout=2)
    finally:
        done.set()  # lets the hook, and on the build that waited on it the run, end
        await running
    assert finished == {running} and calls == [{"turn_id": "t1"}]
    assert "hook turn_end (plugin stubborn_plugin: " in caplog.text and "did not finish in 0.05 s" in caplog.text

class Backend:
    description = "routes things"

    def __init__(self, name):
        self.name = name

    def options(self):
        return []

    def resolve(self, route):
        raise LookupError(route)


async def test_delegation_backends_register_by_name_and_bad_ones_are_refused(tmp_path, monkeypatch):
    (tmp_path / "routes_plugin.py").write_text(
        "from tests.agent.test_plugins import Backend\n"
        "def register(ctx):\n    ctx.register_delegation_backend(Backend('model_map'))\n")
    (tmp_path / "clash_plugin.py").write_text(
        "from tests.agent.test_plugins import Backend\n"
        "def register(ctx):\n    ctx.register_delegation_backend(Backend('model_map'))\n")
    (tmp_path / "default_plugin.py").write_text(
        "from tests.agent.test_plugins import Backend\n"
        "def register(ctx):\n    ctx.register_delegation_backend(Backend('default'))\n")
    (tmp_path / "odd_plugin.py").write_text(
        "def register(ctx):\n    ctx.register_delegation_backend(object())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins = PluginHost(ToolRegistry(), HookRegistry())
    await plugins.load(["routes_plugin", "clash_plugin", "default_plugin", "odd_plugin"])
    assert plugins.loaded == ["routes_plugin"] and list(plugins.delegation_backends) == ["model_map"]
    messages = [str(f) for f in plugins.failures]
    assert "already registered: delegation backend model_map" in messages[0]
    assert "already registered: delegation backend default" in messages[1]
    assert "delegation backend name None must be a lower-case word" in messages[2]


async def test_a_plugin_registering_a_name_twice_is_reported_with_nothing_registered(plugins, tmp_path):
    (tmp_path / "twice_plugin.py").write_text(textwrap.dedent("""
        def register(ctx):
            ctx.register_tool("echo", "first", {"type": "object"}, lambda a, c: 1)
            ctx.register_tool("echo", "second", {"type": "object"}, lambda a, c: 2)
        """))
    (tmp_path / "twice_cmd_plugin.py").write_text(textwrap.dedent("""
        def register(ctx):
            ctx.register_command("ping", lambda a, c: "1")
            ctx.register_command("/PING", lambda a, c: "2")
        """))
    await plugins.load(["twice_plugin", "twice_cmd_plugin", "good_plugin"])
    assert plugins.loaded == ["good_plugin"]
    messages = [str(f) for f in plugins.failures]
    assert messages == ["plugin 'twice_plugin': tool 'echo' is registered twice",
                        "plugin 'twice_cmd_plugin': command /ping is registered twice"]
    assert plugins.tools.get("echo") is None
    assert plugins.commands["ping"].plugin == "good_plugin"


async def test_a_failing_plugin_hook_is_logged_naming_its_plugin(plugins, tmp_path, caplog):
    (tmp_path / "raising_hook_plugin.py").write_text(
        "def register(ctx):\n    ctx.register_hook('turn_end', lambda **kw: 1 / 0)\n")
    await plugins.load(["raising_hook_plugin"])
    calls = []
    plugins.hooks.register("turn_end", lambda **kw: calls.append(kw))
    await plugins.hooks.run("turn_end", session_id="s1", turn_id="t1", role="parent", exit_reason="completed")
    assert calls and "ZeroDivisionError" in caplog.text
    [record] = [r for r in caplog.records if r.name == "agent.hooks"]
    assert "hook turn_end (plugin raising_hook_plugin: register.<locals>.<lambda>) failed" in record.getMessage()


async def test_a_hook_that_is_a_callable_dataclass_runs_and_the_turn_goes_on(plugins, tmp_path):
    # A dataclass with __call__ is unhashable (eq=True sets __hash__ to None): the registry once
    # looked it up in a dict before every call, and each turn ended with that TypeError.
    (tmp_path / "recorder_plugin.py").write_text(textwrap.dedent("""
        from dataclasses import dataclass, field

        @dataclass
        class Recorder:
            turns: list = field(default_factory=list)

            def __call__(self, **event):
                self.turns.append(event["turn_id"])

        RECORDER = Recorder()

        def register(ctx):
            ctx.register_hook("turn_start", RECORDER)
        """))
    await plugins.load(["recorder_plugin"])
    session = AgentSession(model=ScriptedModel({"parent": [[{"text": "hi"}]]}), hooks=plugins.hooks)
    result = await session.run_turn("go", turn_id="t1")
    import recorder_plugin
    assert (result.exit_reason, result.text, recorder_plugin.RECORDER.turns) == ("completed", "hi", ["t1"])


@pytest.mark.parametrize(("call", "problem"), [
    ('register_tool("my tool", "x", {"type": "object"}, lambda a, c: 1)',
     "tool name 'my tool' must be 1 to 64 letters, digits, '_' or '-'"),
    ('register_tool("x" * 65, "x", {"type": "object"}, lambda a, c: 1)', "must be 1 to 64 letters"),
    ('register_tool(None, "x", {"type": "object"}, lambda a, c: 1)', "tool name None must be 1 to 64 letters"),
    ('register_tool("t", "x", {"type": "object"}, "not a function")', "tool 't' has no callable handler"),
    ('register_tool("t", "x", {"type": "string"}, lambda a, c: 1)',
     "tool 't' has an invalid parameter schema: it must describe an object"),
    ('register_tool("t", "x", True, lambda a, c: 1)', "tool 't' has an invalid parameter schema: it must describe an object"),
    ('register_tool("t", None, {"type": "object"}, lambda a, c: 1)', "tool 't' needs a description (a string)"),
    ('register_tool("t", "x", {"type": "object"}, lambda a, c: 1, toolset=3)', "toolset name 3 must be a non-empty string"),
    ('register_hook("turn_end", None)', "hook turn_end: None is not callable"),
    ('register_command("ping", None)', "command /ping has no callable handler"),
    ('register_command(7, lambda a, c: "x")', "command name 7 must be a single word"),
])
async def test_a_registration_no_model_or_host_could_use_fails_the_plugin_naming_what(plugins, tmp_path, monkeypatch,
                                                                                call, problem):
    # Each of these loaded once and broke later: a tool name or a schema the model APIs refuse
    # failed every model call of every chat, a missing handler failed each call of the tool,
    # hook or command, and a name that is no string raised AttributeError instead of this.
    (tmp_path / "bad_call_plugin.py").write_text(f"def register(ctx):\n    ctx.{call}\n")
    monkeypatch.delitem(sys.modules, "bad_call_plugin", raising=False)  # each case's own module
    await plugins.load(["bad_call_plugin", "good_plugin"])
    assert plugins.loaded == ["good_plugin"]
    message = str(plugins.failures[0])
    assert message.startswith("plugin 'bad_call_plugin': ") and problem in message


async def test_a_plugin_that_raises_is_reported_with_the_file_and_line_that_raised(plugins, tmp_path, caplog):
    # 'register() failed: KeyError: 'token'' alone left its author to guess which lookup failed.
    (tmp_path / "keyed_plugin.py").write_text(textwrap.dedent("""
        def register(ctx):
            token = _settings()["token"]

        def _settings():
            return {}["token"]
        """))
    (tmp_path / "importing_plugin.py").write_text("import json\nVALUE = json.loads('{')\n")
    await plugins.load(["keyed_plugin", "importing_plugin", "missing_plugin"])
    keyed, importing, missing = (str(f) for f in plugins.failures)
    assert keyed == f"plugin 'keyed_plugin': register() failed: KeyError: 'token' (at {tmp_path / 'keyed_plugin.py'}:6)"
    assert importing.startswith("plugin 'importing_plugin': import failed: JSONDecodeError: ")
    assert importing.endswith(f" (at {tmp_path / 'importing_plugin.py'}:2)")
    assert missing.startswith("plugin 'missing_plugin': import failed: ModuleNotFoundError: No module named "
                              "'missing_plugin'; Python looked in ")  # `test_plugin_import_hints`
    logged = [r for r in caplog.records if r.name == "agent.plugins" and r.levelname == "ERROR"]
    # The whole traceback; none for the plugin that is not there, whose line says all (`test_plugin_not_found_log`).
    assert [r.exc_info and r.exc_info[1] for r in logged] == [f.__cause__ for f in plugins.failures[:2]] + [None]


async def test_a_plain_hook_or_tool_that_returns_a_coroutine_has_it_awaited(plugins, tmp_path):
    # `lambda **event: notify(**event)` with an async notify: the coroutine came back from the
    # worker thread and was dropped (never awaited), and a tool's reached the model as
    # '"<coroutine object answer at 0x…>"'; the gateway's commands already awaited theirs.
    (tmp_path / "async_inside_plugin.py").write_text(textwrap.dedent("""
        SEEN = []

        async def notify(**event):
            SEEN.append(event["turn_id"])

        async def answer(args):
            return {"answer": 42}

        class Recorder:
            async def __call__(self, **event):
                SEEN.append("recorder " + event["turn_id"])

        def register(ctx):
            ctx.register_hook("turn_end", lambda **event: notify(**event))
            ctx.register_hook("turn_end", Recorder())
            ctx.register_tool("answer", "Answers.", {"type": "object"}, lambda args, tool_ctx: answer(args))
        """))
    await plugins.load(["async_inside_plugin"])
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "answer"}]}, {"text": "done"}]]})
    session = AgentSession(model=model, tools=plugins.tools.resolve(), hooks=plugins.hooks)
    result = await session.run_turn("go", turn_id="t1")
    import async_inside_plugin
    assert (result.exit_reason, session.messages[2]["content"]) == ("completed", '{"answer": 42}')
    assert async_inside_plugin.SEEN == ["t1", "recorder t1"]


async def test_a_register_that_does_not_return_fails_its_plugin_and_the_rest_load(plugins, tmp_path, caplog):
    # It held the start for ever: the gateway neither started nor said why.
    (tmp_path / "hung_plugin.py").write_text(textwrap.dedent("""
        import threading

        release = threading.Event()

        def register(ctx):
            ctx.register_tool("never", "Never registered.", {"type": "object"}, lambda args, c: 1)
            release.wait(5)
        """))
    (tmp_path / "hung_async_plugin.py").write_text(textwrap.dedent("""
        import asyncio

        async def register(ctx):
            ctx.register_command("never", lambda args, c: "no")
            await asyncio.Event().wait()
        """))
    (tmp_path / "async_plugin.py").write_text(textwrap.dedent("""
        import asyncio

        TASKS = []

        async def register(ctx):  # a plugin that needs the event loop in register declares it async
            TASKS.append(asyncio.get_running_loop().create_task(asyncio.sleep(0)))
            ctx.register_command("tick", lambda args, c: "tock")
        """))
    plugins.load_timeout_seconds = 0.2
    import hung_plugin
    try:
        await plugins.load(["hung_plugin", "hung_async_plugin", "async_plugin", "good_plugin"])
    finally:
        hung_plugin.release.set()
    assert plugins.loaded == ["async_plugin", "good_plugin"]
    assert [str(f) for f in plugins.failures] == [
        "plugin 'hung_plugin': register() did not return within 0.2 s",
        "plugin 'hung_async_plugin': register() did not return within 0.2 s",
    ]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [str(f) for f in plugins.failures]
    assert plugins.tools.get("never") is None and "never" not in plugins.commands
    assert plugins.commands["tick"].plugin == "async_plugin"


async def test_a_plugin_whose_import_does_not_return_fails_to_load_and_the_rest_load(plugins, tmp_path, caplog):
    # Its import ran on the event loop's thread: a module waiting at import for a service without
    # a timeout held the start for ever, register's time limit never reached.
    (tmp_path / "import_gate.py").write_text("import threading\n\nrelease = threading.Event()\n")
    (tmp_path / "hung_import_plugin.py").write_text(textwrap.dedent("""
        import import_gate

        import_gate.release.wait(5)


        def register(ctx):
            ctx.register_command("never", lambda args, c: "no")
        """))
    plugins.load_timeout_seconds = 0.2
    import import_gate
    try:
        await plugins.load(["hung_import_plugin", "good_plugin"])
    finally:
        import_gate.release.set()
    assert plugins.loaded == ["good_plugin"]
    assert [str(f) for f in plugins.failures] == ["plugin 'hung_import_plugin': did not import within 0.2 s"]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [str(f) for f in plugins.failures]
    assert "never" not in plugins.commands and plugins.commands["ping"].plugin == "good_plugin"


async def test_a_plugin_that_exits_fails_to_load_and_the_rest_load(plugins, tmp_path):
    # sys.exit in a plugin's import or register() went on up through the host, which stopped at its start.
    (tmp_path / "exits_plugin.py").write_text('import sys\n\nsys.exit("set FOO first")\n')
    (tmp_path / "exits_late_plugin.py").write_text("import sys\n\n\ndef register(ctx):\n    sys.exit(2)\n")
    await plugins.load(["exits_plugin", "exits_late_plugin", "good_plugin"])
    assert plugins.loaded == ["good_plugin"]
    assert [str(f).split(" (at ")[0] for f in plugins.failures] == [
        "plugin 'exits_plugin': import failed: SystemExit: set FOO first",
        "plugin 'exits_late_plugin': register() failed: SystemExit: 2"]


def test_a_stop_signal_while_a_plugin_loads_stops_the_host_and_an_async_exit_fails_it(plugins, tmp_path, monkeypatch):
    # `switchboard`'s SIGTERM handler raises SystemExit in the main thread wherever it is (a worker loads its
    # plugins before it sets its own handlers): raised in a plugin's register(), or in starting its thread,
    # it was taken for that plugin's sys.exit(), and the worker ran on after `docker stop`. An async register's
    # own sys.exit(), in a task of its own, went up out of the event loop and stopped the host instead.
    (tmp_path / "stopped_plugin.py").write_text("import signal\n\n\nasync def register(ctx):\n"
                                                "    signal.raise_signal(signal.SIGUSR1)\n")
    (tmp_path / "exits_async_plugin.py").write_text("import sys\n\n\nasync def register(ctx):\n    sys.exit(3)\n")
    (tmp_path / "alarmed_plugin.py").write_text(textwrap.dedent('''
        import signal

        def alarm(signum, frame):
            raise TimeoutError("the service did not answer")

        async def register(ctx):  # its own handler's failure is its own: no stop of the host
            signal.signal(signal.SIGUSR2, alarm)
            signal.raise_signal(signal.SIGUSR2)
    '''))

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    class SignalledWhileStarting(threading.Thread):
        def start(self):  # where CI's worker was: waiting for the register() thread to start
            super().start()
            if self.name.startswith("plugin-register-"):
                signal.raise_signal(signal.SIGUSR1)

    before = signal.signal(signal.SIGUSR1, terminate), signal.getsignal(signal.SIGUSR2)
    try:
        asyncio.run(plugins.load(["exits_async_plugin", "alarmed_plugin", "good_plugin"]))
        with pytest.raises(SystemExit) as stopped:  # as `switchboard worker` runs it: out of asyncio.run
            asyncio.run(plugins.load(["stopped_plugin", "half_plugin"]))
        monkeypatch.setattr(agent._plugins, "threading", types.SimpleNamespace(Thread=SignalledWhileStarting))
        with pytest.raises(SystemExit) as stopped_starting:
            asyncio.run(plugins.load(["half_plugin"]))
    finally:
        signal.signal(signal.SIGUSR1, before[0])
        signal.signal(signal.SIGUSR2, before[1])
    assert stopped.value.code == stopped_starting.value.code == 128 + signal.SIGUSR1
    assert [str(f).split(" (at ")[0] for f in plugins.failures] == [
        "plugin 'exits_async_plugin': register() failed: SystemExit: 3",
        "plugin 'alarmed_plugin': register() failed: TimeoutError: the service did not answer"]
    assert plugins.loaded == ["good_plugin"]
