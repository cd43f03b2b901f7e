"""``/agents`` after a restart names a routed child by its route, never the model behind it: the journal's
snapshot of it carries no route (its handle names only the model), the ledger's record of its task does."""

from __future__ import annotations

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_agents_command import command, live, parent
from tests.gateway.wire import openai_model


def config(tmp_path, server, fast):
    return make_config(tmp_path, model=openai_model(server), agent={"toolsets": ["file"]},
                       plugins=["advanced_delegation"], delegation={
                           "backend": "model_map", "model_map": {"fast": {
                               "description": "quick", "provider": "openai", "model": "fast-secret-model",
                               "base_url": fast.base_url}}})


async def test_a_routed_child_read_back_after_a_restart_is_listed_with_its_route(tmp_path, llm, gateways):
    server, fast = await llm(), await llm()
    fast.respond_with(lambda body: {"hang": True})
    server.respond_with(parent({"goal": "quick check", "route": "fast"}, lambda body: {"hang": True}))
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, fast), [chat])
    await chat.say("go")
    await chat.wait_for(lambda: chat.texts("reply") == ["on it"])
    await fast.wait_for(lambda: len(fast.requests) == 1)
    (child,) = live(gateway)
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    gateway2 = await gateways(config(tmp_path, server, fast), [chat2])
    await chat2.wait_for(lambda: chat2.texts())
    listing = await command(chat2, "/agents")
    assert f"• {child.subagent_id} — quick check — interrupted by the restart, route fast" in listing
    log = await command(chat2, f"/agents log {child.subagent_id}")
    assert log.startswith(f"{child.subagent_id} — quick check — interrupted by the restart\n")
    assert "fast-secret-model" not in listing + log
    await settled(gateway2)
