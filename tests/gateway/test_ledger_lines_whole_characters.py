"""The ledger's chat lines cut a goal or an error to their length between whole characters: a flag or a family
emoji at the cut went out as a lone letter in a box, or one person of the family."""

from __future__ import annotations

import regex

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_agents_command import delegating

GOAL = "调研" * 39 + "🇨🇳" + "的市场"
"""79 characters before its end once cut to 80: the cut used to fall between the flag's two halves."""
FAMILY = "👨\u200d👩\u200d👧\u200d👦"


async def test_a_failed_childs_goal_and_error_are_cut_between_whole_characters(tmp_path, gateways):
    def child(request: ModelRequest) -> dict:
        # "RuntimeError: " and this make 157 characters before the family: cut to 160, its first two people showed.
        raise RuntimeError("a" * 143 + FAMILY + " and then more of the error")

    model = ScriptedModel({"parent": delegating([{"goal": GOAL}]), "leaf": child})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat], model=model)
    await chat.say("go")
    await chat.wait_for(lambda: any("⚠️ Subagent failed" in text for text in chat.texts()))
    await settled(gateway)
    warning = next(text for text in chat.texts() if "⚠️ Subagent failed" in text)
    assert f"{'调研' * 39}…: " in warning, warning
    shown = set(regex.findall(r"\X", warning))
    assert not shown & {"🇨", "👨\u200d", "👨\u200d👩\u200d", "👨\u200d👩\u200d👧\u200d"}, warning
