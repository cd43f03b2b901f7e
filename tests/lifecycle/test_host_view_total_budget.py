"""`HostView.finished_entries` with a total: a batch's entries come to at most ``total_tokens`` together,
their summaries and errors sharing what the rest leaves, each cut summary kept whole in the workspace, none
cut below its floor."""

import asyncio
import json
import re

from agent import ToolContext
from agent._token_estimate import weight
from lifecycle import delegate_tool
from lifecycle._host_view import SHARED_ERROR_FLOOR, SHARED_SUMMARY_FLOOR
from lifecycle.settings import DelegationSettings

LONG = " ".join(["finding"] * 2_500)  # 19,999 characters: under the 24,000 of each child's own budget


def leaf(request):
    if request.iteration == 0:
        return {"tool_calls": [{"name": "list_files"}]}
    return {"text": "short" if "[short]" in request.metadata["goal"] else LONG}


async def entries(make_env, goals, total_tokens, *, env=None):
    if env is None:
        env = await make_env(delegate=True)
        env.child_model.script["leaf"] = leaf
    view, done = env.service.host_view(), asyncio.Queue()

    def on_dispatch(dispatch):  # read live, as a delivery while the process runs does: tool traces and all
        tasks = [(t.spec.task_index, t.subagent_id) for t in dispatch.tasks]
        asyncio.ensure_future(view.finished_entries(tasks, env.parent.workspace, total_tokens=total_tokens)
                              ).add_done_callback(lambda f: done.put_nowait(f.result()))

    tool = delegate_tool(env.service, mode="background", on_dispatch=on_dispatch)
    await tool.invoke({"tasks": [{"goal": g} for g in goals]},
                      ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))
    return env, await asyncio.wait_for(done.get(), 10)


async def test_a_batch_over_its_total_leaves_traces_out_and_shares_the_rest_among_summaries(make_env):
    goals = [f"job {n}" for n in range(6)] + ["[short] job"]
    env, results = await entries(make_env, goals, total_tokens=6_000)
    assert weight(json.dumps(results, ensure_ascii=False)) <= 8 * 6_000  # whole: about 30,000 tokens
    for result in results:
        assert result["tool_trace"] == [] and result["tool_trace_omitted"] == 1
        assert result["status"] == "completed" and result["exit_reason"] == "completed"
    *long, short = results
    assert short["summary"] == "short" and "summary_truncated" not in short  # the shorter keep theirs
    for result in long:
        assert result["summary_truncated"] is True and result["summary_original_chars"] == len(LONG)
        assert SHARED_SUMMARY_FLOOR < len(result["summary"]) < 4_000
        assert result["summary"].startswith("finding finding")
        assert (env.parent.workspace / result["summary_full_path"]).read_text() == LONG


async def test_a_batch_within_its_total_is_left_as_it_was(make_env):
    _, results = await entries(make_env, ["job 0", "job 1"], total_tokens=20_000)
    for result in results:
        assert result["summary"] == LONG and "summary_truncated" not in result
        assert len(result["tool_trace"]) == 1 and "tool_trace_omitted" not in result


ERROR = "model request failed (server_error): " + " ".join(["upstream said no"] * 250)  # cut to 4,000 first


def failing(request):
    goal = request.metadata["goal"]
    if "[fail]" in goal:
        return {"error": "server_error", "message": ERROR}
    return leaf(request)


def assert_error_cut(error: str, limit: int) -> None:
    """``error`` at most ``limit`` characters: its kind first, whole words, then a note counting the rest."""
    shown, note = error.split(" [... ")
    assert len(error) <= limit and shown.startswith("model request failed (server_error): upstream said no")
    assert ERROR.startswith(shown) and ERROR[len(shown)] == " "
    assert note == f"{len(ERROR) - len(shown):,} more characters of the error not shown]"


async def test_errors_share_the_total_with_the_summaries_each_cut_saying_how_much_was_left_out(make_env):
    # Each error bounded on its own only (4,000 characters): ten came to about 10,000 tokens, the total 4,000.
    env = await make_env(delegate=True)
    env.child_model.script["leaf"] = failing
    _, results = await entries(make_env, [f"[fail] job {n}" for n in range(10)], total_tokens=4_000, env=env)
    assert weight(json.dumps(results, ensure_ascii=False)) <= 8 * 4_000
    for result in results:
        assert result["status"] == "failed"
        assert len(result["error"]) > SHARED_ERROR_FLOOR
        assert_error_cut(result["error"], 2_000)


async def test_a_batch_its_floors_overrun_keeps_each_summary_and_error_at_its_floor(make_env):
    # The total is what holds only while the entries fit at their floors; past it, each keeps its floors.
    env = await make_env(delegate=True)
    env.child_model.script["leaf"] = failing
    goals = [f"[fail] job {n}" for n in range(5)] + [f"job {n}" for n in range(5)]
    _, results = await entries(make_env, goals, total_tokens=100, env=env)
    failed, done = results[:5], results[5:]
    for result in failed:
        assert len(result["error"]) <= SHARED_ERROR_FLOOR
        assert_error_cut(result["error"], SHARED_ERROR_FLOOR)
    for result in done:
        assert result["summary_truncated"] is True and len(result["summary"]) <= SHARED_SUMMARY_FLOOR
        assert result["summary"].startswith("finding finding")


async def test_a_cut_summary_that_cannot_be_saved_names_its_share_not_the_configured_budget(make_env, tmp_path):
    # It said "over delegation.max_summary_chars (1234)": neither the setting (24,000) nor a limit a user set.
    env = await make_env(delegate=True)
    env.child_model.script["leaf"] = leaf
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (env.parent.workspace / ".switchboard").symlink_to(elsewhere)  # the full text could go nowhere of its own
    _, results = await entries(make_env, [f"job {n}" for n in range(6)], total_tokens=6_000, env=env)
    for result in results:
        assert result["summary"] == LONG and result["summary_truncated"] is False
        note = result["summary_not_saved"]
        assert "max_summary_chars" not in note, note
        share = int(re.fullmatch(r"given whole, over its share of the results' total \(([\d,]+) characters\): "
                                 r"\.switchboard/delegation/ \(or a folder on its way\) is a symlink, and it is "
                                 r"saved only in a folder of its own", note)[1].replace(",", ""))
        assert SHARED_SUMMARY_FLOOR < share < len(LONG)
    assert list(elsewhere.iterdir()) == []


async def test_the_floor_never_gives_a_summary_more_than_a_smaller_max_summary_chars(make_env):
    # Cut to its share, the floor (500) gave it more than the 300 characters the user allowed.
    env = await make_env(delegate=True, delegation=DelegationSettings(max_summary_chars=300))
    env.child_model.script["leaf"] = leaf
    _, results = await entries(make_env, [f"job {n}" for n in range(5)], total_tokens=100, env=env)
    for result in results:
        assert result["summary_truncated"] is True and len(result["summary"]) <= 300
