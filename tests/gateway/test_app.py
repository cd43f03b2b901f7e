"""The gateway with a recording adapter and the demo and scripted models."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.display import delegation_mode
from gateway.replies import CUT_OFF, CUT_OFF_UNSAID, EMPTY_ANSWER, REFUSED, TOO_LONG
from gateway.retention import IDLE_SESSION_SECONDS
from gateway.testing import MESSAGING, RecordingAdapter, SlowToStop, make_config, settled
from platforms.base import DisplayTier, Inbound

WEB_LIKE = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=False)
LIST = "Compare these:\n- apples\n- pears"


@pytest.mark.parametrize("gateway_mode", ["auto", "inline", "background", "async"])
@pytest.mark.parametrize("interim", [True, False])
@pytest.mark.parametrize("platform", ["telegram", "slack", "discord", "webhook", "local", "web", "custom-messaging"])
def test_mode_resolution_table(tmp_path, gateway_mode, interim, platform):
    config = make_config(tmp_path, delegation={"gateway_mode": gateway_mode},
                         display={"interim_assistant_messages": interim})
    messaging = platform in ("telegram", "slack", "discord", "custom-messaging")
    tier = MESSAGING if messaging else WEB_LIKE
    mode = delegation_mode(config, platform, tier)
    if gateway_mode in ("background", "async"):
        expected = "background"
    elif gateway_mode == "inline":
        expected = "inline"
    else:
        expected = "inline" if messaging and not interim else "background"
    assert mode == expected


def test_per_platform_display_overrides_win(tmp_path):
    config = make_config(tmp_path, display={"interim_assistant_messages": True,
                                            "platforms": {"telegram": {"interim_assistant_messages": False}}})
    assert delegation_mode(config, "telegram", MESSAGING) == "inline"
    assert delegation_mode(config, "slack", MESSAGING) == "background"


async def test_inline_delegation_sends_one_message(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": False})
    gateway = await gateways(config, [chat])
    await chat.say(LIST)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.kinds() == ["reply"]
    assert "apples" in chat.messages[0].text and "pears" in chat.messages[0].text
    assert chat.typing_calls >= 1 and chat.idle_calls >= 1


async def test_a_platform_without_progress_gets_no_typing_or_idle_calls(tmp_path, gateways):
    chat = RecordingAdapter()
    chat.typing_interval = 0.0
    gateway = await gateways(make_config(tmp_path), [chat])
    await chat.say("hello")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert (chat.typing_calls, chat.idle_calls) == (0, 0)


async def test_background_delegation_sends_two_messages(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": True})
    gateway = await gateways(config, [chat])
    await chat.say(LIST)
    await chat.wait_for(lambda: len(chat.messages) >= 2)
    await settled(gateway)
    assert chat.kinds() == ["reply", "completion"]
    assert "Started 2 subagent" in chat.messages[0].text
    assert "apples: completed" in chat.messages[1].text and "pears: completed" in chat.messages[1].text
    assert next(iter(gateway.sessions)).mode == "background"


async def test_interim_text_is_sent_as_interim_and_never_as_the_final_reply(tmp_path, gateways):
    chat = RecordingAdapter()
    script = {"parent": [[{"text": "Let me check.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
                          {"text": "All done."}]]}
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat],
                             script=script)
    await chat.say("check")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert [(m.kind, m.text) for m in chat.messages] == [("interim", "Let me check."), ("reply", "All done.")]


async def test_interim_off_means_no_interim_messages(tmp_path, gateways):
    chat = RecordingAdapter()
    script = {"parent": [[{"text": "Let me check.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
                          {"text": "All done."}]]}
    await gateways(make_config(tmp_path, display={"interim_assistant_messages": False}), [chat], script=script)
    await chat.say("check")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    assert chat.texts() == ["All done."]


GATED = {"parent": [[{"wait": "go", "text": "finished"}], [{"text": "second, quickly"}]]}


async def gated_turn(tmp_path, gateways, **sections):
    """A gateway on a manual fake clock whose first turn runs until the test releases it."""
    chat, clock, model = RecordingAdapter(), FakeClock(autojump=False), ScriptedModel(GATED)
    gateway = await gateways(make_config(tmp_path, **sections), [chat], model=model, clock=clock)
    return chat, clock, model, gateway


async def tick(clock: FakeClock, interval: float) -> None:
    """Let one notifier interval pass once the notifier sleeps on the clock."""
    await clock.until_sleeping(lasting=interval)
    clock.advance(interval)


async def test_notices_first_after_one_interval_then_edited_in_place_and_none_after_the_reply(tmp_path, gateways):
    chat, clock, model, gateway = await gated_turn(tmp_path, gateways, agent={"gateway_notify_interval": 0.1})
    await chat.say("work slowly")
    await model.reached("go")
    assert chat.messages == []  # not before one full interval
    await tick(clock, 0.1)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    await tick(clock, 0.1)
    await chat.wait_for(lambda: chat.messages[0].edits)
    model.release("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    clock.advance(10)
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply"]
    notice = chat.messages[0]
    assert notice.outbound.silent and notice.outbound.text.startswith("⏳")
    *progress, final = [notice.outbound.text, *notice.edits]
    assert len(progress) == 2 and len(set(progress)) == 2  # every notice reads differently
    assert "0.1 s" in progress[0] and "thinking" in progress[0]
    assert final == "✓ Done in 0.2 s"  # the turn is over: no "⏳ Working" bubble is left behind


async def test_a_queued_follow_up_never_inherits_the_previous_notifier(tmp_path, gateways):
    chat, clock, model, gateway = await gated_turn(tmp_path, gateways, agent={"gateway_notify_interval": 0.15},
                                                   display={"busy_input_mode": "queue"})
    await chat.say("one")
    await chat.say("two")
    await model.reached("go")
    await tick(clock, 0.15)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    model.release("go")
    await chat.wait_for(lambda: chat.kinds().count("reply") == 2)
    clock.advance(10)
    await settled(gateway)
    assert chat.kinds() == ["notice", "reply", "reply"]
    assert [m.text for m in chat.messages[1:]] == ["finished", "second, quickly"]


async def test_generic_notices_have_no_tool_details(tmp_path, gateways):
    chat, clock, model, gateway = await gated_turn(tmp_path, gateways, agent={"gateway_notify_interval": 0.1},
                                                   display={"long_running_notifications": "generic"})
    await chat.say("x")
    await model.reached("go")
    await tick(clock, 0.1)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    model.release("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    assert chat.messages[0].outbound.text.startswith("⏳ Still working — ")
    assert "thinking" not in chat.messages[0].outbound.text


@pytest.mark.parametrize("settings", [{"agent": {"gateway_notify_interval": 0}},
                                      {"agent": {"gateway_notify_interval": 0.05},
                                       "display": {"long_running_notifications": False}}])
async def test_notices_off_when_disabled(tmp_path, gateways, settings):
    chat, clock, model, gateway = await gated_turn(tmp_path, gateways, **settings)
    await chat.say("x")
    await model.reached("go")
    clock.advance(3600)
    model.release("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert chat.kinds() == ["reply"]


async def test_busy_input_interrupt_stops_the_running_turn_and_runs_the_new_message(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "never"}], [{"text": "answer to the second"}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    await chat.say("first")
    await model.reached("never")
    await chat.say("second")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert chat.texts() == ["answer to the second"]


@pytest.mark.parametrize("second", ["second", "/stop"])
async def test_a_stopped_turn_is_settled_at_once_so_a_crash_before_it_winds_down_does_not_replay_it(
        tmp_path, gateways, second):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "first", "text": "too late"}], [{"text": "answer to second"}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=SlowToStop(model))
    await chat.say("first")
    await model.reached("first")
    await chat.say(second)  # supersedes or stops the first turn, which does not end yet
    unfinished = [event.text for event, _ in gateway.store.inbox.unfinished()]
    model.release("first")
    assert unfinished == ([] if second == "/stop" else ["second"])
    await settled(gateway)
    assert chat.texts() == (["Stopped the running turn."] if second == "/stop" else ["answer to second"])


async def test_busy_input_queue_runs_next(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "first", "text": "first"}], [{"text": "second"}]]})
    await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("one")
    await chat.say("two")
    await model.reached("first")
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    assert chat.texts("reply") == ["first", "second"]


async def test_busy_input_steer_reaches_the_running_turn(tmp_path, gateways):
    chat = RecordingAdapter()
    seen = []

    def parent(request):
        seen.append([m.get("content") for m in request.messages])
        if request.iteration == 0:
            return {"wait": "tool", "tool_calls": [{"name": "list_files", "arguments": {}}]}
        return {"text": "steered answer"}

    model = ScriptedModel({"parent": parent})
    await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await chat.say("start")
    await model.reached("tool")
    accepted = await chat.say("use metric units")
    model.release("tool")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    assert chat.texts("reply") == ["steered answer"]
    assert any("use metric units" in str(c) for c in seen[-1])
    assert accepted.turn_id is not None


async def test_duplicate_events_are_dropped(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat],
                             script={"parent": [[{"text": "once"}], [{"text": "twice"}]]})
    first = await chat.say("hello", event_id="update-7")
    again = await chat.say("hello", event_id="update-7")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["once"]
    assert again.duplicate and again.turn_id == first.turn_id


def committed(path, event_id: str) -> bool:
    """Whether another connection (the next start, after a SIGKILL) would find the event."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT 1 FROM gateway_inbox WHERE event_id=?", (event_id,)).fetchone() is not None
    finally:
        conn.close()


