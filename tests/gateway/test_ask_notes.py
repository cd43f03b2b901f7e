"""`switchboard ask` after a turn that ended oddly: the openai provider against a fake server on loopback.

A chat reads a note after an answer the model cut off or its provider withheld in part; `ask` printed the bare
text with status 0, so neither a script nor its reader could tell a cut answer from a whole one. A turn that
ended with no answer at all printed nothing, with status 0."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from gateway.cli import main
from gateway.replies import CUT_OFF, CUT_OFF_UNSAID, EMPTY_ANSWER, WITHHELD
from tests.gateway.wire import openai_model


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("SWITCHBOARD_STATE_DIR", "SWITCHBOARD_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)


def ending(finish_reason: str, content: str | None) -> dict:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "finish_reason": finish_reason, "message": {"role": "assistant", "content": content}}]}


async def asked(tmp_path, server) -> int:
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state"), "logging": {"level": "ERROR"},
                                      "model": openai_model(server)}), encoding="utf-8")
    return await asyncio.to_thread(main, ["--config", str(config), "ask", "list the steps"])


@pytest.mark.parametrize(("finish_reason", "note"), [("length", CUT_OFF), ("content_filter", WITHHELD)],
                         ids=["cut-off", "withheld"])
async def test_ask_prints_the_note_a_chat_reads_after_an_answer_cut_short(tmp_path, llm, capsys, finish_reason,
                                                                         note):
    server = await llm()
    server.push_raw(ending(finish_reason, "The three steps are: first"))
    assert await asked(tmp_path, server) == 0  # an answer, as far as it goes
    assert capsys.readouterr().out == f"The three steps are: first\n\n{note}\n"


@pytest.mark.parametrize(("finish_reason", "content", "note"), [
    ("stop", "", EMPTY_ANSWER),
    ("length", None, CUT_OFF_UNSAID),
], ids=["empty", "cut-off-before-any"])
async def test_ask_of_a_turn_that_ended_without_an_answer_says_why_and_fails(tmp_path, llm, capsys, finish_reason,
                                                                            content, note):
    server = await llm()
    server.push_raw(ending(finish_reason, content))
    assert await asked(tmp_path, server) == 1
    out, err = capsys.readouterr()
    assert out == ""  # nothing a script could take for the answer
    assert f"switchboard: {note.strip('()')}\n" in err
