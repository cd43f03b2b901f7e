"""What a parent reads of children at the extremes: megabytes of error, an answer the journal kept only the start of."""

import asyncio
import json

import pytest

from agent import ToolContext
from lifecycle import delegate_tool
from lifecycle._entries import MAX_ERROR_CHARS, _bounded_error, routed
from lifecycle.settings import DelegationSettings
from tests.lifecycle.conftest import child_script

HUGE = 2_000_000


def script(request):
    goal = request.metadata.get("goal", "")
    if "[huge-error]" in goal:  # a proxy's page, or a model server quoting the request back
        return {"error": "server_error", "message": "E" * HUGE}
    if "[huge-answer]" in goal:  # a model dumping a file
        return {"text": "z" * HUGE}
    return child_script(request)


async def scripted_env(make_env, **kw):
    env = await make_env(delegate=True, **kw)
    env.child_model.script["leaf"] = script
    return env


async def delegate(env, args, *, mode="inline", on_dispatch=None) -> str:
    tool = delegate_tool(env.service, mode=mode, on_dispatch=on_dispatch)
    return await tool.invoke(args, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))


def assert_cut(error: str) -> None:
    # Compared in parts: a failing assert quoting 2 MB is unreadable.
    assert len(error) < MAX_ERROR_CHARS + 100, len(error)
    assert error[:MAX_ERROR_CHARS] == "E" * MAX_ERROR_CHARS
    assert error[MAX_ERROR_CHARS:] == f" [... {HUGE - MAX_ERROR_CHARS:,} more characters of the error not shown]"


@pytest.mark.both_engines
async def test_ten_children_failing_with_megabytes_of_error_hand_back_a_bounded_result(make_env):
    # Whole, each error went into the tool result: 20 MB the parent model read again at every request.
    env = await scripted_env(make_env)
    out = await delegate(env, {"tasks": [{"goal": f"[huge-error] {i}"} for i in range(10)]})
    assert len(out) < 10 * (MAX_ERROR_CHARS + 2_000)
    entries = json.loads(out)["results"]
    assert [e["status"] for e in entries] == ["failed"] * 10
    for entry in entries:
        assert_cut(entry["error"])


async def finished_in_the_journal(env, goal):
    """The entry of a background child read once it finished, as a delivery tried again or after a
    restart reads it: from the journal."""
    view, delivered = env.service.host_view(), asyncio.Queue()

    def on_dispatch(dispatch):
        ids = [t.subagent_id for t in dispatch.tasks]
        asyncio.ensure_future(view.wait_finished(ids)).add_done_callback(lambda _: delivered.put_nowait(ids))

    await delegate(env, {"goal": goal}, mode="background", on_dispatch=on_dispatch)
    [sid] = await asyncio.wait_for(delivered.get(), 10)
    [entry] = await view.finished_entries([(0, sid)], env.parent.workspace)
    assert entry["tool_trace"] == []  # read back from the journal, not the live record
    return entry


@pytest.mark.both_engines
async def test_an_error_read_back_from_the_journal_is_cut_and_counted_as_a_live_one_is(make_env):
    env = await scripted_env(make_env)
    entry = await finished_in_the_journal(env, "[huge-error]")
    assert_cut(entry["error"])  # counted from the error's own length, not the 32,000 characters journaled


@pytest.mark.both_engines
async def test_an_answer_the_journal_kept_only_the_start_of_says_so(make_env):
    # It read as the whole answer: 32,000 characters of 2,000,000, with no word of the rest.
    env = await scripted_env(make_env, delegation=DelegationSettings(max_summary_chars=50_000))
    entry = await finished_in_the_journal(env, "[huge-answer]")
    assert entry["summary"][:32_000] == "z" * 32_000
    assert entry["summary"][32_000:] == (f"\n\n[... the rest of this answer, {HUGE - 32_000:,} more characters, "
                                         "was not kept: only its first 32,000 characters were recorded]")


@pytest.mark.both_engines
async def test_the_saved_text_of_a_cut_journaled_answer_does_not_pass_for_the_full_answer(make_env):
    env = await scripted_env(make_env)  # the default budget, 24,000: cut again, and saved
    entry = await finished_in_the_journal(env, "[huge-answer]")
    assert entry["summary_truncated"] is True and len(entry["summary"]) <= 24_000
    saved = (env.parent.workspace / entry["summary_full_path"]).read_text()
    assert saved[:32_000] == "z" * 32_000 and f"{HUGE - 32_000:,} more characters, was not kept" in saved[32_000:]


def test_a_routed_childs_model_named_where_its_error_is_cut_is_hidden_all_the_same():
    # Cut inside the name, its stub was no name `routed` knew, and showed ("… gpt-4o-m").
    model = "openai/gpt-4o-mini"
    for at in range(MAX_ERROR_CHARS - len(model), MAX_ERROR_CHARS + 2):
        error = "x " * (at // 2) + ("" if at % 2 == 0 else "x") + f" {model} " + "y " * 3_000
        item = routed({"model": model, "error": _bounded_error(error)}, "fast", "openai")
        assert "gpt" not in item["error"] and "openai" not in item["error"], at
