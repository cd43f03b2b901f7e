"""Subagents and background results while the model server is known to be down (`agent.models._outage`): they say
the model is unreachable, as a chat's own turn does (`gateway.turn_runner.MODEL_DOWN`), not "try again in a moment".
The openai provider against a fake server, through the gateway."""

from __future__ import annotations

from gateway.replies import CHILD_MODEL_DOWN, CHILD_MODEL_FAILED, RESULTS_UNREPORTED_DOWN
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, is_child, openai_model

PROXY_PAGE = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"


async def test_subagents_and_the_results_turn_held_by_a_server_down_say_it_is_unreachable(tmp_path, llm, gateways):
    # A subagent whose call was not sent read "it could not get an answer from the model just now", and the turn
    # reporting on the work "Ask me about it again in a moment": the next moment's call was not sent either.
    server = await llm()
    children = []

    def play(body):
        if is_child(body):  # the server goes down under the subagents, one at a time
            children.append(body)
            server.push_error(502, PROXY_PAGE)
            return None
        if body["messages"][-1]["role"] == "tool":
            return {"text": "I have started on it."}
        return call("delegate_task", {"tasks": [{"goal": f"look up part {n}"} for n in range(4)]})

    server.respond_with(play)
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), delegation={"gateway_mode": "background"},
                         lifecycle={"max_running": 1})
    gateway = await gateways(config, [chat])
    await chat.say("research this")
    await chat.wait_for(lambda: "completion" in chat.kinds())
    await settled(gateway)
    assert len(children) == 3  # the fourth subagent's call was not sent
    (told,) = chat.texts("completion")
    assert told.split("\n\n")[0] == RESULTS_UNREPORTED_DOWN
    assert told.count(CHILD_MODEL_FAILED) == 3  # the calls that found the server down
    assert f"look up part 3: {CHILD_MODEL_DOWN}" in told
