import asyncio
import logging
import math

import pytest

from agent import AgentSession, CompactionPolicy, Compactor, HookRegistry, ModelRequest, ToolRegistry, Usage
from agent._compaction import SUMMARY_HEADER, SUMMARY_PROMPT, estimate_tokens
from agent._context_window import stated_window
from agent._token_estimate import weight
from agent.models import OpenAIModel
from agent.models.demo import DemoModel
from agent.models.scripted import ScriptedModel
from agent.settings import CompressionSettings, ModelSettings
from agent.testing import FakeOpenAIServer

WINDOW = 2_000  # ratio trigger 1,000 estimated tokens, about 4,000 characters
SYSTEM = {"role": "system", "content": "be brief"}


def chat(count, chars=400):
    """Alternating user/assistant messages, ``chars`` long each, distinguishable by index."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * chars}
        for i in range(count)
    ]


def calls(*ids):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": "echo", "arguments": "{}"}} for i in ids],
    }


def result(call_id, chars=400):
    return {"role": "tool", "tool_call_id": call_id, "content": "r" * chars}


def session(history, script=None, policy=CompactionPolicy(), **kw):
    model = ScriptedModel(script or {"parent": lambda req: {"text": "done"}}, context_window=WINDOW)
    compactor = Compactor(policy)
    s = AgentSession(model=model, system_prompt="be brief", compactor=compactor, **kw)
    s.messages.extend(history)
    return s, compactor, model


def summaries(messages):
    return [m for m in messages if str(m.get("content") or "").startswith(SUMMARY_HEADER)]


def assert_tool_pairs_intact(messages):
    open_ids = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_ids, f"orphaned tool result {m['tool_call_id']}"
        else:
            open_ids = {c["id"] for c in m.get("tool_calls") or ()}


async def assert_a_hard_interrupt_while_summarising_keeps_the_messages(s, compactor, model):
    """Runs a turn of ``s`` and stops it hard once its summariser is asked: the turn ends interrupted,
    the session's messages as they were, nothing compacted."""
    task = asyncio.create_task(s.run_turn("next"))
    async with asyncio.timeout(5):
        while not any(r.role == "compactor" for r in model.requests) and not task.done():
            await asyncio.sleep(0)
    before = list(s.messages)
    assert s.interrupt("stop", hard=True)
    result = await task
    assert result.exit_reason == "interrupted"
    assert s.messages == before and compactor.compactions == 0


# -- policy ------------------------------------------------------------------------------


def test_trigger_is_the_lower_of_ratio_and_absolute_tokens():
    assert CompactionPolicy().trigger_tokens(WINDOW) == 1_000
    assert CompactionPolicy(threshold_tokens=600).trigger_tokens(WINDOW) == 600
    assert CompactionPolicy(threshold_tokens=5_000).trigger_tokens(WINDOW) == 1_000
    assert CompactionPolicy.from_settings(CompressionSettings(0.25, 0)).trigger_tokens(WINDOW) == 500
    with pytest.raises(ValueError):
        CompactionPolicy(keep_recent_messages=0)


@pytest.mark.parametrize(
    ("global_tokens", "child_tokens", "window", "expected"),
    [
        (0, 0, 1_000_000, 500_000),  # default: off
        (0, 300_000, 1_000_000, 300_000),  # lowers the child's trigger
        (150_000, 200_000, 1_000_000, 150_000),  # never raises the global cap
        (0, 100_000, 128_000, 64_000),  # the ratio trigger is lower and wins
        (0, 20_000, 128_000, 20_000),
        (0, 16_000, 128_000, 16_000),  # the floor itself is valid
    ],
)
def test_child_rule(global_tokens, child_tokens, window, expected):
    parent = CompactionPolicy(threshold_tokens=global_tokens)
    assert parent.for_child(child_tokens).trigger_tokens(window) == expected
    assert parent.trigger_tokens(window) == min(window // 2, global_tokens or window)  # parent untouched


def test_child_values_below_16000_are_ignored_with_one_warning(caplog):
    parent = CompactionPolicy()
    with caplog.at_level(logging.WARNING, logger="agent.compaction"):
        assert parent.for_child(15_999) is parent
        assert parent.for_child(15_999) is parent
        assert parent.for_child(0) is parent
    assert [r.getMessage() for r in caplog.records] == [
        "delegation.compression_threshold_tokens 15999 is below 16000 and has no effect"
    ]


def test_estimate_counts_text_tool_calls_and_results():
    assert estimate_tokens([]) == 0
    assert estimate_tokens([{"role": "user", "content": "abcd" * 10}]) == 10 + 4
    call = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "ab", "arguments": "cdefgh"}}]}
    assert estimate_tokens([call, {"role": "tool", "content": "x" * 8}]) == 2 + 2 + 8
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 100_000}}
    assert estimate_tokens([{"role": "user", "content": [{"type": "text", "text": "abcd"}, image]}]) == 1 + 4 + 512


