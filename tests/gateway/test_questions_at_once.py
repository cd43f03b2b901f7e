"""Questions a plugin's tool asks at once in one turn (the ``clarify`` service): each is asked in
turn, in the order asked, and each takes the chat's next message for its answer."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.plugin_modules import plugin_module

BOTH_AT_ONCE = """
import asyncio


async def ask_both(args, ctx):
    ask = ctx.services["clarify"]
    first, second = await asyncio.gather(ask("Which region?"), ask("Which size?"))
    return f"{first} / {second}"


def register(ctx):
    ctx.register_tool("ask_both", "asks two questions at once", {"type": "object"}, ask_both)
"""


def answered(request) -> dict:
    last = request.messages[-1]
    if last["role"] == "tool":
        return {"text": f"using {last['content']}"}
    return {"tool_calls": [{"name": "ask_both", "arguments": {}}]}


async def test_two_questions_asked_at_once_are_asked_one_after_the_other_and_each_answered(
        tmp_path, gateways, monkeypatch):
    # Before, the second took over the turn's one waiting question: the chat saw both, the first
    # answer went to the second, and the first waited out its timeout (then nothing waited on the
    # second, and the next message ran as a turn of its own).
    plugin_module(tmp_path, monkeypatch, "ask_both_plugin", BOTH_AT_ONCE)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, plugins=["ask_both_plugin"]), [chat],
                             model=ScriptedModel({"parent": answered}))
    region, size = (question_text(q, None, 600) for q in ("Which region?", "Which size?"))
    await chat.say("set up a server")
    await chat.wait_for(lambda: chat.texts() == [region])
    await chat.say("north")
    await chat.wait_for(lambda: chat.texts() == [region, size])
    await chat.say("large")
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts()[2].startswith("using ") and chat.texts()[2].endswith("north / large")
    assert gateway.store.inbox.unfinished() == []
