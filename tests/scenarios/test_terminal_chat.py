"""`switchboard chat` (what `make run` starts) driven through its stdin, as a newcomer would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import select
import sqlite3
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
import yaml

from gateway.host import STATE_DB
from platforms.local import LEAVE_HINT, LEAVING
from platforms.not_recorded import NOT_HANDLED_MESSAGE

ROOT = Path(__file__).resolve().parents[2]
CONTROLLING = ("import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
               "os.execv(sys.executable, [sys.executable, '-m', 'gateway.cli', *sys.argv[1:]])")
"""Runs the chat with its terminal as the controlling one, as a shell does: Ctrl-C typed there would be SIGINT."""


async def read_until(stream, needle: str, seen: list[str], timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not any(needle in line for line in seen):
            line = await stream.readline()
            assert line, f"chat ended before printing {needle!r}; saw {seen}"
            seen.append(line.decode())


async def test_chat_delegate_a_list_watch_it_finish_and_quit(tmp_path):
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"),
        "model": {"demo": {"child_steps": 2, "step_seconds": 0.2}},
        "agent": {"gateway_notify_interval": 0.2},
    }))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "--config", str(config), "chat",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=env, cwd=str(tmp_path))
    seen: list[str] = []
    try:
        proc.stdin.write(b"hello\n")
        await proc.stdin.drain()
        await read_until(proc.stdout, "offline demo model", seen)
        proc.stdin.write(b"Compare these:\n- apples\n- pears\n")  # pasted at once: one message
        await proc.stdin.drain()
        await read_until(proc.stdout, "Started 2 subagent", seen)
        await read_until(proc.stdout, "pears: completed", seen)
        assert any("apples: completed" in line for line in seen)
        proc.stdin.write(b"/agents\n")
        await proc.stdin.drain()
        await read_until(proc.stdout, "results delivered", seen)  # the background task and its subagents
        proc.stdin.write(b"/quit\n")
        await proc.stdin.drain()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


class Terminal:
    """`switchboard chat` on a pseudo-terminal, read as a person would see it."""

    def __init__(self, tmp_path: Path, *, plugin_dir: Path | None = None, **settings: object) -> None:
        """``plugin_dir``: a folder of plugin modules, put on ``PYTHONPATH``."""
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state"), **settings}))
        path = os.pathsep.join(str(p) for p in (ROOT, plugin_dir) if p is not None)
        env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": path, "TERM": "xterm", "INPUTRC": "/dev/null"}
        self.controller, terminal = pty.openpty()
        self.at_start = termios.tcgetattr(self.controller)  # what the chat must give back, echo and all
        self.proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, "--config", str(config), "chat"],
                                     stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
                                     start_new_session=True)
        os.close(terminal)
        self.seen = b""

    def read_until(self, needle: bytes, *, after: bytes | None = None, timeout: float = 20) -> None:
        """Until `needle` is on screen (past the first `after`, when given)."""
        deadline = time.monotonic() + timeout
        while needle not in (self.seen if after is None else self.seen.partition(after)[2]):
            ready, _, _ = select.select([self.controller], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"no {needle!r} on the terminal; saw {self.seen!r}"
            chunk = b""
            with contextlib.suppress(OSError):  # EIO: the chat has ended and closed the terminal
                chunk = os.read(self.controller, 4096)
            assert chunk, f"the chat ended before {needle!r}; saw {self.seen!r}"
            self.seen += chunk

    def wait(self, timeout: float = 20) -> int:
        """The exit status, once everything the chat wrote has been read."""
        status = self.proc.wait(timeout)
        while select.select([self.controller], [], [], 0)[0]:
            try:
                chunk = os.read(self.controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk
        return status

    def hang_up(self) -> None:
        """Close the terminal, as closing its window does: the chat gets SIGHUP, and EIO for what it reads or writes."""
        os.close(self.controller)
        self.controller = -1

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.controller >= 0:
            os.close(self.controller)


def working_terminal(tmp_path, child_steps: int) -> Terminal:
    """A chat whose turn delegates two children of ``child_steps`` half-second steps, once it shows
    it is working (a shutdown grace of a minute, which leaving must not sit out)."""
    chat = Terminal(tmp_path, model={"demo": {"child_steps": child_steps, "step_seconds": 0.5}},
                    delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2},
                    server={"shutdown_grace_seconds": 60})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"Compare these:\r- apples\r- pears\r")
        chat.read_until(b"Working")
    except BaseException:
        chat.close()
        raise
    return chat


@pytest.mark.parametrize("leave", [b"/quit\r", b"\x04"], ids=["quit", "ctrl-d"])
def test_leaving_leaves_no_prompt_for_the_shell_to_write_after(tmp_path, leave):
    """The shell's prompt comes next, at the start of a clean line, not after a stale ``you> ``."""
    chat = Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"hello\r")
        chat.read_until(b"you> ", after=b"[demo] I am")  # the reply, and the prompt again under it
        os.write(chat.controller, leave)
        assert chat.wait() == 0
        last_line = chat.seen.decode().rsplit("\n", 1)[-1]
        assert last_line.rsplit("\x1b[2K", 1)[-1].strip("\r") == "", repr(chat.seen[-200:])
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()