def test_the_running_estimate_matches_a_full_count_through_appends_compaction_and_reloads():
    s, compactor, _ = session(chat(3))
    assert compactor._estimate(s) == estimate_tokens(s.messages)
    s.messages.append(calls("a"))
    s.messages.append(result("a", 37))
    assert compactor._estimate(s) == estimate_tokens(s.messages)
    s.messages[1:2] = [{"role": "user", "content": "one for one"}]  # same length, another message
    compactor._tallies.pop(s)  # as _compact does after replacing messages in place
    assert compactor._estimate(s) == estimate_tokens(s.messages)
    s.messages = [SYSTEM, *chat(2)]  # a new list (a transcript loaded back)
    assert compactor._estimate(s) == estimate_tokens(s.messages)
    s.messages.pop()
    s.messages.append({"role": "user", "content": "x" * 999})  # same length, new last message
    assert compactor._estimate(s) == estimate_tokens(s.messages)


# -- compaction in a session ------------------------------------------------------------------


async def test_below_the_trigger_nothing_changes():
    s, compactor, _ = session(chat(4))
    before = list(s.messages)
    assert (await s.run_turn("next")).exit_reason == "completed"
    assert s.messages[: len(before)] == before
    assert compactor.compactions == 0


async def test_ratio_trigger_summarises_older_turns(caplog):
    history = chat(10)  # ~1,050 tokens with the new message: over 1,000
    s, compactor, model = session(history)
    with caplog.at_level(logging.INFO, logger="agent.compaction"):
        result = await s.run_turn("next")
    assert result.exit_reason == "completed"
    assert compactor.compactions == 1 and s.history_version == 1  # savers must store it all again
    assert s.messages[0] == SYSTEM
    assert s.messages[1] == {"role": "user", "content": f"{SUMMARY_HEADER}\n(summary)"}
    assert s.messages[2:] == [*history[-5:], {"role": "user", "content": "next"}, {"role": "assistant", "content": "done"}]
    (record,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert "compacted 5 messages" in record.getMessage()


async def test_lower_absolute_tokens_trigger_first():
    s, compactor, _ = session(chat(4))  # ~420 tokens, far below the ratio trigger
    s.compactor = Compactor(CompactionPolicy(threshold_tokens=300, keep_recent_messages=2))
    await s.run_turn("next")
    assert s.compactor.compactions == 1
    assert len(summaries(s.messages)) == 1


ZH = "我们讨论了发布计划、预算和截止日期。" * 6  # 102 characters: about a token each
EN = "We talked about the release plan, the budget and the deadlines. " * 3  # 192 characters: 48 tokens


async def test_a_chinese_conversation_is_compacted_before_it_passes_the_threshold():
    # The ratio trigger is 1,000 tokens of the 2,000-token window. At four characters a token a Chinese
    # conversation was compacted only at about 4,000 characters: twice the window.
    sent = []  # characters of each request to the model, as it was sent

    def parent(request):
        sent.append(sum(len(m["content"]) for m in request.messages))
        return {"text": ZH}

    s, compactor, _ = session([], {"parent": parent, "compactor": lambda r: {"text": "总结"}})
    for _ in range(20):
        assert (await s.run_turn(ZH)).exit_reason == "completed"
    assert compactor.compactions >= 2
    assert max(sent) <= 1_000 < 20 * 2 * len(ZH)


async def test_an_english_conversation_is_compacted_exactly_when_four_characters_a_token_say():
    s, compactor, _ = session([], {"parent": lambda r: {"text": EN}})
    history = [SYSTEM]
    for turn in range(1, 20):
        history.append({"role": "user", "content": EN})
        due = math.ceil(sum(len(m["content"]) for m in history) / 4) + 4 * len(history) >= 1_000
        await s.run_turn(EN)
        assert compactor.compactions == (1 if due else 0), turn
        if due:
            return
        history.append({"role": "assistant", "content": EN})
    raise AssertionError("never compacted")


@pytest.mark.parametrize(("summary", "kept"), [
    ("s" * 9_000, 8_000),  # 2,000 tokens of English: the 8,000 characters it always kept
    ("总" * 9_000, 2_000),  # about a token each: 8,000 of them were four times the budget
    ("s" * 7_999 + "😀", 7_999),  # the cut falls between characters: an emoji that would pass the budget is left out
])
async def test_the_summary_is_cut_at_two_thousand_estimated_tokens_whatever_its_script(summary, kept):
    script = {"parent": lambda r: {"text": "done"}, "compactor": lambda r: {"text": summary}}
    s, compactor, model = session(chat(10), script, CompactionPolicy(threshold_tokens=1_000))
    model.context_window = 16_000  # a window with room for such a summary beside the messages kept after it
    await s.run_turn("next")
    (message,) = summaries(s.messages)
    assert message["content"] == f"{SUMMARY_HEADER}\n{summary[:kept]}"
    assert weight(summary[:kept]) <= 8 * 2_000  # eighths of a token


async def test_summariser_request_and_the_next_model_request():
    seen = []

    def parent(request):
        seen.append(list(request.messages))  # the session mutates its list later
        return {"text": "done"}

    script = {"parent": parent, "compactor": lambda req: {"text": "they talked about x"}}
    history = chat(10)
    s, _, model = session(history, script)
    await s.run_turn("next")

    (summary_request,) = [r for r in model.requests if r.role == "compactor"]
    assert summary_request.tools == ()
    assert summary_request.metadata["message_count"] == 5
    system, rendered = summary_request.messages
    assert system["role"] == "system" and "summary" in system["content"]
    assert rendered["role"] == "user"
    assert "USER: m0 " in rendered["content"] and "ASSISTANT: m3 " in rendered["content"]
    assert "USER: m4 " in rendered["content"] and "m5 " not in rendered["content"]

    summary = {"role": "user", "content": f"{SUMMARY_HEADER}\nthey talked about x"}
    assert seen == [[SYSTEM, summary, *history[-5:], {"role": "user", "content": "next"}]]


async def test_before_model_call_sees_the_compacted_conversation():
    lengths = []

    async def hook(s):
        lengths.append(len(s.messages))

    s, _, _ = session(chat(10), before_model_call=hook)
    await s.run_turn("next")
    assert lengths == [1 + 1 + 6]


@pytest.mark.parametrize("failure", [{"error": "timeout", "message": "Request timed out."},
                                     {"error": "malformed", "message": "no choices"}, "raise"])
async def test_summariser_failure_falls_back_to_an_extractive_summary(failure, caplog):
    def compactor(request):
        if failure == "raise":
            raise RuntimeError("summariser bug")
        return failure

    history = chat(10)
    history[0] = {"role": "user", "content": "first line of the request\nsecond line " + "y" * 400}
    history[1] = {"role": "assistant", "content": "z" * 400}
    s, compactor_, _ = session(history, {"parent": lambda r: {"text": "done"}, "compactor": compactor})
    with caplog.at_level(logging.WARNING, logger="agent.compaction"):
        result = await s.run_turn("next")
    assert result.exit_reason == "completed" and result.text == "done"
    assert compactor_.compactions == 1
    (summary,) = summaries(s.messages)
    lines = summary["content"].splitlines()
    assert lines[0] == SUMMARY_HEADER
    assert lines[1] == "- user: first line of the request"
    assert lines[2] == "- assistant: " + "z" * 160 + "…"
    assert len(lines) == 1 + 5
    assert any("extractive summary" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kind", ["server_error", "rate_limited", "connection", "quota"])
async def test_a_summariser_failing_as_an_outage_leaves_the_conversation_whole_until_the_next_turn(kind, caplog):
    # An extractive summary replaces the older messages for good; over a provider that is down or busy
    # (the turn's own call next most likely fails the same way) that threw the conversation away for nothing.
    outage = {"error": kind, "message": "down"}
    answers = iter([outage, {"text": "summary of m0-m3"}])
    script = {"parent": lambda r: {"text": "done"}, "compactor": lambda r: next(answers)}
    s, compactor, model = session(chat(10), script)
    before = list(s.messages)
    with caplog.at_level(logging.WARNING, logger="agent.compaction"):
        result = await s.run_turn("next")
    assert (result.exit_reason, result.summary_failed, compactor.compactions) == ("completed", False, 0)
    assert s.messages == [*before, {"role": "user", "content": "next"}, {"role": "assistant", "content": "done"}]
    assert any("left whole until the session's next turn" in r.getMessage() for r in caplog.records)
    await s.run_turn("again")
    assert [r.role for r in model.requests] == ["compactor", "parent", "compactor", "parent"]
    assert compactor.compactions == 1 and s.messages[1]["content"] == f"{SUMMARY_HEADER}\nsummary of m0-m3"


async def test_a_provider_down_while_compacting_loses_nothing_of_the_conversation():
    async with FakeOpenAIServer() as server:
        model = OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, max_retries=0,
                                          context_window=WINDOW), env={})
        try:
            s = AgentSession(model=model, system_prompt="be brief", compactor=Compactor())
            s.messages.extend(chat(10))
            before = list(s.messages)
            server.push_error(503)  # the summariser's call
            server.push_error(503)  # the turn's own
            result = await s.run_turn("next")
            assert (result.exit_reason, result.error_kind) == ("error", "server_error")
            assert s.messages == [*before, {"role": "user", "content": "next"}]  # not "- user: m0 xxx…" for good
            server.push_text("they talked")
            server.push_text("done")
            assert (await s.run_turn("again")).text == "done"
        finally:
            await model.aclose()
    assert [r["messages"][0]["content"] == SUMMARY_PROMPT for r in server.requests] == [True, False, True, False]
    assert "m0 " + "x" * 400 in server.requests[2]["messages"][1]["content"]
    assert s.messages[1] == {"role": "user", "content": f"{SUMMARY_HEADER}\nthey talked"}