async def test_a_duplicate_is_answered_only_once_the_event_is_durable(tmp_path, gateways):
    # The platform takes the answer as an acknowledgement (Telegram's offset, a webhook's 200, Slack's ack):
    # a retry answered while the first copy's commit was still due, or refused by a full disk and held
    # for later, was acknowledged on nothing durable, and a SIGKILL then lost the message.
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "once"}]]})
    first = asyncio.ensure_future(chat.say("hello", event_id="update-9"))
    await asyncio.sleep(0)  # recorded, its commit due at the next turn of the loop
    again = await chat.say("hello", event_id="update-9")
    assert again.duplicate and committed(gateway.store.db.path, "update-9")
    await first


async def test_a_webhook_turn_read_shows_only_what_is_committed(tmp_path, gateways):
    # Read through the store's own connection, a message (or the turn's end) written in the same turn of
    # the loop showed before its commit: the caller took as done what a SIGKILL then undid.
    chat = RecordingAdapter("webhook")
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "once"}]]})
    accepted = await chat.say("hello", chat="r:default", event_id="update-10")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    gateway.outbox.enqueue("webhook", "r:default", None, "one more thing", kind="reply", key="late",
                           turn_id=accepted.turn_id)
    read = await gateway._read_turn("r", accepted.turn_id)
    conn = sqlite3.connect(gateway.store.db.path)
    try:
        committed = {k for (k,) in conn.execute("SELECT key FROM gateway_outbox WHERE turn_id=?", (accepted.turn_id,))}
    finally:
        conn.close()
    assert {m["key"] for m in read.messages} == committed and "late:0" in committed


