"""The agent host: what one Switchboard process shares — the model, tools, hooks, plugins
and the lifecycle service — built from a `Config`, and the parent agent sessions made from them."""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent import (
    SYSTEM_CLOCK,
    AgentSession,
    Clock,
    CompactionPolicy,
    Compactor,
    HookRegistry,
    Model,
    PluginHost,
    Tool,
    ToolRegistry,
)
from agent.models.factory import build_model
from agent.tools import register_builtin_tools
from agent.tools.file_scope import SERVICE as FILE_SCOPE
from agent.tools.memory import remove_temporaries
from gateway import state_lock
from gateway.attachments import chat_file_scope, remove_parts
from gateway.commands import BUILTIN_COMMAND_NAMES
from gateway.config import Config
from gateway.config.delegation_rules import BUNDLED_PLUGINS, backend_problem
from gateway.errors import StartupError
from gateway.file_names import file_name
from gateway.logging import redact
from gateway.toolsets import OPERATOR, session_toolsets
from lifecycle import (
    DEFAULT_BACKEND,
    AsyncSubagentLifecycle,
    BackgroundDispatch,
    ChildHost,
    Engine,
    Routing,
    SqliteDatabase,
    SqliteJournal,
    SubagentLifecycle,
    delegate_tool,
)

log = logging.getLogger("gateway.host")

STATE_DB = "switchboard.db"
SHARED_MEMORY = "memory.json"
"""The memory of every chat, with ``agent.memory_scope: global``."""
MEMORY_DIR = "memory"
"""Each chat's memory, with ``agent.memory_scope: chat``."""
PRIVATE = 0o700
"""The mode of a state directory or workspace the gateway creates: conversations, handle keys and the
files people sent are for the gateway's user only, whatever the umask. One that exists keeps its mode."""
BASE_PROMPT = (
    "You are Switchboard's assistant. Answer directly and concisely. When a request splits into "
    "independent pieces of work, hand them to subagents with delegate_task."
)


