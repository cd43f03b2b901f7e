"""switchboard_model_cost_usd when a provider reports a cost no counter can take (NaN, negative)."""

from __future__ import annotations

import logging

import aiohttp
import pytest

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import samples, served


@pytest.mark.parametrize("odd", [float("nan"), -0.5])
async def test_a_cost_no_counter_can_take_is_left_out_once_warned_and_later_costs_count(tmp_path, gateways, caplog,
                                                                                         odd) -> None:
    # A NaN made the counter NaN for the rest of the process (every rate and sum of it with it); a
    # negative one raised in the hook at every call, an ERROR with a traceback each time.
    model = ScriptedModel({"parent": [[{"text": "one", "cost_usd": odd}], [{"text": "two", "cost_usd": odd}],
                                      [{"text": "three", "cost_usd": 0.25}]]}, name="odd-model")
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=model)
    caplog.set_level(logging.WARNING)
    async with served(gateway) as server:
        for text in ("first", "second", "third"):
            await chat.say(text)
            await settled(gateway)
        async with aiohttp.ClientSession() as http, http.get(f"{server.url}/metrics") as response:
            value = samples(await response.text())
    assert chat.texts() == ["one", "two", "three"]
    assert value("switchboard_model_cost_usd_total", model="odd-model", role="parent") == 0.25
    assert value("switchboard_model_calls_total", model="odd-model", role="parent", outcome="ok") == 3
    assert value("switchboard_model_tokens_total", model="odd-model", role="parent", type="input") == 3 * 10
    warned = [r.getMessage() for r in caplog.records if r.name == "gateway.metrics"]
    assert warned == [f"metrics: model 'odd-model' reported a cost of {odd!r} US dollars; switchboard_model_cost_usd"
                      " leaves out every such cost"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