async def test_a_duplicate_command_names_no_turn(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat])
    first = await chat.say("/help", event_id="update-8")
    again = await chat.say("/help", event_id="update-8")
    assert (first.turn_id, again.turn_id, again.duplicate) == (None, None, True)
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.kinds() == ["command"]


async def test_access_control_refuses_strangers_once_and_runs_nothing(tmp_path, gateways):
    chat = RecordingAdapter("telegram")
    model = ScriptedModel({"parent": [[{"text": "hi friend"}]]})
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["friend"]}})
    await gateways(config, [chat], model=model)
    await chat.say("hello", user="999", name="stranger")
    await chat.wait_for(lambda: chat.messages)
    await chat.say("hello", user="42", name="friend")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert chat.kinds() == ["command", "reply"]
    assert "only answers people" in chat.messages[0].text and "999" in chat.messages[0].text
    assert len(model.requests) == 1


async def test_a_strangers_messages_leave_no_session_behind(tmp_path, gateways):
    # Each top-level Slack mention is a thread of its own: were every refusal a session, a stranger
    # could add a row to the database (and an agent to memory) with every message.
    chat = RecordingAdapter("slack")
    config = make_config(tmp_path, platforms={"slack": {"enabled": False, "allowed_users": ["U1"]}})
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "hi"}]]})
    for n in range(5):
        await chat.say("let me in", user="U666", chat="C1", thread=f"17000000{n}.000100")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert gateway.store.inbox.unfinished() == []  # the other four: told once in the channel, not under each
    assert all("only answers people" in t and "U666" in t for t in chat.texts())
    assert [m.outbound.thread_id for m in chat.messages] == ["170000000.000100"]
    assert len(gateway.sessions) == 0 and gateway.store.sessions.recent(10) == []
    await chat.say("/new", user="U666", chat="C2")  # a refused command neither
    await chat.wait_for(lambda: len(chat.messages) == 2)
    assert len(gateway.sessions) == 0 and gateway.store.sessions.recent(10) == []


