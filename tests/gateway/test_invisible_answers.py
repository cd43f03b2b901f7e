"""An answer of only characters no platform draws (a word joiner, an invisible operator, a Hangul filler) is no
answer: the chat gets the empty-answer notice, not an empty bubble (docs/gateway.md)."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from gateway.replies import EMPTY_ANSWER
from gateway.testing import RecordingAdapter, make_config, settled


@pytest.mark.parametrize("answer", ["\u2060", "\u2061\u2062\u2063\u2064", " \u3164\n", "\u2066\u2069\ufe0f"])
async def test_an_answer_of_invisible_characters_is_no_answer(tmp_path, gateways, answer):
    chat = RecordingAdapter()
    said = {"tool_calls": [{"name": "send_message", "arguments": {"text": "\u2060\u00ad"}}]}
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": [[said, {"text": answer}]]}))
    await chat.say("what now?")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    assert chat.texts() == [EMPTY_ANSWER]
