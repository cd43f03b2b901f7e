"""`switchboard worker`: run children for gateways with ``lifecycle.engine: temporal``.

A worker reads the same configuration file as the gateway, only the part a worker
uses (`gateway.config.worker_reads`: not the chat platforms' secrets), and builds each
child from it and from the child's job: the built-in tools and the plugins' tools (the
job names which ones the child gets), the model the child was launched with
(``model.*`` supplies the endpoint and key; the job the provider and name; a
routed child's model comes from its route, ``delegation.model_map`` or
``profile_routes``, as in the gateway), and
the workspace path the gateway sent (mount it at the same path). It keeps no
state of its own and takes no state-directory lock: run as many as you like,
on any machines that reach the Temporal service. See docs/scale-out.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
from dataclasses import replace
from typing import TYPE_CHECKING

from agent import HookRegistry, Model, PluginHost, ToolRegistry
from agent.models.factory import build_model
from agent.tools import register_builtin_tools
from gateway.config import Config
from gateway.config.delegation_rules import BUNDLED_PLUGINS
from gateway.errors import StartupError
from gateway.logging import redact
from gateway.stop_signals import StopSignals
from lifecycle import Routing

if TYPE_CHECKING:  # the Temporal SDK is an extra: imported by `run_worker` when it runs
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker

log = logging.getLogger("gateway.worker")
_SDK_WORKER_LOG = logging.getLogger("temporalio.worker._worker")
_STATUS = re.compile(r'Status \{ code: (\w+), message: "((?:[^"\\]|\\.)*)"')
"""A gRPC status as the SDK's core quotes it, bytes of details and all."""
_WHY_CHARS = 300

#: The provider a job names (its model's class, as the handle shows it) -> `model.provider`.
PROVIDERS = {"DemoModel": "demo", "OpenAIModel": "openai", "ScriptedModel": "scripted"}