def test_a_plugin_that_did_not_load_is_named_before_the_first_prompt(tmp_path):
    """A plugin that failed to load was told of in chat.log alone: the chat started as if all was well,
    and a command the plugin would have added went to the model as an ordinary message."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "shouty.py").write_text("raise RuntimeError('SHOUTY_URL is not set (key sk-0123456789abcdefghij)')\n")
    chat = Terminal(tmp_path, plugin_dir=plugins, plugins=["shouty", "nowhere_plugin"])
    try:
        chat.read_until(b"you> ")
        start = chat.seen.partition(b"you> ")[0].decode()
        assert ("plugin shouty did not load: import failed: RuntimeError: SHOUTY_URL is not set (key ***)"
                f" (at {plugins / 'shouty.py'}:1)") in start, start
        assert ("plugin nowhere_plugin did not load: import failed: ModuleNotFoundError: No module named"
                " 'nowhere_plugin'") in start, start
        assert "Traceback" not in start and "sk-0123" not in start
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0
    finally:
        chat.close()


def test_ctrl_c_drops_the_typed_line_and_pressed_twice_at_an_empty_prompt_leaves(tmp_path):
    """Ctrl-C was SIGINT, which stopped the whole chat at once, saying nothing, whatever was typed."""
    chat = Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"half typed\x03")
        chat.read_until(b"you> ", after=b"half typed^C")  # gone, as in a shell: a fresh prompt under it
        os.write(chat.controller, b"hello\r")
        chat.read_until(b"you> ", after=b"[demo] I am")
        assert b"you> hello" in chat.seen.partition(b"half typed^C")[2]  # the line started afresh
        os.write(chat.controller, b"\x03")  # at an empty prompt: says how to leave
        chat.read_until(LEAVE_HINT.encode())
        os.write(chat.controller, b"\x03")
        assert chat.wait() == 0
        assert b"Traceback" not in chat.seen
        last_line = chat.seen.decode().rsplit("\n", 1)[-1]
        assert last_line.rsplit("\x1b[2K", 1)[-1].strip("\r") == "", repr(chat.seen[-200:])
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()


def test_ctrl_c_during_a_turn_stops_the_turn_and_the_chat_goes_on(tmp_path):
    """Ctrl-C while the agent works is /stop: it was SIGINT, which ended the chat, silent for the
    shutdown grace while the turn ran on."""
    chat = Terminal(tmp_path, model={"demo": {"child_steps": 40, "step_seconds": 0.5}},
                    delegation={"gateway_mode": "inline"}, agent={"gateway_notify_interval": 0.2})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"Compare these:\r- apples\r- pears\r")
        chat.read_until(b"Working")
        os.write(chat.controller, b"\x03")
        chat.read_until(b"Stopped the running turn")
        os.write(chat.controller, b"hello\r")
        chat.read_until(b"you> ", after=b"[demo] I am")
        assert LEAVE_HINT.encode() not in chat.seen  # a turn's Ctrl-C is not one of the two that leave
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0
    finally:
        chat.close()


def test_ctrl_d_pressed_just_after_a_line_still_leaves(tmp_path):
    """Between two reads the terminal was back in the kernel's line mode (50 ms and more, while the chat
    looked for a pasted line and handed the line over), which turns a Ctrl-D into a NUL byte for the
    next read: pressed just after Enter, it was lost and the chat stayed."""
    chat = Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"hello\r")
        time.sleep(0.01)  # after the line, before the next read (wherever it lands, it must count)
        os.write(chat.controller, b"\x04")
        assert chat.wait() == 0, chat.seen[-200:]
        assert termios.tcgetattr(chat.controller) == chat.at_start  # the shell's line mode and echo are back
    finally:
        chat.close()


def test_ctrl_d_pressed_while_the_chat_starts_still_leaves(tmp_path):
    """Pressed before the chat had the terminal (as it loaded), Ctrl-D waited in the kernel's line mode as an
    end of input, which line mode turned off made a NUL byte for readline: lost, and the chat stayed."""
    chat = Terminal(tmp_path)
    try:
        os.write(chat.controller, b"\x04")  # at once: the chat is still loading (and if not, it is a key)
        assert chat.wait() == 0, chat.seen[-200:]
        assert b"Traceback" not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()


@pytest.mark.parametrize("leave", [b"/quit\r", b"\x04"], ids=["quit", "ctrl-d"])
def test_leaving_during_a_turn_says_so_at_once_and_ctrl_c_then_stops_it(tmp_path, leave):
    """Leaving while the agent worked said nothing and sat for the shutdown grace (here a minute), and
    Ctrl-C meanwhile killed the chat (status 130) instead of stopping the turn."""
    chat = working_terminal(tmp_path, child_steps=400)
    try:
        os.write(chat.controller, leave)
        chat.read_until(LEAVING.encode())
        os.write(chat.controller, b"\x03")
        chat.read_until(b"Stopped the running turn", after=LEAVING.encode())
        assert chat.wait(timeout=20) == 0  # the chat left as soon as the turn had ended
        assert b"Traceback" not in chat.seen and LEAVE_HINT.encode() not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start  # Ctrl-C is SIGINT again, echo is on
    finally:
        chat.close()


def test_leaving_during_a_turn_waits_only_until_it_ends(tmp_path):
    chat = working_terminal(tmp_path, child_steps=4)
    try:
        os.write(chat.controller, b"\x04")
        chat.read_until(LEAVING.encode())
        assert chat.wait(timeout=20) == 0
        assert b"pears: completed" in chat.seen.partition(LEAVING.encode())[2]  # its answer, then the end
    finally:
        chat.close()


def test_a_chat_that_cannot_take_a_message_ends_and_gives_the_terminal_back(tmp_path):
    """The chat could not journal a message (its database locked by another process past the busy timeout, as
    a full disk refuses it): its reader ended, and with it every way out, as Ctrl-C is a key there (the
    terminal's interrupt character off) and nothing read it."""
    chat = Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        with contextlib.closing(sqlite3.connect(tmp_path / "state" / STATE_DB, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")  # the write lock, held until the chat has ended
            os.write(chat.controller, b"hello\r")
            chat.read_until(b"(The chat has ended: OperationalError: database is locked)")
            db.execute("ROLLBACK")
        assert chat.wait() == 0
        assert termios.tcgetattr(chat.controller) == chat.at_start  # Ctrl-C is Ctrl-C again, echo is on
    finally:
        chat.close()


def test_a_message_the_gateway_fails_on_is_answered_so_and_the_chat_goes_on(tmp_path):
    """A fault a message trips (here a trigger's error, no full disk) would fail alike at every try: the chat
    ended for it, every later message lost with it. It is answered that it could not be handled."""
    chat = Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        with contextlib.closing(sqlite3.connect(tmp_path / "state" / STATE_DB)) as db:
            db.execute("CREATE TRIGGER refuse BEFORE INSERT ON gateway_inbox WHEN NEW.payload LIKE '%an odd message%'"
                       " BEGIN SELECT RAISE(ABORT, 'a fault this message trips'); END")
            db.commit()
        os.write(chat.controller, b"an odd message\r")
        chat.read_until(NOT_HANDLED_MESSAGE.encode())
        os.write(chat.controller, b"hello\r")
        chat.read_until(b"[demo]", after=NOT_HANDLED_MESSAGE.encode())
        os.write(chat.controller, b"/quit\r")
        assert chat.wait() == 0
        assert b"The chat has ended" not in chat.seen
    finally:
        chat.close()


def test_piped_input_gets_replies_without_prompts(tmp_path):
    """Nobody types at a pipe: a prompt would only be glued to the replies (``you> you> agent> …``)."""
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state")}))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(config), "chat"],
                            input="hello\n", capture_output=True, text=True, timeout=30, cwd=tmp_path,
                            env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("agent> [demo] I am") for line in lines), result.stdout
    assert "you> " not in result.stdout



def test_the_first_screen_names_the_mode_the_chats_session_keeps_not_only_the_configured_one(tmp_path):
    """`make run` pins its chat's session inline; a plain `switchboard chat` afterwards goes on with that
    session, still inline until /new, and its first screen says so (it said "background", the configuration)."""
    config = tmp_path / "switchboard.yaml"
    # The demo's children pause a second a step by default: inline, the piped list waited for all of it.
    config.write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state"), "model": {"demo": {"step_seconds": 0.1}}}))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}

    def chat(text: str, *settings: str) -> str:
        result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(config), "chat", *settings],
                                input=text, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        return result.stdout

    first = chat("hello\n", "--set", "delegation.gateway_mode=inline")
    assert "Here delegated work finishes inside the turn" in first and "began so" not in first, first
    again = chat("Compare these:\n- apples\n- pears\n")
    assert "Here delegated work finishes inside the turn" in again, again
    assert ("This chat's session began so and keeps it; /new starts one that delegates in the background, "
            "as configured.") in again
    assert "Started 2 subagent" not in again and "apples: completed" in again  # inline indeed: one answer
    renewed = chat("/new\n")
    assert "Delegation here is background." in renewed, renewed
    assert "Here delegated work runs in the background" in chat("")


def test_piped_input_that_ends_is_answered_whole_before_the_chat_ends(tmp_path):
    """`printf 'Compare these:…' | switchboard chat`: the end of a pipe is the end of the questions, not
    of the answers; the chat ends once its work is done and shown (here past a grace of 0 s, which a
    signal's stop would give the turn, and past its background children's acknowledgement)."""
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"),
        "server": {"shutdown_grace_seconds": 0},
        "model": {"demo": {"child_steps": 2, "step_seconds": 0.2}},
    }))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(config), "chat"],
                            input="Compare these:\n- apples\n- pears\n", capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "Started 2 subagent" in result.stdout, result.stdout
    assert "apples: completed" in result.stdout and "pears: completed" in result.stdout, result.stdout


