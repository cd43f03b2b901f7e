"""/agents: listing, log, stop and retry of one child, through the real tool loop (the openai
provider against a fake server playing the parent and its children)."""

from __future__ import annotations

import json

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.agents_command import SHOWN, _line
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import ChildSnapshot, SubagentState
from platforms.formatting import telegram_html
from tests.gateway.wire import call, goal, is_child, openai_model

RESULTS = "[Background delegation results]"


def parent(arguments: dict, children):
    """A background parent: delegates on a user message, acknowledges, then reports the results."""

    def play(body: dict) -> dict | None:
        if is_child(body):
            return children(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"text": "on it"}
        if RESULTS in str(last["content"]):
            text = last["content"]
            results = json.loads(text[text.index("{"):])["results"]
            return {"text": "results: " + "; ".join(f"{r['status']} {r['summary']}" for r in results)}
        return call("delegate_task", arguments)

    return play


def config(tmp_path, server, **sections):
    return make_config(tmp_path, model=openai_model(server), agent={"toolsets": ["file"]}, **sections)


async def command(chat: RecordingAdapter, text: str) -> str:
    answers = len(chat.texts("command"))
    await chat.say(text)
    await chat.wait_for(lambda: len(chat.texts("command")) > answers)
    return chat.texts("command")[-1]


def live(gateway):
    session = next(iter(gateway.sessions))
    return gateway.host.children.children(session.session_id)


def hanging_after_a_tool(body: dict) -> dict:
    if body["messages"][-1]["role"] == "tool":
        return {"hang": True}
    return {"text": f"partial on {goal(body)}",
            "tool_calls": [{"name": "read_file", "arguments": '{"path": "private-notes.txt"}'}]}


async def test_agents_lists_ids_goals_states_elapsed_activity_and_model_route(tmp_path, llm, gateways):
    server, fast = await llm(), await llm()
    fast.respond_with(lambda body: {"hang": True})
    server.respond_with(parent({"tasks": [{"goal": "survey the market"}, {"goal": "quick check", "route": "fast"}]},
                               lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, plugins=["advanced_delegation"], delegation={
        "backend": "model_map", "model_map": {"fast": {"description": "quick", "provider": "openai",
                                                       "model": "fast-model", "base_url": fast.base_url}}}), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts("reply") == ["on it"])
    await fast.wait_for(lambda: len(fast.requests) == 1)
    await server.wait_for(lambda: sum(1 for b in server.requests if is_child(b)) == 1)
    survey, check = live(gateway)
    listing = await command(chat, "/agents")
    lines = listing.splitlines()
    assert lines[0].startswith(f"• {survey.subagent_id} — survey the market — running, ")
    assert lines[0].endswith(" s, waiting for the model, model parent-model")
    assert lines[1].startswith(f"• {check.subagent_id} — quick check — running, ")
    assert lines[1].endswith("waiting for the model, route fast")  # its route, never the model behind it


async def test_log_shows_the_latest_tool_calls_as_metadata_only(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent({"goal": "read around"}, hanging_after_a_tool))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await server.wait_for(lambda: sum(1 for b in server.requests if is_child(b)) == 2)  # a tool call, now hanging
    (child,) = live(gateway)
    log = await command(chat, f"/agents Log {child.subagent_id[-5:]}")  # any unique part of the id, any case
    head, title, line = log.splitlines()
    assert head == f"{child.subagent_id} — read around — running"
    assert title == "Tool calls, oldest first:"
    assert line.startswith("• read_file (path) — ") and " B in, " in line
    assert "private-notes.txt" not in log  # argument names, never their values


async def test_log_of_a_finished_child_is_capped(tmp_path, llm, gateways):
    server = await llm()

    def busy(body):
        calls = sum(1 for m in body["messages"] if m["role"] == "tool")
        if calls >= 25:
            return {"text": "done reading"}
        return {"tool_calls": [{"name": "list_files", "arguments": "{}"}]}

    server.respond_with(parent({"goal": "list a lot"}, busy))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    session = next(iter(gateway.sessions))
    (child,) = gateway.host.children.recent(session.session_id)
    log = await command(chat, f"/agents log {child.subagent_id}")
    lines = log.splitlines()
    assert lines[0] == f"{child.subagent_id} — list a lot — succeeded"
    assert lines[1] == "Tool calls (the latest 20 of 25), oldest first:"
    assert len(lines) == 22 and all(line.startswith("• list_files (no arguments) — ok") for line in lines[2:])


