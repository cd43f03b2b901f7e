"""Runs a lifecycle service in its own process for the restart test.

``run DB OUT``: launch one child that finishes and one that hangs, write both
handles to OUT, print READY and wait to be killed. ``check DB OUT``: start a new
service on the same journal and print what reconnect/result/status say.
"""

import asyncio
import json
import sys

from agent import AgentSession
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, SubagentLaunchRequest
from tests.lifecycle.conftest import child_script, make_registry


async def main(mode: str, db: str, out: str) -> None:
    registry = make_registry()
    from agent import HookRegistry

    service = AsyncSubagentLifecycle(ChildHost(tools=registry, hooks=HookRegistry()), SqliteJournal(db))
    await service.start()
    model = ScriptedModel({"leaf": child_script})
    parent = AgentSession(model=model, tools=registry.resolve(), session_id="persistent-parent")
    with inside_turn(parent):
        if mode == "run":
            done = await service.launch(SubagentLaunchRequest(goal="finish quickly", correlation_id="done"))
            await service.wait(done)
            running = await service.launch(SubagentLaunchRequest(goal="[hang] forever"))
            while (await service.status(running)).state.value != "RUNNING":
                await asyncio.sleep(0.01)
            with open(out, "w") as f:
                json.dump({"done": done.to_dict(), "running": running.to_dict()}, f)
            print("READY", flush=True)
            await asyncio.Event().wait()
        handles = json.load(open(out))
        report = {}
        for name, handle in handles.items():
            reconnect = await service.reconnect(handle)
            result = await service.result(handle)
            report[name] = {
                "connected": reconnect.connected,
                "state": reconnect.state.value,
                "result": result.to_dict(),
            }
        forged = dict(handles["done"], subagent_id="sa-never-existed")
        report["unknown"] = (await service.reconnect(forged)).diagnostic
        print(json.dumps(report), flush=True)
    await service.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
