from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import time
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools.execute_code import execute_code_toolset


def _tool(timeout: float = 10.0, limit: int = 50_000):
    (tool,) = execute_code_toolset(timeout, limit)
    return tool


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie (killed, not yet reaped by its new parent) counts as gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


async def _gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _pids_from(path: Path, within: float = 5.0) -> list[int]:
    """The pids the snippet wrote to ``path`` (a complete line, so never half-written)."""
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)
    return [int(p) for p in path.read_text().split()]


async def test_output_and_exit_code(call, workspace: Path):
    (workspace / "data.txt").write_text("from the workspace")
    code = "import sys\nprint(open('data.txt').read())\nprint('oops', file=sys.stderr)\nsys.exit(3)"
    assert await call(_tool(), {"code": code}) == "exit code: 3\nfrom the workspace\noops\n"


async def test_workspace_modules_are_importable(call, workspace: Path):
    (workspace / "helper.py").write_text("ANSWER = 42\n")
    assert await call(_tool(), {"code": "import helper; print(helper.ANSWER)"}) == "exit code: 0\n42\n"


async def test_exception_traceback_and_no_output(call):
    out = await call(_tool(), {"code": "raise ValueError('boom')"})
    assert out.startswith("exit code: 1\n") and "ValueError: boom" in out
    assert await call(_tool(), {"code": "x = 1"}) == "exit code: 0\n(no output)"


