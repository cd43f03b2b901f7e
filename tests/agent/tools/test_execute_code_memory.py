"""execute_code cannot take the gateway down with it by using up the machine's memory: each process
of the snippet's has a data cap (``agent.execute_code_memory_mb``), and the kernel's OOM killer takes
the snippet first. Without them, a snippet allocating all the memory there is left the OOM killer to
choose its victim, and it chose the biggest process, the gateway, every chat's turn with it."""

from __future__ import annotations

import asyncio
import resource
import sys
import time
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent._tools import ToolRegistry
from agent.tools import register_builtin_tools
from agent.tools.execute_code import DEFAULT_MEMORY_MB, execute_code_toolset
from gateway.config import ConfigError
from gateway.host import AgentHost
from gateway.testing import make_config

# 400 MiB in 10 MiB chunks, each written (bytearray zeroes it): past a 200 MiB cap halfway through.
HOG = "chunks = []\nfor _ in range(40):\n    chunks.append(bytearray(10 * 2**20))\nprint('all of it')"


def _tool(memory_mb: int = DEFAULT_MEMORY_MB, limit: int = 50_000):
    (tool,) = execute_code_toolset(20, limit, memory_mb)
    return tool


async def test_a_snippet_past_its_memory_cap_is_ended_with_a_message_naming_the_cap(call):
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        await call(_tool(memory_mb=200), {"code": "print('started', flush=True)\n" + HOG})
    assert time.monotonic() - started < 10  # ended at the cap, not at the time limit (20 s)
    text = str(info.value)
    assert text.startswith("killed: it used more than the 200 MiB memory limit (agent.execute_code_memory_mb)")
    assert "exit code 1" in text and "started" in text and text.rstrip().endswith("MemoryError")
    assert "all of it" not in text


async def test_the_message_names_a_whole_number_of_gib_so(call):
    with pytest.raises(ToolError, match=r"^killed: it used more than the 1 GiB memory limit"):
        await call(_tool(), {"code": "bytearray(2 * 2**30)"})


async def test_the_cap_is_found_past_a_long_output(call):
    # The output is cut to its head and tail: the traceback's last line is in the tail.
    code = "print('x' * 5000)\n" + HOG
    with pytest.raises(ToolError, match=r"^killed: it used more than the 200 MiB") as info:
        await call(_tool(memory_mb=200, limit=200), {"code": code})
    assert "[output truncated" in str(info.value)


async def test_the_snippet_and_its_children_are_capped_and_the_oom_killers_first_choice(call):
    if not Path("/proc/self/oom_score_adj").exists():
        pytest.skip("no /proc/self/oom_score_adj (not Linux)")
    own = Path("/proc/self/oom_score_adj").read_text().strip()
    code = ("import resource, subprocess, sys\n"
            "print(open('/proc/self/oom_score_adj').read().strip(), resource.getrlimit(resource.RLIMIT_DATA))\n"
            "subprocess.run([sys.executable, '-c', 'import resource; "
            "print(open(\"/proc/self/oom_score_adj\").read().strip(), resource.getrlimit(resource.RLIMIT_DATA))'])")
    cap = 200 * 2**20
    line = f"1000 ({cap}, {cap})\n"
    assert await call(_tool(memory_mb=200), {"code": code}) == f"exit code: 0\n{line}{line}"
    # Only the snippet's: this process (the gateway) is not made a likelier victim, nor capped.
    assert Path("/proc/self/oom_score_adj").read_text().strip() == own
    assert resource.getrlimit(resource.RLIMIT_DATA) != (cap, cap)


async def test_a_lower_hard_limit_of_the_gateways_own_is_kept():
    # The operator's own lower limit (systemd's LimitDATA=) stays: raising it would fail without privilege
    # (the snippet never ran: its keeper's preexec_fn raised), and with privilege undo the operator's.
    code = "import resource; print(resource.getrlimit(resource.RLIMIT_DATA))"
    hard = 300 * 2**20
    before = resource.getrlimit(resource.RLIMIT_DATA)
    if before[1] != resource.RLIM_INFINITY and before[1] < hard:
        pytest.skip("the test process already has a lower hard RLIMIT_DATA")
    # A child inherits the gateway's limit: set it in a throwaway process, not in this one.
    code_host = (
        "import asyncio, resource, sys\nfrom agent.tools.execute_code import run_python\n"
        f"resource.setrlimit(resource.RLIMIT_DATA, ({hard}, {hard}))\n"
        "print(asyncio.run(run_python(sys.argv[1], cwd='.', timeout_seconds=20, output_limit=1000, memory_mb=1024)))"
    )
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code_host, code, cwd=Path(__file__).parents[3], stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(host.communicate(), 30)
    assert host.returncode == 0
    assert out.decode() == f"exit code: 0\n({hard}, {hard})\n\n"


async def test_many_threads_fit_under_the_default_cap(call):
    # The cap counts data, not address space (RLIMIT_AS): glibc reserves 64 MiB of address space
    # per thread's malloc arena, and 60 threads that allocate a little failed under a 1 GiB RLIMIT_AS.
    code = ("import threading\nbarrier = threading.Barrier(60, timeout=5)\n"
            "def work():\n    data = [bytearray(200_000) for _ in range(5)]\n    barrier.wait()\n"
            "threads = [threading.Thread(target=work) for _ in range(60)]\n"
            "for t in threads: t.start()\nfor t in threads: t.join()\nprint('threads ok')")
    assert await call(_tool(), {"code": code}) == "exit code: 0\nthreads ok\n"


@pytest.mark.parametrize(("code", "expected"), [
    ("try:\n    bytearray(400 * 2**20)\nexcept MemoryError:\n    print('caught')", "exit code: 0\ncaught\n"),
    ("print('MemoryError')", "exit code: 0\nMemoryError\n"),
    ("raise SystemExit('not a MemoryError')", "exit code: 1\nnot a MemoryError\n"),
])  # fmt: skip
async def test_only_an_uncaught_memory_error_is_reported_as_the_cap(call, code: str, expected: str):
    assert await call(_tool(memory_mb=200), {"code": code}) == expected


def test_the_cap_is_in_the_description_and_has_a_floor():
    assert "at most 200 MiB of memory" in _tool(memory_mb=200).description
    assert "at most 1 GiB of memory" in _tool().description
    with pytest.raises(ValueError, match="memory_mb"):
        execute_code_toolset(10, 100, 8)


async def test_the_setting_reaches_the_tool(tmp_path):
    assert make_config(tmp_path).agent.execute_code_memory_mb == 1024
    with pytest.raises(ConfigError, match="execute_code_memory_mb"):
        make_config(tmp_path, agent={"execute_code_memory_mb": 8})
    host = AgentHost(make_config(tmp_path, agent={"execute_code_memory_mb": 300}))
    try:
        assert "at most 300 MiB of memory" in host.tools.get("execute_code").description
    finally:
        await host.close()
    registry = ToolRegistry()
    register_builtin_tools(registry, execute_code_memory_mb=2048)
    assert "at most 2 GiB of memory" in registry.get("execute_code").description