class AgentHost:
    """Built once per process; `start` before use and `close` on the way out."""

    def __init__(self, config: Config, *, model: Model | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self.model = model or build_model(config.model)
        self.tools = ToolRegistry()
        self.hooks = HookRegistry(config.agent.hook_timeout_seconds)
        register_builtin_tools(
            self.tools,
            execute_code_timeout_seconds=config.agent.execute_code_timeout_seconds,
            execute_code_output_limit=config.agent.execute_code_output_limit,
            execute_code_memory_mb=config.agent.execute_code_memory_mb,
        )
        self.state_dir = Path(config.state_dir)
        self.workspace = Path(config.agent.workspace) if config.agent.workspace else self.state_dir / "workspace"
        self.compaction = CompactionPolicy.from_settings(config.compression)
        self._child_models: dict[tuple[str, str], Model] = {}
        self.plugins = PluginHost(self.tools, self.hooks, reserved_commands=BUILTIN_COMMAND_NAMES,
                                  load_timeout_seconds=config.agent.plugin_load_timeout_seconds)
        self.routing = Routing(self.plugins.delegation_backends)
        """Delegation backends by name: ``default``, and those plugins register."""
        self._inline_delegates: dict[str, Tool] = {}
        host = ChildHost(
            tools=self.tools, hooks=self.hooks, delegation=config.delegation, clock=clock,
            child_model=self._child_model, compaction=self.compaction, routing=self.routing,
            inline_delegate=self.inline_delegate,
        )
        self.database = SqliteDatabase(self.state_dir / STATE_DB, clock=clock)
        """The state file: the lifecycle journal's and the gateway store's, with one group commit."""
        self.lifecycle = AsyncSubagentLifecycle(host, SqliteJournal(db=self.database), settings=config.lifecycle,
                                                engine=build_engine(config, self.compaction))
        self.children = self.lifecycle.host_view()
        """What the gateway reads of children: frozen snapshots, never lifecycle records."""
        # The registry holds the inline default variant; `new_session` gives other sessions theirs.
        self.tools.register(delegate_tool(self.lifecycle))

    async def start(self) -> None:
        """Raises `StartupError` when the configured ``delegation.backend`` is not there once
        the plugins have loaded."""
        self.state_dir.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
        self.workspace.mkdir(mode=PRIVATE, parents=True, exist_ok=True)
        if state_lock.held_here(self.state_dir):  # no other gateway is writing them now (see `_remove_leftovers`)
            await asyncio.to_thread(self._remove_leftovers)
        try:
            # Children starting or ending meanwhile wait for the plugins' hooks (`release_ends`): the plugins load
            # only once the service has started, as they may use it from `register`.
            await self.lifecycle.start(hold_ends=True)
        except Exception as exc:
            if type(exc).__name__ == "TemporalUnavailable":  # already one line naming the key to fix
                raise StartupError(str(exc)) from exc
            raise
        modules = [BUNDLED_PLUGINS.get(m, m) for m in self.config.plugins]
        await self.plugins.load(modules, lifecycle=SubagentLifecycle(self.lifecycle), config=self.config)
        await self.lifecycle.release_ends()
        backend = self.config.delegation.backend
        if not self.routing.available(backend):
            why = "; ".join(str(f) for f in self.plugins.failures) or backend_problem(self.config)
            raise StartupError(f"delegation.backend: {backend!r} is not available ({why})")
        self._check_tool_names()
        log.info("switchboard %s: state in %s, workspace %s, model %s (%s)", _version(), self.state_dir, self.workspace,
                 self.config.model.name, self.config.model.provider)
        if self.config.agent.memory_scope == "chat" and (self.state_dir / SHARED_MEMORY).exists():
            log.warning("%s holds notes every chat shared, kept before each chat had notes of its own "
                        "(agent.memory_scope: chat): no chat sees them now. Set agent.memory_scope: global to "
                        "share them again, or remove the file.", self.state_dir / SHARED_MEMORY)

    def _check_tool_names(self) -> None:
        """Raises `StartupError` naming the key when ``agent.enabled_toolsets`` or ``agent.disabled_tools`` names
        what no tool has once the plugins have loaded: a misspelt name would silently leave every chat without a
        toolset, or keep a tool the operator meant to remove. Only a warning while a plugin failed to load: the
        name may be one of its tools, which are not there to remove (nor to enable), as the plugin's own failure
        does not stop the start."""
        agent = self.config.agent
        for key, what, names, known in (
            ("agent.enabled_toolsets", "toolset", agent.enabled_toolsets or (), self.tools.toolsets()),
            ("agent.disabled_tools", "tool", agent.disabled_tools, frozenset(t.name for t in self.tools)),
        ):
            unknown = sorted(set(names) - known)
            if not unknown:
                continue
            problem = f"{key}: no {what} is called {' or '.join(map(repr, unknown))}; the {what}s are: " \
                      f"{', '.join(sorted(known))}"
            if not self.plugins.failures:
                raise StartupError(problem, lasting=True)  # every start fails alike until the file is mended
            log.warning("%s (plugins that failed to load: %s)", problem,
                        "; ".join(str(f) for f in self.plugins.failures))

    def _remove_leftovers(self) -> None:
        """The temporary files of attachments and memory files that a process killed mid-write left. A
        ``switchboard ask`` may be saving a note beside us (it takes no state lock): `remove_temporaries`
        leaves the file of a save under way."""
        removed = remove_parts(self.workspace)
        removed += remove_temporaries(self.state_dir, below=False) + remove_temporaries(self.state_dir / MEMORY_DIR)
        if removed:
            # By folder: a file's name is an attachment's, what its user called it, and the log is the operator's.
            folders = sorted({str(p.parent) for p in removed})
            log.info("removed %d temporary files a process stopped mid-write left, in %s", len(removed),
                     ", ".join(folders[:5]) + (", …" if len(folders) > 5 else ""))
            log.debug("the temporary files removed: %s", ", ".join(map(str, removed)))

    async def close(self, *, grace: float | None = None) -> None:
        """``grace``: how long the children's engine may wait for what it still sends, or for the children
        it ran itself to end (`Engine.close`)."""
        try:
            await self.lifecycle.close(grace=grace)
        except BaseException:
            # The children's ends the store refused (a full disk, another process's write lock): the rest is
            # closed all the same, the database's connection and the plugins' close hooks included, and this
            # error is the one raised, not the database's own refusal of the same writes.
            await self._close_the_rest(refused=True)
            raise
        await self._close_the_rest(refused=False)

    async def _close_the_rest(self, *, refused: bool) -> None:
        await self.routing.close()
        self.plugins.close()
        self.hooks.close()  # last: closing the lifecycle runs hooks (children's ends)
        try:
            self.database.close()
        except sqlite3.Error:
            if not refused:
                raise
        finally:
            for model in (self.model, *self._child_models.values()):
                aclose = getattr(model, "aclose", None)
                if aclose is None:
                    continue
                try:
                    await aclose()
                except Exception:  # one client's close, at exit: the others are closed all the same
                    log.warning("closing the client of model %s failed", getattr(model, "name", "?"), exc_info=True)

    def background_delegate(self, on_dispatch: Callable[[BackgroundDispatch], Callable[[bool], None] | None], *,
                            backend: str = DEFAULT_BACKEND, admit: Callable[[str], str | None] | None = None) -> Tool:
        """The ``delegate_task`` variant for background sessions: it launches the children,
        hands ``on_dispatch`` the delegation to record (in the commit of the children's rows) and deliver,
        and returns at once.
        ``admit`` may refuse a call before anything starts (see `lifecycle.delegate_tool`)."""
        return delegate_tool(self.lifecycle, mode="background", on_dispatch=on_dispatch, backend=backend, admit=admit)

    def inline_delegate(self, backend: str = DEFAULT_BACKEND) -> Tool | None:
        """The inline ``delegate_task`` routing through ``backend`` (the registry's for
        ``default``); built once per backend, after the plugins have loaded."""
        if backend == DEFAULT_BACKEND:
            return self.tools.get("delegate_task")
        tool = self._inline_delegates.get(backend)
        if tool is None:
            tool = self._inline_delegates[backend] = delegate_tool(self.lifecycle, backend=backend)
        return tool

    def new_session(
        self, *, session_id: str | None = None, services: Mapping[str, Any] | None = None,
        delegate: Tool | None = None, platform: str | None = None, chat_id: str | None = None,
    ) -> AgentSession:
        """A parent agent session with the configured tools, prompt and budget. ``delegate`` is
        the ``delegate_task`` it gets (the registry's inline one when None), if delegation is
        enabled; on a chat ``platform``, toolsets that are off there by default are left out
        (`gateway.toolsets`). The memory tool keeps the notes of ``chat_id`` (`memory_path`), and the
        file tools of a chat's session keep out of other chats' attachments (`gateway.attachments.chat_file_scope`)."""
        agent = self.config.agent
        prompt = BASE_PROMPT + (f"\n\n{agent.system_prompt}" if agent.system_prompt else "")
        enabled = session_toolsets(self.config, self.tools.toolsets(), platform)
        tools = self.tools.resolve(enabled, agent.disabled_tools)
        if delegate is not None and delegate.name in tools:
            tools[delegate.name] = delegate
        return AgentSession(
            model=self.model,
            tools=tools,
            system_prompt=prompt,
            session_id=session_id,
            max_iterations=agent.max_iterations,
            workspace=self.workspace,
            services={**self._per_chat_services(platform, chat_id), **(services or {})},
            enabled_toolsets=enabled,
            clock=self.clock,
            hooks=self.hooks,
            compactor=Compactor(self.compaction),
            redact=redact,  # its children get it too (`lifecycle.build_child`)
        )

    def _per_chat_services(self, platform: str | None, chat_id: str | None) -> dict[str, Any]:
        services: dict[str, Any] = {"memory_path": self.memory_path(platform, chat_id)}
        # The operator's own sessions (the terminal, `switchboard ask`) see every chat's files.
        if platform is not None and chat_id is not None and platform not in OPERATOR:
            services[FILE_SCOPE] = chat_file_scope(platform, chat_id)
        return services

    def memory_path(self, platform: str | None, chat_id: str | None) -> Path:
        """The memory file of a chat: its own, ``memory/<platform>/<chat id>.json`` (notes kept in
        one chat must not be read out in another, whose users may be strangers), and
        ``memory/ask.json`` outside any chat (`switchboard ask`); or the one ``memory.json`` of
        every chat with ``agent.memory_scope: global``."""
        if self.config.agent.memory_scope == "global":
            return self.state_dir / SHARED_MEMORY
        if platform is None or chat_id is None:
            return self.state_dir / MEMORY_DIR / "ask.json"
        return self.state_dir / MEMORY_DIR / file_name(platform) / f"{file_name(chat_id)}.json"

    def _child_model(self, parent: AgentSession) -> Model:
        """``delegation.model`` / ``delegation.provider`` when set, else the parent's model.

        Read when each child is built, so a change reaches only children started after it."""
        delegation = self.lifecycle.host.delegation
        if not delegation.model and not delegation.provider:
            return parent.model
        provider = delegation.provider or self.config.model.provider
        name = delegation.model or self.config.model.name
        model = self._child_models.get((provider, name))
        if model is None:
            model = build_model(replace(self.config.model, provider=provider, name=name))
            self._child_models[(provider, name)] = model
        return model


def build_engine(config: Config, compaction: CompactionPolicy) -> Engine | None:
    """The engine ``lifecycle.engine`` names; None for the in-process default (the service
    builds it). ``temporal`` launches children on the task queue for `switchboard worker`."""
    if config.lifecycle.engine != "temporal":
        return None
    try:
        from lifecycle.temporal import TemporalEngine
    except ImportError as exc:
        raise StartupError("lifecycle.engine: temporal needs the temporal extra: pip install '.[temporal]'"
                           " in the checkout") from exc
    return TemporalEngine(config.lifecycle.temporal, compaction=compaction)


def _version() -> str:
    """The installed distribution's version, which an operator matches against the changelog; a tree run
    without installing it has none."""
    try:
        return importlib.metadata.version("switchboard")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
