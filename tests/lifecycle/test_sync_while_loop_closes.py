"""A plugin's own thread whose synchronous call is under way as the service's event loop stops and closes (the
process stopping) is told the service closed, as one that calls after is: a call handed to the loop after its last
step was never answered, and the thread waited for ever (a non-daemon one holding the process's exit); a call the
loop's shutdown cancelled raised a bare ``concurrent.futures.CancelledError``."""

from __future__ import annotations

import asyncio
import contextvars
import threading

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import (
    AsyncSubagentLifecycle,
    ChildHost,
    MemoryJournal,
    SubagentLaunchRequest,
    SubagentLifecycle,
    SubagentLifecycleError,
)

CLOSED = ("CLOSED", "The lifecycle service is closed.")


def service() -> AsyncSubagentLifecycle:
    return AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal())


def in_thread(call) -> tuple[threading.Thread, dict]:
    told: dict = {}

    def run():
        try:
            told["answer"] = call()
        except BaseException as error:  # noqa: BLE001 - what the plugin's thread would see, whatever it is
            told["error"] = error

    # daemon: a hang fails the test, not the test run; the caller's context carries its turn, if any
    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    thread.start()
    return thread, told


def refusal(told: dict) -> tuple[str, str] | dict:
    error = told.get("error")
    return (error.code, str(error)) if isinstance(error, SubagentLifecycleError) else told


def test_a_call_handed_to_the_loop_after_its_last_step_is_told_the_service_closed():
    lifecycle = service()
    facade = SubagentLifecycle(lifecycle)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(lifecycle.start())
    loop.run_until_complete(lifecycle.close())
    handed = threading.Event()
    hand = loop.call_soon_threadsafe

    def call_soon_threadsafe(*args, **kwargs):
        handle = hand(*args, **kwargs)
        handed.set()
        return handle

    loop.call_soon_threadsafe = call_soon_threadsafe
    thread, told = in_thread(lambda: facade.status({}))
    assert handed.wait(5)
    loop.close()  # the loop never runs again: the call is queued on it for good
    thread.join(5)
    assert not thread.is_alive(), "the plugin's thread still waits for an answer"
    assert refusal(told) == CLOSED


def test_a_wait_the_loops_shutdown_cancels_is_told_the_service_closed():
    lifecycle = service()
    facade = SubagentLifecycle(lifecycle)
    model = ScriptedModel({"leaf": [[{"hang": True}]]})
    holder: dict = {}

    async def main():
        await lifecycle.start()
        with inside_turn(AgentSession(model=model)):
            handle = await lifecycle.launch(SubagentLaunchRequest(goal="take your time"))
            entered = asyncio.Event()
            loop = asyncio.get_running_loop()
            real_wait = lifecycle.wait

            async def wait(*args, **kwargs):
                loop.call_soon(entered.set)
                return await real_wait(*args, **kwargs)

            lifecycle.wait = wait
            holder["thread"], holder["told"] = await asyncio.to_thread(in_thread, lambda: facade.wait(handle))
            await entered.wait()
        # main returns with the wait under way: asyncio.run cancels it as the loop shuts down

    asyncio.run(main())
    holder["thread"].join(5)
    assert not holder["thread"].is_alive()
    assert refusal(holder["told"]) == CLOSED
