"""/delegation: the chat's backend and options, switching from the next session or the next
turn, and a choice that survives restarts — seen in what the model is offered over the wire."""

from __future__ import annotations

import pytest

from gateway.errors import StartupError
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import delegate_parameters, openai_model, parent_requests, tool_results
from tests.plugin_modules import plugin_module

KEY = "sk-route-secret-for-delegation"


def config(tmp_path, server, *, backend="default", plugin=True):
    return make_config(
        tmp_path, model=openai_model(server), plugins=["advanced_delegation"] if plugin else [],
        delegation={"gateway_mode": "inline", "backend": backend, "model_map": {
            "fast": {"description": "Quick lookups.", "provider": "openai", "model": "secret-model-name",
                     "base_url": server.base_url, "api_key": KEY}}},
    )


def offers_routes(body: dict) -> bool:
    return "route" in delegate_parameters(body)["properties"]


async def turn(chat: RecordingAdapter, text: str = "hi") -> None:
    replies = len(chat.texts("reply"))
    await chat.say(text)
    await chat.wait_for(lambda: len(chat.texts("reply")) > replies)


async def command(chat: RecordingAdapter, text: str) -> str:
    answers = len(chat.texts("command"))
    await chat.say(text)
    await chat.wait_for(lambda: len(chat.texts("command")) > answers)
    return chat.texts("command")[-1]


async def test_it_shows_the_backend_and_its_options_but_no_model_or_key(tmp_path, llm, gateways):
    server = await llm()
    chat = RecordingAdapter()
    await gateways(config(tmp_path, server, backend="model_map"), [chat])
    shown = await command(chat, "/delegation")
    assert shown.startswith("Delegation here: model_map — each task may pick a model by option.")
    assert "• fast — Quick lookups." in shown and "Backends: default, model_map." in shown
    assert "secret-model-name" not in shown and KEY not in shown and server.base_url not in shown


async def test_switching_without_now_waits_for_the_next_session(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, backend="model_map"), [chat])
    await turn(chat)
    answer = await command(chat, "/delegation default")
    assert answer.startswith("From the next session (/new), delegation here uses default. This session keeps model_map")
    await turn(chat)
    assert offers_routes(parent_requests(server)[-1])  # this session still routes
    assert "From the next session: default." in await command(chat, "/delegation")
    await command(chat, "/new")
    await turn(chat)
    assert not offers_routes(parent_requests(server)[-1])
    await command(chat, "/new")  # the choice holds for later sessions too
    await turn(chat)
    assert not offers_routes(parent_requests(server)[-1])
    assert next(iter(gateway.sessions)).backend == "default"


async def test_now_switches_from_the_next_turn_and_survives_a_restart(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await turn(chat)
    assert not offers_routes(parent_requests(server)[-1])
    answer = await command(chat, "/delegation model_map --now")
    assert answer.startswith("Delegation switched to model_map: subagents started from your next message use it.")
    assert "• fast — Quick lookups." in answer
    await turn(chat)
    assert offers_routes(parent_requests(server)[-1])
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    await gateways(config(tmp_path, server), [chat2])
    assert (await command(chat2, "/delegation")).startswith("Delegation here: model_map")
    await turn(chat2)
    assert offers_routes(parent_requests(server)[-1])
    await command(chat2, "/new")  # the chat's choice, not delegation.backend, holds for its next sessions
    await turn(chat2)
    assert offers_routes(parent_requests(server)[-1])


async def test_a_backend_gone_after_a_restart_is_shown_and_starts_nothing(tmp_path, llm, gateways):
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server), [chat])
    await command(chat, "/delegation model_map --now")  # the chat's own choice: it outlives its backend
    await gateway.stop(grace=0)

    def delegating(body):
        if body["messages"][-1]["role"] == "tool":
            return {"text": "could not"}
        return {"tool_calls": [{"name": "delegate_task", "arguments": '{"goal": "x"}'}]}

    server.respond_with(delegating)
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config(tmp_path, server, plugin=False), [chat2])  # the plugin is no longer enabled
    shown = await command(chat2, "/delegation")
    assert "model_map — not available (its plugin is not loaded)" in shown
    assert "/delegation default --now switches back" in shown
    await turn(chat2, "delegate")
    error = tool_results(parent_requests(server)[-1])[-1]
    assert error.startswith("Error: No subagent was started: this chat's delegation backend 'model_map'")
    assert not any(gateway2.host.children.recent(s.session_id) for s in gateway2.sessions)
    assert (await command(chat2, "/delegation default --now")).startswith("Delegation switched to default")
    await settled(gateway2)


