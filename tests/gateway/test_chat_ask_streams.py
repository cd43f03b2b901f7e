"""What `switchboard chat` and `switchboard ask` write where, and how they read a pipe: the chat's "logs go to" line
is for the person at the terminal, `ask` prints its answer without its start's log lines, and what is piped in is
UTF-8 whatever ``PYTHONIOENCODING`` says (README.md: bytes that are not UTF-8 become U+FFFD)."""

from __future__ import annotations

import contextlib
import os
import pty
import select
import subprocess
import time

from tests.gateway.cli_process import TIMEOUT, command, environment, write_config

PIPED = "- caf\u00e9\n".encode() + b"- t\xe9a\n"
"""A list of two: one item in UTF-8, one with a Latin-1 byte."""


def _config(tmp_path) -> str:
    return str(write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                  "model": {"demo": {"child_steps": 1, "step_seconds": 0}},
                                                  "delegation": {"gateway_mode": "inline"}}))


def _all_of(controller: int, proc: subprocess.Popen) -> bytes:
    """What the terminal showed, to the command's end."""
    seen = b""
    deadline = time.monotonic() + TIMEOUT
    while select.select([controller], [], [], max(0.0, deadline - time.monotonic()))[0]:
        chunk = b""
        with contextlib.suppress(OSError):  # EIO: the command has ended and closed the terminal
            chunk = os.read(controller, 65536)
        if not chunk:
            break
        seen += chunk
    proc.wait(TIMEOUT)
    return seen


def test_with_the_output_in_a_file_the_log_line_goes_to_the_terminal(tmp_path):
    """``printf 'hello\\n' | switchboard chat > out.txt`` at a terminal: the file began with the log's line."""
    out = tmp_path / "out.txt"
    controller, terminal = pty.openpty()
    with out.open("wb") as file:
        proc = subprocess.Popen(command("--config", _config(tmp_path), "chat"), stdin=subprocess.PIPE, stdout=file,
                                stderr=terminal, cwd=tmp_path, env=environment(tmp_path))
    os.close(terminal)
    try:
        proc.stdin.write(b"hello\n")
        proc.stdin.close()
        shown = _all_of(controller, proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)
    assert proc.returncode == 0, shown
    log = tmp_path / "state" / "chat.log"
    assert f"(logs go to {log}; `switchboard chat --verbose` prints them here)".encode() in shown, shown
    written = out.read_text()
    assert "logs go to" not in written and written.startswith("Switchboard terminal chat"), written
    assert "[demo] I am" in written


def test_ask_prints_its_answer_and_no_log_line(tmp_path):
    done = subprocess.run(command("--config", _config(tmp_path), "ask", "hello"), capture_output=True,
                          stdin=subprocess.DEVNULL, cwd=tmp_path, env=environment(tmp_path), timeout=TIMEOUT)
    assert done.returncode == 0 and done.stdout.startswith(b"[demo] I am"), done
    assert done.stderr == b""  # it logged "INFO gateway.host: switchboard 0.1.0: state in …"


def test_ask_logs_everything_when_debug_asks_for_it(tmp_path):
    done = subprocess.run(command("--config", _config(tmp_path), "ask", "hello", "--set", "logging.level=DEBUG"),
                          capture_output=True, stdin=subprocess.DEVNULL, cwd=tmp_path, env=environment(tmp_path),
                          timeout=TIMEOUT)
    assert done.returncode == 0, done
    assert b" INFO gateway.host: switchboard " in done.stderr, done.stderr


def test_ask_reads_a_pipe_as_utf8_whatever_pythonioencoding_says(tmp_path):
    done = subprocess.run(command("--config", _config(tmp_path), "ask", "Compare these:"), input=PIPED,
                          capture_output=True, cwd=tmp_path, env=environment(tmp_path, PYTHONIOENCODING="latin-1"),
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    # Printed in Latin-1, as PYTHONIOENCODING asks: é as its byte, U+FFFD, which Latin-1 lacks, as ?.
    assert b"caf\xe9: completed" in done.stdout and b"t?a: completed" in done.stdout, done.stdout


def test_chat_reads_a_pipe_as_utf8_whatever_pythonioencoding_says(tmp_path):
    done = subprocess.run(command("--config", _config(tmp_path), "chat"), input=b"Compare these:\n" + PIPED,
                          capture_output=True, cwd=tmp_path, env=environment(tmp_path, PYTHONIOENCODING="latin-1"),
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert b"caf\xe9: completed" in done.stdout and b"t?a: completed" in done.stdout, done.stdout


def test_a_pipe_that_begins_with_a_utf8_bom_is_read_without_it(tmp_path):
    """A UTF-8 file saved with a byte order mark (Notepad, PowerShell 5's ``Out-File``): the mark reached the model as
    U+FEFF, glued to the first line, which was no list item any more (the demo model delegated ``- tea`` alone)."""
    piped = b"\xef\xbb\xbf- caf\xc3\xa9\n- tea\n"
    chat = subprocess.run(command("--config", _config(tmp_path), "chat"), input=piped, capture_output=True,
                          cwd=tmp_path, env=environment(tmp_path), timeout=TIMEOUT)
    ask = subprocess.run(command("--config", _config(tmp_path), "ask", "Compare these:"), input=piped,
                         capture_output=True, cwd=tmp_path, env=environment(tmp_path), timeout=TIMEOUT)
    for done in chat, ask:
        assert done.returncode == 0, done.stderr
        assert b"caf\xc3\xa9: completed" in done.stdout and b"tea: completed" in done.stdout, done.stdout
