"""A newcomer's first session: `make run`, the terminal chat's first screen, its log, line
editing, /help, and the replies a demo list and a failing model give."""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import time
from pathlib import Path

import yaml

from agent.models.scripted import ScriptedModel
from gateway.chat_intro import chat_intro
from gateway.cli import CHAT_LOG_CAP
from gateway.replies import AUTH_REFUSED
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.cli_process import ROOT, TIMEOUT, command, environment, run, write_config

ELEVEN = "".join(f"- item {i}\n" for i in range(11))


def chat(tmp_path: Path, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                "model": {"demo": {"child_steps": 1, "step_seconds": 0}}})
    return subprocess.run(command("--config", str(config), "chat", *args), input=stdin, capture_output=True,
                          text=True, timeout=30, cwd=tmp_path, env=environment(tmp_path))


def test_the_first_screen_says_what_to_try_and_logs_go_to_a_file(tmp_path):
    result = chat(tmp_path, "hello\n")
    log = tmp_path / "state" / "chat.log"
    assert result.returncode == 0
    assert result.stdout.startswith(f"(logs go to {log}; `switchboard chat --verbose` prints them here)\n")
    assert "Try:" in result.stdout and "/quit" in result.stdout and "Compare these:" in result.stdout
    assert "offline demo model" in result.stdout
    assert " INFO " not in result.stdout + result.stderr  # nothing is logged over the prompt
    assert "gateway running with local" in log.read_text()


def test_the_first_screen_says_where_else_to_chat(tmp_path):
    result = chat(tmp_path, "hello\n")
    assert "`switchboard run`" in result.stdout and "http://127.0.0.1:8080/chat" in result.stdout
    assert "platforms.web.enabled: true" in result.stdout and "Telegram, Slack or Discord" in result.stdout


def test_verbose_prints_the_log_instead(tmp_path):
    result = chat(tmp_path, "hello\n", "--verbose")
    assert result.returncode == 0
    assert "gateway running with local" in result.stderr and "logs go to" not in result.stdout
    assert not (tmp_path / "state" / "chat.log").exists()


def test_help_lists_quit(tmp_path):
    result = chat(tmp_path, "/help\n")
    assert "/quit — Leave the chat" in result.stdout and "/stop — " in result.stdout


def test_a_demo_list_of_eleven_names_the_real_limit(tmp_path):
    result = chat(tmp_path, ELEVEN)
    assert "at most 10 run at once" in result.stdout and "Send me a list" not in result.stdout


