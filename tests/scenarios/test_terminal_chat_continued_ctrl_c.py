"""`switchboard chat` on a pseudo-terminal: Ctrl-C ending a line continued with a backslash, read with a line
entered before it."""

from __future__ import annotations

import os

import yaml

from tests.scenarios.test_terminal_chat import Terminal


def test_ctrl_c_ending_a_continued_line_drops_it_and_stops_the_turn_of_the_line_before(tmp_path):
    """``a long task`` entered, ``and\\`` continued, then Ctrl-C, read together: the key drops the continued line
    and, a turn running, stops it, as for a line entered just before the key. Joined into one message holding the
    key, every line was dropped as typed at an idle prompt: the task was never sent, and nothing said so."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"hang": True}]]}))
    chat = Terminal(tmp_path, model={"provider": "scripted", "script": str(script)})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"a long task\rand\\\r\x03")
        chat.read_until(b"Stopped the running turn", after=b"and", timeout=10)
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0
    finally:
        chat.close()
