"""What the model reads of a tool's failure is masked as a log line is (`gateway.logging.redact`), in a
parent's turn and in its children's: a plugin tool's exception quoting a bot token in a URL reached the
model in full, and a model that quoted it sent it to the chat."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.logging import MASK, register_secret
from gateway.testing import RecordingAdapter, make_config, settled
from tests.plugin_modules import plugin_module

SECRET = "pt2-tool-secret-5e9c1a7b"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""
BOT_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
"""Never registered: masked for its shape, as a token an SDK echoed is."""

PLUGIN = f"""\
async def notify(args, context):
    raise RuntimeError("401 Unauthorized for https://api.telegram.org/bot{BOT_TOKEN}/sendMessage"
                       " (key {SECRET})")

def register(ctx):
    ctx.register_tool("notify", "Sends a notice.", {{"type": "object", "properties": {{}}}}, notify)
"""


def quoting(request: ModelRequest) -> dict:
    """Calls ``notify``, then answers with what it read of the call's result, as a model quoting it does."""
    if request.iteration == 0:
        return {"tool_calls": [{"name": "notify"}]}
    return {"text": f"It said: {request.messages[-1]['content']}"}


def tool_results(model: ScriptedModel, role: str) -> list[str]:
    """The tool results the model read in ``role``'s request after its call."""
    return [str(m["content"]) for r in model.requests if r.role == role and r.iteration == 1
            for m in r.messages if m["role"] == "tool"]


def shows_no_secret(text: str) -> bool:
    return SECRET not in text and BOT_TOKEN not in text and BOT_TOKEN.split(":")[1] not in text


async def test_a_plugin_tools_failure_reaches_the_model_and_the_chat_masked(tmp_path, gateways, monkeypatch):
    register_secret(SECRET)
    plugin_module(tmp_path, monkeypatch, "pt2_notify_plugin", PLUGIN)
    chat, model = RecordingAdapter(), ScriptedModel({"parent": quoting})
    gateway = await gateways(make_config(tmp_path, plugins=["pt2_notify_plugin"]), [chat], model=model)
    await chat.say("notify them")
    await chat.wait_for(lambda: any(t.startswith("It said:") for t in chat.texts()))
    await settled(gateway)
    [result] = tool_results(model, "parent")
    assert result.startswith("Error: notify failed: RuntimeError: 401 Unauthorized for https://api.telegram.org/bot")
    assert shows_no_secret(result) and f"bot{MASK}/sendMessage (key {MASK})" in result, result
    assert all(shows_no_secret(t) for t in chat.texts()), chat.texts()


async def test_a_childs_tool_failure_reaches_the_child_and_the_chat_masked(tmp_path, gateways, monkeypatch):
    register_secret(SECRET)
    plugin_module(tmp_path, monkeypatch, "pt2_notify_plugin", PLUGIN)

    def parent(request: ModelRequest) -> dict:
        if request.iteration == 0:
            return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "notify them"}}]}
        return {"text": f"The subagent said: {request.messages[-1]['content']}"}

    chat, model = RecordingAdapter(), ScriptedModel({"parent": parent, "leaf": quoting})
    config = make_config(tmp_path, plugins=["pt2_notify_plugin"], delegation={"gateway_mode": "inline"})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("have a subagent notify them")
    await chat.wait_for(lambda: any(t.startswith("The subagent said:") for t in chat.texts()))
    await settled(gateway)
    [result] = tool_results(model, "leaf")
    assert shows_no_secret(result) and f"bot{MASK}/sendMessage (key {MASK})" in result, result
    [answer] = [t for t in chat.texts() if t.startswith("The subagent said:")]
    assert "It said: Error: notify failed" in answer, answer  # the child's summary, quoting its tool's result
    assert all(shows_no_secret(t) for t in chat.texts()), chat.texts()
