"""`platforms.local`: what ``$TERM`` says of the process's terminal decides whether the chat redraws in place
(the real chat on a dumb terminal: `tests/scenarios/test_terminal_chat_dumb_terminal.py`)."""

from __future__ import annotations

import io
import sys

import pytest

from platforms.base import Outbound
from platforms.local import LocalAdapter
from platforms.local_screen import moves_cursor


class TTY(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(("term", "moves"), [("xterm-256color", True), ("screen", True), ("dumb", False),
                                             ("dumb-emacs-ansi", False), ("", False), (None, False)])
def test_a_dumb_terminal_or_one_unnamed_does_not_move_its_cursor(term, moves):
    assert moves_cursor(term) is moves


@pytest.mark.parametrize("term", ["dumb", None], ids=["dumb", "unset"])
async def test_a_progress_line_on_a_dumb_terminal_stays_as_first_printed(monkeypatch, term):
    """Each update of a notice went up a row and erased it, ``␛[1A␛[J``, which a dumb terminal prints: one
    garbled line more a second with `make run`'s settings. It is left as printed, as on output to a file."""
    screen = TTY()
    monkeypatch.setattr(sys, "stdout", screen)
    if term is None:
        monkeypatch.delenv("TERM", raising=False)
    else:
        monkeypatch.setenv("TERM", term)
    adapter = LocalAdapter(input=io.StringIO(), user="me")
    sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 2 s")
    assert screen.getvalue() == "⏳ Working — 1 s\n"


async def test_a_terminal_that_moves_its_cursor_gets_a_progress_line_redrawn_in_place(monkeypatch):
    screen = TTY()
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setenv("TERM", "xterm")
    adapter = LocalAdapter(input=io.StringIO(), user="me")
    sent = await adapter.send(Outbound("terminal", None, "⏳ Working — 1 s", kind="notice"))
    await adapter.edit("terminal", None, sent.message_id, "⏳ Working — 2 s")
    assert screen.getvalue() == "⏳ Working — 1 s\n\r\x1b[1A\x1b[J⏳ Working — 2 s\n"
