"""``/stop`` and the operator console's Stop answer only once the lifecycle journal has committed the stop
(`HostView.stops_committed`), and say so when it could not: "Stopped" while the stop rows were only queued, a
process killed right then left the children running in the journal, lost to the restart, and
``lifecycle.on_restart: resume`` ran the children the user saw stopped again."""

from __future__ import annotations

import asyncio
import sys

import pytest

from agent.models.scripted import ScriptedModel
from gateway.console.routes import STOP_NOT_SAVED, STOP_REASON
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import JournalError, SubagentState
from tests.gateway.observing import served
from tests.gateway.test_commands import children_hanging, parent_script
from tests.gateway.test_console import TWO_TASKS, post, state
from tests.polling import until


class HeldSync:
    """The gateway's lifecycle journal with its plain `sync` (the commit a stop waits for) held until `release`,
    or failing as a commit the database refused does. ``callers``: who asked, by function name."""

    def __init__(self, gateway, monkeypatch, *, failing: bool = False) -> None:
        self.journal = gateway.host.lifecycle.journal
        self.real = self.journal.sync
        self.gate = asyncio.Event()
        self.failing = failing
        self.callers: list[str] = []
        monkeypatch.setattr(self.journal, "sync", self.sync)

    async def sync(self) -> None:
        self.callers.append(sys._getframe(1).f_code.co_name)
        if self.failing:
            raise JournalError("Journal write failed: OperationalError('disk I/O error')", code="JOURNAL_WRITE_FAILED")
        await self.gate.wait()
        await self.real()

    def release(self) -> None:
        self.gate.set()

    def stop_waits(self) -> bool:
        return "stops_committed" in self.callers


async def _stopping_two(tmp_path, gateways, monkeypatch, **held):
    chat = RecordingAdapter()
    model = ScriptedModel(parent_script())
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat],
                             model=model)
    await chat.say("please delegate this")
    await children_hanging(model)
    return chat, gateway, HeldSync(gateway, monkeypatch, **held)


async def test_stop_answers_only_once_the_stop_is_committed(tmp_path, gateways, monkeypatch):
    chat, gateway, held = await _stopping_two(tmp_path, gateways, monkeypatch)
    said = asyncio.ensure_future(chat.say("/stop"))  # handed over: answered once the command has run
    try:
        await until(held.stop_waits, timeout=2)
        assert "command" not in chat.kinds()  # nothing said while a crash would lose the stop
    finally:
        held.release()
    await asyncio.wait_for(said, 5)
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    [answer] = chat.texts("command")
    assert answer.startswith("Stopped") and "2 subagents" in answer


async def test_stop_whose_commit_fails_says_the_stop_is_not_saved_yet(tmp_path, gateways, monkeypatch):
    chat, gateway, _ = await _stopping_two(tmp_path, gateways, monkeypatch, failing=True)
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    [answer] = chat.texts("command")
    assert answer == ("Stopping 2 subagents, but the stop is not saved yet (the state database cannot be written):"
                      " if the gateway restarts before it is, they may run again. Their partial results are listed"
                      " by /agents.")  # not "Stopped 2 subagents."
    session = next(iter(gateway.sessions))
    await until(lambda: not gateway.host.children.children(session.session_id))  # stopped all the same


@pytest.mark.parametrize("failing", [False, True], ids=["held", "failing"])
async def test_the_console_stop_of_a_child_answers_once_its_stop_is_committed(tmp_path, gateways, monkeypatch,
                                                                              failing):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[TWO_TASKS, {"text": "one of them was stopped"}]],
                           "leaf": lambda request: ({"wait": "pears"} if request.metadata["goal"] == "pears"
                                                    else {"text": "apples are red"})})
    gateway = await gateways(make_config(tmp_path, delegation={"gateway_mode": "inline"}), [chat], model=model)
    async with served(gateway) as server:
        await chat.say("compare")
        await model.reached("pears")  # never released: only a stop ends it
        [work] = (await state(server.url))["work"]
        hanging = next(c for c in work["children"] if c["goal"] == "pears")
        held = HeldSync(gateway, monkeypatch, failing=failing)
        stopping = asyncio.ensure_future(post(server.url, f"/console/api/children/{hanging['id']}/stop"))
        try:
            if failing:
                assert await stopping == (503, {"error": STOP_NOT_SAVED})
            else:
                await until(held.stop_waits, timeout=2)
                assert not stopping.done()  # no "ok" while a crash would lose the stop
                held.release()
                assert await stopping == (200, {"ok": True})
        finally:
            held.release()
        await chat.wait_for(lambda: chat.texts("reply"))  # stopped all the same
    assert chat.texts("reply") == ["one of them was stopped"]
    snapshot = (await gateway.host.children.lookup([hanging["id"]]))[hanging["id"]]
    assert (snapshot.state, snapshot.error) == (SubagentState.INTERRUPTED, STOP_REASON)
