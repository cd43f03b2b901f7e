"""/stop, /new, /agents and /help while work runs, inline and in the background."""

from __future__ import annotations

import asyncio
import os

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.commands import STOP_ARGS_NOTE, Command, parse
from gateway.config import config_from_mapping
from gateway.testing import RecordingAdapter, make_config, settled
from tests.plugin_modules import plugin_module

HANGING_CHILDREN = {"tasks": [{"goal": "first [hang]"}, {"goal": "second [hang]"}]}


def child(request: ModelRequest) -> dict:
    goal = request.metadata.get("goal", "")
    if "[hang]" in goal:
        if request.iteration == 0:
            return {"text": f"partial work on {goal}", "tool_calls": [{"name": "list_files", "arguments": {}}]}
        return {"wait": goal}  # never released: the child hangs here with its partial output
    return {"text": f"done: {goal}"}


def parent_script(*, after: str = "all done") -> dict:
    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and "delegat" in str(last["content"]).lower():
            return {"tool_calls": [{"name": "delegate_task", "arguments": HANGING_CHILDREN}]}
        if last["role"] == "tool":
            return {"text": "I started the subagents."}
        return {"text": after}
    return {"parent": parent, "leaf": child}


async def children_hanging(model: ScriptedModel) -> None:
    """Both children did their first step and now hang in their second model call."""
    async with asyncio.timeout(5):
        for task in HANGING_CHILDREN["tasks"]:
            await model.reached(task["goal"])


@pytest.mark.parametrize("interim", [False, True], ids=["inline", "background"])
async def test_stop_ends_the_turn_and_every_child_with_one_confirmation(tmp_path, gateways, interim):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": interim})
    model = ScriptedModel(parent_script())
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate this")
    await children_hanging(model)
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    confirmations = chat.texts("command")
    assert len(confirmations) == 1 and confirmations[0].startswith("Stopped")
    assert "2 subagents" in confirmations[0]
    after_stop = chat.messages[chat.kinds().index("command") + 1:]
    assert after_stop == []  # nothing more from the stopped work
    session = next(iter(gateway.sessions))
    recent = gateway.host.children.recent(session.session_id)
    assert [c.state.value for c in recent] == ["INTERRUPTED", "INTERRUPTED"]
    assert all(c.summary.startswith("partial work") for c in recent)
    await chat.say("/agents")
    await chat.wait_for(lambda: len(chat.texts("command")) == 2)
    assert "partial work on first [hang]" in chat.texts("command")[1]


async def test_stop_with_nothing_running_says_so(tmp_path, gateways):
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "x"}]]})
    await chat.say("!stop")
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["Nothing was running."]


