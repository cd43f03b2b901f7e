"""`HostView.finished_entries` with a total: a batch's entries come to at most ``total_tokens`` together,
their summaries sharing what the rest leaves, each cut one kept whole in the workspace."""

import asyncio
import json

from agent import ToolContext
from agent._token_estimate import weight
from lifecycle import delegate_tool
from lifecycle._host_view import SHARED_SUMMARY_FLOOR

LONG = " ".join(["finding"] * 2_500)  # 19,999 characters: under the 24,000 of each child's own budget


def leaf(request):
    if request.iteration == 0:
        return {"tool_calls": [{"name": "list_files"}]}
    return {"text": "short" if "[short]" in request.metadata["goal"] else LONG}


async def entries(make_env, goals, total_tokens):
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
