from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent import _durable
from agent._errors import ToolError
from agent._tools import ToolContext
from agent.tools import file as file_tools
from agent.tools.file import file_toolset, resolve_in_workspace
from tests import swaps
from tests.capped_writes import ROOT, run_capped

READ, LIST, WRITE = file_toolset()


def test_toolset_shape():
    assert [t.name for t in (READ, LIST, WRITE)] == ["read_file", "list_files", "write_file"]
    assert {t.toolset for t in (READ, LIST, WRITE)} == {"file"}


@pytest.mark.parametrize("path", ["a.txt", "sub/../a.txt", "./sub/b", ".", ""])
def test_resolve_inside(workspace: Path, path: str):
    got = resolve_in_workspace(workspace, path)
    assert got == (workspace / path).resolve()


def test_resolve_absolute_inside(workspace: Path):
    assert resolve_in_workspace(workspace, str(workspace / "x")) == workspace.resolve() / "x"


@pytest.mark.parametrize("path", ["..", "../x", "sub/../../x", "/etc/passwd"])
def test_resolve_outside_refused(workspace: Path, path: str):
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(workspace, path)


def test_resolve_sibling_with_common_prefix_refused(workspace: Path):
    (workspace.parent / "workspace2").mkdir()
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(workspace, str(workspace.parent / "workspace2" / "f"))