async def test_allow_all_serves_everyone(tmp_path, gateways):
    chat = RecordingAdapter("discord")
    config = make_config(tmp_path, platforms={"discord": {"allow_all": True}})
    await gateways(config, [chat], script={"parent": [[{"text": "hello anyone"}]]})
    await chat.say("hi", user="123")
    await chat.wait_for(lambda: chat.messages)
    assert chat.texts() == ["hello anyone"]


async def test_a_message_arriving_during_shutdown_is_handled_after_the_next_start(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path)
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]})
    gateway._accepting = False  # what stop() does first, before the adapters have stopped
    accepted = await gateway.handle(Inbound("chat", "c9", None, "u1", "alice", "sent while stopping", "ev-late"))
    assert gateway.store.inbox.event_of_turn("chat", accepted.turn_id).event_id == "ev-late"  # its turn then
    await gateway.stop(grace=0)
    chat2 = RecordingAdapter()
    await gateways(config, [chat2], script={"parent": [[{"text": "handled after restart"}]]})
    await chat2.wait_for(lambda: chat2.messages)
    assert chat2.texts() == ["handled after restart"]


async def test_a_strangers_message_replayed_after_a_restart_gets_no_second_refusal(tmp_path, gateways):
    config = make_config(tmp_path, platforms={"telegram": {"enabled": False, "allowed_users": ["friend"]}})
    chat = RecordingAdapter("telegram")
    gateway = await gateways(config, [chat], script={"parent": [[{"text": "never"}]]})
    await chat.say("hello", user="999", event_id="ev-1")
    await chat.wait_for(lambda: chat.messages)
    gateway._accepting = False  # what stop() does first: this one is kept for the next start
    await chat.say("hello?", user="999", event_id="ev-2")
    await gateway.stop(grace=0)
    chat2 = RecordingAdapter("telegram")
    gateway2 = await gateways(config, [chat2], script={"parent": [[{"text": "never"}]]})
    await settled(gateway2)
    assert gateway2.store.inbox.unfinished() == []  # ev-2 was handled: told a moment ago, so not again
    assert chat2.messages == [] and len(chat.messages) == 1
    await chat2.say("anyone?", user="999", event_id="ev-3")  # written after the restart: within the hour too
    await settled(gateway2)
    assert chat2.messages == []


async def test_retention_forgets_old_rows_and_idle_sessions_but_keeps_busy_ones(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat],
                             script={"parent": [[{"text": "first"}], [{"text": "second"}]]})
    await chat.say("hello", chat="idle")
    await chat.wait_for(lambda: chat.messages)
    session = gateway.sessions.find("chat", "idle", None)
    assert gateway.retention.sweep() == (0, 0, 0)  # fresh: nothing to forget
    session.last_active -= IDLE_SESSION_SECONDS + 1
    assert gateway.retention.sweep()[2] == 1 and not len(gateway.sessions)
    await chat.say("hello again", chat="idle")  # loaded back from the store, transcript and all
    await chat.wait_for(lambda: len(chat.messages) == 2)
    restored = next(iter(gateway.sessions))
    assert restored.session_id == session.session_id
    assert [m["content"] for m in restored.agent.messages if m["role"] == "user"] == ["hello", "hello again"]


