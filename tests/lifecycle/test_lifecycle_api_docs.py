"""The plugin API as docs/lifecycle.md states it, sentence by sentence, where other tests leave it open."""

import asyncio
import hashlib
import json

import pytest

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import SubagentLaunchRequest, SubagentLifecycleError, SubagentState
from tests.lifecycle.conftest import child_script
from tests.polling import until

S = SubagentState


def req(goal="Review this change.", **kw):
    return SubagentLaunchRequest(goal=goal, **kw)


@pytest.mark.parametrize("grace", ["5", True, float("nan"), [1]], ids=["str", "bool", "nan", "list"])
async def test_a_close_grace_that_is_no_number_of_seconds_is_refused_and_closes_nothing(env, grace):
    # A string (or a list) raised TypeError from the engine halfway: the children were stopped, the journal
    # stayed open, and every later close raised the same again. True waited a second, NaN not at all.
    with env.turn():
        running = await env.service.launch(req("[hang]"))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
    with pytest.raises(SubagentLifecycleError, match=r"^grace must be a number of seconds or None\.$") as err:
        await env.service.close(grace=grace)
    assert err.value.code == "INVALID_REQUEST"
    with env.turn():
        assert (await env.service.status(running)).state is S.RUNNING
        await env.service.launch(req())  # not closing: launches go on
    await env.service.close(grace=5)
    with env.turn():
        assert (await env.service.wait(running)).state is S.INTERRUPTED
    assert env.service._supervisor.sealed  # the journal was closed


@pytest.mark.parametrize("grace", [10**400, float("inf"), 0, -1], ids=["10**400", "inf", "0", "-1"])
async def test_a_close_grace_beyond_any_float_or_none_at_all_still_closes(env, grace):
    # 10**400 raised OverflowError from the engine, leaving the journal open.
    with env.turn():
        handle = await env.service.launch(req("[hang]"))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
    await asyncio.wait_for(env.service.close(grace=grace), 5)
    assert env.service._supervisor.sealed
    with env.turn():
        assert (await env.service.wait(handle, timeout_seconds=0)).state is S.INTERRUPTED


@pytest.mark.parametrize(
    ("request_kw", "message"),
    [
        ({"metadata": ["a"]}, "metadata must be a mapping."),
        ({"metadata": {"x": float("nan")}}, "metadata['x'] is nan, which JSON cannot carry: use a finite number."),
        ({"metadata": {"x": {1}}},
         "metadata['x'] is of type set, which JSON cannot carry: use a string, number, boolean, None, list or dict."),
        ({"metadata": {"n": 10**5000}}, "metadata['n'] is an integer of more than 4300 digits, which JSON cannot"
         " carry (Python's limit for integers as text): use a string."),
        ({"metadata": {"k": "é" * 1400}}, "metadata exceeds 8192 bytes."),  # 2,800 bytes of UTF-8, 8,409 escaped
        ({"correlation_id": ""}, "correlation_id must be a non-empty string of at most 256 characters."),
        ({"correlation_id": "c" * 257}, "correlation_id must be a non-empty string of at most 256 characters."),
        ({"correlation_id": 7}, "correlation_id must be a non-empty string of at most 256 characters."),
        ({"allowed_toolsets": "file"}, "allowed_toolsets must be a list of toolset names."),
        ({"allowed_toolsets": ("file", "")}, "allowed_toolsets must be a list of toolset names."),
        ({"model": 5}, "model must be a string or None."),
        ({"parent_session_id": 5}, "parent_session_id must be a string or None."),
    ],
)
async def test_every_documented_request_refusal_reads_as_the_docs_table_says(env, request_kw, message):
    with env.turn(), pytest.raises(SubagentLifecycleError) as err:
        await env.service.launch(req(**request_kw))
    assert (str(err.value), err.value.code) == (message, "INVALID_REQUEST")
    assert env.service.host_view().children("parent-1") == ()


async def test_the_result_hash_follows_the_documented_recipe(env):
    # What a plugin that checks a stored result computes, from nothing but docs/lifecycle.md.
    with env.turn():
        handle = await env.service.launch(req("Résumé ✓ 東京"))
        await env.service.wait(handle)
        result = await env.service.result(handle)
    body = result.to_dict()
    del body["result_hash"]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert "東京" in text and hashlib.sha256(text.encode("utf-8")).hexdigest() == result.result_hash


@pytest.mark.parametrize("timeout", [0, 0.0, -1, float("-inf"), -(10**400)], ids=["0", "0.0", "-1", "-inf", "-10**400"])
async def test_a_wait_timeout_of_zero_or_less_does_not_wait(env, timeout):
    with env.turn():
        handle = await env.service.launch(req("[hang]"))
        await until(lambda: env.service.host_view().children("parent-1")[0].state is S.RUNNING)
        done = await asyncio.wait_for(env.service.wait(handle, timeout_seconds=timeout), 1)
        assert (done.state, done.completed, done.timed_out) == (S.RUNNING, False, True)


async def test_a_task_of_the_plugins_own_that_outlived_its_turn_reads_its_handle_as_unknown(env):
    # The task carried the ended turn in its context: it read its child (STARTING) and launched another,
    # for a parent turn that was over, where the docs promise UNKNOWN and `No active parent session`.
    turn_over, seen = asyncio.Event(), {}

    async def after_the_turn():
        await turn_over.wait()
        seen["status"] = await env.service.status(seen["handle"])
        seen["result"] = await env.service.result(seen["handle"].to_dict())
        seen["steered"] = await env.service.steer(seen["handle"], "more")
        with pytest.raises(SubagentLifecycleError, match=r"^No active parent session is available\.$") as err:
            await env.service.launch(req("launched after the turn"))
        seen["launch"] = err.value.code

    async def spawn(args, ctx):
        seen["handle"] = await env.service.launch(req("[gate:go]"))
        seen["task"] = asyncio.ensure_future(after_the_turn())
        return "started"

    registry = env.service.host.tools
    registry.add("spawn", "start a child and a task of its own", {"type": "object"}, spawn, toolset="file")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "spawn"}]}, {"text": "done"}]], "leaf": child_script})
    parent = AgentSession(model=model, tools=registry.resolve(), session_id="parent-1")
    assert (await parent.run_turn("go")).exit_reason == "completed"
    turn_over.set()
    await seen["task"]
    assert (seen["status"].state, seen["status"].diagnostic) == (S.UNKNOWN, "UNKNOWN_HANDLE")
    assert seen["result"].error_classification == "UNKNOWN_HANDLE"
    assert (seen["steered"], seen["launch"]) == (False, "NO_PARENT")
    assert [c.goal for c in env.service.host_view().children("parent-1")] == ["[gate:go]"]
    with inside_turn(parent):  # a later turn of that session reads it again
        assert (await env.service.status(seen["handle"])).state in (S.PENDING, S.STARTING, S.RUNNING)
        await model.reached("go")  # children run on their parent's model
        model.release("go")
        assert (await env.service.wait(seen["handle"], timeout_seconds=5)).state is S.SUCCEEDED