def test_make_run_shows_progress_notices_while_a_list_is_worked_on(tmp_path):
    recipe = re.search(r"^run: .*\n\t\$\(BIN\)/switchboard (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert recipe, "the Makefile's run target changed shape"
    args = shlex.split(recipe.group(1))
    result = subprocess.run(command(*args), input="Compare these:\n- apples\n- pears\n", capture_output=True,
                            text=True, timeout=60, cwd=tmp_path,
                            env=environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state")))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "⏳ Working" in out and "running delegate_task" in out
    assert out.index("⏳ Working") < out.index("apples: completed") and "pears: completed" in out
    assert "Started 2 subagent" not in out  # inline: one answer, not an acknowledgement first
    # Updated in place on a terminal; to a pipe the line is printed once, not once a second.
    assert out.count("⏳ Working") == 1 and "✓ Done" not in out, out


def test_the_terminal_chat_edits_lines_with_readline(tmp_path):
    """Arrow keys move the cursor instead of typing ``^[[D``: "/hlp", two steps left, "e"."""
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state")})
    controller, terminal = pty.openpty()
    env = environment(tmp_path, TERM="xterm", INPUTRC="/dev/null")
    proc = subprocess.Popen(command("--config", str(config), "chat"), stdin=terminal, stdout=terminal,
                            stderr=terminal, cwd=tmp_path, env=env, start_new_session=True)
    os.close(terminal)
    seen = b""

    def read_until(needle: bytes, timeout: float = 20.0) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while needle not in seen:
            ready, _, _ = select.select([controller], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no {needle!r} on the terminal; saw {seen!r}"
            try:
                seen += os.read(controller, 4096)
            except OSError:  # the other side closed
                raise AssertionError(f"the chat ended before {needle!r}; saw {seen!r}") from None

    try:
        read_until(b"you> ")
        os.write(controller, b"/hlp\x1b[D\x1b[De\r")
        read_until(b"/quit \xe2\x80\x94 Leave the chat")
        assert b"^[[D" not in seen
        os.write(controller, b"/quit\r")
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)


async def test_a_failing_model_gives_the_chat_a_short_sentence_and_the_log_the_detail(tmp_path, gateways, caplog):
    detail = "401 - Incorrect API key provided: sk-abc***xyz"
    adapter = RecordingAdapter()
    script = {"parent": [[{"error": "auth", "message": detail}]]}
    await gateways(make_config(tmp_path), [adapter], model=ScriptedModel(script))
    await adapter.say("hello")
    await adapter.wait_for(lambda: adapter.texts("reply"))
    [reply] = adapter.texts("reply")
    assert reply == AUTH_REFUSED  # no retry can cure a wrong key: the chat is told who must fix it
    [logged] = [r.getMessage() for r in caplog.records if detail in r.getMessage() and r.name == "gateway.replies"]
    assert logged.endswith("; check model.api_key, or $OPENAI_API_KEY when model.api_key is unset")  # what to fix


def test_ask_still_prints_the_turns_error_for_the_operator(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text("parent:\n  - - error: server_error\n      message: upstream down\n")
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                "model": {"provider": "scripted", "script": str(script)}})
    result = run(tmp_path, "ask", "x", "--config", str(config))
    assert result.returncode == 1 and "upstream down" in result.stderr


def test_a_chat_log_grown_past_its_cap_is_set_aside_and_a_new_one_is_private(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    old = "an earlier session's line\n" * (CHAT_LOG_CAP // 26 + 1)
    (state / "chat.log").write_text(old)
    assert chat(tmp_path, "hello\n").returncode == 0
    assert (state / "chat.log.1").read_text() == old  # one earlier log is kept, whole
    log = (state / "chat.log").read_text()
    assert "gateway running with local" in log and "an earlier session's line" not in log
    assert (state / "chat.log").stat().st_mode & 0o777 == 0o600  # its user's alone, as the rest of the state


def test_the_first_screen_shows_the_model_url_without_its_credentials(tmp_path):
    # A terminal's first screen is shared and screenshotted: a proxy's password in model.base_url must not show.
    url = "http://alice:pw-s3cret-9@127.0.0.1:9/v1?api-key=k3y-s3cret-9"
    intro = chat_intro(make_config(tmp_path, model={"provider": "openai", "name": "m", "base_url": url}))
    assert "openai model m at http://127.0.0.1:9/v1?api-key=***" in intro  # the user name too (`shown_url`)
    assert "s3cret" not in intro


def on_a_terminal(tmp_path: Path, *args: str) -> tuple[int, str]:
    """Run a command with its output and errors on a pseudo-terminal; its status and what the terminal got."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(command(*args), stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, cwd=tmp_path,
                            env=environment(tmp_path), start_new_session=True)
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
        return proc.wait(TIMEOUT), seen.decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(controller)


def test_ask_shows_control_characters_on_a_terminal_instead_of_obeying_them(tmp_path):
    """`ask` printed the reply as written: an escape sequence in it (a model quoting a web page) cleared the
    terminal, retitled its window or wrote its clipboard, which the chat never lets a reply do."""
    evil = "a\x1b]0;pwned\x07b\x1b[2Jc"
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": evil}]]}))
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"),
                                                "model": {"provider": "scripted", "script": str(script)}})
    status, screen = on_a_terminal(tmp_path, "--config", str(config), "ask", "hi")
    assert status == 0 and "a␛]0;pwned␇b␛[2Jc\r\n" in screen and "\x1b" not in screen, repr(screen)
    piped = run(tmp_path, "--config", str(config), "ask", "hi")
    assert piped.returncode == 0 and piped.stdout == evil + "\n"  # for a script, the model's text as it is


def test_ask_shows_control_characters_of_a_models_error_on_a_terminal(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"error": "server_error", "message": "down\x1b[8m hidden"}]]}))
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "logging": {"level": "ERROR"},
                                                "model": {"provider": "scripted", "script": str(script)}})
    status, screen = on_a_terminal(tmp_path, "--config", str(config), "ask", "hi")
    assert status == 1 and "down␛[8m hidden" in screen and "\x1b" not in screen, repr(screen)


def test_ask_refuses_an_empty_message_as_a_usage_mistake(tmp_path):
    """`switchboard ask "$QUESTION"` with the variable unset sent the model an empty message (a call paid for)
    and printed what it made of nothing, with status 0."""
    for message in ("", " \n"):
        result = run(tmp_path, "ask", message)
        assert result.returncode == 2 and result.stdout == "", result
        # ask's own usage, as for a message left out, not the top level's, which lists every command instead
        assert result.stderr.splitlines()[-1] == "switchboard ask: error: the message is empty"
        assert result.stderr.startswith("usage: switchboard ask "), result.stderr
