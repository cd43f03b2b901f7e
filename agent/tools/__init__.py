"""The built-in toolsets, one module each.

======================  =====================================================
toolset                 tools
======================  =====================================================
``file``                read_file, list_files, write_file (inside the workspace,
                        within the session's ``file_scope`` when it has one);
                        send_file (the same paths; needs the host's ``send_file``)
``execute_code``        execute_code (Python in a subprocess, time-limited)
``memory``              memory (persistent notes; needs ``memory_path``)
``clarify``             clarify (needs the host's ``clarify`` service)
``messaging``           send_message (needs the gateway's ``send_message``)
======================  =====================================================

Tools needing a service are registered regardless and refuse with a `ToolError`
when the session's `ToolContext.services` lacks it, so one registry serves every
host.
"""

from __future__ import annotations

from agent._tools import Tool, ToolRegistry
from agent.tools.clarify import clarify_toolset
from agent.tools.execute_code import (
    DEFAULT_MEMORY_MB,
    DEFAULT_OUTPUT_LIMIT,
    DEFAULT_TIMEOUT_SECONDS,
    execute_code_toolset,
)
from agent.tools.file import file_toolset, resolve_in_workspace
from agent.tools.file_scope import FileScope
from agent.tools.memory import memory_toolset
from agent.tools.messaging import messaging_toolset
from agent.tools.send_file import send_file_toolset

__all__ = [
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

BUILTIN_TOOLSETS = ("file", "execute_code", "memory", "clarify", "messaging")


def builtin_toolsets() -> tuple[str, ...]:
    """Names of the built-in toolsets, in registration order."""
    return BUILTIN_TOOLSETS


def register_builtin_tools(
    registry: ToolRegistry,
    *,
    execute_code_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    execute_code_output_limit: int = DEFAULT_OUTPUT_LIMIT,
    execute_code_memory_mb: int = DEFAULT_MEMORY_MB,
) -> tuple[Tool, ...]:
    """Register every built-in tool in ``registry`` and return them.

    Not idempotent: the registry refuses a second registration of the same name
    with `ValueError`, and nothing is registered if any name is taken.
    """
    tools = (
        *file_toolset(),
        *send_file_toolset(),
        *execute_code_toolset(execute_code_timeout_seconds, execute_code_output_limit, execute_code_memory_mb),
        *memory_toolset(),
        *clarify_toolset(),
        *messaging_toolset(),
    )
    taken = sorted(t.name for t in tools if registry.get(t.name) is not None)
    if taken:
        raise ValueError(f"tools already registered: {', '.join(taken)}")
    for tool in tools:
        registry.register(tool)
    return tools
