"""The model provider down while background work finishes: what the chat reads, through the gateway, with the
openai provider against a fake server."""

from __future__ import annotations

from agent import TurnResult, Usage
from gateway.replies import MODEL_FAILED, RESULTS_UNREPORTED, RESULTS_UNREPORTED_BUSY, reply_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.wire import call, goal, is_child, openai_model

DOWN = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None, "code": None}}


async def test_background_results_the_model_could_not_report_on_say_the_work_finished(tmp_path, llm, gateways):
    # The chat read "Please try again in a moment" out of the blue: nobody had asked anything to try again, and
    # nothing said the work it had been told was under way had finished. Its results stay in the conversation.
    server = await llm()
    down = False

    def play(body):
        nonlocal down
        if is_child(body):
            down = True  # the provider goes down as the child finishes
            return {"text": f"found: {goal(body)} is 42"}
        if down:
            server.push_error(503, DOWN)
            return None
        last = body["messages"][-1]
        return {"text": "I have started on it."} if last["role"] == "tool" else (
            call("delegate_task", {"goal": "find the answer"}) if "research" in str(last["content"]) else
            {"text": "It is 42."})

    server.respond_with(play)
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server),
                                         delegation={"gateway_mode": "background"}), [chat])
    await chat.say("research this")
    await chat.wait_for(lambda: len(chat.messages) >= 2)
    await settled(gateway)
    assert [(m.kind, m.text) for m in chat.messages] == [("reply", "I have started on it."),
                                                         ("completion", RESULTS_UNREPORTED)]
    down = False
    await chat.say("so what did they find?")
    await chat.wait_for(lambda: len(chat.messages) >= 3)
    assert chat.texts("reply")[-1] == "It is 42."
    assert "found: find the answer is 42" in str(server.requests[-1]["messages"])


def failed(retry_after: float | None) -> TurnResult:
    return TurnResult("t-1", "", "error", 1, Usage(), None, 0.1, (), error="model request failed (rate_limited): "
                      "Rate limit reached", error_kind="rate_limited", retry_after=retry_after)


def test_results_the_provider_asked_to_wait_for_say_how_long():
    assert reply_text("completion", failed(None)) == RESULTS_UNREPORTED
    assert reply_text("completion", failed(600.0)) == RESULTS_UNREPORTED_BUSY.format(wait="10 minutes")
    assert reply_text("reply", failed(None)) == MODEL_FAILED