async def test_new_starts_a_generation_and_old_results_never_arrive(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": True})
    model = ScriptedModel(parent_script(after="fresh start"))
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate this")
    await children_hanging(model)
    session = next(iter(gateway.sessions))
    old_id, old_generation = session.session_id, session.generation
    await chat.say("/new")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert chat.texts("command")[0].startswith("Started a new session and ended 2 subagents")
    assert session.generation == old_generation + 1 and session.session_id != old_id
    await chat.say("hello again")
    await chat.wait_for(lambda: "fresh start" in chat.texts())
    await settled(gateway)
    assert "completion" not in chat.kinds()
    assert all(m["role"] != "tool" for m in session.agent.messages)  # the new generation starts clean


async def test_the_pinned_mode_survives_a_restart_and_is_re_resolved_on_new(tmp_path, gateways):
    chat = RecordingAdapter()
    background = make_config(tmp_path, display={"interim_assistant_messages": True})
    gateway = await gateways(background, [chat], script={"parent": [[{"text": "hi"}], [{"text": "hi"}]]})
    await chat.say("hello")
    await chat.wait_for(lambda: chat.messages)
    assert next(iter(gateway.sessions)).mode == "background"
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    inline = make_config(tmp_path, display={"interim_assistant_messages": False})
    gateway2 = await gateways(inline, [chat2], script={"parent": [[{"text": "hi"}], [{"text": "hi"}]]})
    await chat2.say("hello after restart")
    await chat2.wait_for(lambda: chat2.messages)
    session = next(iter(gateway2.sessions))
    assert session.mode == "background"  # pinned across the restart
    assert any("hello" == m.get("content") for m in session.agent.messages)  # transcript restored
    await chat2.say("/new")
    await chat2.wait_for(lambda: "command" in chat2.kinds())
    assert session.mode == "inline" and "inline" in chat2.texts("command")[0]


async def test_help_lists_builtin_and_plugin_commands(tmp_path, gateways, monkeypatch):
    (tmp_path / "ping_plugin.py").write_text(
        "def register(ctx):\n    ctx.register_command('ping', lambda args, c: f'pong {args}', 'answers pong')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    chat = RecordingAdapter()
    config = config_from_mapping({"state_dir": str(tmp_path / "state"), "plugins": ["ping_plugin"]}).config
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    assert [c.name for c in chat.commands] == ["stop", "new", "agents", "retry", "delegation", "help", "ping"]
    await chat.say("/help")
    await chat.say("/ping loud")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert "/stop" in chat.texts()[0] and "/ping — answers pong" in chat.texts()[0]
    assert chat.texts()[1] == "pong loud"
    assert len(gateway.sessions)


async def test_a_plugin_command_that_answers_nothing_is_answered_done(tmp_path, gateways, monkeypatch):
    """A slash command's "thinking…" waits for an answer: an empty or blank one is "Done." as None is."""
    plugin_module(tmp_path, monkeypatch, "quiet_plugin",
                  "def register(ctx):\n    ctx.register_command('mark', lambda a, c: '')\n"
                  "    ctx.register_command('blank', lambda a, c: ' \\n')\n"
                  "    ctx.register_command('none', lambda a, c: None)\n")
    config = config_from_mapping({"state_dir": str(tmp_path / "state"), "plugins": ["quiet_plugin"]}).config
    chat = RecordingAdapter()
    await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    for name in ("mark", "blank", "none"):
        await chat.say(f"/{name}")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    assert chat.texts() == ["Done."] * 3


async def test_a_plugin_command_that_calls_sys_exit_fails_that_command_not_the_gateway(tmp_path, gateways,
                                                                                       monkeypatch):
    """A plugin's ``sys.exit()`` in a command handler (async, plain in its thread, or a coroutine handed
    back) is that command's failure: raised on, it went up out of the event loop and stopped the gateway."""
    plugin_module(tmp_path, monkeypatch, "exiting_plugin",
                  "import sys\n"
                  "async def leave(a, c):\n    sys.exit('set FOO first')\n"
                  "def register(ctx):\n    ctx.register_command('leave', leave)\n"
                  "    ctx.register_command('quit', lambda a, c: sys.exit(3))\n"
                  "    ctx.register_command('later', lambda a, c: leave(a, c))\n")
    config = config_from_mapping({"state_dir": str(tmp_path / "state"), "plugins": ["exiting_plugin"]}).config
    chat = RecordingAdapter()
    await gateways(config, [chat], script={"parent": [[{"text": "still here"}]]})
    for name in ("leave", "quit", "later"):
        await chat.say(f"/{name}")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    # Plugin commands run beside intake, answered in the order sent (`CommandAnswers.answer_in_line`).
    assert chat.texts() == [f"/{name} failed: SystemExit." for name in ("leave", "quit", "later")]
    await chat.say("hello")
    await chat.wait_for(lambda: len(chat.messages) == 4)
    assert chat.texts()[-1] == "still here"


async def test_a_plugin_command_cut_short_by_a_stop_is_answered_once_after_the_next_start(tmp_path, gateways,
                                                                                         monkeypatch):
    plugin = plugin_module(tmp_path, monkeypatch, "waiting_plugin",
                           "import asyncio\nanswering = asyncio.Event()\n\n"
                           "async def report(args, context):\n    await answering.wait()\n    return 'the report'\n\n"
                           "def register(ctx):\n    ctx.register_command('report', report)\n")
    config = config_from_mapping({"state_dir": str(tmp_path / "state"), "plugins": ["waiting_plugin"]}).config
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    await chat.say("/report")
    await gateway.stop(grace=0)  # while the command waits: it is not answered now
    plugin.answering.set()
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], script={"parent": [[{"text": "x"}]]})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    assert (chat.texts(), chat2.texts()) == ([], ["the report"])