async def test_a_summariser_failing_as_an_outage_is_not_asked_again_in_the_same_turn():
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: "r" * 400, toolset="test")
    steps = iter([{"tool_calls": [{"name": "echo", "arguments": {}}]}] * 3 + [{"text": "done"}])
    script = {"parent": lambda r: next(steps), "compactor": lambda r: {"error": "server_error", "message": "down"}}
    s, compactor, model = session(chat(10), script, tools=reg.resolve())
    result = await s.run_turn("next")
    assert result.exit_reason == "completed" and compactor.compactions == 0
    assert [r.role for r in model.requests] == ["compactor", "parent", "parent", "parent", "parent"]


async def test_a_conversation_refused_as_too_long_is_compacted_whatever_the_summariser_fails_with():
    down = {"error": "server_error", "message": "down"}
    s, compactor, model = session(chat(10), small_server(summary=lambda r: down))
    model.context_window = BIG
    result = await s.run_turn("next")
    assert (result.exit_reason, result.summary_failed, compactor.compactions) == ("completed", True, 1)
    assert s.messages[1]["content"].startswith(f"{SUMMARY_HEADER}\n- user: m0 ")


EARLY, LATE = "The user is Ada; her server is db-7.", "The deadline moved to Friday."


def summarised_before(filler=6_000):
    """A conversation compacted once already: its summary (long, facts at both ends) and six more messages."""
    earlier = f"{SUMMARY_HEADER}\n{EARLY}\n" + "- detail\n" * (filler // 9) + LATE
    return [{"role": "user", "content": earlier}, *chat(6, chars=300)]


async def test_a_summary_of_a_summary_is_sent_all_of_the_earlier_one_not_as_the_users_words():
    policy = CompactionPolicy(threshold_tokens=100, keep_recent_messages=2)
    s, compactor, model = session(summarised_before(), policy=policy)
    await compactor(s)
    (request,) = [r for r in model.requests if r.role == "compactor"]
    rendered = request.messages[1]["content"]
    assert EARLY in rendered and LATE in rendered  # not cut at the 2,000 characters of an ordinary message
    assert rendered.startswith("EARLIER SUMMARY: ") and "USER: [Summary" not in rendered
    assert "EARLIER SUMMARY" in request.messages[0]["content"]  # the summariser is told to carry it over


async def test_an_extractive_summary_of_a_summary_keeps_the_earlier_facts():
    slow = {"error": "timeout", "message": "Request timed out."}
    failing = {"parent": lambda r: {"text": "done"}, "compactor": lambda r: slow}
    s, compactor, _ = session(summarised_before(filler=600), failing,
                              policy=CompactionPolicy(threshold_tokens=100, keep_recent_messages=2))
    await compactor(s)
    (summary,) = summaries(s.messages)
    lines = summary["content"].splitlines()
    assert lines[:2] == [SUMMARY_HEADER, EARLY] and LATE in lines
    assert SUMMARY_HEADER not in summary["content"][len(SUMMARY_HEADER):]  # not "- user: [Summary of …]"
    assert lines[-1].startswith("- assistant: m3 ")


async def test_no_second_compaction_without_new_messages():
    huge = {"role": "user", "content": "h" * 8_000}  # over the trigger on its own
    s, compactor, model = session([*chat(4), huge], policy=CompactionPolicy(keep_recent_messages=2))
    await compactor(s)
    after = list(s.messages)
    await compactor(s)
    assert compactor.compactions == 1
    assert s.messages == after
    assert len([r for r in model.requests if r.role == "compactor"]) == 1
    s.messages.extend(chat(2))
    await compactor(s)
    assert compactor.compactions == 2


async def test_nothing_to_summarise_is_left_alone():
    s, compactor, _ = session([{"role": "user", "content": "h" * 8_000}])
    await compactor(s)
    assert compactor.compactions == 0
    assert len(s.messages) == 2


@pytest.mark.parametrize("keep", range(1, 12))
async def test_tool_calls_and_results_are_never_split(keep):
    history = [
        *chat(2),
        calls("a", "b", "c"),
        result("a"), result("b"), result("c"),
        {"role": "assistant", "content": "read them"},
        *chat(2),
        calls("d"),
        result("d"),
        calls("e", "f"),
        result("e"), result("f"),
    ]
    s, compactor, _ = session(history, policy=CompactionPolicy(threshold_tokens=100, keep_recent_messages=keep))
    await compactor(s)
    assert compactor.compactions == 1
    assert_tool_pairs_intact(s.messages)
    assert s.messages[2]["role"] != "tool"  # the kept tail starts at a user or assistant message
    assert s.messages[-1] == history[-1]


async def test_cut_moves_later_when_earlier_would_leave_nothing_older():
    history = [calls("a"), result("a"), result("a"), result("a"), *chat(2)]
    s, compactor, _ = session(history, policy=CompactionPolicy(threshold_tokens=100, keep_recent_messages=4))
    await compactor(s)
    assert s.messages[2:] == chat(2)
    assert_tool_pairs_intact(s.messages)


async def test_compaction_inside_a_tool_loop():
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: "o" * 2_000, toolset="test")
    step = {"tool_calls": [{"name": "echo", "arguments": {}}]}
    s, compactor, model = session(
        [], {"parent": [[step, step, step, {"text": "done"}]]}, CompactionPolicy(keep_recent_messages=2),
        tools=reg.resolve(),
    )
    result = await s.run_turn("go")
    assert compactor.compactions >= 1
    # Every scripted step ran (a summary is no iteration of the turn), and the summaries count as spend.
    assert [r.iteration for r in model.requests if r.role == "parent"] == [0, 1, 2, 3]
    assert result.exit_reason == "completed" and result.api_calls == 4 + compactor.compactions
    assert_tool_pairs_intact(s.messages)
    for request in model.requests:
        if request.role == "parent":
            assert request.messages[1]["role"] != "tool"