class WorkerModels:
    """The models children on this worker call, one per (provider, name), built on first use."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._models: dict[tuple[str, str], Model] = {}

    def __call__(self, provider_class: str | None, name: str | None) -> Model:
        delegation, settings = self.config.delegation, self.config.model
        provider = PROVIDERS.get(provider_class or "") or delegation.provider or settings.provider
        name = name or delegation.model or settings.name
        model = self._models.get((provider, name))
        if model is None:
            model = self._models[(provider, name)] = build_model(replace(settings, provider=provider, name=name))
        return model

    async def aclose(self) -> None:
        """Close every model: one that fails to close is logged, and the rest (and the routes') still closed."""
        for (provider, name), model in self._models.items():
            aclose = getattr(model, "aclose", None)
            if aclose is None:
                continue
            try:
                await aclose()
            except Exception:
                log.exception("closing the %s model %s failed", provider, name)


async def worker_toolbox(config: Config, models: WorkerModels) -> tuple[object, Routing, PluginHost]:
    """The tools, hooks and models children on this worker are built from, the delegation
    backends the plugins registered, and the plugins (close both when done). The plugins load
    here as in the gateway: a routed child calls its route's model, as it would in the gateway."""
    from lifecycle.temporal import WorkerToolbox

    tools, hooks = ToolRegistry(), HookRegistry(config.agent.hook_timeout_seconds)
    register_builtin_tools(tools, execute_code_timeout_seconds=config.agent.execute_code_timeout_seconds,
                           execute_code_output_limit=config.agent.execute_code_output_limit,
                           execute_code_memory_mb=config.agent.execute_code_memory_mb)
    plugins = PluginHost(tools, hooks, load_timeout_seconds=config.agent.plugin_load_timeout_seconds)
    routing = Routing(plugins.delegation_backends)
    try:
        # A child on a worker has no lifecycle service of its own to launch children from.
        await plugins.load([BUNDLED_PLUGINS.get(m, m) for m in config.plugins], lifecycle=None, config=config)
    except BaseException:  # stopped while they load (a signal, `gateway.early_signals`): closed as at any stop
        await _close(models, routing, plugins)
        raise

    def route_model(backend: str, route: str) -> Model | None:
        return routing.resolve(backend, route).model

    # Its failures' texts masked as its log is: they reach the workflow's history and the child's model.
    toolbox = WorkerToolbox(tools=tools, model_for=models, route_model=route_model, hooks=hooks, redact=redact)
    return toolbox, routing, plugins


async def run_worker(config: Config) -> int:
    """Poll ``lifecycle.temporal.task_queue`` until SIGINT/SIGTERM/SIGHUP (`gateway.stop_signals`), then
    give the calls in flight ``server.shutdown_grace_seconds`` before other workers retry them."""
    try:
        from lifecycle.temporal import ChildWorker, TemporalUnavailable, connect
    except ImportError as exc:
        raise StartupError("switchboard worker needs the temporal extra: pip install '.[temporal]'"
                           " in the checkout") from exc
    if config.lifecycle.engine != "temporal":
        # A gateway on this file runs its children itself: this worker would wait for ever, and nothing
        # would say why the workers stay idle.
        raise StartupError(
            f"lifecycle.engine: {config.lifecycle.engine} here means a gateway on this file runs its children itself"
            " and sends none to workers; set lifecycle.engine: temporal in the file the gateway and its workers"
            " share (docs/scale-out.md)", lasting=True)
    temporal = config.lifecycle.temporal
    identity = f"switchboard-worker@{socket.gethostname()}:{os.getpid()}"
    try:
        client = await connect(temporal, identity=identity)
    except TemporalUnavailable as exc:
        raise StartupError(str(exc)) from exc
    models = WorkerModels(config)
    toolbox, routing, plugins = await worker_toolbox(config, models)
    worker = ChildWorker(client, temporal.task_queue, toolbox,
                         max_concurrent=config.lifecycle.max_running,
                         heartbeat_seconds=config.delegation.heartbeat_interval_seconds,
                         grace_seconds=config.server.shutdown_grace_seconds, identity=identity)
    stopping = asyncio.Event()
    try:
        signals = StopSignals(asyncio.get_running_loop(), stopping.set)
    except SystemExit:  # a stop owed since the loading (a plugin swallowed its signal): closed as at any stop
        await _close(models, routing, plugins)
        raise
    try:
        await serve_children(worker, stopping, temporal, identity)
    finally:
        signals.release()
        try:
            await _close(models, routing, plugins)
        finally:
            signals.close()
    return 0


async def _close(models: WorkerModels, routing: Routing, plugins: PluginHost) -> None:
    """What `run_worker` opened, once it stops: the models, the delegation backends (a plugin's releases
    its clients), the plugins' threads."""
    try:
        await models.aclose()
        await routing.close()
    finally:
        # As in the gateway: plugin calls still running are named, and the exit does not wait for them.
        plugins.close()
        plugins.hooks.close()


async def serve_children(worker: ChildWorker, stopping: asyncio.Event, temporal: TemporalSettings,
                         identity: str) -> None:
    """Run ``worker`` until ``stopping`` is set. A fatal error ends it sooner (a namespace deleted, a
    permission taken away: the SDK stops polling, and cancels the block or tells `ChildWorker.on_failed`),
    raised as one line for the operator; the command then exits 1, so that a supervisor starts it again."""
    fatal = _FatalErrorTold()
    _SDK_WORKER_LOG.addFilter(fatal)
    worker.on_failed = stopping.set
    try:
        async with worker:
            log.info("worker %s running children from task queue %s in namespace %s at %s", identity,
                     temporal.task_queue, temporal.namespace, temporal.address)
            await stopping.wait()
            if worker.failed is None:
                log.info("worker shutting down")
    except asyncio.CancelledError:
        if worker.failed is None:  # not the SDK's cancellation: the command's own
            raise
        asyncio.current_task().uncancel()  # type: ignore[union-attr]
    except Exception as exc:
        worker.failed = exc
    finally:
        _SDK_WORKER_LOG.removeFilter(fatal)
    if worker.failed is not None:
        raise StartupError(f"lifecycle.temporal: the worker stopped on a fatal error from Temporal at"
                           f" {temporal.address} (namespace {temporal.namespace}): {_why(worker.failed)}"
                           ) from worker.failed


class _FatalErrorTold(logging.Filter):
    """Drops the traceback from the SDK's ``Worker failed, shutting down``: `run_worker` says why in one
    line, and the command's full traceback goes to the log at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and record.msg == "Worker failed, shutting down":
            record.exc_info, record.exc_text = None, None
        return True


def _why(exc: BaseException) -> str:
    """What failed the worker, from the first cause the SDK raised it from: a gRPC status's code and
    message, or the error's type and text, on one line."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = " ".join(str(exc).split())
    status = _STATUS.search(text)
    why = f"{status[1]}: {status[2]}" if status else f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return why if len(why) <= _WHY_CHARS else f"{why[:_WHY_CHARS]}…"