async def test_a_plugin_command_named_like_a_builtin_fails_that_plugin(tmp_path, gateways, monkeypatch):
    (tmp_path / "shadow_plugin.py").write_text(
        "def register(ctx):\n    ctx.register_command('ping', lambda a, c: 'pong')\n"
        "    ctx.register_command('stop', lambda a, c: 'not stopping')\n")
    (tmp_path / "alias_plugin.py").write_text(
        "def register(ctx):\n    ctx.register_command('reset', lambda a, c: 'not resetting')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    chat = RecordingAdapter()
    config = config_from_mapping({"state_dir": str(tmp_path / "state"),
                                  "plugins": ["shadow_plugin", "alias_plugin"]}).config
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "x"}]]})
    plugins = gateway.host.plugins
    assert plugins.loaded == []
    assert [str(f) for f in plugins.failures] == ["plugin 'shadow_plugin': already registered: /stop",
                                                  "plugin 'alias_plugin': already registered: /reset"]
    assert [c.name for c in chat.commands] == ["stop", "new", "agents", "retry", "delegation", "help"]


async def test_commands_addressed_to_the_bot_by_name_and_reset_alias(tmp_path, gateways):
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "x"}]]})
    await chat.say("/stop@my_bot")
    await chat.say("/reset")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert chat.texts()[0] == "Nothing was running."
    assert chat.texts()[1].startswith("Started a new session")


async def restarted_without_answers(tmp_path, gateways, gateway, config) -> RecordingAdapter:
    """Stop ``gateway`` and start another on its state: it must find nothing left to answer."""
    await gateway.stop(grace=0)
    chat = RecordingAdapter()
    again = await gateways(config, [chat], model=ScriptedModel({"parent": [[{"text": "resurrected"}]]}))
    await settled(again)
    assert chat.texts() == [] and again.store.inbox.unfinished() == []
    return chat


DROPPED_TWO = "Dropped 2 messages that were waiting for their turn: send them again to have them answered."


