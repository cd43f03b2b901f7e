"""Every command whose standard output's reader went away (`switchboard config check | head -1`, `less` quit
early) ends as a Unix tool does: quietly, with the status it would have had. Status 1 said the configuration
had errors, or the command failed, to a script with ``set -o pipefail``; Python's own flush at exit printed
"Exception ignored … BrokenPipeError" and made it 120.

Each runs buffered, as a user runs it (the pipe breaks at the last flush), and unbuffered, as a long output
is written (it breaks amid a print)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gateway.host import STATE_DB
from gateway.store import GatewayStore
from platforms.base import Inbound
from tests.gateway import cli_process

BUFFERING = pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "unbuffered"])


def _env(home: Path, unbuffered: bool) -> dict[str, str]:
    env = cli_process.environment(home)
    env.pop("PYTHONUNBUFFERED", None)
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


def _to_a_gone_reader(cwd: Path, unbuffered: bool, *args: str) -> subprocess.CompletedProcess[str]:
    """``args`` run with standard output a pipe whose reader has gone already."""
    cwd.mkdir(parents=True, exist_ok=True)
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(cli_process.command(*args), stdout=write, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, timeout=cli_process.TIMEOUT, cwd=cwd,
                              env=_env(cwd, unbuffered))
    finally:
        os.close(write)


def _quiet(stderr: str) -> bool:
    return not any(word in stderr for word in ("Traceback", "Exception ignored", "BrokenPipe", "could not start"))


def _dead_letters(state: Path, count: int) -> None:
    state.mkdir(mode=0o700)
    store = GatewayStore(state / STATE_DB)
    try:
        for n in range(1, count + 1):
            store.inbox.accept(Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                                       text=f"question {n}", event_id=f"ev-{n}"), f"turn-{n}")
            store.inbox.set_aside("chat", f"ev-{n}")
    finally:
        store.close()


@BUFFERING
def test_every_command_ends_quietly_and_as_it_would_have_when_its_reader_is_gone(tmp_path, unbuffered):
    state = tmp_path / "inbox" / "state"
    state.parent.mkdir()
    _dead_letters(state, 3)
    config = str(cli_process.write_config(tmp_path / "inbox" / "switchboard.yaml", {"state_dir": str(state)}))
    commands = {
        "help": ["--help"],
        "ask help": ["ask", "--help"],
        "config check": ["config", "check"],
        "ask": ["ask", "hello there"],
        "chat": ["chat"],
        "inbox dead": ["--config", config, "inbox", "dead"],
        "inbox retry": ["--config", config, "inbox", "retry", "1"],
        "inbox dismiss": ["--config", config, "inbox", "dismiss", "2"],
    }
    results = cli_process.together(*[
        lambda name=name, args=args: _to_a_gone_reader(tmp_path / name.replace(" ", "-"), unbuffered, *args)
        for name, args in commands.items()])
    assert {name: result.returncode for name, result in zip(commands, results, strict=True)} == dict.fromkeys(
        commands, 0), [result.stderr for result in results]
    for name, result in zip(commands, results, strict=True):
        assert _quiet(result.stderr), (name, result.stderr)
        assert cli_process.problem_lines(result.stderr) == [], (name, result.stderr)
    store = GatewayStore(state / STATE_DB)
    try:  # the retry and the dismissal were done, though their lines were not read
        assert [letter.event_id for letter in store.dead_letters.all()] == ["ev-3"]
    finally:
        store.close()


@BUFFERING
def test_an_answer_whose_turn_ended_early_still_says_so_when_its_reader_is_gone(tmp_path, unbuffered):
    script = {"parent": [[{"text": "looking it up", "tool_calls": [{"name": "read_file",
                                                                   "arguments": {"path": "notes.txt"}}]},
                          {"error": "server_error", "message": "upstream down"}]]}
    (tmp_path / "script.json").write_text(json.dumps(script))
    (tmp_path / "switchboard.yaml").write_text(f"model:\n  provider: scripted\n  script: {tmp_path / 'script.json'}\n")
    result = _to_a_gone_reader(tmp_path, unbuffered, "ask", "hi")
    assert result.returncode == 1
    assert "switchboard: the turn ended early (error): upstream down" in result.stderr
    assert _quiet(result.stderr), result.stderr


@BUFFERING
def test_a_chat_whose_reader_stops_after_the_first_line_ends_with_status_0(tmp_path, unbuffered):
    """`switchboard chat | head -1`, as the docs promise: quietly, status 0 (it was 1 when buffered)."""
    chat = subprocess.Popen(cli_process.command("chat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=_env(tmp_path, unbuffered))
    try:
        chat.stdin.write("hello\n")
        chat.stdin.flush()
        assert chat.stdout.readline().startswith("(logs go to ")
        chat.stdout.close()  # the reader is gone: the next answer cannot be printed
        chat.stdin.write("and again\n")
        chat.stdin.close()
        assert chat.wait(cli_process.TIMEOUT) == 0
        stderr = chat.stderr.read()
    finally:
        chat.kill()
        chat.wait()
        chat.stderr.close()
    assert _quiet(stderr), stderr