async def test_a_hard_interrupt_cancels_the_summariser_and_keeps_the_messages():
    hooks, heard = HookRegistry(), []
    hooks.register("model_call", lambda **e: heard.append((e["role"], e["error"])))
    s, compactor, model = session(chat(10), {"parent": lambda r: {"text": "done"}, "compactor": lambda r: {"hang": True}},
                                  hooks=hooks)
    await assert_a_hard_interrupt_while_summarising_keeps_the_messages(s, compactor, model)
    assert heard == [("compactor", "interrupted")]  # the hooks hear of the call that was cancelled


async def test_cancelling_a_turn_from_outside_while_it_summarises_is_no_interrupt_to_the_hooks():
    hooks, heard = HookRegistry(), []
    hooks.register("model_call", lambda **e: heard.append(e["error"]))
    s, _, model = session(chat(10), {"compactor": lambda r: {"hang": True}}, hooks=hooks)
    task = asyncio.create_task(s.run_turn("next"))
    async with asyncio.timeout(5):
        while not model.requests:
            await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert heard == []


async def test_demo_model_answers_as_compactor():
    request = ModelRequest([], role="compactor", metadata={"message_count": 7})
    response = await DemoModel().complete(request)
    assert response.text == "[demo] summary of 7 earlier messages"
    assert not response.tool_calls


