"""Calls waiting behind the turns held as they resume (`agent.models._outage.admitted`), on a server and on a model
there at once: as `OpenAIModel.complete` makes them, each told `resume_ended` for the places it had."""

from __future__ import annotations

import asyncio

from agent._errors import ModelError
from agent.models._outage import MODEL, ServerOutage, WaitWhenDown, admitted
from agent.testing import FakeClock

BEHIND_MOST = 120.0
"""The request timeout of the model called: how long a call that may not wait waits behind at most."""


class Calls:
    """Calls of a model at a server (its circuits ``server`` and ``model``), each sent once admitted and ended as the
    test says (`end`)."""

    def __init__(self) -> None:
        self.clock = FakeClock(autojump=False)
        self.server, self.model = ServerOutage("http://s"), ServerOutage("model 'm' at http://s", scope=MODEL)
        self.sent: list[str] = []
        self.ends: dict[str, asyncio.Future[bool]] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    async def _call(self, name: str, seconds: float | None) -> None:
        wait = None if seconds is None else WaitWhenDown(seconds, self.clock, lambda left: None)
        resumed: list[ServerOutage] = []
        answered = False
        try:
            probes = await admitted((self.server, self.model), self.clock, wait, resumed, BEHIND_MOST)
            self.sent.append(name)
            answered = await self.ends[name]
            for probed in probes:
                probed.probe_ended()
        finally:
            for circuit in resumed:
                circuit.resume_ended(answered)

    async def start(self, name: str, seconds: float | None = None) -> None:
        """A call (``seconds``: its turn's wait; None: one that may not wait, a subagent's)."""
        self.ends[name] = asyncio.get_running_loop().create_future()
        self.tasks[name] = asyncio.create_task(self._call(name, seconds))
        await settled()

    async def end(self, name: str, answered: bool = True) -> None:
        self.ends[name].set_result(answered)
        await settled()

    async def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        await settled()

    def down(self, circuit: ServerOutage) -> None:
        for _ in range(3):
            circuit.failed(ModelError("upstream connect error", kind="server"), self.clock)

    async def aclose(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)


async def settled() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_calls_behind_on_the_server_and_on_its_model_do_not_hold_each_other_for_ever():
    # "x" had its place behind the model's turns and waited behind the server's; "z" its place behind the server's
    # and waited behind the model's: each waited for the other's end, for ever, and every message after them its
    # whole wait, untold.
    calls = Calls()
    try:
        calls.down(calls.model)
        await calls.start("a1", 600)
        await calls.start("a2", 5)
        calls.model.answered(calls.clock)  # "a1" resumes, "a2" still waits
        await settled()
        await calls.start("x")  # behind "a2"
        await calls.start("a3", 8)  # behind "x"
        calls.down(calls.server)
        await calls.start("b1", 600)
        await calls.start("b2", 5)
        calls.server.answered(calls.clock)  # "b1" resumes, "b2" still waits
        await settled()
        await calls.start("z")  # behind "b2"
        assert calls.sent == ["a1", "b1"]
        await calls.advance(6)  # "a2" and "b2" waited as long as they may
        await calls.end("a1", answered=False)  # "x" has its place; behind "z" at the server
        await calls.end("b1", answered=False)  # "z" has its place; behind "a3" at the model
        await calls.advance(3)  # "a3" waited as long as it may
        for name in ("a2", "b2", "a3"):
            await calls.end(name)
        async with asyncio.timeout(2):
            while not {"x", "z"} <= set(calls.sent):
                await asyncio.sleep(0.005)
        await calls.end("x")
        await calls.end("z")
        assert not calls.server.waiting and not calls.model.waiting
        await calls.start("late", 600)
        assert calls.sent[-1] == "late"
    finally:
        await calls.aclose()


async def test_a_call_that_may_not_wait_waits_behind_no_longer_than_its_request_may_take_then_goes():
    # A subagent's call, or a background results turn's, waited for the place of the turns resumed, one of which
    # took as long as the server was slow to answer: its caller, told nothing, waited as long, unbounded.
    calls = Calls()
    try:
        calls.down(calls.model)
        for name in ("a1", "a2"):
            await calls.start(name, 600)
        calls.model.answered(calls.clock)  # "a1" resumes and is slow to be answered; "a2" still waits
        await settled()
        await calls.start("subagent")
        await calls.start("later", 600)
        await calls.advance(BEHIND_MOST - 1)
        assert calls.sent == ["a1"]
        await calls.advance(1)
        assert calls.sent == ["a1", "subagent"]  # sent (the model is up), not failed; a message waits on
        await calls.end("subagent")
        assert calls.sent == ["a1", "subagent"]  # it held no place of the few let go at a time
        assert len(calls.model.waiting) == 2
        await calls.end("a1")  # two more resume: "a2" and "later"
        assert calls.sent == ["a1", "subagent", "a2", "later"]
    finally:
        await calls.aclose()
