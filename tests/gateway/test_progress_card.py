"""The progress card: one message per turn, only after the delay, edited in place from real
events, finalised when the turn ends, never outliving it."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.progress_card import CHILD_INDENT, DELEGATE, LINE_CHARS, MAX_LINES, ProgressCard
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html

CARD = {"progress": "card", "progress_delay": 3}


@dataclass
class Child:
    """A subagent as the card reads it (gateway.progress_card.ChildView), running unless set otherwise."""
    subagent_id: str
    goal: str
    state: str = "RUNNING"
    started_at: float | None = 1.0
    completed_at: float | None = None
    activity: str = ""


def card_of(children) -> ProgressCard:
    """A card shown at once, reading its subagents from ``children()``, published nowhere: for render()."""
    return ProgressCard(delay=0, heartbeat=60, mode=True, clock=FakeClock(autojump=False), publish=lambda t, n: None,
                        children=children)


async def start(tmp_path, gateways, model, **display):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, display={**CARD, **display},
                         agent={"gateway_notify_interval": 180, "toolsets": ["file"]})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    return chat, clock, gateway


async def test_a_fast_turn_shows_no_card(tmp_path, gateways):
    chat, clock, gateway = await start(tmp_path, gateways, ScriptedModel({"parent": [[{"text": "quick"}]]}))
    await chat.say("hi")
    await chat.wait_for(lambda: chat.messages)
    clock.advance(10)
    await settled(gateway)
    assert chat.kinds() == ["reply"]


async def test_the_card_appears_after_the_delay_follows_the_tools_and_ends_as_one_line(tmp_path, gateways):
    secret = "s3cr3t-value-never-shown"
    model = ScriptedModel({"parent": [[
        {"wait": "think", "tool_calls": [{"name": "list_files", "arguments": {"path": secret}}]},
        {"wait": "answer", "text": "all done"},
    ]]})
    chat, clock, gateway = await start(tmp_path, gateways, model)
    await chat.say("look around")
    await model.reached("think")
    await clock.until_sleeping(lasting=3)
    assert chat.messages == []  # nothing before the delay
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    assert card.outbound.silent and card.outbound.text == "⏳ Thinking — 3 s"
    model.release("think")
    await model.reached("answer")
    await chat.wait_for(lambda: card.text == "⏳ Thinking — 3 s\n✗ list_files")  # it failed: no such path
    model.release("answer")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply"]  # one card, edited in place, never a second message
    assert card.text == "✓ Done in 3 s"
    assert all(secret not in text for text in [card.outbound.text, *card.edits])  # tool arguments never shown


def delegating(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user":
        goals = [{"goal": f"check source {i}"} for i in range(3)]
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
    return {"text": "compared them all"}


async def test_subagents_show_as_lines_and_the_outcome_counts_them(tmp_path, gateways):
    model = ScriptedModel({"parent": delegating, "leaf": lambda r: {"wait": "children", "text": "found it"}})
    chat, clock, gateway = await start(tmp_path, gateways, model, interim_assistant_messages=False)
    await chat.say("compare three sources")
    await model.reached("children")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    lines = card.outbound.text.splitlines()
    assert lines[0].startswith("⏳ Waiting for subagents: 0 of 3 done")
    assert [line.split(" — ")[0].strip() for line in lines[1:]] == [f"▸ check source {i}" for i in range(3)]
    for render in (telegram_html.render, slack_mrkdwn.render, discord_markdown.render):
        shown = render(card.outbound.text).splitlines()
        assert all(line.startswith(CHILD_INDENT + "▸") for line in shown[1:]), render  # the tree survives Markdown
    model.release("children")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    clock.advance(600)
    await settled(gateway)
    assert card.text == "✓ Done in 3 s · 3 subagents"


async def test_stop_finalises_the_card(tmp_path, gateways):
    model = ScriptedModel({"parent": [[{"wait": "never"}]]})
    chat, clock, gateway = await start(tmp_path, gateways, model)
    await chat.say("work")
    await model.reached("never")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    await chat.say("/stop")
    await chat.wait_for(lambda: chat.messages[0].edits)
    clock.advance(600)
    await settled(gateway)
    assert chat.messages[0].text == "⏹ Stopped"


@pytest.mark.parametrize("final", ["delete"])
async def test_a_card_can_be_deleted_when_the_turn_ends(tmp_path, gateways, final):
    class Deleting(RecordingAdapter):
        async def delete(self, chat_id, thread_id, message_id):
            self.messages = [m for m in self.messages if m.message_id != message_id]
            self._changed()

    model = ScriptedModel({"parent": [[{"wait": "go", "text": "answer"}]]})
    chat, clock = Deleting(), FakeClock(autojump=False)
    config = make_config(tmp_path, display={**CARD, "progress_final": final})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("work")
    await model.reached("go")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    model.release("go")
    await chat.wait_for(lambda: chat.kinds() == ["reply"])
    await settled(gateway)


def test_lines_are_capped():
    from gateway.progress_card import ProgressCard

    clock = FakeClock()
    card = ProgressCard(delay=0, heartbeat=1, mode=True, clock=clock, publish=lambda t, n: None, children=lambda: [])
    for i in range(20):
        card.tool_started(f"tool_{i}_" + "x" * 200)
        card.tool_finished(f"tool_{i}_" + "x" * 200, True)
    lines = card.render().splitlines()
    assert len(lines) == 1 + MAX_LINES and all(len(line) <= LINE_CHARS for line in lines)


def background_parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "user" and content.startswith("[Background delegation results]"):
        return {"text": "here is what they found"}
    if last["role"] == "user":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": "a"}, {"goal": "b"}]}}]}
    return {"text": "on it"}


@pytest.mark.parametrize(("ending", "final"), [("results", "✓ Done in 3 s · 2 subagents"), ("/stop", "⏹ Stopped")])
async def test_a_background_delegation_gets_a_card_finalised_with_its_results(tmp_path, gateways, ending, final):
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "children", "text": "found"}})
    chat, clock, gateway = await start(tmp_path, gateways, model, interim_assistant_messages=True)
    await chat.say("look into a and b")
    await chat.wait_for(lambda: chat.texts() == ["on it"])  # the acknowledgement; the children work on
    await model.reached("children")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["reply", "notice"])
    card = chat.messages[1]
    assert card.outbound.text.startswith("⏳ Waiting for subagents: 0 of 2 done")
    if ending == "results":
        model.release("children")
        await chat.wait_for(lambda: "completion" in chat.kinds())
    else:
        await chat.say("/stop")
        await chat.wait_for(lambda: "command" in chat.kinds())
    await chat.wait_for(lambda: card.text == final)
    clock.advance(600)
    await settled(gateway)
    assert card.text == final


async def shown_card(chat, clock, model, *waits: str):
    """Ask for a background delegation of ``a`` and ``b``; once its subagents reached ``waits``, its card
    shows (after 3 s): returned."""
    await chat.say("look into a and b")
    for wait in waits:
        await model.reached(wait)
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["reply", "notice"])
    return chat.messages[1]


async def background_card(tmp_path, gateways, model, *waits: str):
    """`shown_card` on a fresh gateway: (chat, clock, gateway, card)."""
    chat, clock, gateway = await start(tmp_path, gateways, model, interim_assistant_messages=True)
    return chat, clock, gateway, await shown_card(chat, clock, model, *waits)


async def test_a_background_delegation_is_done_in_the_time_it_ran_whatever_the_wall_clock_did(tmp_path, gateways):
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "children", "text": "found"}})
    chat, clock, gateway, card = await background_card(tmp_path, gateways, model, "children")
    clock.jump(-3600)  # NTP steps the wall clock back an hour while the subagents work
    model.release("children")
    await chat.wait_for(lambda: card.text.startswith("✓"))
    assert card.text == "✓ Done in 3 s · 2 subagents"


def stopping_leaf(request: ModelRequest) -> dict:
    """Subagent ``a`` works until stopped; ``b`` fails (an empty answer) once released; others succeed."""
    goal = request.metadata["goal"]
    if goal == "a":
        return {"wait": "forever"}
    if goal == "b":
        return {"wait": "fail", "text": ""}
    return {"text": "found"}


async def stop_from_the_console(gateway, goal: str) -> None:
    view = gateway.host.children
    session = gateway.sessions.find("chat", "c1", None)
    [child] = [c for c in view.children(session.session_id) if c.goal == goal]
    assert await view.interrupt_child(child.subagent_id, "stopped from the operator console")


async def test_a_background_card_whose_subagents_were_all_stopped_does_not_read_as_a_success(tmp_path, gateways):
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "forever"}})
    chat, clock, gateway, card = await background_card(tmp_path, gateways, model, "forever")
    for goal in ("a", "b"):  # as the operator console's Stop does, one after the other
        await stop_from_the_console(gateway, goal)
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await chat.wait_for(lambda: card.text.startswith("✓"))
    assert card.text == "✓ Done in 3 s · 2 subagents (2 interrupted)"


async def test_a_background_card_tallies_how_its_subagents_ended_in_a_fixed_order(tmp_path, gateways):
    model = ScriptedModel({"parent": background_parent, "leaf": stopping_leaf})
    chat, clock, gateway, card = await background_card(tmp_path, gateways, model, "forever", "fail")
    await stop_from_the_console(gateway, "a")  # interrupted first, failed after: the order stays fixed
    await settled_children(gateway, live=1)
    model.release("fail")
    await chat.wait_for(lambda: card.text.startswith("✓"))
    assert card.text == "✓ Done in 3 s · 2 subagents (1 failed, 1 interrupted)"


async def test_a_background_card_finished_after_a_restart_tallies_its_subagents_from_the_journal(tmp_path, gateways):
    sections = {"display": {**CARD, "interim_assistant_messages": True},
                "agent": {"gateway_notify_interval": 180, "toolsets": ["file"]}}

    def parent(request: ModelRequest) -> dict:
        if str(request.messages[-1].get("content")).startswith("[Background delegation results]"):
            return {"wait": "answering", "text": "here is what they found"}
        return background_parent(request)

    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": parent, "leaf": lambda r: {"wait": "work", "text": "" if
                                                               r.metadata["goal"] == "b" else "found"}})
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model, clock=clock)
    await shown_card(chat, clock, model, "work")
    model.release("work")
    await model.reached("answering")  # both finished (b failed); their results are being answered
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    gateway2 = await gateways(make_config(tmp_path, **sections), [chat2], model=ScriptedModel({"parent": parent}),
                              clock=clock)
    card = chat2.messages[1]
    gateway2.host.model.release("answering")
    await chat2.wait_for(lambda: "completion" in chat2.kinds())
    await chat2.wait_for(lambda: card.text.startswith("✓"))
    assert re.fullmatch(r"✓ Done in \d+ s · 2 subagents \(1 failed\)", card.text), card.text


async def test_an_inline_card_tallies_how_its_subagents_ended(tmp_path, gateways):
    def parent(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "user":
            goals = [{"goal": goal} for goal in ("a", "b", "c")]
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
        return {"text": "compared them all"}

    model = ScriptedModel({"parent": parent, "leaf": stopping_leaf})
    chat, clock, gateway = await start(tmp_path, gateways, model, interim_assistant_messages=False)
    await chat.say("compare three sources")
    await model.reached("forever")
    await model.reached("fail")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    await stop_from_the_console(gateway, "a")
    model.release("fail")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    clock.advance(600)
    await settled(gateway)
    assert card.text == "✓ Done in 3 s · 3 subagents (1 failed, 1 interrupted)"


async def test_a_retried_delegation_gets_a_card_of_its_own(tmp_path, gateways):
    attempts = []

    def leaf(request: ModelRequest) -> dict:
        attempts.append(request.metadata["goal"])
        if len(attempts) == 1:
            return {"text": ""}  # an empty answer fails the child
        return {"wait": "retried", "text": "found"}

    def one_task(request: ModelRequest) -> dict:
        last = request.messages[-1]
        if last["role"] == "user" and not str(last["content"]).startswith("[Background delegation results]"):
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "a"}}]}
        return background_parent(request)

    model = ScriptedModel({"parent": one_task, "leaf": leaf})
    chat, clock, gateway = await start(tmp_path, gateways, model, interim_assistant_messages=True)
    await chat.say("look into a")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await chat.say("/retry")
    await model.reached("retried")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    card = chat.messages[chat.kinds().index("notice")]
    assert card.outbound.text.startswith("⏳ Waiting for subagents: 0 of 1 done")
    model.release("retried")
    await chat.wait_for(lambda: chat.kinds().count("completion") == 2)
    await chat.wait_for(lambda: card.text == "✓ Done in 3 s · 1 subagent")
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds().count("notice") == 1


async def test_a_card_of_children_relaunched_after_a_restart_follows_them_again(tmp_path, gateways):
    sections = {"display": {**CARD, "interim_assistant_messages": True}, "lifecycle": {"on_restart": "resume"},
                "agent": {"gateway_notify_interval": 180, "toolsets": ["file"]}}
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model, clock=clock)
    await shown_card(chat, clock, model, "forever")
    await gateway.stop(grace=0)
    clock.jump(-3600)  # NTP steps the clock back while the gateway restarts: no time is measured across it

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    model2 = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "again", "text": "found"}})
    gateway2 = await gateways(make_config(tmp_path, **sections), [chat2], model=model2, clock=clock)
    card = chat2.messages[1]
    await model2.reached("again")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 0 of 2 done — 3 s\n"))
    model2.release("again")
    await chat2.wait_for(lambda: card.text.startswith("✓ Done in"))
    # Never a negative time: the step back counts as none, the 3 s since the relaunch as its headline did.
    assert card.text == "✓ Done in 3 s · 2 subagents"
    clock.advance(600)
    await settled(gateway2)
    assert chat2.kinds() == ["reply", "notice", "completion"]



async def test_a_card_edited_before_a_restart_is_still_edited_by_the_children_relaunched_after_it(tmp_path, gateways):
    # The earlier process edited the card (each edit journaled under its number): the relaunched children's card
    # numbers its edits from the start again, and none of them may be taken for one already sent.
    sections = {"display": {**CARD, "interim_assistant_messages": True}, "lifecycle": {"on_restart": "resume"},
                "agent": {"gateway_notify_interval": 180, "toolsets": ["file"]}}
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model, clock=clock)
    card = await shown_card(chat, clock, model, "forever")
    for seconds in (5, 7):
        await clock.until_sleeping(lasting=2)
        clock.advance(2)
        await chat.wait_for(lambda: card.text.startswith(f"⏳ Waiting for subagents: 0 of 2 done — {seconds} s\n"))
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    model2 = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "again", "text": "found"}})
    gateway2 = await gateways(make_config(tmp_path, **sections), [chat2], model=model2, clock=clock)
    await model2.reached("again")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    # Counted from the dispatch, as before the restart (7 s then): never back to 3 s.
    await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 0 of 2 done — 10 s\n"))
    for seconds in (12, 14, 16):
        await clock.until_sleeping(lasting=2)
        clock.advance(2)
        await chat2.wait_for(lambda: card.text.startswith(f"⏳ Waiting for subagents: 0 of 2 done — {seconds} s\n"))
    model2.release("again")
    await chat2.wait_for(lambda: card.text.startswith("✓ Done in"))
    clock.advance(600)
    await settled(gateway2)
    assert chat2.kinds() == ["reply", "notice", "completion"]


async def test_subagents_the_source_lets_go_of_once_finished_still_count():
    # The host keeps only a session's latest few finished children: a card of more must not lose the rest.
    children = [Child(f"sa-{i}", f"task {i}") for i in range(12)]
    source = list(children)
    card = card_of(lambda: source)
    card.tool_started(DELEGATE)
    assert card.render().startswith("⏳ Waiting for subagents: 0 of 12 done")
    for child in children[:11]:
        child.state, child.completed_at = "SUCCEEDED", 2.0
    assert card.render().startswith("⏳ Waiting for subagents: 11 of 12 done")
    source[:] = children[1:]  # the source let the oldest finished one go
    assert card.render().startswith("⏳ Waiting for subagents: 11 of 12 done")
    assert card.subagents == 12


def test_a_card_that_missed_some_subagents_ending_tallies_none_rather_than_a_part():
    children = [Child(f"sa-{i}", f"task {i}") for i in range(12)]
    source = list(children)
    card = card_of(lambda: source)
    card.tool_started(DELEGATE)
    children[0].state, children[0].completed_at = "FAILED", 2.0
    card.render()
    for child in children[1:]:
        child.state, child.completed_at = "SUCCEEDED", 3.0
    children[1].state = "FAILED"
    source[:] = children[2:]  # the second failed one finished and was let go of between two looks
    assert card.endings() == ""  # not "1 failed": a part would read as the whole
    source[:] = children  # seen after all
    assert card.endings() == "2 failed"


def test_a_long_line_is_cut_between_whole_characters_and_leaves_no_markdown_open():
    # A goal is the model's Markdown: a cut at the limit fell inside a flag, a bold span, a code span
    # or a link, and the card showed half a flag, or the platform showed the rest of the card wrongly.
    head = "x" * (LINE_CHARS - 6)  # the goal's text from here reaches the cut
    goals = [head + "🇩🇪🇩🇪 flags", head[:-20] + "**a bold span running past the cut**",
             head[:-20] + "`a code span running past the cut`", head[:-20] + "[a link label](https://example.com/a)",
             head[:-3] + "*it* " + "*an italic span running past the cut*"]
    children = [Child(f"sa-{i}", goal) for i, goal in enumerate(goals)]
    card = card_of(lambda: children)
    lines = card.render().splitlines()[1:]
    assert len(lines) == len(goals) and all(len(line) <= LINE_CHARS and line.endswith("…") for line in lines)
    flag, bold, code, link, italic = lines
    assert flag.count("\U0001F1E9") == 2 * flag.count("🇩🇪")  # no regional indicator left alone
    for line in (bold, code, link, italic):
        shown = telegram_html.visible_text(telegram_html.render(line))
        assert not any(marker in shown for marker in ("*", "`", "[", "](")), line
        assert discord_markdown.render(line).count("**") % 2 == 0 and "\\" not in discord_markdown.render(line)
    assert re.search(r"x<b>a bold span[^<]*</b>…$", telegram_html.render(bold))  # closed where it was cut
    assert re.search(r"x<code>a code span[^<]*</code>…$", telegram_html.render(code))
    assert link.endswith("x…") and italic.endswith("x*it*…")  # a link is dropped whole, not cut


def fan_out(request: ModelRequest) -> dict:
    last = request.messages[-1]
    if last["role"] == "user" and str(last["content"]).startswith("[Background delegation results]"):
        return {"text": "here is what they found"}
    if last["role"] == "user":
        goals = [{"goal": f"quick {i}"} for i in range(20)] + [{"goal": f"slow {i}"} for i in range(10)]
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
    return {"text": "on it"}


@pytest.mark.parametrize("interim", [True, False], ids=["background", "inline"])
async def test_a_card_of_many_subagents_counts_those_finished_between_two_looks(tmp_path, gateways, interim):
    # Twenty finish at once, more than the host keeps of a session's finished children: the card's
    # headline still counts every one of them, and all thirty subagents.
    model = ScriptedModel({"parent": fan_out, "leaf": lambda r: {"wait": r.metadata["goal"].split()[0], "text": "ok"}})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, display={**CARD, "interim_assistant_messages": interim},
                         agent={"gateway_notify_interval": 180}, delegation={"max_concurrent_children": 50})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("look into thirty things")
    if interim:  # background: the acknowledgement first, then the delegation's own card
        await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("quick")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    card = chat.messages[chat.kinds().index("notice")]
    assert card.outbound.text.startswith("⏳ Waiting for subagents: 0 of 30 done")
    model.release("quick")
    await model.reached("slow")
    await chat.wait_for(lambda: sum(r.role == "leaf" for r in model.requests) == 30)
    await settled_children(gateway, live=10)
    clock.advance(2)  # the card's next look at its subagents
    await chat.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 20 of 30 done"))
    assert len(card.text.splitlines()) == 1 + MAX_LINES
    model.release("slow")
    await chat.wait_for(lambda: card.text == "✓ Done in 5 s · 30 subagents")


async def settled_children(gateway, *, live: int) -> None:
    """Until the chat has exactly ``live`` children not yet finished."""
    session = gateway.sessions.find("chat", "c1", None)
    async with asyncio.timeout(5):
        while len(gateway.host.children.children(session.session_id)) != live:
            await asyncio.sleep(0.001)


def test_a_line_cut_right_after_a_bare_url_links_the_address_without_the_ellipsis():
    # The cut keeps a bare URL whole, and its "…" then came straight after it: read as part of the
    # address, Slack linked https://example.com/docs/page… (a page that does not exist).
    url = "https://example.com/docs/page"
    lines = []
    for pad in range(LINE_CHARS):  # the cut lands before, right after and past the address
        child = Child("sa-1", "x" * pad + f" {url} " + "and more words " * 10)
        card = card_of(lambda child=child: [child])
        lines += card.render().splitlines()[1:]
    assert any(line.endswith(url + "…") for line in lines)
    for line in lines:
        assert re.findall(r"<(https://[^>|]*)", slack_mrkdwn.render(line)) in ([], [url]), line


@pytest.mark.parametrize("mode", [True, "generic"])
def test_messages_waiting_behind_the_turn_are_counted_last_also_on_a_generic_card(mode):
    waiting = [0]
    card = ProgressCard(delay=0, heartbeat=60, mode=mode, clock=FakeClock(autojump=False),
                        publish=lambda t, n: None, children=list, waiting=lambda: waiting[0])
    assert "waiting" not in card.render()
    waiting[0] = 2
    assert card.render().splitlines()[-1] == "⋯ 2 more messages waiting, answered after this"


async def test_a_turn_run_again_after_a_restart_finalises_the_card_of_its_first_run_however_fast(tmp_path, gateways):
    model = ScriptedModel({"parent": [[{"wait": "think", "text": "never said"}]]})
    chat, clock, gateway = await start(tmp_path, gateways, model)
    await chat.say("take your time")
    await model.reached("think")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    card = chat.messages[0]
    await gateway.stop(grace=0)
    assert card.text == "⏹ Interrupted by a gateway restart"

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    config = make_config(tmp_path, display=CARD, agent={"gateway_notify_interval": 180, "toolsets": ["file"]})
    await gateways(config, [chat2], model=ScriptedModel({"parent": [[{"text": "all done"}]]}), clock=clock)
    await chat2.wait_for(lambda: "reply" in chat2.kinds())  # before a card of its own was due
    await chat2.wait_for(lambda: card.text.startswith("✓"))  # before: it read "Interrupted" for good
    assert chat2.kinds() == ["notice", "reply"]


class EntityCounting(RecordingAdapter):
    """Measures as Telegram does past its 100 formatting entities in a message: past every limit."""

    def measure(self, text: str) -> int:
        return len(text) if telegram_html.entity_count(telegram_html.render(text)) <= 100 else self.text_limit + 1


def delegating_formatted(request: ModelRequest) -> dict:
    """Eight subagents whose goals name files in code spans: more entities, together, than Telegram reads."""
    if request.messages[-1]["role"] == "user":
        goals = [{"goal": f"tidy part {i}: " + ", ".join(f"`f{n}`" for n in range(20))} for i in range(8)]
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
    return {"text": "tidied"}


async def test_a_card_past_the_platforms_limit_stays_one_message_edited_in_place(tmp_path, gateways):
    # Split by the outbox, the card's parts after the first were messages of their own, sent anew with
    # each edit (every 2 s while subagents run), none of them ever finalised.
    model = ScriptedModel({"parent": delegating_formatted, "leaf": lambda r: {"wait": "children", "text": "done"}})
    chat, clock = EntityCounting(), FakeClock(autojump=False)
    config = make_config(tmp_path, display={**CARD, "interim_assistant_messages": False},
                         agent={"gateway_notify_interval": 180})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("tidy the files")
    await model.reached("children")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    card = chat.messages[0]
    assert card.outbound.text.startswith("⏳ Waiting for subagents: 0 of 8 done")
    for _ in range(3):  # the card looks at its subagents every 2 s: its headline's time changes
        await clock.until_sleeping(lasting=2)
        edits = len(card.edits)
        clock.advance(2)
        await chat.wait_for(lambda: len(card.edits) > edits)
    model.release("children")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    clock.advance(600)
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply"]
    assert card.text == "✓ Done in 9 s · 8 subagents"


def test_a_subagent_whose_end_is_timed_but_not_yet_published_still_reads_running():
    # Its end is timed as its row goes to the journal and its state set once that commits: between the two the card
    # read "✗ b — running, 3 s", and counted it done.
    child = Child("sa-1", "b", started_at=1.0, completed_at=4.0)
    card = card_of(lambda: [child])
    card.tool_started(DELEGATE)
    rendered = card.render()
    assert rendered.startswith("⏳ Waiting for subagents: 0 of 1 done"), rendered
    assert "▸ b — running" in rendered and "✗" not in rendered
    child.state = "FAILED"
    rendered = card.render()
    assert rendered.startswith("⏳ Waiting for subagents: 1 of 1 done") and "✗ b — failed, 3 s" in rendered, rendered
