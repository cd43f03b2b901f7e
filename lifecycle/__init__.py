"""The subagent lifecycle core: launch, supervise and remember child agent sessions.

Knows children, never chats. Plugins get the synchronous `SubagentLifecycle`
facade as ``ctx.subagent_lifecycle``; async code uses its ``.aio`` twin,
`AsyncSubagentLifecycle`.
"""

from lifecycle._capability import KeyRing
from lifecycle._child_run import ChildOutcome
from lifecycle._children import UNSAFE_CHILD_TOOLS, ChildHost, ChildSpec, MemoryProvider
from lifecycle._contract import (
    CONTRACT_VERSION,
    MAX_CONTEXT_CHARS,
    MAX_GOAL_CHARS,
    MAX_METADATA_BYTES,
    MAX_RESULT_CHARS,
    NOT_READY,
    RECONNECT_UNAVAILABLE,
    UNKNOWN_HANDLE,
    SubagentCancelResult,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentReconnectResult,
    SubagentResult,
    SubagentState,
    SubagentStatus,
    SubagentTerminalState,
    SubagentUsage,
)
from lifecycle._engine import Engine, InProcessEngine
from lifecycle._journal import Journal, JournalError, JournalRecord, MemoryJournal
from lifecycle._service import AsyncSubagentLifecycle
from lifecycle._sqlite_journal import SqliteJournal
from lifecycle._sync import SubagentLifecycle

__all__ = [
    "AsyncSubagentLifecycle",
    "CONTRACT_VERSION",
    "ChildHost",
    "ChildOutcome",
    "ChildSpec",
    "Engine",
    "InProcessEngine",
    "Journal",
    "JournalError",
    "JournalRecord",
    "KeyRing",
    "MAX_CONTEXT_CHARS",
    "MAX_GOAL_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_RESULT_CHARS",
    "MemoryJournal",
    "MemoryProvider",
    "NOT_READY",
    "RECONNECT_UNAVAILABLE",
    "SqliteJournal",
    "SubagentCancelResult",
    "SubagentHandle",
    "SubagentLaunchRequest",
    "SubagentLifecycle",
    "SubagentLifecycleError",
    "SubagentReconnectResult",
    "SubagentResult",
    "SubagentState",
    "SubagentStatus",
    "SubagentTerminalState",
    "SubagentUsage",
    "UNKNOWN_HANDLE",
    "UNSAFE_CHILD_TOOLS",
]