async def test_the_summary_call_counts_in_the_turn_and_runs_the_model_call_hook():
    # A child's cost rolls up from its turn, and metrics hear of model calls through the hook.
    calls = []

    async def heard(**event):
        calls.append(event)

    hooks = HookRegistry()
    hooks.register("model_call", heard)
    s, compactor, _ = session(chat(10), {"parent": lambda r: {"text": "done", "cost_usd": 0.01},
                                         "compactor": lambda r: {"text": "they talked", "cost_usd": 0.02}},
                              hooks=hooks)
    result = await s.run_turn("next")
    assert compactor.compactions == 1
    assert (result.api_calls, result.usage, result.cost_usd) == (2, Usage(20, 10), pytest.approx(0.03))
    assert (s.total_api_calls, s.total_usage, s.total_cost_usd) == (2, Usage(20, 10), pytest.approx(0.03))
    assert [(c["role"], c["turn_id"], c["cost_usd"], c["error"]) for c in calls] == [
        ("compactor", result.turn_id, 0.02, None), ("parent", result.turn_id, 0.01, None)]


# -- a server whose real window is smaller than the model's settings say --------------------------

OVERFLOW = {"error": "bad_request", "message": "Error code: 400 - This model's maximum context length is 2000 tokens. "
                                               "However, your messages resulted in 9000 tokens."}