async def test_retention_keeps_an_event_not_handled_yet_however_old(tmp_path, gateways):
    # A gateway down for over a week replays its unsettled events; the upkeep during their turns
    # must not forget them, or a stop (or crash) before they end would lose them.
    clock = FakeClock(autojump=False)
    config = make_config(tmp_path, delivery={"late_after": 0})
    held = {"parent": [[{"wait": "go", "text": "never"}]]}
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=(model := ScriptedModel(held)), clock=clock)
    await chat.say("still there?")
    await model.reached("go")
    await gateway.stop(grace=0)  # its turn runs again, whole, after the next start
    clock.advance(8 * 24 * 3600)
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=(model2 := ScriptedModel(held)), clock=clock)
    await model2.reached("go")
    gateway2.retention.sweep()
    await gateway2.stop(grace=0)
    chat3 = RecordingAdapter()
    await gateways(config, [chat3], script={"parent": [[{"text": "yes"}]]}, clock=clock)
    await chat3.wait_for(lambda: chat3.messages, timeout=10)
    assert chat.texts() + chat2.texts() + chat3.texts() == ["yes"]


async def test_no_reply_silences_only_completion_turns(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "NO_REPLY"}]]})
    await chat.say("say nothing, please")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == ["NO_REPLY"]  # a user's message always gets its answer


