"""Review of 3b17d564: children give their place under ``max_running`` up before their ``subagent_stop`` hooks.
Stress: 200 children over three chats, max_running=4, hooks that sleep and launch follow-up children (waiting for
them), stops of whole chats and cancels meanwhile. At every model call and every hook: at most 4 children run
the model, the engine counts at most 4 running; every child ends once, its hooks once, nothing deadlocks."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest
from lifecycle import SubagentState as S
from lifecycle.settings import LifecycleSettings

MAX = 4


class CountingModel(ScriptedModel):
    def __init__(self, engine_running, rng):
        super().__init__({"leaf": lambda r: {"text": r.metadata["goal"]}})
        self.now = self.peak = self.calls = 0
        self.engine_running = engine_running
        self.rng = rng

    async def complete(self, request):
        self.now += 1
        self.calls += 1
        self.peak = max(self.peak, self.now)
        assert self.now <= MAX, self.now
        assert self.engine_running() <= MAX
        try:
            await asyncio.sleep(self.rng.choice((0, 0, 0.001, 0.003)))
            return await super().complete(request)
        finally:
            self.now -= 1


async def test_max_running_bounds_the_model_under_hooks_that_launch_and_stops():
    rng = random.Random(8)
    hooks = HookRegistry(timeout_seconds=120)
    started, stopped, launched_in_hooks, refused = Counter(), Counter(), [], []
    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=hooks), MemoryJournal(),
                                     settings=LifecycleSettings(max_running=MAX))
    engine = service.engine
    model = CountingModel(lambda: engine.running, rng)

    async def on_start(**event):
        started[event["child_subagent_id"]] += 1
        assert engine.running <= MAX

    async def on_stop(**event):
        stopped[event["child_session_id"]] += 1
        assert engine.running <= MAX
        await asyncio.sleep(rng.choice((0, 0.001, 0.002)))
        goal = event["child_summary"] or ""
        if goal.startswith("spawn-") and int(goal[6:]) > 0:
            try:
                handle = await service.launch(SubagentLaunchRequest(goal=f"spawn-{int(goal[6:]) - 1}"))
            except Exception as exc:  # a stopped chat's turn is still live here (held): none expected
                refused.append(exc)
                return
            launched_in_hooks.append(handle)
            await service.wait(handle, timeout_seconds=60)

    hooks.register("subagent_start", on_start)
    hooks.register("subagent_stop", on_stop)
    await service.start()
    try:
        sessions = [AgentSession(model=model, session_id=f"chat-{i}") for i in range(3)]
        handles = []
        for n in range(200):
            session = sessions[n % 3]
            with inside_turn(session):
                goal = f"spawn-{rng.choice((0, 0, 1, 2))}" if n % 5 else "leaf"
                handles.append(await service.launch(SubagentLaunchRequest(goal=goal)))
            if n % 37 == 36:
                victim = handles[rng.randrange(len(handles))]
                with inside_turn(sessions[handles.index(victim) % 3]):
                    assert (await service.cancel(victim)).unknown_handle is False
            if n % 71 == 70:
                await service.host_view().interrupt_children("chat-1", "stopped by /stop")
            if n % 3 == 0:
                await asyncio.sleep(0)
        by_id = {s.session_id: s for s in sessions}

        async def state(handle):
            with inside_turn(by_id[handle.parent_session_id]):
                return (await service.status(handle)).state

        for handle in handles:
            with inside_turn(by_id[handle.parent_session_id]):
                assert (await service.wait(handle, timeout_seconds=60)).completed
        for _ in range(200):  # the follow-ups the last hooks launched
            if [h for h in launched_in_hooks if not (await state(h)).terminal] == [] and \
                    len(stopped) == len(handles) + len(launched_in_hooks):
                break
            await asyncio.sleep(0.05)
        every = handles + launched_in_hooks
        assert refused == []
        states = [(await state(h)) for h in every]
        assert all(state.terminal for state in states), (Counter(states), len(stopped), len(every), engine.running,
                                                         engine.pending, len(engine._runs), len(engine._ending))
        assert set(stopped) == {h.subagent_id for h in every}
        assert set(stopped.values()) == {1}
        assert set(started.values()) <= {1}
        assert model.peak <= MAX and engine.running == 0 and engine.pending == 0
        assert set(states) <= {S.SUCCEEDED, S.INTERRUPTED, S.CANCELLED}, Counter(states)
    finally:
        await service.close()