async def test_stop_ends_one_child_and_its_partial_result_still_arrives(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent({"tasks": [{"goal": "first"}, {"goal": "second"}]}, hanging_after_a_tool))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await server.wait_for(lambda: sum(1 for b in server.requests if is_child(b)) == 4)
    first, second = live(gateway)
    answer = await command(chat, f"/agents stop {first.subagent_id}")
    assert answer.startswith(f"Stopping {first.subagent_id} (first): it ends at its next step")
    await gateway.host.children.wait_finished([first.subagent_id])
    assert [c.subagent_id for c in live(gateway)] == [second.subagent_id]
    assert "is not running: it interrupted" in await command(chat, f"/agents stop {first.subagent_id}")
    listing = await command(chat, "/agents")
    assert f"• {second.subagent_id} — second — running" in listing
    assert listing.count(second.subagent_id) == 1  # in its delegation's block only, not also among the running
    assert f"• {first.subagent_id} — first — interrupted" in listing and "partial on first" in listing
    await command(chat, f"/agents stop {second.subagent_id}")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    (report,) = chat.texts("completion")
    assert report.startswith("results: interrupted partial on first; interrupted partial on second")
    await settled(gateway)


async def test_retry_runs_a_failed_child_again_and_its_result_follows(tmp_path, llm, gateways):
    server = await llm()
    attempts = []

    def flaky(body):
        attempts.append(goal(body))
        return {"text": "" if len(attempts) == 1 else f"fixed {goal(body)}"}  # an empty answer fails

    server.respond_with(parent({"goal": "fragile job"}, flaky))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, delegation={"gateway_mode": "inline"}), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    session = next(iter(gateway.sessions))
    (failed,) = gateway.host.children.recent(session.session_id)
    assert failed.state is SubagentState.FAILED
    answer = await command(chat, f"/agents retry {failed.subagent_id}")
    assert answer.startswith(f"Retrying {failed.subagent_id} as sa-") and "fragile job" in answer
    await chat.wait_for(lambda: "completion" in chat.kinds())
    assert chat.texts("completion") == ["results: completed fixed fragile job"]
    retried = [c for c in gateway.host.children.recent(session.session_id) if c.subagent_id != failed.subagent_id]
    assert [c.state for c in retried] == [SubagentState.SUCCEEDED]
    assert (await command(chat, f"/agents retry {retried[0].subagent_id}")).startswith("Nothing to retry")
    await settled(gateway)


