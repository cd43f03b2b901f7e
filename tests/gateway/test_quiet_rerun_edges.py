"""A turn run again after a death while its answered end was owed (`gateway.owed_ends`) runs "quiet"
(`gateway.turn_runner`): the chat has its answer. What the model does in that run through the chat's
services must not reach the chat after the answer either: ``send_message``, ``send_file``, ``clarify``."""

from __future__ import annotations

from pathlib import Path

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_file_sends import TakingUploads
from tests.gateway.test_owed_end_after_death import died_with_its_end_owed, looking
from tests.polling import until


def sending(*texts: str, answer: str) -> list[dict]:
    """A turn whose model sends each of ``texts`` with ``send_message``, then answers ``answer``."""
    calls = [{"tool_calls": [{"name": "send_message", "arguments": {"text": text}}]} for text in texts]
    return [*calls, {"text": answer}]


async def test_send_message_in_a_quiet_rerun_sends_nothing_more(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    await died_with_its_end_owed(tmp_path, gateways, config, chat,
                                 ScriptedModel({"parent": [sending("on it", answer="answer after 1")]}))
    assert chat.texts() == ["on it", "answer after 1"]

    model = ScriptedModel({"parent": [sending("on it again", "and one more", answer="answer again")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 3  # it did run again, both calls told they were sent
    assert [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"] == \
        ["sent to this chat"] * 2
    # Before, "and one more" (a key the first run never used) came after the answer.
    assert chat.texts() == ["on it", "answer after 1"]
    assert gateway2.store.inbox.settled("chat", "ev-1")


def sending_files(*paths: str, answer: str) -> list[dict]:
    calls = [{"tool_calls": [{"name": "send_file", "arguments": {"path": path}}]} for path in paths]
    return [*calls, {"text": answer}]


async def test_send_file_in_a_quiet_rerun_sends_nothing_more(tmp_path, gateways):
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    (workspace / "b.csv").write_text("c,d\n")
    chat = TakingUploads()
    await died_with_its_end_owed(tmp_path, gateways, config, chat,
                                 ScriptedModel({"parent": [sending_files("a.csv", answer="answer after 1")]}))
    assert chat.uploads == [b"a,b\n"] and chat.texts()[-1] == "answer after 1"
    shown = chat.texts()

    model = ScriptedModel({"parent": [sending_files("a.csv", "b.csv", answer="answer again")]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 3
    results = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert all("is queued to this chat" in result for result in results), results
    # Before, b.csv (a key the first run never used) was uploaded after the answer.
    assert chat.uploads == [b"a,b\n"] and chat.texts() == shown
    assert gateway2.store.outbox.kept_files() == []  # no copy made for a send that never goes


async def test_clarify_in_a_quiet_rerun_asks_nothing_after_the_answer(tmp_path, gateways):
    config = make_config(tmp_path)
    chat = RecordingAdapter()
    await died_with_its_end_owed(tmp_path, gateways, config, chat,
                                 ScriptedModel({"parent": [[{"text": "answer after 1"}]]}))
    assert chat.texts() == ["answer after 1"]

    asking = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?"}}]}
    model = ScriptedModel({"parent": [[asking, {"text": "answer again"}]]})
    gateway2 = await gateways(config, [chat], model=model)
    # Told the chat cannot be asked, the run goes on at once; before, the question went out after the answer,
    # and the run waited for the chat's next message (a new request) to take it for its answer.
    await until(lambda: len(model.requests) == 2 or len(chat.texts()) > 1)
    assert chat.texts() == ["answer after 1"]
    await settled(gateway2)
    assert chat.texts() == ["answer after 1"]


async def test_the_card_of_a_quiet_rerun_that_fails_keeps_the_first_runs_final_line(tmp_path, gateways):
    config = make_config(tmp_path, display={"progress": "card", "progress_delay": 0})
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [[{"wait": "first", **looking("looking")[0]}, looking("looking")[1]]]})
    first.release("first")
    await died_with_its_end_owed(tmp_path, gateways, config, chat, first)
    [card] = [m for m in chat.messages if m.kind == "notice"]
    assert card.edits == ["✓ Done in 0 s"]

    model = ScriptedModel({"parent": [[looking("again")[0], {"error": "server_error", "message": "boom"}]]})
    gateway2 = await gateways(config, [chat], model=model)
    await settled(gateway2)
    assert len(model.requests) == 2 and gateway2.store.inbox.settled("chat", "ev-1")
    # Before, the card above the answer the chat has turned to "⚠️ Failed": the run again had failed.
    assert card.edits == ["✓ Done in 0 s"] and chat.texts() == ["✓ Done in 0 s", "looking", "answer after 1"]
