"""``sys.exit("a message")`` (or ``sys.exit()``) raised by a library or a plugin in the event loop, outside
the calls that take it for their own failure, leaves the loop and ends the command as Python ends it (the
message on stderr, status 1; status 0 for none), but with the bounded wait of any stop: asyncio's runner
waited for every task, and one that ignores its cancellation held the process for ever."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.gateway.cli_process import EXIT_WITHIN, TIMEOUT, environment, write_config

EXITING_PLUGIN = textwrap.dedent("""
    import asyncio, sys

    async def stubborn():  # a background task that ignores its cancellation (a retry loop catching everything)
        while True:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                pass

    async def register(ctx):
        loop = asyncio.get_running_loop()
        loop.create_task(stubborn())
        loop.call_soon(sys.exit, {code!r})  # as a library's callback gives up: the loop's own SystemExit
        print("registered", file=sys.stderr, flush=True)
""")


@pytest.mark.timeout(TIMEOUT + EXIT_WITHIN)
@pytest.mark.parametrize("code, status, said", [("the licence server refused us", 1, "the licence server refused us\n"),
                                                (None, 0, "")])
def test_sys_exit_in_the_loop_ends_the_command_without_waiting_for_ever(tmp_path, code, status, said):
    (tmp_path / "exiting_plugin.py").write_text(EXITING_PLUGIN.format(code=code))
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "plugins": ["exiting_plugin"],
                                                "server": {"shutdown_grace_seconds": 1}})
    env = environment(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    script = Path(sys.executable).with_name("switchboard")
    proc = subprocess.Popen([str(script), "--config", str(config), "ask", "hello"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        seen = []
        while "registered" not in (line := proc.stderr.readline()):
            assert line, f"it ended before loading its plugin: {seen}"
            seen.append(line)
        try:
            proc.wait(EXIT_WITHIN)  # what it writes meanwhile is a few lines: the pipe holds them
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {EXIT_WITHIN}s after the plugin's sys.exit({code!r})")
        # Read through the stream `readline` used: `communicate` reads the pipe itself, past what it had buffered.
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # and its pipes closed
    assert proc.returncode == status, err[-2000:]
    assert [line + "\n" for line in err.splitlines() if "refused" in line] == ([said] if said else []), err[-2000:]
    assert out == "" and "Traceback" not in err and "switchboard:" not in err, err[-2000:]
    assert "it ignores cancellation" in err and "stubborn" in err  # named, as at any stop