async def test_ids_that_match_nothing_or_several_and_bad_usage_are_answered(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent({"tasks": [{"goal": "one"}, {"goal": "two"}]}, lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts("reply") == ["on it"])
    assert len(live(gateway)) == 2
    assert await command(chat, "/agents log nope-nope") == "No subagent 'nope-nope' in this session: /agents lists them."
    assert "matches 2 subagents" in await command(chat, "/agents stop sa-")
    assert (await command(chat, "/agents kill x")).startswith("Usage: /agents, /agents log ID")
    assert "Give more of the id" in await command(chat, "/agents log a")


async def test_an_id_in_a_chat_without_subagents_is_told_there_are_none(tmp_path, gateways):
    # "Give more of the id than '99'" asked for what no id could give.
    chat = RecordingAdapter()
    await gateways(make_config(tmp_path), [chat], script={"parent": []})
    for text in ("/agents retry 99", "/agents log sa-1234"):
        assert await command(chat, text) == "No subagents in this chat."


async def test_after_a_restart_a_background_child_is_found_and_retried_from_the_ledger(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(parent({"goal": "long haul"}, lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await chat.say("go")
    await server.wait_for(lambda: any(is_child(b) for b in server.requests))
    # The turn answered first: stopped before that, it runs again at the restart (its answer ahead of the report).
    await chat.wait_for(lambda: chat.texts("reply") == ["on it"])
    (child,) = live(gateway)
    await gateway.stop(grace=0)

    server.respond_with(parent({"goal": "unused"}, lambda body: {"text": f"finished {goal(body)}"}))
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config(tmp_path, server), [chat2])
    await chat2.wait_for(lambda: chat2.texts())  # the restart report
    assert chat2.texts()[0].startswith("⚠️ The gateway restarted")
    log = await command(chat2, f"/agents log {child.subagent_id}")
    assert log == (f"{child.subagent_id} — long haul — interrupted by the restart\n"
                   "Its tool calls are no longer kept (the gateway restarted since it ran).")
    answer = await command(chat2, f"/agents retry {child.subagent_id}")
    assert answer.startswith(f"Retrying {child.subagent_id} as sa-") and "long haul" in answer
    await chat2.wait_for(lambda: "completion" in chat2.kinds()[1:])
    assert chat2.texts("completion")[-1] == "results: completed finished long haul"
    await settled(gateway2)


def test_a_line_names_the_state_once_when_the_activity_says_the_same():
    starting = ChildSnapshot("sa-1", "s-1", "t-1", "look", "leaf", SubagentState.STARTING, 100.0, None, None,
                             "starting", None, None, "parent-model")
    assert _line(starting, 103.0) == "• sa-1 — look — starting, 3 s, model parent-model"


async def test_a_fan_out_of_fifty_is_summarised_and_agents_all_lists_every_one(tmp_path, gateways):
    def fan_out(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and RESULTS in str(last["content"]):
            return {"text": "NO_REPLY"}
        if last["role"] == "user":
            goals = [{"goal": f"Research company number {i} and summarise its annual report"} for i in range(50)]
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
        return {"text": "on it"}

    def child(request: ModelRequest) -> dict:
        if request.metadata["goal"].startswith("Research company number 4"):  # 4 and 40-49 fail
            return {"wait": "go", "error": "server_error", "message": "model exploded"}
        return {"wait": "go", "text": "revenue grew, margins shrank, and the outlook is cautious " * 3}

    model = ScriptedModel({"parent": fan_out, "leaf": child})
    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}, "delegation": {"max_concurrent_children": 50}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model)
    await chat.say("research fifty companies")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("go")

    listing = await command(chat, "/agents")
    lines = listing.splitlines()
    assert sum(line.startswith("• sa-") for line in lines) == SHOWN
    assert lines[-2].startswith("… and 38 more: ") and lines[-1] == "/agents all lists every one."
    assert len(listing) <= 4000  # one message on Telegram and Slack
    before = len(chat.texts("command"))
    await chat.say("/agents all")  # long: the outbox splits it into parts

    def listed() -> int:
        return sum(line.startswith("• sa-") for part in chat.texts("command")[before:] for line in part.splitlines())

    await chat.wait_for(lambda: listed() == 50)

    model.release("go")
    await settled(gateway)
    lines = (await command(chat, "/agents")).splitlines()
    assert lines[0].startswith("Background task deleg_") and sum(line.startswith("• sa-") for line in lines) == SHOWN
    assert lines[-2] == "… and 38 more: 28 succeeded, 10 failed"  # of 39 succeeded and 11 failed, 12 listed


async def test_goals_and_summaries_are_cut_between_whole_characters_and_leave_no_markdown_open(tmp_path, gateways):
    # /agents cut a goal at 80 characters and a summary at 160: a flag lost half of itself, and a
    # summary's code fence or ** cut open made the platform show the rest of the reply as code or bold.
    flag_goal = "g" * 79 + "🇩🇪 and more words after the flag"
    bold_goal = "b" * 60 + " **a bold span that runs past the cut** tail"
    fenced = "Here is the fix:\n```python\n" + "x = 1\n" * 40 + "```\nDone."
    bold = "s" * 150 + " **bold past the cut** and more"

    def fan_out(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and RESULTS in str(last["content"]):
            return {"text": "NO_REPLY"}
        if last["role"] == "user":
            tasks = [{"goal": flag_goal}, {"goal": bold_goal}]
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}
        return {"text": "on it"}

    def child(request: ModelRequest) -> dict:
        return {"text": fenced if request.metadata["goal"] == flag_goal else bold}

    model = ScriptedModel({"parent": fan_out, "leaf": child})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat], model=model)
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await settled(gateway)

    listing = await command(chat, "/agents")
    lines = [line for line in listing.splitlines() if line.startswith("• sa-")]
    assert len(lines) == 2 and len(listing.splitlines()) == 3  # each child one line: the fence's lines joined
    flag_line, bold_line = lines
    assert flag_line.count("\U0001F1E9") == 2 * flag_line.count("🇩🇪")  # no regional indicator left alone
    assert "g" * 79 + "…" in flag_line
    html = telegram_html.render(listing)
    shown = telegram_html.visible_text(html)
    assert "`" not in shown and "*" not in shown, listing
    assert "<pre>" not in html and html.count("<b>") == html.count("</b>") == 2, html
    assert "Done." not in flag_line and bold_line.endswith("…")


async def test_the_children_left_out_are_counted_in_the_states_order_as_a_finished_card_counts_them(tmp_path, gateways):
    # Counted as they came, the tally read "1 failed, 1 succeeded" here and "28 succeeded, 10 failed" when
    # the failures came last: the same children in another order read differently from the card's.
    def fan_out(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and RESULTS in str(last["content"]):
            return {"text": "NO_REPLY"}
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {
                "tasks": [{"goal": f"Look up item {i}"} for i in range(SHOWN + 2)]}}]}
        return {"text": "on it"}

    def child(request: ModelRequest) -> dict:
        if request.metadata["goal"] == f"Look up item {SHOWN}":  # the first one left out fails, the next succeeds
            return {"error": "server_error", "message": "model exploded"}
        return {"text": "found it"}

    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}, "delegation": {"max_concurrent_children": SHOWN + 2}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat],
                             model=ScriptedModel({"parent": fan_out, "leaf": child}))
    await chat.say("look them all up")
    await settled(gateway)
    lines = (await command(chat, "/agents")).splitlines()
    assert lines[-2:] == ["… and 2 more: 1 succeeded, 1 failed", "/agents all lists every one."]