BIG = 128_000  # model.context_window as configured: the estimate never triggers


def small_server(answer=None, summary=None, fits=lambda request: any(
        str(m.get("content") or "").startswith(SUMMARY_HEADER) for m in request.messages)):
    """A role script refusing the parent's requests until they carry a summary."""
    return {"parent": lambda r: (answer(r) if answer else {"text": "done"}) if fits(r) else OVERFLOW,
            "compactor": summary or (lambda r: {"text": "they talked", "cost_usd": 0.02})}


async def test_a_refused_request_is_compacted_and_asked_once_more_with_its_spend_counted(caplog):
    calls = []

    async def heard(**event):
        calls.append(event)

    hooks = HookRegistry()
    hooks.register("model_call", heard)
    s, compactor, model = session(chat(10), small_server(), hooks=hooks)
    model.context_window = BIG
    result = await s.run_turn("next")
    assert (result.exit_reason, result.text) == ("completed", "done")
    assert compactor.compactions == 1
    assert [r.role for r in model.requests] == ["parent", "compactor", "parent"]
    assert s.messages[1]["content"] == f"{SUMMARY_HEADER}\nthey talked"
    assert s.messages[-2:] == [{"role": "user", "content": "next"}, {"role": "assistant", "content": "done"}]
    assert (result.api_calls, result.usage, result.cost_usd) == (2, Usage(20, 10), pytest.approx(0.02))
    assert [(c["role"], c["error"]) for c in calls] == [("parent", "bad_request"), ("compactor", None),
                                                        ("parent", None)]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "agent.session"]
    assert len(warned) == 1 and "set model.context_window" in warned[0] and "128000" in warned[0]


async def test_the_summariser_is_sent_what_fits_the_window_the_server_named():
    # 2000 tokens named: the summariser gets half, about 4000 characters, not 2000 of each message.
    s, _, model = session(chat(30, chars=3_000), small_server())
    model.context_window = BIG
    result = await s.run_turn("next")
    assert result.exit_reason == "completed"
    (summariser,) = [r for r in model.requests if r.role == "compactor"]
    assert len(summariser.messages[1]["content"]) <= 4_000 + 30 * 16  # its share of each message, plus roles


