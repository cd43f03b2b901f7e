"""A turn run again "quiet" after a death while its answered end was owed (`gateway.owed_ends`): the chat has
the answer the first run journaled, so that answer, not what the run again's model wrote, is the turn's reply
in the conversation the next turns' model reads (and the transcript stores)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_owed_end_after_death import died_with_its_end_owed


async def read_after_quiet_rerun(tmp_path, gateways, chat: RecordingAdapter, answer: str, again: dict,
                                 **sections) -> list[str]:
    """What the model of the turn after the quiet rerun reads as the assistant's words, and the stored transcript
    holds: "hello" was answered ``answer``, its end owed at a death; run again after the start, the model does
    ``again``. ``sections``: the configuration's."""
    config = make_config(tmp_path, **sections)
    await died_with_its_end_owed(tmp_path, gateways, config, chat, ScriptedModel({"parent": [[{"text": answer}]]}))
    shown = chat.texts()
    read: list[list[str]] = []

    def parent(request) -> dict:
        if request.messages[-1]["content"] == "hello":
            return again
        read.append([str(m["content"]) for m in request.messages if m["role"] == "assistant"])
        return {"text": "second answer"}

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": parent}))
    await settled(gateway2)
    await chat.say("and then?", event_id="ev-2")
    await chat.wait_for(lambda: "second answer" in chat.texts())
    assert chat.texts() == [*shown, "second answer"]  # the run again showed nothing
    await settled(gateway2)
    [assistant] = read
    session = gateway2.sessions.get("chat", "c1", None)
    stored = [str(m["content"]) for m in gateway2.store.sessions.load(session.key).transcript
              if m["role"] == "assistant"]
    assert stored == [*assistant, "second answer"]
    return assistant


async def test_the_next_turn_reads_the_answer_the_chat_has_not_the_quiet_runs_own(tmp_path, gateways):
    read = await read_after_quiet_rerun(tmp_path, gateways, RecordingAdapter(), "answer after 1",
                                        {"text": "a different answer"})
    # Before, the model read "a different answer", which the chat never saw, as its reply to "hello".
    assert read == ["answer after 1"]


async def test_a_quiet_rerun_whose_model_call_fails_keeps_the_answer_the_chat_has(tmp_path, gateways):
    read = await read_after_quiet_rerun(tmp_path, gateways, RecordingAdapter(), "answer after 1",
                                        {"error": "server_error", "message": "boom"})
    # Before, "hello" stood unanswered in the conversation, its answer in the chat all the same.
    assert read == ["answer after 1"]


async def test_an_answer_sent_in_parts_is_read_whole(tmp_path, gateways):
    chat = RecordingAdapter(text_limit=30)
    answer = "the answer, part one\n\nanswer after 1"  # the first run ends once the chat has its last part
    read = await read_after_quiet_rerun(tmp_path, gateways, chat, answer, {"text": "short"})
    assert len(chat.texts()) == 3  # two parts, then the second answer
    assert read == [answer]


async def test_an_answer_past_the_parts_bound_is_read_with_the_note_on_what_was_left_out(tmp_path, gateways):
    chat = RecordingAdapter(text_limit=30)
    answer = "answer after 1\n\nparagraph number two\n\nparagraph number three"
    read = await read_after_quiet_rerun(tmp_path, gateways, chat, answer, {"text": "short"},
                                        display={"max_message_parts": 1})
    [shown, note, _] = chat.texts()
    assert shown == "answer after 1" and note.startswith("The answer is too long for this chat")
    # Before, the model read "answer after 1" alone, as the whole of its answer: the chat read that the rest was left
    # out (or is in answer.md), and the model, unaware its answer went on, would deny what the user read there.
    assert read == [f"{shown}\n\n{note}"]
