"""A chat whose stored conversation holds a row that no longer reads back as a message (a hand edit, a damaged
write): it failed every later message of the chat, for good (the sender told it could not be handled), and a row
holding no UTF-8 had SQLite's error quote its text in the log. The row is left out, with one ERROR naming the
chat and the row, and the chat goes on; so are the results of a call that row held, which the server refuses."""

from __future__ import annotations

import json
import logging
import sqlite3

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

SECRET = "hunter2-the-password"


def transcript(tmp_path, *, damage: dict[str, bytes | str] | None = None) -> list[tuple[int, bytes]]:
    """The chat's stored rows (seq, bytes); with ``damage``, first set the row of each role it names to what it
    maps to (bytes: stored as text that holds no UTF-8)."""
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        rows = conn.execute("SELECT seq, CAST(message AS BLOB) FROM gateway_transcript WHERE key='chat|c1|'"
                            " ORDER BY seq").fetchall()
        for seq, raw in rows if damage else ():
            role = json.loads(raw)["role"]
            if role in damage:
                conn.execute("UPDATE gateway_transcript SET message=CAST(? AS TEXT) WHERE key='chat|c1|' AND seq=?",
                             (damage.pop(role), seq))
        conn.commit()
    finally:
        conn.close()
    return rows


async def test_a_damaged_call_is_left_out_with_its_results_and_the_chat_goes_on(tmp_path, llm, gateways, caplog):
    server = await llm()
    server.push_tool_calls([{"id": "c1", "name": "no_such_tool", "arguments": "{}"}])
    server.push_text("Sorry, let me try that again.")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "Sorry, let me try that again."
    await gateway.stop(grace=0)
    transcript(tmp_path, damage={"assistant": '{"role": "assistant", "tool_calls": [{"id": "c1", "fun'})

    again = RecordingAdapter()
    with caplog.at_level(logging.ERROR, logger="gateway.store"):
        assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "remember this"), ("assistant", "Sorry, let me try that again."), ("user", "and now?")]
    (error,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert error.startswith("chat chat c1: 2 message(s) of its stored conversation could not be read back"), error
    assert "seq 2 (JSONDecodeError), 3 (a tool result without its call)" in error, error
    # Stored again whole, as it was sent: the next start reads it all.
    assert [json.loads(raw)["role"] for _, raw in transcript(tmp_path)] == ["system", "user", "assistant", "user",
                                                                             "assistant"]


async def test_a_row_holding_no_utf8_is_left_out_without_quoting_it(tmp_path, llm, gateways, caplog):
    server = await llm()
    server.push_text("noted")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, f"my password is {SECRET}") == "noted"
    await gateway.stop(grace=0)
    transcript(tmp_path, damage={"user": f'{{"role": "user", "content": "{SECRET} \xff"}}'.encode("latin-1")})

    again = RecordingAdapter()
    with caplog.at_level(logging.INFO):
        assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    assert "seq 1 (UnicodeDecodeError)" in caplog.text and SECRET not in caplog.text
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("assistant", "noted"), ("user", "and now?")]
