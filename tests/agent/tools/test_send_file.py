"""``send_file``: only what the chat's own file tools may read reaches the host, and a file the
platform cannot take is a tool error naming the path (and the limit)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools import FileScope
from agent.tools.send_file import FileToSend, open_to_send, send_file_toolset

(SEND,) = send_file_toolset()
LIMIT = 1000


class Host:
    """A host's ``send_file`` service that checks sizes as the gateway does, against ``LIMIT``."""

    def __init__(self) -> None:
        self.sent: list[tuple[FileToSend, int]] = []

    async def __call__(self, file: FileToSend) -> str:
        opened, size = open_to_send(file, LIMIT, "testchat")
        opened.close()
        self.sent.append((file, size))
        return "queued"


@pytest.fixture
def host() -> Host:
    return Host()


async def refusal(call, args, services) -> str:
    with pytest.raises(ToolError) as refused:
        await call(SEND, args, services)
    return str(refused.value)


async def test_a_file_reaches_the_host_resolved_with_its_caption(call, workspace: Path, host: Host):
    (workspace / "out").mkdir()
    (workspace / "out" / "report.csv").write_text("a,b\n1,2\n")
    assert await call(SEND, {"path": "out/../out/report.csv", "caption": "*Q3*"}, {"send_file": host}) == "queued"
    file, size = host.sent[0]
    assert (file.path, file.shown, file.caption, size) == (
        workspace.resolve() / "out" / "report.csv", "out/../out/report.csv", "*Q3*", 8)
    await call(SEND, {"path": "out/report.csv", "caption": "  "}, {"send_file": host})
    assert host.sent[1][0].caption is None
    assert SEND.toolset == "file"


async def test_without_the_service(call, workspace: Path):
    (workspace / "a.txt").write_text("x")
    assert await refusal(call, {"path": "a.txt"}, {}) == "Sending files is not available in this session."


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd"])
async def test_nothing_outside_the_workspace(call, workspace: Path, host: Host, path: str):
    (workspace.parent / "outside.txt").write_text("secret")
    assert "is outside the workspace" in await refusal(call, {"path": path}, {"send_file": host})
    assert host.sent == []


async def test_not_another_chats_attachments(call, workspace: Path, host: Host):
    for owner in ("alice", "bob"):
        (workspace / "attachments" / "tg" / owner).mkdir(parents=True)
        (workspace / "attachments" / "tg" / owner / "door-code.txt").write_text(owner)
    os.symlink(workspace / "attachments" / "tg" / "bob" / "door-code.txt", workspace / "link.txt")
    services = {"send_file": host, "file_scope": FileScope(private=("attachments/tg",), own="attachments/tg/alice")}
    for path in ("attachments/tg/bob/door-code.txt", "link.txt", "attachments/tg/alice/../bob/door-code.txt"):
        assert "is not this session's to use" in await refusal(call, {"path": path}, services)
    assert host.sent == []
    await call(SEND, {"path": "attachments/tg/alice/door-code.txt"}, services)
    assert len(host.sent) == 1


async def test_missing_directory_empty_and_too_large_name_the_path(call, workspace: Path, host: Host):
    (workspace / "folder").mkdir()
    (workspace / "empty.csv").write_bytes(b"")
    (workspace / "big.bin").write_bytes(b"x" * (LIMIT + 1))
    (workspace / "exact.bin").write_bytes(b"x" * LIMIT)
    services = {"send_file": host}
    assert await refusal(call, {"path": "nope.csv"}, services) == "'nope.csv' does not exist; nothing was sent"
    assert "'folder' is a directory" in await refusal(call, {"path": "folder"}, services)
    assert "'empty.csv' is empty (0 bytes)" in await refusal(call, {"path": "empty.csv"}, services)
    assert await refusal(call, {"path": "big.bin"}, services) == (
        "'big.bin' is 1,001 bytes, larger than the 1,000 bytes a file sent on testchat may be; nothing was sent")
    assert host.sent == []
    await call(SEND, {"path": "exact.bin"}, services)
    assert host.sent[0][1] == LIMIT


async def test_a_fifo_is_refused_without_opening_it(call, workspace: Path, host: Host):
    os.mkfifo(workspace / "pipe")
    assert "'pipe' is not a regular file" in await refusal(call, {"path": "pipe"}, {"send_file": host})


@pytest.mark.parametrize("args", [{}, {"path": ""}, {"path": "a", "caption": 3}, {"path": "a", "to": "x"}])
async def test_invalid_arguments(call, args):
    with pytest.raises(ToolError, match="invalid arguments for send_file"):
        await call(SEND, args)