@pytest.mark.parametrize(("command", "answer"), [
    ("/stop", f"Stopped the running turn. {DROPPED_TWO}"),
    ("/new", f"Started a new session. Delegation here is background. {DROPPED_TWO}"),
])
async def test_stop_and_new_drop_the_queued_messages_say_so_and_no_restart_answers_them(tmp_path, gateways,
                                                                                        command, answer):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"busy_input_mode": "queue"})
    model = ScriptedModel({"parent": [[{"wait": "first", "text": "first"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("one")
    await model.reached("first")
    await chat.say("two")
    await chat.say("three")
    await chat.say(command)
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts() == [answer]
    await restarted_without_answers(tmp_path, gateways, gateway, config)


async def test_stop_drops_a_steered_message_the_turn_never_read(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    model = ScriptedModel({"parent": [[{"wait": "thinking", "text": "never sent"}], [{"text": "resurrected"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start")
    await model.reached("thinking")
    await chat.say("use metric units")
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts() == ["Stopped the running turn. Dropped 1 message that was waiting for its turn: "
                            "send it again to have it answered."]
    await restarted_without_answers(tmp_path, gateways, gateway, config)


def user_messages(session) -> list[str]:
    return [m["content"] for m in session.agent.messages if m["role"] == "user"]


async def test_new_followed_by_text_starts_a_session_whose_first_message_it_is(tmp_path, gateways):
    chat = RecordingAdapter()
    def parent(request: ModelRequest) -> dict:
        return {"text": "let's plan it" if "trip" in request.messages[-1]["content"] else "old answer"}

    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": parent}))
    await chat.say("hello")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    session = next(iter(gateway.sessions))
    generation = session.generation
    accepted = await chat.say("/new plan the trip\nto Lisbon")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    await settled(gateway)
    assert chat.texts() == ["old answer", "Started a new session. Delegation here is background.", "let's plan it"]
    assert session.generation == generation + 1 and user_messages(session) == ["plan the trip\nto Lisbon"]
    assert accepted.turn_id is not None


async def test_text_after_stop_is_not_sent_to_the_model_and_the_answer_says_so(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "thinking", "text": "never sent"}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    await chat.say("write it in rust")
    await model.reached("thinking")
    accepted = await chat.say("/stop\nuse python instead")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert chat.texts() == [f"Stopped the running turn. {STOP_ARGS_NOTE}"] and accepted.turn_id is None
    assert user_messages(next(iter(gateway.sessions))) == ["write it in rust"]


async def test_new_with_text_interrupted_by_a_restart_resets_once_and_answers_once(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path)
    model = ScriptedModel({"parent": [[{"wait": "cut", "text": "never sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("/new plan the trip")
    await model.reached("cut")
    generation = next(iter(gateway.sessions)).generation
    await gateway.stop(grace=0)  # the reset is journaled, its message's turn is not over

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": [[{"text": "planned"}]]}))
    await chat2.wait_for(lambda: "reply" in chat2.kinds())
    await settled(gateway2)
    session = next(iter(gateway2.sessions))
    assert chat.texts() + chat2.texts() == ["Started a new session. Delegation here is background.", "planned"]
    assert session.generation == generation and user_messages(session) == ["plan the trip"]


def test_a_command_name_ends_at_a_space_or_a_line_break():
    known = {"stop", "new", "agents"}
    assert parse("/agents\nlog sa-1", known) == Command("agents", "log sa-1")
    assert parse("/new  first line\nsecond", known).then_message == "first line\nsecond"
    assert parse("/agents log sa-1", known).then_message is None
    assert parse("/stop", known).then_message is None and parse("/stop now", known).then_message is None
    assert parse("/ stop", known) is None and parse("/", known) is None and parse("/etc/hosts", known) is None


async def test_hung_plain_plugin_commands_leave_the_threads_tools_need(tmp_path, gateways, monkeypatch):
    # A plain handler blocking on a dead service, asked again and again: each call held one of the
    # loop's shared worker threads, until another chat's file tools (and hooks, downloads) found none.
    plugin = plugin_module(tmp_path, monkeypatch, "hanging_plugin",
                           "import threading\nrelease = threading.Event()\n\n"
                           "def status(args, context):\n    release.wait(30)\n    return 'the status'\n\n"
                           "def register(ctx):\n    ctx.register_command('status', status)\n")
    config = make_config(tmp_path, plugins=["hanging_plugin"], agent={"toolsets": ["file"]})
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "list_files", "arguments": {}}]},
                                       {"text": "listed"}]]})
    chat = RecordingAdapter()
    await gateways(config, [chat], model=model)
    try:
        for n in range(min(32, (os.cpu_count() or 1) + 4)):  # as many as the loop's default thread pool has
            await chat.say("/status", chat=f"waiting-{n}")
        await chat.say("what is there?", chat="other")
        await chat.wait_for(lambda: "listed" in chat.texts())
    finally:
        plugin.release.set()


def nested_script() -> dict:
    """The parent delegates to one orchestrator, which delegates to two leaves that hang."""
    def orchestrator(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "tool":
            return {"text": "leaves finished"}
        return {"tool_calls": [{"name": "delegate_task", "arguments": HANGING_CHILDREN}]}

    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and "delegat" in str(last["content"]).lower():
            tasks = {"tasks": [{"goal": "plan the work", "role": "orchestrator"}]}
            return {"tool_calls": [{"name": "delegate_task", "arguments": tasks}]}
        if last["role"] == "tool":
            return {"text": "I started the subagents."}
        return {"text": "all done"}
    return {"parent": parent, "orchestrator": orchestrator, "leaf": child}


@pytest.mark.parametrize("interim", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("command", ["/stop", "/new"])
async def test_stop_and_new_count_the_nested_subagents_they_stop(tmp_path, gateways, interim, command):
    # An orchestrator's own children stop with it, but the confirmation counted only the orchestrator:
    # "Stopped 1 subagent" while three stopped.
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": interim},
                         delegation={"max_spawn_depth": 2})
    model = ScriptedModel(nested_script())
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate this")
    await children_hanging(model)
    session = next(iter(gateway.sessions))
    old_id = session.session_id
    await chat.say(command)
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    (confirmation,) = chat.texts("command")
    assert "3 subagents" in confirmation, confirmation
    assert chat.messages[chat.kinds().index("command") + 1:] == []  # nothing more from the stopped work
    (orchestrator,) = gateway.host.children.recent(old_id)
    leaves = gateway.host.children.recent(orchestrator.subagent_id)
    assert [c.state.value for c in (orchestrator, *leaves)] == ["INTERRUPTED"] * 3


def finishing_script() -> dict:
    """A background parent whose one child answers once the test releases it; a later user turn
    waits at "thinking" until released."""
    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and str(last["content"]).startswith("[Background delegation results]"):
            return {"text": "here are the results"}
        if last["role"] == "user" and last["content"] == "go":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "dig"}}]}
        if last["role"] == "user":
            return {"wait": "thinking", "text": "thought"}
        return {"text": "on it"}
    return {"parent": parent, "leaf": lambda request: {"wait": "dig", "text": "found it"}}


async def delegated_in_the_background(tmp_path, gateways):
    """(chat, model, gateway) once the chat's turn has delegated finishing_script's child in the
    background and said "on it"."""
    chat = RecordingAdapter()
    model = ScriptedModel(finishing_script())
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat], model=model)
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    return chat, model, gateway


def told_once(chat: RecordingAdapter) -> None:
    """The child's work reached the chat once, as one of: its results, or a confirmation saying the
    child was stopped, or that its finished results will not be delivered."""
    confirmation = chat.texts("command")[-1]
    outcomes = [chat.texts("completion") == ["here are the results"], "1 subagent" in confirmation,
                "results of 1 finished background task will not be delivered" in confirmation]
    assert sum(outcomes) == 1, (chat.texts("completion"), confirmation)


@pytest.mark.parametrize("turns", [-1, *range(8)])  # -1: the stop arrives first, the release in the same loop turn
@pytest.mark.parametrize("command", ["/stop", "/new"])
async def test_a_stop_as_a_child_finishes_shows_one_outcome(tmp_path, gateways, command, turns):
    # Released and stopped within a few loop turns of each other: between the child's end and its
    # results' turn, /stop said "Nothing was running." and /new nothing, and the results never came.
    chat, model, gateway = await delegated_in_the_background(tmp_path, gateways)
    await model.reached("dig")
    if turns < 0:
        said = asyncio.ensure_future(chat.say(command))
        model.release("dig")
        await said
    else:
        model.release("dig")
        for _ in range(turns):
            await asyncio.sleep(0)
        await chat.say(command)
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    told_once(chat)


async def test_a_stop_while_finished_results_wait_for_a_busy_turn_says_they_will_not_come(tmp_path, gateways):
    chat, model, gateway = await delegated_in_the_background(tmp_path, gateways)
    await chat.say("and meanwhile?")
    await model.reached("thinking")
    session = next(iter(gateway.sessions))
    (digging,) = gateway.host.children.children(session.session_id)
    model.release("dig")  # the child finishes; its results wait for the running turn
    await asyncio.wait_for(gateway.host.children.wait_finished([digging.subagent_id]), 5)
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    (confirmation,) = chat.texts("command")
    assert confirmation.startswith("Stopped the running turn. The results of 1 finished background task will not "
                                   "be delivered: /agents lists them."), confirmation
    told_once(chat)
