"""The ``execute_code`` toolset: run a Python snippet in a subprocess.

The snippet runs as ``python -E -s -u -X utf8 -c CODE`` in the workspace, in a new
session (so in its own process group), unbuffered (so stdout and stderr interleave
in the order they were written), with stdin closed and a scrubbed environment:
the gateway's API keys and bot tokens are not in the snippet's environment. It is
not a sandbox: the snippet runs as the gateway's user and can read what that user
can (the config file, the state database, /proc of the gateway), which is why chat
platforms do not get this toolset unless the operator enables it (docs/agent.md).
Whatever way the run ends — normal exit, time limit, or the awaiting task being
cancelled — the whole process group is killed afterwards, so background children
the snippet started do not outlive it. Nor does it outlive this process: the snippet
runs under a keeper (`_KEEPER`), the group's leader, which ends it and its group once
the pipe only this process holds closes, as it does however this process ends
(SIGKILL, the OOM killer, a second Ctrl-C), when no clean-up of ours runs.

Nor can the snippet take this process down by using up the machine's memory: each of its
processes may map at most ``memory_mb`` MiB of data (``RLIMIT_DATA``: the heap, anonymous
mappings, thread stacks; not shared libraries or address space only reserved), and the kernel's
OOM killer, should the machine run short all the same (many processes, each under the cap), takes
the snippet's processes first (``oom_score_adj`` 1000, Linux). Without them, a snippet allocating all
the memory there is left the OOM killer to choose, and it chooses the biggest process: the gateway,
every chat's turn with it.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import os
import signal
import sys
from typing import Any

from agent._errors import ToolError
from agent._tools import Tool, ToolContext

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_OUTPUT_LIMIT = 50_000
DEFAULT_MEMORY_MB = 1024
MIN_MEMORY_MB = 64
"""Below this, an interpreter that imports a little (or starts a few threads, 8 MiB of stack each)
fails before the snippet's first line has done anything."""
MEMORY_SETTING = "agent.execute_code_memory_mb"

# Bounds the wait for the pipe's EOF when a process escaped the group (setsid) and holds it.
_DRAIN_GRACE_SECONDS = 1.0
_EXIT_POLL_SECONDS = 0.01
"""How often the run's exit is looked for: asyncio's ``Process.wait()`` (before Python 3.12) returns
only once its output pipe has closed too, which a background child holding it delays for as long
as that child lives; the return code is set at the exit itself."""
_REAP_SECONDS = 5.0
"""How long the run's own process is waited for after its group's SIGKILL: at once, in practice."""
# Enough for Python to find its libraries, locale and temp dir; nothing secret.
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "HOME")

_KEEPER = """\
import os, resource, signal, subprocess, sys, threading
control, memory, code = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def confine():
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    cap = memory if hard == resource.RLIM_INFINITY else min(memory, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
run = subprocess.Popen([sys.executable, "-E", "-s", "-u", "-X", "utf8", "-c", code], preexec_fn=confine)
ending = threading.Event()
def end_at_eof():
    while os.read(control, 1):
        pass
    ending.set()
    run.kill()
    run.wait()
    os.killpg(0, signal.SIGKILL)
watch = threading.Thread(target=end_at_eof, daemon=True)
watch.start()
status = run.wait()
if ending.is_set():
    watch.join()
if status < 0:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        signal.signal(-status, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), -status)
os._exit(status if status >= 0 else 128 - status)
"""
"""The run's own process, ``python -I -S -c _KEEPER CONTROL MEMORY CODE``: it runs the snippet as its child,
confined to ``MEMORY`` bytes of data and first in the OOM killer's line, and exits as the snippet did (its
exit code; killed by the same signal). The confinement is set between the snippet's fork and its exec
(``preexec_fn``), which is sound here as it is not in the gateway: the keeper has no other thread yet.
Only the snippet is confined: the keeper, which must outlive it to end its group, stays as it was.
When ``CONTROL``, the read end of a pipe whose write end only `run_python` holds, reaches its end
(`run_python` is done with the run, or its process ended however it did, without a word), it kills the
snippet, reaps it, and then its whole group, itself with it. It is the group's leader, not the snippet:
the snippet's group then dies at this process's death, though nothing of ours runs then; and the snippet
it reaped is no zombie of whoever inherits orphans (the gateway itself, as a container's PID 1)."""


