"""docs/agent.md "Plugins": the whole plugin it shows loads as written, from the configuration, and its
tool, hook, command and delegation backend each work in a real gateway."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import yaml

from gateway.testing import RecordingAdapter, make_config
from tests.plugin_modules import plugin_module

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


def section_blocks() -> tuple[str, dict]:
    """The section's Python example and the configuration beside it."""
    section = DOC.read_text(encoding="utf-8").split("\n## Plugins\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    (config,) = re.findall(r"^```yaml\n(.*?)^```", section, re.S | re.M)
    return code, yaml.safe_load(config)


async def test_the_documented_plugin_runs_as_written(tmp_path, monkeypatch, gateways, caplog):
    code, config = section_blocks()
    (name,) = config["plugins"]
    plugin_module(tmp_path, monkeypatch, name, code)
    parent = [[
        {"tool_calls": [{"name": "shout", "arguments": {"text": "hello"}},
                        {"name": "delegate_task", "arguments": {"goal": "look it up", "route": "quick"}}]},
        {"text": "done"},
    ]]
    chat = RecordingAdapter()
    gateway = await gateways(
        make_config(tmp_path, **config, delegation={"gateway_mode": "inline", "backend": "lookups"}), [chat],
        script={"parent": parent, "leaf": [[{"text": "found it"}]]},
    )
    assert (gateway.host.plugins.loaded, gateway.host.plugins.failures) == ([name], [])

    await chat.say("/ping there")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert chat.texts("command") == ["pong there"]
    await chat.say("/delegation")
    await chat.wait_for(lambda: len(chat.texts("command")) == 2)
    lines = chat.texts("command")[1].splitlines()
    assert (lines[0], lines[2]) == ("Delegation here: lookups — quick lookups on the default child model.",
                                    "• quick — A quick lookup.")

    with caplog.at_level(logging.INFO, logger=name):
        await chat.say("shout and look it up")
        await chat.wait_for(lambda: "reply" in chat.kinds())
    assert chat.texts("reply") == ["done"]
    results = [m["content"] for r in gateway.host.model.requests if r.role == "parent" for m in r.messages
               if m["role"] == "tool"]
    shouted, delegated = results[-2:]
    assert shouted == "HELLO"
    (entry,) = json.loads(delegated)["results"]
    assert (entry["status"], entry["summary"], entry["route"]) == ("completed", "found it", {"name": "quick"})
    (stopped,) = [r.getMessage() for r in caplog.records if r.name == name]
    assert stopped == f"subagent {entry['subagent_id']} ended: completed"


async def test_a_command_gets_its_text_and_the_chat_and_a_tool_its_modules_toolset(tmp_path, monkeypatch, gateways):
    # What the section says of the arguments the example leaves unread.
    plugin_module(tmp_path, monkeypatch, "context_echo", """
        import json

        def register(ctx):
            ctx.register_command("echo", lambda args, context: json.dumps([args, context]))
            ctx.register_tool("noop", "Does nothing.", {"type": "object"}, lambda args, tool_ctx: "")
    """)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, plugins=["context_echo"]), [chat])
    await chat.say("/echo  there  now", chat="c7", thread="t2", user="u9")
    await chat.wait_for(lambda: "command" in chat.kinds())
    assert json.loads(chat.texts("command")[0]) == ["there  now", {"session": "chat|c7|t2", "user_id": "u9"}]
    assert gateway.host.tools.get("noop").toolset == "context_echo"
