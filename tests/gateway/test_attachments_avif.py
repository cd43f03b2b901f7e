"""gateway.attachments: an AVIF picture is named as one to a vision model's user, like a HEIC one. AVIF is HEIF
too: an encoder may give it HEIF's own major brand (``mif1``) and say AVIF among its compatible brands."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.attachments import prepare
from platforms.base import Attachment


class Files:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.max_attachment_bytes = files, 1000

    async def download(self, attachment: Attachment) -> bytes:
        return self.files[attachment.ref]


def ftyp(major: bytes, *compatible: bytes) -> bytes:
    box = b"ftyp" + major + b"\x00\x00\x00\x00" + b"".join(compatible)
    return (len(box) + 4).to_bytes(4, "big") + box + b"\x00" * 64


@pytest.mark.parametrize("data", [ftyp(b"avif", b"mif1", b"avif", b"miaf"), ftyp(b"mif1", b"mif1", b"avif"),
                                  ftyp(b"avis", b"avis", b"msf1")], ids=["avif", "mif1 with avif", "avis"])
async def test_an_avif_picture_is_named_as_one(tmp_path: Path, data: bytes) -> None:
    avif = Attachment("image", "cat.avif", "image/avif", None, "a")
    prepared = await prepare(Files({"a": data}), "telegram", (avif,), "look", workspace=tmp_path, folder="c-1",
                             supports_vision=True, clock=FakeClock())
    assert prepared.notes == ["I can't see cat\\.avif: it is an AVIF picture, and only PNG, JPEG, GIF and WebP"
                              " pictures reach me; please send it as a JPEG or PNG."]
    assert "did not reach you: cat.avif (an AVIF picture, which you cannot be shown" in prepared.content


async def test_a_heic_picture_with_heifs_own_major_brand_is_still_heic(tmp_path: Path) -> None:
    prepared = await prepare(Files({"h": ftyp(b"mif1", b"mif1", b"heic")}), "telegram",
                             (Attachment("document", "IMG_2.HEIC", "image/heic", None, "h"),), "look",
                             workspace=tmp_path, folder="c-1", supports_vision=True, clock=FakeClock())
    assert [note.split(":")[1] for note in prepared.notes] == [" it is a HEIC picture, and only PNG, JPEG, GIF and WebP"
                                                               " pictures reach me; please send it as a JPEG or PNG."]
