"""A stop signal whose handler raises SystemExit (``switchboard ask`` sets no handlers of its own: the entry
point's ends it so) may land while a tool's or a hook's code runs on the event loop: that is the process's
stop, not their ``sys.exit()``, which fails the call alone (tests/agent/test_plugin_exits.py). Taken for the
tool's, the model read a failed call and the turn went on, paid for, after the stop."""

from __future__ import annotations

import asyncio
import functools
import signal
from pathlib import Path

import pytest

from agent import HookRegistry, ToolRegistry
from agent._tools import ToolContext


def terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def test_a_stop_signal_while_a_hook_runs_goes_on_up(caplog):
    async def signalled(**event):  # the host's own hooks are awaited on the caller's task
        signal.raise_signal(signal.SIGUSR1)

    hooks = HookRegistry()
    hooks.register("turn_start", signalled)
    before = signal.signal(signal.SIGUSR1, terminate)
    try:
        with pytest.raises(SystemExit) as stop:
            asyncio.run(hooks.run("turn_start"))
    finally:
        signal.signal(signal.SIGUSR1, before)
    assert stop.value.code == 128 + signal.SIGUSR1
    assert "failed" not in caplog.text


class Stopper:
    """A plugin's own stop handler as an object: no ``__code__`` of its own."""

    def __call__(self, signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)


# A partial or an object: no `__code__` of their own, and their stop was taken for the tool's sys.exit() all the same.
@pytest.mark.parametrize("handler", [terminate, functools.partial(terminate), Stopper()],
                         ids=["function", "partial", "callable object"])
def test_a_stop_signal_while_a_tool_runs_goes_on_up(handler):
    async def signalled(args, ctx):
        signal.raise_signal(signal.SIGUSR1)

    tool = ToolRegistry().add("signalled", "x", {"type": "object"}, signalled, toolset="test")
    before = signal.signal(signal.SIGUSR1, handler)
    try:
        with pytest.raises(SystemExit) as stop:
            asyncio.run(tool.invoke({}, ToolContext(session=None, call_id="c1", workspace=Path("."))))
    finally:
        signal.signal(signal.SIGUSR1, before)
    assert stop.value.code == 128 + signal.SIGUSR1
