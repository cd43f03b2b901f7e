from __future__ import annotations

import pytest

import agent.tools
from agent._tools import ToolRegistry
from agent.tools import BUILTIN_TOOLSETS, builtin_toolsets, register_builtin_tools


def test_public_surface():
    assert agent.tools.__all__ == sorted(agent.tools.__all__)
    assert agent.tools.__all__ == [
        "BUILTIN_TOOLSETS",
        "FileScope",
        "builtin_toolsets",
        "clarify_toolset",
        "execute_code_toolset",
        "file_toolset",
        "memory_toolset",
        "messaging_toolset",
        "register_builtin_tools",
        "resolve_in_workspace",
        "send_file_toolset",
    ]


def test_register_builtin_tools():
    registry = ToolRegistry()
    tools = register_builtin_tools(registry, execute_code_timeout_seconds=7, execute_code_output_limit=1234)
    assert [t.name for t in registry] == [t.name for t in tools] == [
        "read_file", "list_files", "write_file", "send_file", "execute_code", "memory", "clarify", "send_message",
    ]  # fmt: skip
    assert builtin_toolsets() == BUILTIN_TOOLSETS == ("file", "execute_code", "memory", "clarify", "messaging")
    assert registry.toolsets() == frozenset(BUILTIN_TOOLSETS)
    assert "7 s" in registry.get("execute_code").description
    assert "1234 characters" in registry.get("execute_code").description
    assert set(registry.resolve(["file"])) == {"read_file", "list_files", "write_file", "send_file"}


def test_registering_twice_changes_nothing():
    registry = ToolRegistry()
    register_builtin_tools(registry)
    with pytest.raises(ValueError, match="already registered"):
        register_builtin_tools(registry)
    assert len(registry) == 8


def test_partial_clash_registers_nothing():
    registry = ToolRegistry()
    registry.add("memory", "a plugin's memory", {"type": "object"}, lambda args, ctx: None, toolset="plugin")
    with pytest.raises(ValueError, match="tools already registered: memory"):
        register_builtin_tools(registry)
    assert [t.name for t in registry] == ["memory"]
