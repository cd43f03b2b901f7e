"""Review of a call that may not wait, waiting behind the turns resuming no longer than ``behind_most``
(`agent.models._outage.admitted`): it fails as not sent, never sent, once its circuit (or another of its) is down."""

from __future__ import annotations

import pytest

from agent._errors import NOT_SENT
from tests.agent.models.test_outage_waiting_behind_circuits import BEHIND_MOST, Calls, settled


async def test_a_call_behind_fails_not_sent_at_once_as_the_model_goes_down_again():
    calls = Calls()
    try:
        calls.down(calls.model)
        await calls.start("a1", 600)
        await calls.start("a2", 600)
        calls.model.answered(calls.clock)  # "a1" resumes, "a2" still waits
        await settled()
        await calls.start("subagent")
        await calls.advance(30)
        calls.down(calls.model)  # taken for down again, "subagent" 90 s short of its bound
        await settled()
        assert calls.tasks["subagent"].done() and "subagent" not in calls.sent
        with pytest.raises(Exception, match=NOT_SENT):
            calls.tasks["subagent"].result()
    finally:
        await calls.aclose()


async def test_a_call_behind_the_server_past_its_bound_is_not_sent_while_its_model_is_down():
    calls = Calls()
    try:
        calls.down(calls.server)
        await calls.start("a1", 600)
        await calls.start("a2", 600)
        calls.server.answered(calls.clock)  # "a1" resumes, "a2" still waits at the server
        await settled()
        await calls.start("subagent")
        await calls.advance(BEHIND_MOST - 5)
        calls.down(calls.model)  # its model goes down meanwhile: nothing wakes it at the server
        await calls.advance(5)  # its bound: it does not go while its model is down (its next probe 5 s on)
        assert calls.tasks["subagent"].done() and "subagent" not in calls.sent
        with pytest.raises(Exception, match=NOT_SENT):
            calls.tasks["subagent"].result()
    finally:
        await calls.aclose()


@pytest.mark.parametrize("behind", [0.001, 1e9])
async def test_odd_bounds(behind, monkeypatch):
    import tests.agent.models.test_outage_waiting_behind_circuits as mod
    monkeypatch.setattr(mod, "BEHIND_MOST", behind)
    calls = Calls()
    try:
        calls.down(calls.model)
        await calls.start("a1", 600)
        await calls.start("a2", 1e7)
        calls.model.answered(calls.clock)
        await settled()
        await calls.start("subagent")
        await calls.advance(min(behind, 3600))
        assert ("subagent" in calls.sent) == (behind < 3600)
        assert len(calls.model.waiting) == (1 if behind < 3600 else 2)
    finally:
        await calls.aclose()
