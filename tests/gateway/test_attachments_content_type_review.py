"""Review of 91749513 (files told apart by their bytes): what the model is told of a file must not be false. An empty
file, or text in UTF-16 without its byte-order mark, was said to be "binary, not text"; a document whose first bytes
only look like a picture was neither shown nor listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.testing import FakeClock
from gateway.attachments import prepare
from gateway.file_contents import content_type, type_said
from platforms.base import Attachment


class Files:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.max_attachment_bytes = files, 10_000_000

    async def download(self, attachment: Attachment) -> bytes:
        return self.files[attachment.ref]


async def run(data: bytes, attachment: Attachment, ws: Path):
    return await prepare(Files({attachment.ref: data}), "slack", (attachment,), "look", workspace=ws, folder="c-1",
                         supports_vision=True, clock=FakeClock())


@pytest.mark.parametrize("stated", ["text/plain", "text/csv", "application/json"])
async def test_an_empty_text_file_is_not_said_to_be_binary(tmp_path: Path, stated: str) -> None:
    # Was "(stated text/plain, but the content is binary, not text, 0 bytes)": an empty file tells nothing.
    prepared = await run(b"", Attachment("document", "empty.txt", stated, 0, "f"), tmp_path)
    assert f"- attachments/c-1/empty.txt ({stated}, 0 bytes)" in prepared.content


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", ["a report,42\r\nline two\r\n", "Grüße, ça va — ok\n", "x" * 5000])
def test_utf16_text_without_its_byte_order_mark_is_text(codec: str, text: str) -> None:
    # Excel's and PowerShell's "Unicode" exports without a BOM: told "stated text/csv, but the content is binary".
    held = content_type(text.encode(codec))
    assert held is not None and held[0] == "text"
    assert type_said("text/csv", held) == "text/csv"


@settings(max_examples=300, deadline=None)
@given(units=st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=300))
def test_pcm_or_other_16_bit_data_is_not_text(units: list[int]) -> None:
    # Little-endian 16-bit numbers (sound, tables): text only when what they read as holds no control character.
    data = b"".join(u.to_bytes(2, "little") for u in units)
    held = content_type(data)
    if held is not None and held[0] == "text" and b"\x00" in data and data[:2] not in (b"\xff\xfe", b"\xfe\xff"):
        decoded = data.decode("utf-16-le", "replace") if data[1::2].count(0) else data.decode("utf-16-be", "replace")
        assert not any(ord(c) < 0x20 and c not in "\t\n\x0b\x0c\r\x1b" for c in decoded)


async def test_a_text_file_that_starts_like_a_gif_is_still_listed_for_the_model(tmp_path: Path) -> None:
    # Before the commit a document was never an image: "notes.txt (text/plain, …)" was listed with its path.
    data = b"GIF89a is the format of 1989; notes follow\n"
    prepared = await run(data, Attachment("document", "notes.txt", "text/plain", len(data), "f"), tmp_path)
    assert "attachments/c-1/notes.txt" in str(prepared.content)
