"""`switchboard ask` whose output is not UTF-8 (``PYTHONIOENCODING=latin-1``, a Latin-1 locale).

Python writes stdout strictly in its encoding: a reply with one character the encoding lacks raised
UnicodeEncodeError after the turn had run, and the reply, paid for, was lost behind "could not start"."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time

import yaml

from tests.gateway.cli_process import TIMEOUT, command, environment, write_config

REPLY = "caf\u00e9 \u201cquoted\u201d \U0001f600 done"


def _asking(tmp_path, reply: str) -> list[str]:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": reply}]]}), encoding="utf-8")
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "logging": {"level": "ERROR"},
                                                "model": {"provider": "scripted", "script": str(script)}})
    return command("--config", str(config), "ask", "hi")


def _latin1(tmp_path) -> dict[str, str]:
    return environment(tmp_path, LANG="C", LC_ALL="C", PYTHONIOENCODING="latin-1")


def test_ask_to_a_latin1_pipe_prints_the_reply_with_what_it_cannot_encode_as_question_marks(tmp_path):
    done = subprocess.run(_asking(tmp_path, REPLY), capture_output=True, stdin=subprocess.DEVNULL, cwd=tmp_path,
                          env=_latin1(tmp_path), timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr.decode("latin-1")
    assert done.stdout == "caf\u00e9 ?quoted? ? done\n".encode("latin-1")


def test_ask_on_a_latin1_terminal_prints_the_reply_as_the_chat_would(tmp_path):
    """Characters the terminal lacks as ``?``, and an escape sequence shown (ESC as ``^[``), never obeyed."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(_asking(tmp_path, REPLY + " \x1b[2J\u009b"), stdin=subprocess.DEVNULL, stdout=terminal,
                            stderr=terminal, cwd=tmp_path, env=_latin1(tmp_path), start_new_session=True)
    os.close(terminal)
    seen = b""
    try:
        deadline = time.monotonic() + TIMEOUT
        while select.select([controller], [], [], max(0.0, deadline - time.monotonic()))[0]:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the command has ended and closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        status = proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    assert status == 0, seen
    assert seen == "caf\u00e9 ?quoted? ? done ^[[2J?\r\n".encode("latin-1")