class _Output:
    """Merged stdout/stderr, keeping the head and tail within ``limit`` characters.

    The tail is kept because that is where a traceback ends up.
    """

    def __init__(self, limit: int) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head_limit = limit - limit // 4
        self._tail_limit = limit // 4
        self.head = ""
        self.tail = ""
        self.total = 0

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self._decoder.decode(data, final)
        self.total += len(text)
        room = self._head_limit - len(self.head)
        self.head += text[:room]
        if self._tail_limit and len(text) > room:
            self.tail = (self.tail + text[max(room, 0):])[-self._tail_limit:]

    def render(self) -> str:
        shown = len(self.head) + len(self.tail)
        if shown >= self.total:
            return self.head + self.tail
        note = f"[output truncated: {shown} of {self.total} characters shown]"
        return f"{self.head}\n{note}\n{self.tail}" if self.tail else f"{self.head}\n{note}"


async def _pump(stream: asyncio.StreamReader, out: _Output) -> None:
    # Reading in chunks instead of communicate() keeps memory bounded by `limit`
    # however much a runaway loop prints.
    while chunk := await stream.read(65536):
        out.feed(chunk)
    out.feed(b"", final=True)


async def _exited(proc: asyncio.subprocess.Process, within: float) -> bool:
    """Whether the run's own process has exited within ``within`` seconds (see `_EXIT_POLL_SECONDS`)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while proc.returncode is None:
        left = deadline - loop.time()
        if left <= 0:
            return False
        await asyncio.sleep(min(_EXIT_POLL_SECONDS, left))
    return True


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the run's process group; the leader may already have exited."""
    try:
        if hasattr(os, "killpg"):
            # The group outlives its leader while any member lives, and its id cannot be
            # reused meanwhile, so this is safe even after the leader was reaped.
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _unstarted(exc: OSError | ValueError, code: str) -> str:
    """Why ``code`` could not be run, for the model: the cause, never the host's paths (an OSError's
    text names the interpreter's, or the workspace's)."""
    if isinstance(exc, OSError):
        if exc.errno == errno.E2BIG:  # one argument may be 128 KiB at most (Linux)
            return (f"{exc.strerror}: the code ({len(code)} characters) is longer than one command line may be; "
                    "write most of it to a file in the workspace and run a short program that imports it")
        return exc.strerror or type(exc).__name__
    if "\0" in code:
        return "the code holds a NUL character, which no command line can carry"
    return "the code holds a lone surrogate (half of a UTF-16 pair), which is no UTF-8 text"


def _size(memory_mb: int) -> str:
    return f"{memory_mb // 1024} GiB" if memory_mb % 1024 == 0 else f"{memory_mb} MiB"


def _out_of_memory(returncode: int | None, output: str) -> bool:
    """Whether the snippet ended for want of memory under its cap: the cap makes an allocation
    past it fail, which Python raises as ``MemoryError``; uncaught, it ends the traceback (the
    output's tail is always kept) and the interpreter exits with 1. No signal is involved."""
    last = output.rstrip().rpartition("\n")[2]
    return returncode == 1 and (last == "MemoryError" or last.startswith("MemoryError:"))


