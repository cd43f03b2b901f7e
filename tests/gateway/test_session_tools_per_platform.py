"""The tools each platform's parent session gets, and what its children may get: a plugin's tool joining
the `file` toolset is gated with it, and a child never gets what its parent chat could not have."""

from __future__ import annotations

import pytest

from gateway.host import AgentHost
from gateway.testing import make_config
from lifecycle import SubagentLifecycleError
from lifecycle._children import UNSAFE_CHILD_TOOLS, ChildSpec, check_toolsets, plan_job
from tests.plugin_modules import plugin_module

GREP = """
    def register(ctx):
        ctx.register_tool("grep_workspace", "Search the workspace.", {"type": "object"}, lambda args, ctx: "",
                          toolset="file")
"""
FILE = {"read_file", "list_files", "write_file", "send_file", "grep_workspace"}
CHAT = {"memory", "clarify", "send_message", "delegate_task"}
EVERYTHING = CHAT | FILE | {"execute_code"}


@pytest.fixture
async def host(tmp_path, monkeypatch):
    plugin_module(tmp_path, monkeypatch, "grep_plugin", GREP)
    config = make_config(tmp_path, plugins=["grep_plugin"], agent={"toolsets": ["execute_code"]},
                         platforms={"telegram": {"toolsets": ["file"]}, "slack": {"toolsets": []}})
    host = AgentHost(config)
    await host.start()
    yield host
    await host.close()


@pytest.mark.parametrize(("platform", "expected"), [
    ("telegram", CHAT | FILE),  # its own list replaces agent.toolsets
    ("slack", CHAT),
    ("discord", CHAT | {"execute_code"}),
    ("web", CHAT | {"execute_code"}),
    ("webhook", CHAT | {"execute_code"}),
    ("an_embedders_platform", CHAT | {"execute_code"}),  # no settings of its own: agent.toolsets
    ("local", EVERYTHING),  # the terminal
    (None, EVERYTHING),  # switchboard ask
])
async def test_each_platforms_parent_and_child_tools(host, platform, expected):
    parent = host.new_session(platform=platform, chat_id=None if platform is None else "c1")
    assert set(parent.tools) == expected
    job = plan_job(host.lifecycle.host, parent, ChildSpec(goal="g"), subagent_id="s1", parent_turn_id="t1",
                   model=host.model)
    assert set(job.tools) == expected - UNSAFE_CHILD_TOOLS - {"delegate_task"}  # a leaf
    for toolset, tool in (("file", "grep_workspace"), ("execute_code", "execute_code")):
        if tool not in expected:  # a task asking for it is refused
            with pytest.raises(SubagentLifecycleError, match="would broaden parent permissions"):
                check_toolsets(host.lifecycle.host, parent, (toolset,))
