"""read_file on huge files and odd offsets: a clear answer, read no further than it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent._errors import ToolError
from agent._tools import ToolContext
from agent.tools.file import MAX_READ_CHARS, file_toolset, read_file

READ = file_toolset()[0]


def _bytes_read() -> int:
    """What this thread has read with read() so far (read_file is run here, not in a worker thread)."""
    for line in Path("/proc/thread-self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/thread-self/io")


def test_the_start_of_a_file_of_one_huge_line_is_shown_without_reading_it_all(workspace: Path):
    # The rest of the cut line was skipped before its start was handed on: all 64 MB read to show 100,000 characters.
    with open(workspace / "minified.json", "wb") as f:
        for _ in range(64):
            f.write(b"x" * (1 << 20))
    ctx = ToolContext(session=None, call_id="c1", workspace=workspace)
    before = _bytes_read()
    out = read_file({"path": "minified.json"}, ctx)
    assert _bytes_read() - before < 8 << 20
    assert out == "x" * MAX_READ_CHARS + (f"\n[truncated: line 1 is longer than {MAX_READ_CHARS} characters; "
                                          "only its start is shown]")


async def test_offsets_far_past_the_end_say_so(workspace: Path, call):
    (workspace / "a.txt").write_text("one\ntwo\n")
    assert await call(READ, {"path": "a.txt", "offset": 10**18}) == \
        "[the file has 2 lines; offset 1000000000000000000 is past the end]"
    assert await call(READ, {"path": "a.txt", "offset": 10**18, "limit": 10**18}) == \
        "[the file has 2 lines; offset 1000000000000000000 is past the end]"


async def test_a_whole_number_sent_as_a_float_reads_as_the_number(workspace: Path, call):
    (workspace / "big.txt").write_text("".join(f"{'z' * 99}\n" for _ in range(2000)))
    out = await call(READ, {"path": "big.txt", "offset": 2.0, "limit": 3000.0})
    assert out.endswith("[truncated at 100000 characters: lines 2-1001 shown; read on with offset=1002]")


@pytest.mark.parametrize(("args", "said"), [
    ({"offset": -1}, "invalid arguments for read_file (offset): -1 is less than the minimum of 1"),
    ({"offset": "3"}, "invalid arguments for read_file (offset): '3' is not of type 'integer'"),
    ({"offset": 1.5}, "invalid arguments for read_file (offset): 1.5 is not of type 'integer'"),
    ({"limit": 0}, "invalid arguments for read_file (limit): 0 is less than the minimum of 1"),
])
async def test_bad_offsets_are_refused_naming_them(workspace: Path, call, args, said):
    (workspace / "a.txt").write_text("one\n")
    with pytest.raises(ToolError) as refused:
        await call(READ, {"path": "a.txt", **args})
    assert str(refused.value) == said
