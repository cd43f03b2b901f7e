"""The agent runtime: one agent session that talks to a model and calls tools.

Knows nothing of chats or children; `lifecycle` and `gateway` build on it.
"""

from agent._activity import Activity
from agent._clock import SYSTEM_CLOCK, Clock, SystemClock
from agent._compaction import CompactionPolicy, Compactor
from agent._errors import (
    AgentError,
    ModelError,
    PluginError,
    ToolError,
    TurnInProgress,
    exceeds_context,
    model_failure_kind,
)
from agent._hooks import HOOK_NAMES, HookRegistry
from agent._ids import new_id
from agent._model import Model, ModelRequest, ModelResponse, ToolCall, Usage
from agent._plugin_threads import PluginThreads
from agent._plugins import PluginCommand, PluginContext, PluginHost
from agent._session import ActiveTurn, AgentSession, TurnObserver, active_turn
from agent._tools import RESERVED_TOOLSETS, Tool, ToolContext, ToolRegistry, tool_failure_text
from agent._turn import ToolTraceEntry, TurnResult

__all__ = [
    "ActiveTurn",
    "Activity",
    "AgentError",
    "AgentSession",
    "Clock",
    "CompactionPolicy",
    "Compactor",
    "HOOK_NAMES",
    "HookRegistry",
    "Model",
    "ModelError",
    "ModelRequest",
    "ModelResponse",
    "PluginCommand",
    "PluginContext",
    "PluginError",
    "PluginHost",
    "PluginThreads",
    "RESERVED_TOOLSETS",
    "SYSTEM_CLOCK",
    "SystemClock",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "ToolTraceEntry",
    "TurnInProgress",
    "TurnObserver",
    "TurnResult",
    "Usage",
    "active_turn",
    "exceeds_context",
    "model_failure_kind",
    "new_id",
    "tool_failure_text",
]