def delegating(tasks: list[dict]):
    """A background parent that delegates ``tasks`` on the user's message and stays quiet about the results."""

    def play(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and RESULTS in str(last["content"]):
            return {"text": "NO_REPLY"}
        if last["role"] == "user":
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}
        return {"text": "on it"}

    return play


async def test_log_of_a_child_out_of_the_last_ten_finished_says_why_its_tool_calls_are_gone(tmp_path, gateways):
    # It said "the gateway restarted since it ran", though the gateway had not restarted.
    model = ScriptedModel({"parent": delegating([{"goal": f"look at part {i}"} for i in range(11)]),
                           "leaf": lambda request: {"text": "looked"}})
    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}, "delegation": {"max_concurrent_children": 11}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model)
    await chat.say("look at eleven parts")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await settled(gateway)
    session_id = next(iter(gateway.sessions)).session_id
    kept = {c.subagent_id for c in gateway.host.children.recent(session_id)}
    (row,) = gateway.ledger.latest(next(iter(gateway.sessions)), 1)
    (gone,) = [t.subagent_id for t in row.tasks if t.subagent_id not in kept]
    log = await command(chat, f"/agents log {gone}")
    assert log.endswith("— succeeded\nIts tool calls are no longer kept: only this chat's last 10 finished "
                        "subagents keep theirs, each for a while after it finished.")


async def test_log_of_a_child_waiting_for_a_slot_does_not_speak_of_a_restart(tmp_path, gateways):
    model = ScriptedModel({"parent": delegating([{"goal": "first"}, {"goal": "second"}]),
                           "leaf": lambda request: {"wait": "go", "text": "done"}})
    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}, "lifecycle": {"max_running": 1}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model)
    await chat.say("two things")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("go")
    (waiting,) = [c for c in live(gateway) if c.state is SubagentState.PENDING]
    log = await command(chat, f"/agents log {waiting.subagent_id}")
    assert log.endswith("— pending\nIts tool calls are not known here until it has finished.")
    model.release("go")
    await settled(gateway)


async def test_log_of_a_child_that_finished_before_a_restart_names_the_restart(tmp_path, gateways):
    model = ScriptedModel({"parent": delegating([{"goal": "quick look"}]), "leaf": lambda request: {"text": "looked"}})
    chat = RecordingAdapter()
    sections = {"display": {"interim_assistant_messages": True}}
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model)
    await chat.say("look")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await settled(gateway)
    (row,) = gateway.ledger.latest(next(iter(gateway.sessions)), 1)
    (child,) = [t.subagent_id for t in row.tasks]
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    await gateways(make_config(tmp_path, **sections), [chat2], model=model)
    log = await command(chat2, f"/agents log {child}")
    assert log == (f"{child} — quick look — succeeded\n"
                   "Its tool calls are no longer kept (the gateway restarted since it ran).")


@pytest.mark.parametrize("mode, first", [("inline", "/agents retry"), ("background", "/agents retry"),
                                         ("background", "/retry")])
async def test_retry_asked_twice_runs_the_task_once_more_not_twice(tmp_path, llm, gateways, mode, first):
    # A double tap on /agents retry (or the message sent again, or one after /retry) ran the failed
    # child's task twice more, and the chat got its result twice.
    server = await llm()
    attempts = []

    def failing_then_working(body):
        attempts.append(goal(body))
        return {"text": ""} if len(attempts) == 1 else {"hang": True}  # an empty answer fails

    server.respond_with(parent({"goal": "fragile job"}, failing_then_working))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, delegation={"gateway_mode": mode}), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: "reply" in chat.kinds() and (mode == "inline" or "completion" in chat.kinds()))
    session = next(iter(gateway.sessions))
    (failed,) = gateway.host.children.recent(session.session_id)
    retry = f"/agents retry {failed.subagent_id}"
    assert (await command(chat, retry if first == "/agents retry" else first)).startswith("Retrying")
    await server.wait_for(lambda: len(attempts) == 2)  # the task runs again: asked twice, it must not run twice
    (again,) = live(gateway)
    assert await command(chat, retry) == (
        f"Nothing to retry yet: {failed.subagent_id}'s task is running again, as {again.subagent_id} (running).")
    assert [c.subagent_id for c in live(gateway)] == [again.subagent_id]
    completions = len(chat.texts("completion"))
    assert await command(chat, "/agents stop " + again.subagent_id)
    await chat.wait_for(lambda: len(chat.texts("completion")) > completions)
    assert (await command(chat, retry)).startswith(f"Retrying {failed.subagent_id}")  # once it has ended
    await server.wait_for(lambda: len(attempts) == 3)
    await command(chat, "/stop")
    await settled(gateway)
