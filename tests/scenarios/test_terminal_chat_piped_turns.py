"""`switchboard chat` fed by a writer that is slower than the turns: every line it writes is answered, in order.

Nobody at a pipe means a line as "stop that, answer this": under the default ``busy_input_mode: interrupt`` the
second line stopped the first one's turn, whose answer was lost without a word, and under ``steer`` it was
taken into that turn and got no answer of its own. A terminal still interrupts as configured.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from gateway.host import STATE_DB
from tests.scenarios.test_terminal_chat import ROOT, Terminal

GATE_PLUGIN = '''
    """A tool that returns once the test has written its gate (a FIFO) and closed it: opening the
    FIFO to read waits for the test to open it to write, so that open tells the test the turn is here."""
    import os

    def gate(args, context):
        with open(os.environ["GATE"], encoding="utf-8") as gate:
            return gate.read()

    def register(ctx):
        ctx.register_tool("gate", "Waits for the test.", {"type": "object"}, gate)
'''
SCRIPT = {"parent": [
    [{"tool_calls": [{"name": "gate", "arguments": {}}]}, {"text": "answer one"}],
    [{"text": "answer two"}],
]}
"""The first message's turn waits at the gate, then answers; the second's answers at once."""
WITHIN = 30
"""Seconds any one step may take on a loaded machine."""


def setup(tmp_path: Path, **settings: object) -> tuple[Path, Path]:
    """A config running the scripted model with the gate plugin, and the gate: the config's path and the gate's."""
    (tmp_path / "gate_plugin.py").write_text(textwrap.dedent(GATE_PLUGIN))
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"), "plugins": ["gate_plugin"],
        "model": {"provider": "scripted", "script": str(tmp_path / "script.yaml")}, **settings,
    }))
    return config, gate


def reached(gate: Path):
    """The gate opened to write, once the turn has come to it (failing if it does not within `WITHIN`)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(open, gate, "w", encoding="utf-8").result(WITHIN)


def messages_recorded(tmp_path: Path, count: int) -> None:
    """Until the gateway has recorded ``count`` messages of the terminal's: it commits one once it has
    decided what the message does to the running turn (interrupt, queue or steer)."""
    database = tmp_path / "state" / STATE_DB
    deadline = time.monotonic() + WITHIN
    while True:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
            [(recorded,)] = db.execute("SELECT count(*) FROM gateway_inbox WHERE platform = 'local'")
        if recorded >= count:
            return
        assert time.monotonic() < deadline, f"{recorded} of {count} messages recorded"
        time.sleep(0.01)


@pytest.mark.parametrize("settings", [
    {},
    {"display": {"busy_input_mode": "steer"}},
    {"display": {"platforms": {"local": {"busy_input_mode": "interrupt"}}}},
], ids=["default", "steer", "interrupt set for the terminal"])
def test_a_line_piped_while_a_turn_runs_waits_for_it_and_every_line_is_answered_in_order(tmp_path, settings):
    config, gate = setup(tmp_path, **settings)
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": os.pathsep.join((str(ROOT), str(tmp_path))),
           "GATE": str(gate)}
    chat = subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(config), "chat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
                            env=env)
    try:
        chat.stdin.write(b"q1\n")
        chat.stdin.flush()
        with reached(gate) as held:
            chat.stdin.write(b"q2\n")
            chat.stdin.flush()
            messages_recorded(tmp_path, 2)
            held.write("open")
        out, err = chat.communicate(timeout=WITHIN)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
    assert chat.returncode == 0, err.decode()
    lines = out.decode().splitlines()
    assert "agent> answer one" in lines and "agent> answer two" in lines, out.decode()
    assert lines.index("agent> answer one") < lines.index("agent> answer two"), out.decode()


def test_a_line_typed_at_a_terminal_while_a_turn_runs_still_interrupts_it(tmp_path, monkeypatch):
    config, gate = setup(tmp_path)
    monkeypatch.setenv("GATE", str(gate))  # the terminal's chat inherits it
    chat = Terminal(tmp_path, plugin_dir=tmp_path, **yaml.safe_load(config.read_text()))
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"q1\r")
        with reached(gate) as held:
            os.write(chat.controller, b"q2\r")
            chat.read_until(b"answer two")  # answered while the first turn still waits at the gate: stopped
            held.write("open")
        os.write(chat.controller, b"/quit\r")
        assert chat.wait(WITHIN) == 0
        assert b"answer one" not in chat.seen, chat.seen
    finally:
        chat.close()