async def test_the_summariser_of_a_chinese_conversation_is_sent_what_fits_the_window_the_server_named():
    # A token a character: half of the 2,000 tokens named is about 1,000 characters, not 4,000 (twice the window).
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "话" * 1_500} for i in range(30)]
    s, _, model = session(history, small_server())
    model.context_window = BIG
    result = await s.run_turn("下一个")
    assert result.exit_reason == "completed"
    (summariser,) = [r for r in model.requests if r.role == "compactor"]
    assert len(summariser.messages[1]["content"]) <= 1_000 + 30 * 16  # its share of each message, plus roles


async def test_the_users_newest_message_is_kept_word_for_word_when_a_turn_outgrows_the_window():
    reg = ToolRegistry()
    reg.add("echo", "echo", {"type": "object"}, lambda a, c: "r" * 400, toolset="test")
    step = {"tool_calls": [{"name": "echo", "arguments": {}}]}
    steps = iter([step] * 4 + [{"text": "done"}])
    refusals = iter([False] * 4 + [True])  # the fifth request is refused, once
    s, compactor, model = session(chat(4), small_server(answer=lambda r: next(steps), fits=lambda r: not next(
        refusals, False)), tools=reg.resolve())
    model.context_window = BIG
    result = await s.run_turn("the request " + "q" * 500)
    assert result.exit_reason == "completed" and compactor.compactions == 1
    assert s.messages[1]["content"].startswith(SUMMARY_HEADER)
    assert s.messages[2] == {"role": "user", "content": "the request " + "q" * 500}
    assert_tool_pairs_intact(s.messages)


async def test_a_request_still_too_long_after_compacting_or_without_a_compactor_ends_the_turn(caplog):
    s, compactor, model = session(chat(10), small_server(fits=lambda r: False))
    model.context_window = BIG
    result = await s.run_turn("next")
    assert (result.exit_reason, result.error_kind) == ("error", "bad_request")
    assert "maximum context length" in result.error
    assert [r.role for r in model.requests] == ["parent", "compactor", "parent"]
    child = AgentSession(model=model, role="parent")
    for _ in range(2):
        assert (await child.run_turn("go")).exit_reason == "error"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "agent.session"
              and "context_window" in r.getMessage()]
    assert len(warned) == 2  # one per session


async def test_a_hard_interrupt_while_compacting_after_a_refusal_ends_the_turn_and_keeps_the_messages():
    s, compactor, model = session(chat(10), small_server(summary=lambda r: {"hang": True}))
    model.context_window = BIG
    await assert_a_hard_interrupt_while_summarising_keeps_the_messages(s, compactor, model)


@pytest.mark.parametrize("text, window", [
    ("This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", 8192),
    ("The context length is 32768 tokens", 32768),
    ("request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it", 4096),  # llama.cpp
    ("The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure", 8192),  # vLLM V1
    ("greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load", 4096),  # LM Studio
    ("prompt is too long", None),
])
def test_the_window_a_refusal_names_is_read_from_each_servers_wording(text, window):
    assert stated_window(text) == window


async def test_a_window_the_server_named_is_remembered_so_later_sessions_compact_before_being_refused(caplog):
    llama = {"error": "bad_request", "message": "Error code: 400 - request (9000 tokens) exceeds the available "
                                                "context size (2000 tokens), try increasing it"}
    s, _, model = session(chat(10), small_server())
    model.context_window = BIG
    model.script["parent"] = lambda r: {"text": "done"} if any(
        str(m.get("content") or "").startswith(SUMMARY_HEADER) for m in r.messages) else llama
    with caplog.at_level(logging.INFO, logger="agent.context_window"):
        assert (await s.run_turn("next")).exit_reason == "completed"
        later = AgentSession(model=model, system_prompt="be brief", compactor=Compactor(CompactionPolicy()))
        later.messages.extend(chat(10))
        model.requests.clear()
        assert (await later.run_turn("next")).exit_reason == "completed"
    assert [r.role for r in model.requests] == ["compactor", "parent"]  # compacted first: nothing refused
    learned = [r.getMessage() for r in caplog.records if r.name == "agent.context_window"]
    assert len(learned) == 1 and "context window is 2000 tokens" in learned[0]
