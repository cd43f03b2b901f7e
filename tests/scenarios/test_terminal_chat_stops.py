"""`switchboard chat` on a pseudo-terminal: a turn that is stopped says so on the screen, whenever it is stopped."""

from __future__ import annotations

import os
import time

import yaml

from tests.scenarios.test_terminal_chat import Terminal

STOPPED_FOR_NEXT = b"\xe2\x8f\xb9 Stopped for your next message"  # what the turn's notice would have come to read


def until_exists(path, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def test_a_turn_a_next_line_stops_before_its_first_notice_says_it_was_stopped(tmp_path):
    """Interrupted by the next line (``busy_input_mode: interrupt``, the default) before its first notice was due,
    the turn vanished without a line: stopped, lost or still running, the screen could not tell. Stopped after,
    its notice read ``⏹ Stopped for your next message``; it now says so either way."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [
        [{"tool_calls": [{"name": "write_file", "arguments": {"path": "started.txt", "content": "x"}}]},
         {"hang": True}],  # at work, showing nothing yet (notices after the default 180 s)
        [{"text": "the answer to the next line"}],
    ]}))
    chat = Terminal(tmp_path, model={"provider": "scripted", "script": str(script)})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"a long task\r")
        until_exists(tmp_path / "state" / "workspace" / "started.txt")
        os.write(chat.controller, b"something else\r")
        chat.read_until(b"the answer to the next line")
        between = chat.seen.partition(b"you> something else")[2].partition(b"the answer to the next line")[0]
        assert STOPPED_FOR_NEXT in between, chat.seen[-400:]
        assert chat.seen.count(STOPPED_FOR_NEXT) == 1
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0
    finally:
        chat.close()


def test_ctrl_c_that_comes_with_the_line_before_it_stops_that_lines_turn(tmp_path):
    """A line entered and Ctrl-C read together (typed fast, or come in one packet over a slow link) were one
    message holding the key, which the chat, idle, took for Ctrl-C at a typed line: every line of it was dropped,
    nothing said. The line is sent, and the key stops its turn, saying so."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"hang": True}]]}))
    chat = Terminal(tmp_path, model={"provider": "scripted", "script": str(script)})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"a long task\r\x03")
        chat.read_until(b"Stopped the running turn", after=b"^C", timeout=10)
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0
    finally:
        chat.close()
