"""A chat whose stored session row holds what no session can (a hand edit, a damaged write: SQLite keeps any type
in any column): a text generation failed every ``/new`` of the chat, for good (each one a dead letter). The damaged
columns are set anew as the session loads, with one ERROR naming the chat and the columns (never what they held),
and the chat goes on: its conversation kept, ``/new`` starting a fresh one."""

from __future__ import annotations

import logging
import sqlite3

from gateway.testing import RecordingAdapter, make_config
from tests.gateway.wire import ask, openai_model

SECRET = "hunter2-the-password"


def session_row(tmp_path, damage: str = "", *params) -> tuple:
    """The chat's stored session (session_id, generation, mode, backend, backend_choice and their types); with
    ``damage``, first run that UPDATE on it."""
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    try:
        if damage:
            conn.execute(f"{damage} WHERE key='chat|c1|'", params)
            conn.commit()
        return conn.execute("SELECT session_id, generation, mode, backend, backend_choice, typeof(generation),"
                            " typeof(backend_choice) FROM gateway_sessions WHERE key='chat|c1|'").fetchone()
    finally:
        conn.close()


async def new(chat: RecordingAdapter) -> str:
    await chat.say("/new")
    await chat.wait_for(lambda: any(text.startswith(("Started a new session", "Sorry")) for text in chat.texts()))
    return chat.texts()[-1]


async def test_a_text_generation_is_set_anew_and_new_works_again(tmp_path, llm, gateways, caplog):
    server = await llm()
    for text in ("noted", "still here", "fresh"):
        server.push_text(text)
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "noted"
    await gateway.stop(grace=0)
    session_id, *_ = session_row(tmp_path, "UPDATE gateway_sessions SET generation=?, mode=?, backend_choice=?",
                                 SECRET, f"{SECRET}-mode", SECRET.encode() + b"\xff")

    again = RecordingAdapter()
    with caplog.at_level(logging.INFO):
        gateway = await gateways(config, [again])
        assert await ask(again, gateway, "and now?") == "still here"
    # The conversation goes on, in the same session, mended in the store.
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "remember this"), ("assistant", "noted"), ("user", "and now?")]
    assert session_row(tmp_path)[0] == session_id

    assert (await new(again)).startswith("Started a new session."), again.texts()
    assert await ask(again, gateway, "hello") == "fresh"
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "hello")]
    assert session_row(tmp_path)[1:] == (2, "background", "default", None, "integer", "null")
    (error,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert error.startswith("chat chat c1: its stored session (gateway_sessions key chat|c1|) held what no session"
                            " can in generation (text), mode (not a mode), backend_choice (bytes); set anew"), error
    assert SECRET not in caplog.text


async def test_a_session_id_that_is_no_text_starts_a_new_one_keeping_the_conversation(tmp_path, llm, gateways,
                                                                                     caplog):
    server = await llm()
    server.push_text("noted")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "noted"
    await gateway.stop(grace=0)
    session_row(tmp_path, "UPDATE gateway_sessions SET session_id=?", SECRET.encode() + b"\xff")

    again = RecordingAdapter()
    with caplog.at_level(logging.INFO):
        assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "remember this"), ("assistant", "noted"), ("user", "and now?")]
    assert "in session_id (bytes); set anew" in caplog.text and SECRET not in caplog.text
    session_id, generation, *_ = session_row(tmp_path)
    assert isinstance(session_id, str) and session_id.startswith("s-") and generation == 1


async def test_a_column_holding_no_utf8_is_set_anew_without_quoting_it(tmp_path, llm, gateways, caplog):
    server = await llm()
    server.push_text("noted")
    server.push_text("still here")
    config = make_config(tmp_path, model=openai_model(server))
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat])
    assert await ask(chat, gateway, "remember this") == "noted"
    await gateway.stop(grace=0)
    session_id, *_ = session_row(tmp_path)
    conn = sqlite3.connect(tmp_path / "state" / "switchboard.db")
    conn.execute("UPDATE gateway_sessions SET backend=CAST(? AS TEXT)", (f"{SECRET} \xff".encode("latin-1"),))
    conn.commit()
    conn.close()

    again = RecordingAdapter()
    with caplog.at_level(logging.INFO):
        assert await ask(again, await gateways(config, [again]), "and now?") == "still here"
    sent = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "remember this"), ("assistant", "noted"), ("user", "and now?")]
    assert "in backend (bytes); set anew" in caplog.text and SECRET not in caplog.text
    assert session_row(tmp_path)[:4] == (session_id, 1, "background", "default")
