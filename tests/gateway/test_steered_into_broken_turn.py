"""Messages steered into a turn whose handling breaks (a bug meets an odd reply): the turn read them, so
they share its message's fate — counted as failed, tried again or set aside with an apology — rather
than being left unsettled and unanswered until some later restart replays them."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.dead_letters import APOLOGY
from gateway.testing import RecordingAdapter, make_config, settled
from tests.polling import until

ODD = "an odd reply"


class Odd(RecordingAdapter):
    """Measuring ``ODD`` hits a bug: splitting the reply to journal it raises."""

    def measure(self, text: str) -> int:
        if ODD in text:
            raise RuntimeError("a bug in measuring")
        return len(text)


def reading_a_steer(request):
    """``start``'s turn lists files (the test steers while the call waits at ``first``), then answers oddly."""
    last = request.messages[-1]
    if last["role"] == "user" and last["content"] == "start":
        return {"wait": "first", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    if last["role"] == "tool":
        return {"text": ODD}
    return {"text": f"answer to {last['content']}"}


async def test_a_message_steered_into_a_turn_that_breaks_is_not_left_unanswered(tmp_path, gateways):
    chat = Odd()
    config = make_config(tmp_path, display={"busy_input_mode": "steer"}, inbox={"max_attempts": 1})
    model = ScriptedModel({"parent": reading_a_steer})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("start", event_id="ev-start")
    await model.reached("first")
    await chat.say("use metric units", event_id="ev-steer")  # read with the tool's result
    model.release("first")
    [session] = gateway.sessions
    await until(lambda: session.running is None and not gateway.runner.busy)
    await settled(gateway)
    # Neither message is left hanging: both failed with the turn that read them, and were set aside.
    assert gateway.store.inbox.settled("chat", "ev-start")
    assert gateway.store.inbox.settled("chat", "ev-steer")
    assert sorted(letter.event_id for letter in gateway.store.dead_letters.all()) == ["ev-start", "ev-steer"]
    assert chat.texts() == [APOLOGY, APOLOGY]