async def test_stdin_is_closed_and_environment_scrubbed(call, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_TEST_SECRET", "hunter2")
    out = await call(_tool(), {"code": "import os\nprint(os.environ.get('SWITCHBOARD_TEST_SECRET'))\ninput()"})
    assert out.startswith("exit code: 1\nNone\n") and "EOFError" in out


@pytest.mark.parametrize(("code", "reported"), [
    ("import sys; sys.exit(300)", "exit code: 44"),
    ("import os; os.kill(os.getpid(), 15)", "exit code: -15"),
    ("import os; os.kill(os.getpid(), 9)", "exit code: -9"),
])  # fmt: skip
async def test_the_snippets_own_end_is_reported_through_its_keeper(call, code: str, reported: str):
    assert await call(_tool(), {"code": code}) == f"{reported}\n(no output)"


async def test_unicode_output(call):
    assert await call(_tool(), {"code": "print('héllo ✓')"}) == "exit code: 0\nhéllo ✓\n"


async def test_output_is_capped_keeping_head_and_tail(call):
    code = "print('HEAD' + 'x' * 5000)\nraise SystemExit('TAIL')"
    out = await call(_tool(limit=200), {"code": code})
    assert out.startswith("exit code: 1\nHEAD")
    assert "[output truncated: 200 of 5010 characters shown]" in out
    assert out.endswith("TAIL\n")
    assert len(out) < 300


def _spawning(popen_args: str = "", then: str = "") -> str:
    """A snippet that starts a Python child sleeping a minute (``popen_args`` added to its Popen call),
    writes the child's pid to ``child.pid``, then runs ``then``."""
    return ("import subprocess, sys, time\n"
            f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']{popen_args})\n"
            "open('child.pid', 'w').write(f'{child.pid}\\n')\n" + then)


async def test_timeout_kills_the_process_group(call, workspace: Path):
    code = _spawning(then="print('started', flush=True)\ntime.sleep(30)")
    started = time.monotonic()
    # The timeout leaves the snippet's interpreter time to start and print, even on a loaded machine:
    # with 0.5 s it was sometimes killed before its first line, and "started" was not in the output.
    with pytest.raises(ToolError, match=r"timed out after 2 s") as info:
        await call(_tool(timeout=2), {"code": code})
    assert time.monotonic() - started < 10  # killed at the timeout, not waited for (30 s)
    assert "started" in str(info.value)
    (child,) = await _pids_from(workspace / "child.pid")
    assert await _gone(child)


async def test_background_children_do_not_outlive_a_normal_exit(call, workspace: Path):
    code = _spawning(", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL")
    assert await call(_tool(), {"code": code}) == "exit code: 0\n(no output)"
    (child,) = await _pids_from(workspace / "child.pid")
    assert await _gone(child)


async def test_a_background_child_on_the_output_pipe_does_not_hold_up_a_normal_exit(call, workspace: Path):
    # It keeps the snippet's stdout: asyncio's wait() (before 3.12) waited for the pipe as well, so the
    # run was reported timed out though it had ended at once, its exit code lost.
    code = _spawning(then="print('done')")
    started = time.monotonic()
    assert await call(_tool(timeout=20), {"code": code}) == "exit code: 0\ndone\n"
    assert time.monotonic() - started < 10
    (child,) = await _pids_from(workspace / "child.pid")
    assert await _gone(child)


async def test_a_child_that_left_the_group_cannot_stretch_the_time_limit(call, workspace: Path):
    # setsid: out of reach of the group's kill, holding the output pipe for as long as it sleeps.
    code = _spawning(", start_new_session=True", then="print('started', flush=True)\ntime.sleep(60)")
    started = time.monotonic()
    try:
        with pytest.raises(ToolError, match=r"timed out after 2 s"):
            await call(_tool(timeout=2), {"code": code})
        assert time.monotonic() - started < 15  # the limit and the output's grace, not the child's minute
    finally:
        for pid in await _pids_from(workspace / "child.pid"):
            os.kill(pid, 9)


async def test_cancellation_kills_the_subprocess(call, workspace: Path):
    code = (
        "import os, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "open('pids', 'w').write(f'{os.getpid()} {child.pid}\\n')\n"
        "time.sleep(30)"
    )
    task = asyncio.create_task(call(_tool(timeout=60), {"code": code}))
    leader, child = await _pids_from(workspace / "pids")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _alive(leader)  # killed and reaped before the cancellation propagated
    assert await _gone(child)


async def test_a_run_does_not_outlive_its_host_killed_mid_run(workspace: Path):
    # Its own session keeps the snippet out of the host's signals: killed (SIGKILL, the OOM killer, a
    # second Ctrl-C, which ends it at once), the host ran no clean-up, and the snippet and its
    # children ran on for ever.
    snippet = _spawning(then="import os\nopen('pids', 'w').write(f'{os.getpid()} {child.pid}\\n')\ntime.sleep(60)")
    host_code = ("import asyncio, sys\nfrom agent.tools.execute_code import run_python\n"
                 "asyncio.run(run_python(sys.argv[1], cwd=sys.argv[2], timeout_seconds=60, output_limit=1000))")
    host = await asyncio.create_subprocess_exec(sys.executable, "-c", host_code, snippet, str(workspace),
                                                cwd=Path(__file__).parents[3])
    try:
        pids = await _pids_from(workspace / "pids", within=15)
    finally:
        host.kill()
        await host.wait()
    try:
        for pid in pids:
            assert await _gone(pid, within=5), f"{pid} outlived its host"
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


@pytest.mark.parametrize("args", [{}, {"code": 1}, {"code": ""}, {"code": "1", "timeout": 5}])
async def test_invalid_arguments(call, args):
    with pytest.raises(ToolError, match="invalid arguments for execute_code"):
        await call(_tool(), args)


def test_factory_rejects_nonsense_limits():
    with pytest.raises(ValueError):
        execute_code_toolset(0, 100)
    with pytest.raises(ValueError):
        execute_code_toolset(1, 0)


async def test_code_too_long_for_a_command_line_is_refused_without_the_hosts_paths(call):
    with pytest.raises(ToolError) as refused:
        await call(_tool(), {"code": "#" + "x" * 200_000})
    message = str(refused.value)
    assert message.startswith("could not start Python: Argument list too long: the code (200001 characters) is "
                              "longer than one command line may be; write most of it to a file")
    assert sys.executable not in message and "/" not in message  # it named the interpreter's path


@pytest.mark.parametrize(("code", "why"), [
    ("print(1)\0", "the code holds a NUL character, which no command line can carry"),
    ("print('\ud800')", "the code holds a lone surrogate (half of a UTF-16 pair), which is no UTF-8 text"),
])  # fmt: skip
async def test_code_no_command_line_can_carry_is_a_tool_error(call, code: str, why: str):
    # The model's JSON can hold both ("\u0000", "\ud800"); they were a ValueError, logged as a tool's bug.
    with pytest.raises(ToolError, match=f"^{re.escape(f'could not start Python: {why}')}$"):
        await call(_tool(), {"code": code})
