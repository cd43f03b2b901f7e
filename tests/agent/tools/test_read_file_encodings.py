"""read_file reads text that says its encoding by a byte-order mark (UTF-16 from Windows tools, UTF-32),
though half its bytes are NUL; a file with NUL bytes and no such mark is still refused as binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent._errors import ToolError
from agent.tools.file import file_toolset

READ, _, _ = file_toolset()

TEXT = "Größe;Preis\r\nÄpfel;3 €\r\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
async def test_text_with_a_byte_order_mark_is_read(call, workspace: Path, encoding):
    data = TEXT.encode(encoding)
    if encoding == "utf-16-be":  # the codec writes no mark when the order is named
        data = b"\xfe\xff" + data
    (workspace / "export.csv").write_bytes(data)
    assert await call(READ, {"path": "export.csv"}) == "Größe;Preis\nÄpfel;3 €\n"
    assert await call(READ, {"path": "export.csv", "offset": 2}) == "Äpfel;3 €\n"


async def test_nul_bytes_without_a_mark_are_still_binary(call, workspace: Path):
    (workspace / "blob.bin").write_bytes(b"ab\0cd\n")
    with pytest.raises(ToolError, match="looks like a binary file"):
        await call(READ, {"path": "blob.bin"})
