"""The workflow's size check of a model call, kept up to date a message at a time, measures exactly what
encoding the whole call measures (the check Temporal's payload limit needs), each message once."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from lifecycle.temporal import _wire
from lifecycle.temporal._wire import ConversationSize

TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\ud800", '"', "\\", "\n", "é"]), max_size=20)
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": TEXT},
                                optional={"tool_calls": st.lists(st.fixed_dictionaries({"id": TEXT}), max_size=2)})
# An append, or (a compaction) messages [start:end] replaced by new ones and the history version bumped.
STEP = st.one_of(MESSAGE, st.tuples(st.integers(0, 6), st.integers(0, 6), st.lists(MESSAGE, max_size=3)))


def call(messages: list) -> dict:
    return {"provider": "p", "model": "é", "backend": None, "route": None, "heartbeat": 5.0,
            "request": {"messages": list(messages), "tools": [{"name": "t"}], "role": "leaf", "turn_index": 0,
                        "iteration": len(messages), "metadata": {"goal": "g\u2603"}}}


@given(st.lists(STEP, max_size=30))
def test_measured_a_message_at_a_time_as_the_whole_call_encodes(steps) -> None:
    sized, messages, version = ConversationSize(), [], 0
    for step in steps:
        if isinstance(step, dict):
            messages.append(step)
        else:
            start, end, new = step
            messages[start:end] = new
            version += 1
        body = call(messages)
        assert sized.body(body, messages, version) == len(json.dumps(body, separators=(",", ":")))
    resumed = list(messages)  # a run continued as new: another list, the same messages
    assert sized.body(call(resumed), resumed, version) == len(json.dumps(call(resumed), separators=(",", ":")))


def test_each_message_is_encoded_once_however_many_calls_carry_it(monkeypatch) -> None:
    encoded = []
    encode = _wire._encode
    monkeypatch.setattr(_wire, "_encode", lambda value: encoded.append(value) or encode(value))
    sized, messages = ConversationSize(), []
    for n in range(50):
        messages.append({"role": "user", "content": f"message {n}"})
        sized.body(call(messages), messages, 0)
    assert [m for m in encoded if m in messages] == messages  # each once, not once per call: 50, not 1,275