def test_a_question_asked_after_piped_input_ended_is_not_waited_for(tmp_path):
    """Nobody can answer once the pipe has ended: the model goes on at once instead of the chat
    waiting out ``agent.clarify_timeout_seconds`` for an answer that cannot come."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[
        {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which one?", "choices": ["a", "b"]}}]},
        {"text": "went on without an answer"},
    ]]}))
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"), "model": {"provider": "scripted", "script": str(script)},
        "agent": {"clarify_timeout_seconds": 600},
    }))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(config), "chat"],
                            input="pick one for me\n", capture_output=True, text=True, timeout=40, cwd=tmp_path,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert "Which one?" in result.stdout and "went on without an answer" in result.stdout, result.stdout
    assert "No answer within" not in result.stdout


GRACE = 120
"""The stop's grace in the tests of a reader that goes away: a chat that waited it out would fail them."""
GONE_WITHIN = 30
"""Seconds a chat whose output has gone may take to end: a loaded machine's stop, well under `GRACE`."""


def chat_on_pipes(tmp_path: Path, **config: object) -> subprocess.Popen:
    (tmp_path / "switchboard.yaml").write_text(yaml.safe_dump({"state_dir": str(tmp_path / "state"), **config}))
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONUNBUFFERED", None)  # buffered, as by default: the chat's greeting is its first write
    return subprocess.Popen([sys.executable, "-m", "gateway.cli", "--config", str(tmp_path / "switchboard.yaml"),
                             "chat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path, env=env)


def greeted(chat: subprocess.Popen) -> None:
    while b"docs/platforms/" not in (line := chat.stdout.readline()):  # the greeting's last line
        assert line, "the chat ended before its greeting"


def ends_quietly_once_its_output_is_gone(chat: subprocess.Popen, text: bytes, within: float) -> float:
    """Close the chat's output, send ``text``, and return the seconds the chat then took to end
    (failing past ``within``), with no error and no traceback."""
    try:
        chat.stdout.close()
        gone = time.monotonic()
        chat.stdin.write(text)
        chat.stdin.flush()
        chat.wait(within)
        took = time.monotonic() - gone
        errors = chat.stderr.read().decode()
        assert "Traceback" not in errors and "could not start" not in errors, errors
        return took
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
        chat.stdin.close()
        chat.stderr.close()


@pytest.mark.parametrize("gone", ["at once", "after the greeting"])
def test_a_reader_of_the_output_that_goes_away_ends_the_chat_quietly_and_loses_no_reply(tmp_path, gone):
    """`switchboard chat | head -1`: once nothing reads the replies the chat ends, while its input is still
    open, with no error (it had started) and no traceback, at once: a reply it could not show is not
    tried again for the stop's grace (it was, backing off, for all of it), but shown next time (a message
    it never read, the reader gone before its greeting, is not a reply owed)."""
    chat = chat_on_pipes(tmp_path, server={"shutdown_grace_seconds": GRACE})
    if gone == "after the greeting":
        greeted(chat)
    took = ends_quietly_once_its_output_is_gone(chat, b"hello\n", 60 if gone == "at once" else GONE_WITHIN)
    if gone == "after the greeting":  # "hello" was read: its reply is owed
        assert took < GONE_WITHIN
        shown, _ = chat_on_pipes(tmp_path).communicate(b"", timeout=30)
        assert b"agent> [demo] I am" in shown, shown
        # The greeting first, then what the last chat could not show: not printed above it.
        assert shown.index(b"Switchboard terminal chat") < shown.index(b"agent> [demo] I am"), shown


def test_a_reader_that_goes_away_during_a_turn_gets_its_answer_next_time(tmp_path):
    """The output goes while a turn still runs (its interim message cannot be shown): the turn gets the
    stop's grace to finish, its answer is journaled, and the chat ends as soon as it has, not at the end
    of the grace; the next chat shows both messages."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[
        {"tool_calls": [{"name": "list_files", "arguments": {}}], "text": "looking first"},
        {"sleep": 2, "text": "the answer, after a while"},
    ]]}))
    model = {"provider": "scripted", "script": str(script)}
    chat = chat_on_pipes(tmp_path, server={"shutdown_grace_seconds": GRACE}, model=model)
    greeted(chat)
    assert ends_quietly_once_its_output_is_gone(chat, b"look around\n", GONE_WITHIN) < GONE_WITHIN
    shown, _ = chat_on_pipes(tmp_path, model=model).communicate(b"", timeout=30)
    assert b"looking first" in shown and b"the answer, after a while" in shown, shown


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "during a turn"])
def test_a_terminal_that_hangs_up_ends_the_chat_quietly_and_its_answer_is_shown_next_time(tmp_path, busy):
    """Its window closed (or its ssh connection dropped): writing there failed with EIO, which the chat took
    for a fault of its own rather than for output nobody reads, as a closed pipe's: tracebacks in chat.log,
    and the turn's answer tried again for all the stop's grace (here a minute) instead of kept for the next chat."""
    chat = working_terminal(tmp_path, child_steps=4) if busy else Terminal(tmp_path)
    try:
        chat.read_until(b"you> ")
        chat.hang_up()
        assert chat.proc.wait(GONE_WITHIN) == 0
    finally:
        chat.close()
    log = (tmp_path / "state" / "chat.log").read_text()
    assert "Traceback" not in log and " ERROR " not in log, log
    if busy:
        env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
        shown = subprocess.run([sys.executable, "-m", "gateway.cli", "--config", str(tmp_path / "switchboard.yaml"),
                                "chat"], input="", capture_output=True, text=True, timeout=30, cwd=tmp_path, env=env)
        assert "apples: completed" in shown.stdout and "pears: completed" in shown.stdout, shown.stdout


@pytest.mark.parametrize("leave", [b"/quit\r", b"\x04"], ids=["quit", "ctrl-d"])
def test_leaving_while_a_question_waits_does_not_wait_for_its_answer(tmp_path, leave):
    """Nothing typed is read once the chat is left (Ctrl-C aside): the chat said it was leaving, then sat
    for the question's timeout (ten minutes by default) before the model could go on and the turn end."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[
        {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which one?", "choices": ["a", "b"]}}]},
        {"text": "went on without an answer"},
    ]]}))
    chat = Terminal(tmp_path, model={"provider": "scripted", "script": str(script)},
                    agent={"clarify_timeout_seconds": 600})
    try:
        chat.read_until(b"you> ")
        os.write(chat.controller, b"pick one for me\r")
        chat.read_until(b"you> ", after=b"Which one?")
        os.write(chat.controller, leave)
        chat.read_until(b"went on without an answer", after=LEAVING.encode())
        assert chat.wait() == 0
        assert b"No answer within" not in chat.seen
        assert termios.tcgetattr(chat.controller) == chat.at_start
    finally:
        chat.close()