async def test_a_backend_gone_after_a_restart_that_the_chat_never_chose_gives_way_to_delegation_backend(
        tmp_path, llm, gateways, caplog):
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    gateway = await gateways(config(tmp_path, server, backend="model_map"), [chat])
    await turn(chat)
    await gateway.stop(grace=0)

    server.respond_with(lambda body: {"text": "done"} if body["messages"][-1]["role"] == "tool" else {
        "tool_calls": [{"name": "delegate_task", "arguments": '{"goal": "x"}'}]} if body["messages"][-1][
        "content"] == "delegate" else {"text": "child did x"})
    chat2 = RecordingAdapter()
    gateway2 = await gateways(config(tmp_path, server, plugin=False), [chat2])  # the plugin is no longer enabled
    assert (await command(chat2, "/delegation")).startswith("Delegation here: default")
    await turn(chat2, "delegate")
    (result,) = tool_results(parent_requests(server)[-1])
    assert result["results"][0]["summary"] == "child did x"
    assert ("chat c1: its delegation backend 'model_map' is not available (no loaded plugin registers it); it "
            "delegates through 'default' from now on") in caplog.text
    await settled(gateway2)


async def test_unknown_backends_and_bad_usage_are_answered(tmp_path, llm, gateways):
    server = await llm()
    chat = RecordingAdapter()
    await gateways(config(tmp_path, server), [chat])
    assert await command(chat, "/delegation warp") == ("There is no delegation backend 'warp' here. "
                                                        "Backends: default, model_map.")
    assert (await command(chat, "/delegation a b")).startswith("Usage: /delegation <backend>")
    assert (await command(chat, "/delegation default --now")).startswith("Delegation here already uses default")


FLAKY = """
from lifecycle import ChildRoute, RouteOption

FAILING = False


class Flaky:
    name = "flaky"
    description = "routes that come and go"

    def options(self):
        if FAILING:
            raise RuntimeError("the route list is down, sk-flaky-secret-9")
        return [RouteOption("quick", "Quick lookups.")]

    def resolve(self, route):
        return ChildRoute(route)


def register(ctx):
    ctx.register_delegation_backend(Flaky())
"""


async def flaky_gateway(tmp_path, monkeypatch, llm, gateways, **delegation):
    plugin = plugin_module(tmp_path, monkeypatch, "flaky_backend", FLAKY)
    server = await llm()
    server.respond_with(lambda body: {"text": "ok"})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server), plugins=["flaky_backend"],
                                         delegation={"gateway_mode": "inline", **delegation}), [chat])
    return plugin, server, chat, gateway


async def test_a_plugins_backend_may_be_the_default_of_new_sessions(tmp_path, monkeypatch, llm, gateways):
    _, server, chat, gateway = await flaky_gateway(tmp_path, monkeypatch, llm, gateways, backend="flaky")
    await turn(chat)
    assert delegate_parameters(parent_requests(server)[-1])["properties"]["route"]["enum"] == ["quick"]
    assert (await command(chat, "/delegation")).startswith("Delegation here: flaky — routes that come and go.")
    await command(chat, "/new")
    assert [s.backend for s in gateway.sessions] == ["flaky"]


async def test_a_backend_no_plugin_registers_stops_the_start(tmp_path, llm, gateways):
    server = await llm()
    config = make_config(tmp_path, model=openai_model(server), delegation={"backend": "flaky"})
    with pytest.raises(StartupError, match=r"^delegation\.backend: 'flaky' is not available \(no plugin in plugins "
                                           r"registered a delegation backend of that name\)$"):
        await gateways(config, [RecordingAdapter()])


async def test_a_backend_that_fails_to_list_its_options_is_shown_as_failing(tmp_path, monkeypatch, llm, gateways):
    plugin, _, chat, _ = await flaky_gateway(tmp_path, monkeypatch, llm, gateways)
    assert "• quick — Quick lookups." in await command(chat, "/delegation flaky --now")
    plugin.FAILING = True
    shown = await command(chat, "/delegation")
    assert shown.startswith("Delegation here: flaky — routes that come and go.\nIts options cannot be shown: the "
                            "delegation backend 'flaky' failed to list its options (RuntimeError). Until it lists them,"
                            " subagents run on the default child model only.")
    assert "Backends: default, flaky." in shown and "sk-flaky-secret-9" not in shown


async def test_switching_to_a_failing_backend_changes_nothing(tmp_path, monkeypatch, llm, gateways):
    plugin, server, chat, gateway = await flaky_gateway(tmp_path, monkeypatch, llm, gateways)
    await turn(chat)
    plugin.FAILING = True
    for switch in ("/delegation flaky --now", "/delegation flaky"):
        assert await command(chat, switch) == (
            "Nothing changed: the delegation backend 'flaky' failed to list its options (RuntimeError). Delegation"
            " here stays on default; try again later, or pick another backend.")
    (session,) = gateway.sessions
    assert (session.backend, session.backend_choice) == ("default", None)
    row = gateway.store.sessions.load(session.key)
    assert (row.backend, row.backend_choice) == ("default", None)
    await turn(chat)
    assert delegate_parameters(parent_requests(server)[-1]) == delegate_parameters(parent_requests(server)[0])
