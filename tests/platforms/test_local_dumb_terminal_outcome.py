"""`platforms.local` on a dumb terminal: a progress message's updates stay unprinted, but its last state, how the
work ended, goes to the gateway to print anew (the real chat: `tests/scenarios/test_terminal_chat_dumb_outcomes.py`)."""

from __future__ import annotations

import io
import sys

import pytest

from platforms.base import EditUnsupported, Outbound
from platforms.local import LocalAdapter


class TTY(io.StringIO):
    def isatty(self):
        return True


async def test_how_the_work_ended_is_refused_as_an_edit_on_a_dumb_terminal(monkeypatch):
    """Returned as done, the edit was taken as shown: the turn's end went unsaid."""
    screen = TTY()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("TERM", "dumb")
    adapter = LocalAdapter(input=io.StringIO(), user="me")
    sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 2 s")
    with pytest.raises(EditUnsupported):
        await adapter.edit("terminal", None, sent.message_id, "⏹ Stopped for your next message")
    assert screen.getvalue() == "⏳ Working — 1 s\n"


async def test_output_to_a_file_keeps_a_notice_as_first_printed_to_the_end(tmp_path):
    """Nobody watches a file as the work goes: it keeps a notice as a platform that cannot edit does."""
    with open(tmp_path / "out.txt", "w", encoding="utf-8") as out:
        adapter = LocalAdapter(input=io.StringIO(), output=out, user="me")
        sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
        await adapter.edit("terminal", None, sent.message_id, "✓ Done in 2 s")
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "⏳ Working — 1 s\n"
