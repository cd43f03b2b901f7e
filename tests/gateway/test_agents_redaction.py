"""/agents masks configured secrets as the log does: a child's error, summary or goal may quote
what a tool echoed (a key in a URL, a token in an exception), and the chat must not read it."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.agents_command import SUMMARY_CHARS
from gateway.logging import MASK, register_secret
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_agents_command import command, delegating

SECRET = "w4-configured-secret-5f0c1e9a"
"""Registered for the whole process: no other test writes it, so masking it hides nothing of theirs."""


async def test_a_configured_secret_in_a_childs_error_summary_or_goal_is_masked(tmp_path, gateways):
    register_secret(SECRET)
    # The summary's secret straddles the cut at SUMMARY_CHARS: masked after the cut, its first half showed.
    straddling = "x" * (SUMMARY_CHARS - 12) + f" {SECRET} and the rest of the answer"

    def child(request: ModelRequest) -> dict:
        goal = request.metadata["goal"]
        if goal.startswith("fetch"):  # not a model failure: the chat reads the error as it is
            raise RuntimeError(f"GET https://api.example.com/v1/items?api_key={SECRET} returned 500")
        return {"text": straddling if goal.startswith("sum") else "plain words about the weather"}

    tasks = [{"goal": "fetch the items"}, {"goal": "summarise the report"},
             {"goal": f"use {SECRET} to log in"}, {"goal": "plain"}]
    model = ScriptedModel({"parent": delegating(tasks), "leaf": child})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, display={"interim_assistant_messages": True}), [chat], model=model)
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await settled(gateway)

    warning = next(text for text in chat.texts() if "⚠️ Subagent failed: fetch the items" in text)
    assert f"api_key={MASK} returned 500" in warning and SECRET not in warning  # the completion answer too

    listing = await command(chat, "/agents")
    assert SECRET[:8] not in listing, listing
    lines = [line for line in listing.splitlines() if line.startswith("• sa-")]
    fetch, summary, login, plain = lines
    assert f"— failed: RuntimeError: GET https://api.example.com/v1/items?api_key={MASK} returned 500" in fetch
    assert summary.endswith(f"x {MASK} and th…"), summary
    assert f"— use {MASK} to log in —" in login
    assert plain.endswith("— succeeded: plain words about the weather")  # ordinary text is left as it is

    child_id = login.split()[1]
    log = await command(chat, f"/agents log {child_id}")
    assert log.startswith(f"{child_id} — use {MASK} to log in — succeeded") and SECRET not in log
