"""The subagent lifecycle core: launch, supervise and remember child agent sessions.

Knows children, never chats. Plugins get the synchronous `SubagentLifecycle`
facade as ``ctx.subagent_lifecycle``; async code uses its ``.aio`` twin,
`AsyncSubagentLifecycle`. The host process sees children through
`AsyncSubagentLifecycle.host_view` (`HostView`, frozen `ChildSnapshot`s) and
gives sessions the ``delegate_task`` tool built by `delegate_tool`. Engines
(`Engine`, `InProcessEngine`) run `ChildJob`s; journals (`Journal`,
`SqliteJournal`, `MemoryJournal`) remember them; `SqliteDatabase` is the
state file's connection with group commit, which the journal and the
gateway's store can share. Delegation backends (`Routing`, `DelegationBackend`)
route delegate_task's tasks to other models and profiles.
"""

from lifecycle._capability import KeyRing
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
from lifecycle._database import SqliteDatabase
from lifecycle._delegate import delegate_tool
from lifecycle._dispatch import BackgroundDispatch, DispatchedTask
from lifecycle._engine import Engine, EngineHost
from lifecycle._host_view import HostView
from lifecycle._inprocess import InProcessEngine
from lifecycle._job import PROCESS_EXIT, ChildJob, ChildOutcome
from lifecycle._journal import Journal, JournalError, JournalRecord, MemoryJournal
from lifecycle._routing import (
    DEFAULT_BACKEND,
    BackendUnavailable,
    ChildRoute,
    DelegationBackend,
    RouteOption,
    RouteRefused,
    Routing,
)
from lifecycle._service import AsyncSubagentLifecycle
from lifecycle._snapshot import ChildSnapshot
from lifecycle._sqlite_journal import SqliteJournal
from lifecycle._sync import SubagentLifecycle

__all__ = [
    "AsyncSubagentLifecycle",
    "BackendUnavailable",
    "BackgroundDispatch",
    "CONTRACT_VERSION",
    "ChildHost",
    "ChildJob",
    "ChildOutcome",
    "ChildRoute",
    "ChildSnapshot",
    "ChildSpec",
    "DEFAULT_BACKEND",
    "DelegationBackend",
    "DispatchedTask",
    "Engine",
    "EngineHost",
    "HostView",
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
    "PROCESS_EXIT",
    "RECONNECT_UNAVAILABLE",
    "RouteOption",
    "RouteRefused",
    "Routing",
    "SqliteDatabase",
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
    "delegate_tool",
]
