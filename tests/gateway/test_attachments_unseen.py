"""gateway.attachments: files the platform has no copy of, and HEIC pictures, are told to the user and the model
(the platform side end to end: tests/scenarios/test_slack_external_files.py, tests/scenarios/test_heic_photos.py)."""

from __future__ import annotations

from pathlib import Path

from agent.testing import FakeClock
from gateway.attachments import prepare
from platforms.base import Attachment, KeptElsewhere, NotFound

HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 64


class Files:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.max_attachment_bytes = files, 1000

    async def download(self, attachment: Attachment) -> bytes:
        if attachment.ref == "drive":
            raise KeptElsewhere(f"{attachment.name} is a link to a file kept outside the platform")
        if attachment.ref not in self.files:
            raise NotFound(f"{attachment.name} is no longer on the platform")
        return self.files[attachment.ref]


async def run(files: Files, attachment: Attachment, ws: Path, *, vision: bool = True):
    return await prepare(files, "discord", (attachment,), "look", workspace=ws, folder="c-1", supports_vision=vision,
                         clock=FakeClock())


async def test_a_file_kept_outside_the_platform_asks_for_the_file_itself_not_the_same_again(tmp_path: Path) -> None:
    prepared = await run(Files({}), Attachment("document", "Q3 budget", None, None, "drive"), tmp_path)
    assert prepared.notes == ["I couldn't download Q3 budget: it is a link to a file kept outside discord, which has no"
                              " copy of it for me; please upload the file itself."]
    assert prepared.content.endswith("did not reach you: Q3 budget (a link to a file kept outside discord)]")


async def test_a_file_gone_from_the_platform_is_asked_for_again(tmp_path: Path) -> None:
    """An expired Discord link or a deleted Telegram file: sending it again is the way, and no link is in it."""
    prepared = await run(Files({}), Attachment("document", "Q3 budget", None, None, "gone"), tmp_path)
    assert prepared.notes == ["I couldn't download Q3 budget from discord; please send it again."]
    assert prepared.content.endswith("did not reach you: Q3 budget (failed)]")


async def test_a_heic_picture_is_named_whatever_it_is_called_and_stays_listed(tmp_path: Path) -> None:
    prepared = await run(Files({"h": HEIC}), Attachment("image", "photo.jpg", "image/jpeg", None, "h"), tmp_path)
    assert prepared.notes == ["I can't see photo\\.jpg: it is a HEIC picture, and only PNG, JPEG, GIF and WebP"
                              " pictures reach me; please send it as a JPEG or PNG."]
    # Typed image/jpeg by the platform, but its bytes are what the model is told.
    assert ("- attachments/c-1/photo.jpg (stated image/jpeg, but the content is a HEIC picture, unknown size)"
            in prepared.content)
    assert "did not reach you: photo.jpg (a HEIC picture, which you cannot be shown" in prepared.content


async def test_without_vision_a_heic_picture_is_a_file_like_any_picture(tmp_path: Path) -> None:
    # A model without vision is shown no picture: a PNG is a path to it as well, and no note is sent of that.
    prepared = await run(Files({"h": HEIC}), Attachment("document", "IMG_1.HEIC", "image/heic", None, "h"), tmp_path,
                         vision=False)
    assert prepared.notes == [] and "did not reach you" not in prepared.content