def test_symlink_outside_refused(workspace: Path, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    (workspace / "link").symlink_to(secret)
    (workspace / "dirlink").symlink_to(tmp_path)
    for path in ("link", "dirlink/secret.txt", "dirlink/new.txt"):
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(workspace, path)


async def test_tools_refuse_escapes(call, workspace: Path, tmp_path: Path):
    (tmp_path / "secret.txt").write_text("s3cret")
    (workspace / "link").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(READ, {"path": "link"})
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(READ, {"path": "../secret.txt"})
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(WRITE, {"path": str(tmp_path / "evil.txt"), "content": "x"})
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(WRITE, {"path": "link", "content": "overwritten"})
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(LIST, {"path": ".."})
    assert not (tmp_path / "evil.txt").exists()
    assert (tmp_path / "secret.txt").read_text() == "s3cret"


@pytest.mark.parametrize("path", ["a\0b", "x" * 300, "/".join(["d" * 200] * 30), "loop"],
                         ids=["nul", "long-name", "long-path", "symlink-loop"])
async def test_unusable_paths_are_tool_errors_without_the_workspace_location(call, workspace: Path, path: str):
    if path == "loop":
        (workspace / "loop").symlink_to("back")
        (workspace / "back").symlink_to("loop")
    for tool, args in ((READ, {"path": path}), (WRITE, {"path": path, "content": "x"}), (LIST, {"path": path})):
        with pytest.raises(ToolError, match="is not a usable path") as refused:
            await call(tool, args)
        assert str(workspace) not in str(refused.value)
    assert sorted(p.name for p in workspace.iterdir()) == (["back", "loop"] if path == "loop" else [])


async def test_symlink_inside_is_followed(call, workspace: Path):
    (workspace / "real.txt").write_text("hello\n")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert await call(READ, {"path": "alias.txt"}) == "hello\n"


async def test_write_then_read(call, workspace: Path):
    out = await call(WRITE, {"path": "deep/er/notes.md", "content": "one\ntwo\nthree\n"})
    assert out == "wrote 14 characters to deep/er/notes.md"
    assert (workspace / "deep/er/notes.md").read_text() == "one\ntwo\nthree\n"
    assert await call(READ, {"path": "deep/er/notes.md"}) == "one\ntwo\nthree\n"
    assert await call(READ, {"path": "deep/er/notes.md", "offset": 2}) == "two\nthree\n"
    assert await call(READ, {"path": "deep/er/notes.md", "offset": 2, "limit": 1}) == "two\n"
    assert "offset 9 is past the end" in await call(READ, {"path": "deep/er/notes.md", "offset": 9})


async def test_write_overwrites_and_refuses_directory(call, workspace: Path):
    (workspace / "f").write_text("old")
    await call(WRITE, {"path": str(workspace / "f"), "content": "new"})
    assert (workspace / "f").read_text() == "new"
    (workspace / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await call(WRITE, {"path": "d", "content": "x"})


async def test_read_errors(call, workspace: Path):
    with pytest.raises(ToolError, match="does not exist"):
        await call(READ, {"path": "missing.txt"})
    (workspace / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await call(READ, {"path": "d"})
    (workspace / "blob.bin").write_bytes(b"\x89PNG\0\0\x01")
    with pytest.raises(ToolError, match="binary"):
        await call(READ, {"path": "blob.bin"})


async def test_read_truncates_with_note(call, workspace: Path, monkeypatch):
    monkeypatch.setattr(file_tools, "MAX_READ_CHARS", 100)
    (workspace / "big.txt").write_text("".join(f"line {i:03}\n" for i in range(1, 51)))  # 9 chars each
    out = await call(READ, {"path": "big.txt"})
    assert out.startswith("line 001\n") and "line 011\n" in out and "line 012" not in out
    assert out.endswith("[truncated at 100 characters: lines 1-11 shown; read on with offset=12]")
    assert (await call(READ, {"path": "big.txt", "offset": 12})).startswith("line 012\n")


async def test_read_over_long_line(call, workspace: Path, monkeypatch):
    monkeypatch.setattr(file_tools, "MAX_READ_CHARS", 100)
    (workspace / "long.txt").write_text("short\n" + "x" * 1000 + "\nafter\n")
    out = await call(READ, {"path": "long.txt", "offset": 2})
    assert out == "x" * 100 + "\n[truncated: line 2 is longer than 100 characters; only its start is shown]"
    # The skipped remainder of the long line does not shift later line numbers.
    assert await call(READ, {"path": "long.txt", "offset": 3}) == "after\n"


async def test_list_files(call, workspace: Path, tmp_path: Path):
    (workspace / "src/pkg").mkdir(parents=True)
    (workspace / "src/pkg/mod.py").write_text("")
    (workspace / "src/main.py").write_text("")
    (workspace / "README.md").write_text("")
    (workspace / "outside").symlink_to(tmp_path)
    assert (await call(LIST, {})).splitlines() == ["README.md", "outside@", "src/"]
    assert (await call(LIST, {"path": "src"})).splitlines() == ["src/main.py", "src/pkg/"]
    assert (await call(LIST, {"pattern": "**/*.py"})).splitlines() == ["src/main.py", "src/pkg/mod.py"]
    assert (await call(LIST, {"pattern": "src/*.py"})).splitlines() == ["src/main.py"]
    assert (await call(LIST, {"path": "src", "pattern": "*.py"})).splitlines() == ["src/main.py"]
    assert await call(LIST, {"pattern": "*.rs"}) == "(no matching entries)"


@pytest.mark.parametrize(("pattern", "listed"), [
    ("**", ["a.b.txt", "aab", "src/", "src/deep/", "src/deep/x.py", "src/main.py"]),
    ("src/**", ["src/deep/", "src/deep/x.py", "src/main.py"]),
    ("**/x.py", ["src/deep/x.py"]),
    ("src/**/*.py", ["src/deep/x.py", "src/main.py"]),
    ("*a*b", ["aab"]),
    ("*.*.*", ["a.b.txt"]),
    ("a?b", ["aab"]),
    ("[!s]*", ["a.b.txt", "aab"]),
    ("s[r-s]c/m*n.py", ["src/main.py"]),
    ("**/**/x.py", ["src/deep/x.py"]),
])  # fmt: skip
async def test_list_files_patterns(call, workspace: Path, pattern: str, listed: list[str]):
    (workspace / "src/deep").mkdir(parents=True)
    for name in ("a.b.txt", "aab", "src/main.py", "src/deep/x.py"):
        (workspace / name).write_text("")
    out = await call(LIST, {"pattern": pattern})
    assert out.splitlines() == listed


@pytest.mark.parametrize(("pattern", "listed"), [
    ("[z-a]*", []),  # a range backwards holds nothing, as fnmatch reads it; the regex was an error
    ("[!z-a]ab", ["aab"]),
    ("[a-cz-a]ab", ["aab"]),
    ("[+--]*", ["+x", "-x"]),  # '--' is a range here, not a regex set difference (a FutureWarning)
    ("[&&a]*", ["&x", "a.b.txt", "aab"]),
    ("[^]x", ["^x"]),
])  # fmt: skip
async def test_list_files_character_classes_read_as_fnmatch_reads_them(call, workspace: Path, pattern: str,
                                                                       listed: list[str]):
    for name in ("a.b.txt", "aab", "+x", "-x", "&x", "^x"):
        (workspace / name).write_text("")
    out = await call(LIST, {"pattern": pattern})
    assert out.splitlines() == (listed or ["(no matching entries)"])


def test_list_files_takes_no_time_over_a_pattern_of_many_stars(workspace: Path):
    # One regex for the pattern tried every way of sharing the name among the stars: hours for
    # this one, with the GIL held, so every chat of the gateway stood still. Run apart, to be killed.
    (workspace / ("a" * 60)).write_text("")
    code = (
        "import asyncio, pathlib, sys\n"
        "from agent._tools import ToolContext\n"
        "from agent.tools.file import file_toolset\n"
        "ctx = ToolContext(session=None, call_id='c', workspace=pathlib.Path(sys.argv[1]), services={})\n"
        "print(asyncio.run(file_toolset()[1].invoke({'pattern': '*a' * 25 + 'b'}, ctx)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(workspace)], capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(no matching entries)"


async def test_list_files_takes_no_time_over_a_pattern_of_many_double_stars(call, workspace: Path):
    # Each '**' was a step for every path tried, over all its segments: this pattern took some
    # 40 ms a path, ten seconds here, a minute for a few thousand files.
    (workspace / "src").mkdir()
    for i in range(250):
        (workspace / "src" / f"f{i}.py").write_text("")
    started = time.monotonic()
    assert await call(LIST, {"pattern": "**/" * 100_000 + "f7.py"}) == "src/f7.py"
    assert time.monotonic() - started < 2


async def test_list_files_looks_at_so_many_entries_and_says_it_stopped(call, workspace: Path, monkeypatch):
    # A pattern few entries match walked the whole tree however large: minutes of a thread no
    # interrupt stops, for a workspace holding a node_modules or two.
    monkeypatch.setattr(file_tools, "MAX_WALK_ENTRIES", 8)  # the top folder's 3, a's 5: none of b's
    for folder in ("a", "b", "c"):
        (workspace / folder).mkdir()
        for i in range(5):
            (workspace / folder / f"f{i}.txt").write_text("")
    stopped = ("[listing stopped after looking at 8 entries: the tree is too large to search whole, and entries "
               "further on are not shown; narrow the path or pattern]")
    opened = _open_descriptors()
    assert (await call(LIST, {"pattern": "**/*.py"})).splitlines() == ["(no matching entries)", stopped]
    assert (await call(LIST, {"pattern": "**"})).splitlines() == [
        "a/", "a/f0.txt", "a/f1.txt", "a/f2.txt", "a/f3.txt", "a/f4.txt", "b/", "c/", stopped]
    assert _open_descriptors() == opened
    # Within the limit, all of it, and no note.
    assert (await call(LIST, {"path": "a", "pattern": "*.txt"})).splitlines() == [f"a/f{i}.txt" for i in range(5)]


async def test_list_does_not_follow_symlinks_out(call, workspace: Path, tmp_path: Path):
    (tmp_path / "secret.txt").write_text("")
    (workspace / "outside").symlink_to(tmp_path)
    out = await call(LIST, {"pattern": "**"})
    assert "secret" not in out and "outside@" in out
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(LIST, {"path": "outside"})


async def test_list_caps_entries(call, workspace: Path, monkeypatch):
    monkeypatch.setattr(file_tools, "MAX_LIST_ENTRIES", 5)
    for i in range(8):
        (workspace / f"f{i}").write_text("")
    lines = (await call(LIST, {})).splitlines()
    assert len(lines) == 6 and lines[-1].startswith("[listing truncated: first 5 entries shown")


async def test_list_not_a_directory(call, workspace: Path):
    (workspace / "f").write_text("")
    with pytest.raises(ToolError, match="not a directory"):
        await call(LIST, {"path": "f"})


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (READ, {}),
        (READ, {"path": "a", "offset": 0}),
        (READ, {"path": "a", "limit": "10"}),
        (READ, {"path": "a", "bogus": 1}),
        (LIST, {"path": 3}),
        (WRITE, {"path": "a"}),
        (WRITE, {"path": "a", "content": None}),
    ],
)
async def test_invalid_arguments(call, tool, args):
    with pytest.raises(ToolError, match=f"invalid arguments for {tool.name}"):
        await call(tool, args)


def test_file_io_runs_off_the_loop():
    # Plain functions run in a worker thread (see Tool.invoke); async handlers would block the loop.
    assert not any(inspect.iscoroutinefunction(t.handler) for t in file_toolset())


async def test_special_files_refused(call, workspace: Path):
    os.mkfifo(workspace / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await call(READ, {"path": "pipe"})
    with pytest.raises(ToolError, match="not a regular file"):
        await call(WRITE, {"path": "pipe", "content": "x"})


async def test_empty_file(call, workspace: Path):
    (workspace / "empty").write_text("")
    assert await call(READ, {"path": "empty"}) == ""
    assert "the file has 0 lines" in await call(READ, {"path": "empty", "offset": 2})


# --- a path changed between its check and its open ----------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the workspace holding secret.txt and, for a folder swapped, notes.txt."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("token=s3cret\n")
    (folder / "notes.txt").write_text("token=s3cret\n")
    return folder


SWAPS = {
    "symlink": lambda target, outside: swaps.symlink_to(target, outside / "secret.txt"),
    "folder symlink": swaps.folder_symlink_to,
    "fifo": lambda target, outside: swaps.fifo(target),
}
REFUSALS = {"symlink": "changed after it was checked: a symlink is now where a folder or the file was",
            "folder symlink": "changed after it was checked: a symlink is now where a folder or the file was",
            "fifo": "is not a regular file"}


async def _swapped(call, tool, args, target: Path, change) -> str:
    """``call`` with ``change`` made after the tool checked the path, just before it opens it; the
    tool's error (a refusal is what is expected)."""
    check = file_tools._resolve

    def checked_then_changed(*a, **kw):
        resolved = check(*a, **kw)
        swaps.swap_at_next_open(change)
        return resolved

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(file_tools, "_resolve", checked_then_changed)
        try:
            async with asyncio.timeout(5):
                await call(tool, args)
        except ToolError as refused:
            return str(refused)
        finally:
            swaps.disarm()
            swaps.unblock(target)
    pytest.fail(f"{tool.name} did what it was asked, through the path changed after its check")


@pytest.mark.parametrize("swap", SWAPS)
async def test_read_refuses_a_path_changed_after_its_check(call, workspace: Path, outside: Path, swap):
    (workspace / "docs").mkdir()
    target = workspace / "docs" / "notes.txt"
    target.write_text("mine\n")
    refusal = await _swapped(call, READ, {"path": "docs/notes.txt"}, target, lambda: SWAPS[swap](target, outside))
    assert refusal.startswith("'docs/notes.txt' ") and REFUSALS[swap] in refusal and "s3cret" not in refusal


@pytest.mark.parametrize("swap", SWAPS)
async def test_write_refuses_a_path_changed_after_its_check(call, workspace: Path, outside: Path, swap):
    (workspace / "docs").mkdir()
    target = workspace / "docs" / "notes.txt"
    target.write_text("mine\n")
    refusal = await _swapped(call, WRITE, {"path": "docs/notes.txt", "content": "overwritten"}, target,
                             lambda: SWAPS[swap](target, outside))
    assert refusal.startswith("'docs/notes.txt' ") and REFUSALS[swap] in refusal
    assert {f.name: f.read_text() for f in outside.iterdir()} == {"secret.txt": "token=s3cret\n",
                                                                  "notes.txt": "token=s3cret\n"}


async def test_write_makes_no_folder_through_a_folder_swapped_for_a_symlink(call, workspace: Path, outside: Path):
    (workspace / "docs").mkdir()
    target = workspace / "docs" / "new" / "deeper" / "notes.txt"
    refusal = await _swapped(call, WRITE, {"path": "docs/new/deeper/notes.txt", "content": "x"}, target,
                             lambda: swaps.folder_symlink_to(workspace / "docs" / "new", outside))
    assert "changed after it was checked" in refusal
    assert sorted(f.name for f in outside.iterdir()) == ["notes.txt", "secret.txt"]  # no folder new/ made there


async def test_a_hard_link_is_read_but_not_written_through(call, workspace: Path, outside: Path):
    # Reading changes nothing, and only someone who may read and write a file can link it (Linux's
    # protected_hardlinks); writing through it would change every name of it, one outside here.
    os.link(outside / "secret.txt", workspace / "linked.txt")
    assert await call(READ, {"path": "linked.txt"}) == "token=s3cret\n"
    with pytest.raises(ToolError, match="'linked.txt' has 2 hard links, .* nothing was written"):
        await call(WRITE, {"path": "linked.txt", "content": "overwritten"})
    assert (outside / "secret.txt").read_text() == "token=s3cret\n"


async def test_list_refuses_a_folder_swapped_for_a_symlink_after_its_check(call, workspace: Path, outside: Path):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "notes.txt").write_text("mine\n")
    refusal = await _swapped(call, LIST, {"path": "docs"}, workspace / "docs" / "notes.txt",
                             lambda: swaps.folder_symlink_to(workspace / "docs" / "notes.txt", outside))
    assert refusal == ("'docs' changed after it was checked: a symlink is now where a folder was, "
                       "and list_files follows none")


# --- a disk that refuses the write -------------------------------------------------------------


WRITE_CAPPED = """
from pathlib import Path
from agent._errors import ToolError
from agent._tools import ToolContext
from agent.tools.file import write_file
ctx = ToolContext(session=None, call_id="call-1", workspace=Path(given["workspace"]), services={})
result = []
for path in ("notes.md", "new/notes.md"):
    try:
        result.append(write_file({"path": path, "content": "rewritten " * 1000}, ctx))
    except ToolError as refused:
        result.append(str(refused))
"""


def test_a_write_the_disk_refuses_leaves_the_file_as_it_was_not_cut_short(workspace: Path):
    # A full disk, for real: the child's writes fail past 4 KB. Cut short, the old notes would be lost and
    # the model, reading the file back, would take the half it finds for what it wrote.
    (workspace / "notes.md").write_text("precious\n")
    (workspace / "notes.md").chmod(0o640)
    told = run_capped(WRITE_CAPPED, limit=4096, workspace=str(workspace))
    assert told == ["cannot write 'notes.md': File too large; nothing was written, the file is as it was",
                    "cannot write 'new/notes.md': File too large; nothing was written, the file is as it was"]
    assert (workspace / "notes.md").read_text() == "precious\n"
    assert sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*")) == ["new", "notes.md"]
    assert run_capped(WRITE_CAPPED, limit=1 << 20, workspace=str(workspace))[0] == "wrote 10000 characters to notes.md"
    assert (workspace / "notes.md").stat().st_mode & 0o777 == 0o640  # replaced, yet with its permissions


# --- a write a crash cut short ------------------------------------------------------------------


CRASH_BEFORE_RENAME = """
import os, signal, sys
from pathlib import Path
from agent._tools import ToolContext
from agent.tools.file import write_file
os.replace = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGKILL)  # the process dies right there
write_file({"path": "notes.md", "content": "half way"}, ToolContext(None, "call-1", Path(sys.argv[1]), {}))
"""


def test_what_a_crash_left_beside_a_file_goes_with_a_later_write_there_and_nothing_else(workspace: Path):
    (workspace / "notes.md").write_text("precious\n")
    crashed = subprocess.run([sys.executable, "-c", CRASH_BEFORE_RENAME, str(workspace)], cwd=ROOT)
    assert crashed.returncode == -9
    [left] = [p for p in workspace.iterdir() if p.name != "notes.md"]
    assert left.name.startswith(".write_file.") and left.read_text() == "half way"
    old = time.time() - _durable.LEFTOVER_SECONDS - 60
    os.utime(left, (old, old))
    in_flight = workspace / f".write_file.{'0' * 32}.part"  # another turn's write, under way: recent
    in_flight.write_text("being written")
    users = [workspace / ".write_file.notes.part", workspace / "draft.part", workspace / f".write_file.{'a' * 32}.parts"]
    for path in users:
        path.write_text("the user's")
        os.utime(path, (old, old))
    sub = workspace / "sub"
    sub.mkdir()
    elsewhere = sub / left.name  # beside no file this write touches
    elsewhere.write_text("left")
    os.utime(elsewhere, (old, old))

    ctx = ToolContext(None, "call-2", workspace, {})
    assert file_tools.write_file({"path": "other.md", "content": "x"}, ctx) == "wrote 1 characters to other.md"
    assert not left.exists() and (workspace / "notes.md").read_text() == "precious\n"
    assert in_flight.exists() and all(path.exists() for path in users) and elsewhere.exists()


# --- a file made read-only -------------------------------------------------------------------


WRITE_AS_USER = """
import sys
from pathlib import Path
from agent._errors import ToolError
from agent._tools import ToolContext
from agent.tools.file import write_file
ctx = ToolContext(session=None, call_id="call-1", workspace=Path(sys.argv[1]), services={})
try:
    print(write_file({"path": sys.argv[2], "content": "overwritten"}, ctx))
except ToolError as refused:
    print(refused)
"""


def test_a_file_made_read_only_is_not_replaced(workspace: Path):
    # An operator's chmod a-w keeps the agent from changing a file, as it kept the write that opened it
    # from doing so: a rename over it needs only the folder to be writable, and the file kept its
    # read-only mode, new text and all.
    (workspace / "locked.md").write_text("as the operator left it\n")
    (workspace / "locked.md").chmod(0o444)
    prefix: list[str] = []
    if os.geteuid() == 0:  # root writes whatever the mode: run as an unprivileged owner of the same files
        prefix = ["unshare", "--map-user=1000", "--map-group=1000"]
        if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
            pytest.skip("needs user namespaces as root")
    done = subprocess.run([*prefix, sys.executable, "-c", WRITE_AS_USER, str(workspace), "locked.md"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cannot write 'locked.md': Permission denied"
    assert (workspace / "locked.md").read_text() == "as the operator left it\n"


# --- a file another user owns ----------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user (CI runs as root)")
async def test_a_file_written_as_root_keeps_its_owner_and_group(call, workspace: Path):
    # Renamed over it, the new text was root's: a gateway running as root (a container) took a user's
    # file from them, who could then no longer change their own notes.
    notes = workspace / "notes.md"
    notes.write_text("the user's\n")
    os.chown(notes, 1234, 1234)
    notes.chmod(0o2750)  # setgid: changing the owner clears it, so the mode is set after
    assert await call(WRITE, {"path": "notes.md", "content": "the model's\n"}) == "wrote 12 characters to notes.md"
    info = notes.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (1234, 1234, 0o2750)
    assert notes.read_text() == "the model's\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="runs root without the right to give files away")
@pytest.mark.parametrize("prefix", [
    ["setpriv", "--inh-caps=-chown", "--bounding-set=-chown"],  # root without CAP_CHOWN: EPERM
    ["unshare", "--map-root-user"],  # root of a user namespace that maps no uid 1234 (rootless containers): EINVAL
], ids=["without CAP_CHOWN", "in a user namespace"])
def test_a_writer_that_may_not_give_the_file_its_owner_back_writes_it_all_the_same(workspace: Path, prefix):
    (workspace / "notes.md").write_text("the user's\n")
    (workspace / "notes.md").chmod(0o666)  # theirs, and one anyone may write
    os.chown(workspace / "notes.md", 1234, 1234)
    if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip(f"{prefix[0]} is not allowed here")
    done = subprocess.run([*prefix, sys.executable, "-c", WRITE_AS_USER, str(workspace), "notes.md"],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "wrote 11 characters to notes.md"  # as before: the writer's file now, said nowhere
    assert (workspace / "notes.md").read_text() == "overwritten"
    assert (workspace / "notes.md").stat().st_uid == 0


# --- list_files walking a tree ----------------------------------------------------------------


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_list_files_walks_a_tree_a_thousand_folders_deep(call, workspace: Path):
    # write_file alone can make one (a path of 'a/' * 1500); a walk that recursed per folder (os.fwalk)
    # failed every '**' listing of the workspace, every chat's, with a RecursionError.
    deep = "a/" * 1500 + "x"
    folder = workspace
    for _ in range(1500):  # os.makedirs recurses too
        folder = folder / "a"
        folder.mkdir()
    (workspace / deep).write_text("")
    opened = _open_descriptors()
    try:
        assert await call(LIST, {"pattern": "**/x"}) == deep
        assert _open_descriptors() == opened
    finally:  # shutil.rmtree, which cleans tmp_path up, recurses too
        (workspace / deep).unlink()
        while folder != workspace:
            folder.rmdir()
            folder = folder.parent


async def test_list_files_leaves_no_folder_open(call, workspace: Path, monkeypatch):
    for folder in ("a/b/c", "a/d", "e"):
        (workspace / folder).mkdir(parents=True)
        (workspace / folder / "f").write_text("")
    opened = _open_descriptors()
    assert len((await call(LIST, {"pattern": "**"})).splitlines()) == 8
    monkeypatch.setattr(file_tools, "MAX_LIST_ENTRIES", 3)  # the walk given up half-way
    assert len((await call(LIST, {"pattern": "**"})).splitlines()) == 4
    assert _open_descriptors() == opened


class _SwapsAFolderForAFifo:
    """A ``file_scope`` whose listing filter, meeting ``folder`` in the walk, swaps it for a FIFO: after
    the scan that found it a folder, before the walk enters it."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.swapped = folder, False

    def check(self, target: Path, root: Path, path: str) -> None:
        pass

    def hidden_in(self, root: Path):
        def hidden(entry: Path) -> bool:
            if entry == self.folder and not self.swapped:
                self.swapped = True
                self.folder.rename(self.folder.with_name("was-a-folder"))
                os.mkfifo(self.folder)
            return False
        return hidden


async def test_list_files_enters_no_folder_swapped_for_a_fifo_while_it_walks(call, workspace: Path):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "notes.txt").write_text("")
    scope = _SwapsAFolderForAFifo(workspace / "docs")
    try:
        async with asyncio.timeout(5):  # opened as a folder is, the FIFO waited for a writer for ever
            out = await call(LIST, {"pattern": "**"}, {"file_scope": scope})
    finally:
        swaps.unblock(workspace / "docs")
    assert scope.swapped and out == "docs/"  # listed as the folder it was when the walk found it