async def test_a_message_during_a_completion_turn_does_not_suppress_the_results(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"interim_assistant_messages": True})

    def parent(request):
        last = request.messages[-1]
        if last["role"] == "user" and "Background delegation results" in str(last["content"]):
            return {"wait": "completion", "text": "here are the results"}
        if last["role"] == "user" and "delegate" in str(last["content"]):
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "look it up"}}]}
        if last["role"] == "tool":
            return {"text": "on it"}
        return {"text": "answer to the follow-up"}

    model = ScriptedModel({"parent": parent, "leaf": [[{"text": "found it"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("please delegate")
    await model.reached("completion")  # the completion turn runs...
    await chat.say("and another thing")  # ...when the user writes again
    model.release("completion")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    await settled(gateway)
    assert chat.texts() == ["on it", "here are the results", "answer to the follow-up"]


async def test_a_steer_the_turn_never_read_becomes_the_next_turn_before_later_messages(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"wait": "last call", "text": "first answer"}], [{"text": "steer answered"}],
                                      [{"text": "later answered"}]]})
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start")
    await model.reached("last call")  # the turn's final model call is in flight: nothing reads steers now
    steered = await chat.say("use metric units")
    model.release("last call")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await chat.say("later")
    await chat.wait_for(lambda: len(chat.messages) == 3)
    await settled(gateway)
    assert chat.texts() == ["first answer", "steer answered", "later answered"]
    session = next(iter(gateway.sessions))
    assert [m["content"] for m in session.agent.messages if m["role"] == "user"] == ["start", "use metric units",
                                                                                     "later"]
    assert steered.turn_id is not None


async def test_a_steer_survives_a_restart_before_the_turn_read_it(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    model = ScriptedModel({"parent": [[{"wait": "never", "text": "cut short"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start", event_id="e-start")
    await model.reached("never")
    await chat.say("use metric units", event_id="e-steer")
    await gateway.stop(grace=0)  # the turn is interrupted before it read the steer
    chat2 = RecordingAdapter()
    model2 = ScriptedModel({"parent": [[{"text": "answered after the restart"}]] * 3})
    gateway2 = await gateways(config, [chat2], model=model2)
    await chat2.wait_for(lambda: "answered after the restart" in chat2.texts())
    await settled(gateway2)
    said = [str(m["content"]) for r in model2.requests for m in r.messages if m["role"] == "user"]
    assert "use metric units" in said


async def test_a_steer_run_as_the_next_turn_keeps_its_turn_id_across_a_restart(tmp_path, gateways):
    chat = RecordingAdapter()
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    progress = {"tool_calls": [{"name": "send_message", "arguments": {"text": "converting"}}]}
    model = ScriptedModel({"parent": [[{"wait": "last call", "text": "first answer"}],
                                      [progress, {"wait": "never", "text": "cut short"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start")
    await model.reached("last call")  # nothing reads steers now: the steer becomes the next turn
    await chat.say("use metric units")
    model.release("last call")
    await model.reached("never")
    await chat.wait_for(lambda: "converting" in chat.texts())
    await gateway.stop(grace=0)  # the steer's turn runs again, whole, after the restart
    chat2 = RecordingAdapter()
    await gateways(config, [chat2], script={"parent": [[progress, {"text": "in metric"}]] * 2})
    await chat2.wait_for(lambda: "in metric" in chat2.texts())
    assert chat.texts() + chat2.texts() == ["first answer", "converting", "in metric"]


async def test_what_a_turn_sent_with_send_message_is_not_sent_again_when_it_runs_again_after_a_restart(
        tmp_path, gateways):
    def script(final: dict) -> dict:
        progress = {"tool_calls": [{"name": "send_message", "arguments": {"text": "looking into it"}}]}
        return {"parent": [[progress, final]]}

    chat = RecordingAdapter()
    config = make_config(tmp_path)
    model = ScriptedModel(script({"wait": "never", "text": "cut short"}))
    gateway = await gateways(config, [chat], model=model)
    await chat.say("check the build")
    await model.reached("never")
    await gateway.stop(grace=0)  # the turn runs again, whole, after the restart
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config, [chat2], model=ScriptedModel(script({"text": "it is green"})))
    await chat2.wait_for(lambda: "reply" in chat2.kinds())
    await settled(gateway2)
    assert chat.texts() + chat2.texts() == ["looking into it", "it is green"]


@pytest.mark.parametrize(("command", "final"), [("/stop", "⏹ Stopped"), ("hello again", "⏹ Stopped for your next message")])
async def test_a_cut_short_turn_leaves_no_stale_notice(tmp_path, gateways, command, final):
    chat, clock, model, gateway = await gated_turn(tmp_path, gateways, agent={"gateway_notify_interval": 30})
    await chat.say("work slowly")
    await model.reached("go")
    await tick(clock, 30)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    await chat.say(command)
    await chat.wait_for(lambda: chat.messages[0].edits)
    await settled(gateway)
    assert chat.messages[0].text == final


@pytest.mark.parametrize(("command", "final"),
                         [("/stop", "⏹ Stopped"), ("hello again", "⏹ Stopped for your next message")])
async def test_a_cut_short_notice_is_final_at_the_stop_so_a_crash_before_the_turn_winds_down_leaves_none_stale(
        tmp_path, gateways, command, final):
    # The stop settles the event at once: a crash before the turn winds down does not run it
    # again, so nothing after a restart would finalise its notice.
    chat, clock, model = RecordingAdapter(), FakeClock(autojump=False), ScriptedModel(GATED)
    config = make_config(tmp_path, agent={"gateway_notify_interval": 30})
    gateway = await gateways(config, [chat], model=SlowToStop(model), clock=clock)
    await chat.say("work slowly")
    await model.reached("go")
    await tick(clock, 30)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    try:
        await chat.say(command)
        await chat.wait_for(lambda: chat.messages[0].text == final)  # the turn has not wound down yet
        assert gateway.runner.busy
    finally:
        model.release("go")
    await settled(gateway)
    assert chat.messages[0].text == final and chat.messages[0].edits.count(final) == 1


class DeletingAdapter(RecordingAdapter):
    """A platform that can delete the bot's messages."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        self.messages = [m for m in self.messages if m.message_id != message_id]
        self._changed()


async def test_progress_final_delete_removes_the_notice_where_the_platform_can(tmp_path, gateways):
    chat, clock, model = DeletingAdapter(), FakeClock(autojump=False), ScriptedModel(GATED)
    config = make_config(tmp_path, agent={"gateway_notify_interval": 30}, display={"progress_final": "delete"})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("work slowly")
    await model.reached("go")
    await tick(clock, 30)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    model.release("go")
    await chat.wait_for(lambda: "reply" in chat.kinds())
    await settled(gateway)
    assert chat.kinds() == ["reply"]


@pytest.mark.parametrize(("said", "replies"), [
    ([], [EMPTY_ANSWER]),  # silence would read as a lost message
    ([{"tool_calls": [{"name": "send_message", "arguments": {"text": "here it is"}}]}], ["here it is"]),
    ([{"tool_calls": [{"name": "send_message", "arguments": {"text": " \n "}}]}], [EMPTY_ANSWER]),  # nothing sent
    # Zero-width and other invisible characters show nothing either, and Telegram refuses them as empty.
    ([{"tool_calls": [{"name": "send_message", "arguments": {"text": "\u200b\u00a0"}}]}], [EMPTY_ANSWER]),
])
@pytest.mark.parametrize("answer", ["", "\u200b\u2003\ufeff"])
async def test_a_turn_that_ends_without_an_answer_says_so_unless_it_spoke_itself(tmp_path, gateways, said, replies,
                                                                                  answer):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [[*said, {"text": answer}]]}))
    await chat.say("what now?")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == replies


async def test_a_turn_whose_tool_calls_were_cut_off_before_any_answer_says_why(tmp_path, gateways):
    # Twice in a row a tool call too long for the model's output limit: the turn ends, with no text.
    cut = {"tool_calls": [{"name": "write_file", "arguments": '{"path": "a.txt", "content": "line 1\\nline'}],
           "truncated": True}
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [[cut, cut]]}))
    await chat.say("write the whole book to a file")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [CUT_OFF_UNSAID]


async def test_an_answer_the_model_cut_off_at_its_output_limit_says_so(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"text": "The three steps are: first", "truncated": True}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    await chat.say("list the steps")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [f"The three steps are: first\n\n{CUT_OFF}"]


@pytest.mark.parametrize(("message", "reply"), [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
     TOO_LONG),
    ("the request exceeds the available context size, try increasing it", TOO_LONG),
    ("Service Unavailable", REFUSED),  # a 400 is no outage: tried again, it fails the same way
])
async def test_a_conversation_too_long_for_the_model_is_told_to_start_anew(tmp_path, gateways, message, reply):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"error": "bad_request", "message": message}]]})
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    await chat.say("and one more thing")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [reply]


async def test_a_message_sent_while_down_waits_for_the_older_one_the_start_replays(tmp_path, gateways):
    # Telegram hands over what was sent during the downtime as soon as polling starts, while later
    # platforms still start, before the gateway replays what it had not finished: the newer message
    # waits for the older one (`chat_intake.Replays`), and neither stops the other's turn.
    def answer(request):
        said = str(request.messages[-1]["content"]).removeprefix("the ")
        return {"wait": "older", "text": f"answer to the {said}"} if said == "older one" else {
            "text": f"answer to the {said}"}
    model2 = ScriptedModel({"parent": answer})

    class DeliversAtStart(RecordingAdapter):
        async def start(self, sink, commands):
            await super().start(sink, commands)
            # From a task of its own, as a platform's adapter hands events over: its start does not wait for them.
            self.newer = asyncio.ensure_future(self.say("the newer one", event_id="ev-2", sent_at=time.time() - 1))
            await asyncio.sleep(0)  # the newer one is recorded, and waits

    config = make_config(tmp_path)  # busy_input_mode: interrupt, the default
    model = ScriptedModel({"parent": [[{"wait": "never"}]]})
    gateway = await gateways(config, [RecordingAdapter()], model=model)
    await gateway.adapters["chat"].say("the older one", event_id="ev-1", sent_at=time.time() - 5)
    await model.reached("never")
    await gateway.stop(grace=0)  # ev-1 is replayed at the next start

    chat = DeliversAtStart()
    gateway2 = await gateways(config, [chat], model=model2)
    await model2.reached("older")
    await chat.newer
    model2.release("older")
    await chat.wait_for(lambda: len(chat.texts("reply")) == 2)
    await settled(gateway2)
    assert chat.texts("reply") == ["answer to the older one", "answer to the newer one"]
    assert len([r for r in model2.requests if r.role == "parent"]) == 2


async def test_retention_forgets_conversations_no_message_was_seen_in_for_a_month(tmp_path, gateways):
    # Every Slack thread and Discord channel or DM the bot hears in adds a row, and each start
    # reads them all: without retention the table, and that read, grew with every one for good.
    clock = FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()], clock=clock)
    gateway.store.last_seen.record("slack", "C1/1700000000.000001", "1700000000.000002")
    gateway.store.last_seen.record("discord", "600", "1234567890123456789")
    clock.advance(29 * 24 * 3600)
    gateway.store.last_seen.record("discord", "600", "1234567890123456790")  # still talked in: kept
    gateway.retention.sweep()
    assert gateway.store.last_seen.of("slack") == {"C1/1700000000.000001": "1700000000.000002"}
    clock.advance(2 * 24 * 3600)
    gateway.retention.sweep()
    assert gateway.store.last_seen.of("slack") == {}
    assert gateway.store.last_seen.of("discord") == {"600": "1234567890123456790"}