async def run_python(
    code: str, *, cwd: os.PathLike[str] | str, timeout_seconds: float, output_limit: int,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> str:
    """Run ``code`` and report its exit code and (capped) output.

    Raises `ToolError` when Python cannot be started (a snippet too long for a command line, one
    holding a NUL), the time limit is hit, or the snippet ended on a ``MemoryError`` it did not catch
    (over its ``memory_mb`` cap, most likely; both messages carry the output). On cancellation the
    process group is killed and reaped before `CancelledError` propagates.
    """
    env = {k: v for k, v in os.environ.items() if k in _ENV_KEEP or k.startswith("LC_")}
    control, keep = os.pipe()  # neither inherited by anything else this process starts
    try:
        proc = await asyncio.create_subprocess_exec(
            # The keeper runs the snippet with -E -s: -I without -P, so the workspace stays
            # importable (the model can import modules it wrote with write_file); user
            # site-packages stay out.
            sys.executable, "-I", "-S", "-c", _KEEPER, str(control), str(memory_mb * 1024 * 1024), code,
            cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True, pass_fds=(control,),
        )  # fmt: skip
    except BaseException as exc:
        os.close(keep)
        if isinstance(exc, (OSError, ValueError)):
            raise ToolError(f"could not start Python: {_unstarted(exc, code)}") from None
        raise
    finally:
        os.close(control)
    out = _Output(output_limit)
    assert proc.stdout is not None
    pump = asyncio.create_task(_pump(proc.stdout, out))
    timed_out = False
    try:
        timed_out = not await _exited(proc, timeout_seconds)
    finally:
        # Also after a normal exit: background children die with the snippet, and then
        # nothing holds the pipe open, so the pump reaches EOF at once. One that left the
        # group (setsid) may hold it for as long as it lives: the output is read for a
        # grace, and no longer.
        os.close(keep)  # the keeper ends the snippet, reaps it, and ends the group, itself with it
        try:
            try:
                await _exited(proc, _REAP_SECONDS)  # prompt; reaped by asyncio's watcher, even when cancelled
            finally:
                _kill_group(proc)  # what the keeper left: all of it, if the snippet killed the keeper
            await asyncio.wait({pump}, timeout=_DRAIN_GRACE_SECONDS)
        finally:
            pump.cancel()
            # The pipe a child that left the group still holds is ours to close (a Process has no
            # public close): left open, it would wait for that child to end.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
    output = out.render() or "(no output)"
    if timed_out:
        raise ToolError(f"timed out after {timeout_seconds:g} s; the process was killed. Output so far:\n{output}")
    if _out_of_memory(proc.returncode, output):
        raise ToolError(f"killed: it used more than the {_size(memory_mb)} memory limit ({MEMORY_SETTING}); "
                        "the MemoryError ended it with exit code 1. Use less memory at once (work through the data "
                        f"in parts). Output:\n{output}")
    return f"exit code: {proc.returncode}\n{output}"


def execute_code_toolset(
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS, output_limit: int = DEFAULT_OUTPUT_LIMIT,
    memory_mb: int = DEFAULT_MEMORY_MB,
) -> tuple[Tool, ...]:
    """The ``execute_code`` tool, bound to a time limit, an output cap (in characters) and a memory
    cap (MiB of data per process of the snippet's)."""
    if timeout_seconds <= 0 or output_limit < 1:
        raise ValueError("timeout_seconds must be > 0 and output_limit >= 1")
    if memory_mb < MIN_MEMORY_MB:
        raise ValueError(f"memory_mb must be >= {MIN_MEMORY_MB}")

    async def execute_code(args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_python(
            args["code"], cwd=ctx.workspace, timeout_seconds=timeout_seconds, output_limit=output_limit,
            memory_mb=memory_mb,
        )

    description = (
        "Run a Python 3 program in a fresh interpreter, with the workspace as the current directory "
        f"(its modules are importable). No stdin; killed after {timeout_seconds:g} s; each process may use at most "
        f"{_size(memory_mb)} of memory. Returns the exit code and the combined stdout/stderr (at most {output_limit} "
        "characters). Print what you want to see."
    )
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 1, "description": "Python source to run."}},
        "required": ["code"],
        "additionalProperties": False,
    }
    return (Tool("execute_code", description, parameters, execute_code, "execute_code"),)
