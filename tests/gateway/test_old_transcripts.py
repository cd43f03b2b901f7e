"""A chat whose stored transcript an older version wrote: a tool call kept with the arguments the
model sent (not JSON) had the server refuse every later request of the chat, for good. It is sent,
and stored again, with a JSON object for arguments (see tests/agent/test_loaded_transcripts.py)."""

from __future__ import annotations

import json
import sqlite3

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model


def stored_arguments(tmp_path, *, written: str | None = None) -> list[str]:
    """The arguments of every tool call in the chat's stored transcript; with ``written``, first set
    them all to it, as an older version stored what the model sent."""
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        rows = conn.execute("SELECT seq, message FROM gateway_transcript WHERE key='chat|c1|' ORDER BY seq").fetchall()
        arguments = []
        for seq, text in rows:
            message = json.loads(text)
            for call in message.get("tool_calls") or ():
                if written is not None:
                    call["function"]["arguments"] = written
                arguments.append(call["function"]["arguments"])
            if written is not None and message.get("tool_calls"):
                conn.execute("UPDATE gateway_transcript SET message=? WHERE key='chat|c1|' AND seq=?",
                             (json.dumps(message), seq))
        conn.commit()
    finally:
        conn.close()
    return arguments


async def test_a_chat_whose_stored_call_has_arguments_that_are_not_json_goes_on(tmp_path, llm, gateways):
    server = await llm()
    server.push_tool_calls([{"id": "c1", "name": "no_such_tool", "arguments": '{"text": "x"}'}])
    server.push_text("Sorry, let me try that again.")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "Sorry, let me try that again."
    await gateway.stop(grace=0)
    assert stored_arguments(tmp_path, written='{"text": "cut sh') == ['{"text": "cut sh']

    again = RecordingAdapter()
    assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    sent = server.requests[-1]["messages"]
    assert [c["function"]["arguments"] for m in sent for c in m.get("tool_calls") or ()] == ["{}"]
    assert stored_arguments(tmp_path) == ["{}"]  # stored again mended: the next start sends it as it is
