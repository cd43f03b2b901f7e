"""gateway.attachments: every picture is decoded before the model is told of it, with vision or without, and at
most `MAX_DECODED` of one message. A model without vision was given, as a picture's path for a vision tool, a note
that only starts like a GIF and a JPEG cut short (the note said taken as a picture); a message of many pictures the
decoder refuses had them all decoded; and a picture of too many pixels is refused by its size, never decoded."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from agent.images import MAX_IMAGES, VISION_HINT
from gateway import attachments
from gateway.attachments import MAX_DECODED
from platforms.base import Attachment
from tests.gateway.test_attachments_undecodable_and_plain import (
    CUT_JPEG,
    GIF_NOTE,
    LISTED,
    MISSED,
    PICTURES,
    pictures,
    run,
    text_of,
)
from tests.pictures import PNG


def png_of_size(width: int, height: int) -> bytes:
    """A PNG's header saying ``width``×``height``, over a few bytes of pixels: decoded, it is gigabytes of them."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(1000))) + chunk(b"IEND", b""))


BOMB = png_of_size(20000, 20000)
BOMB_WHY = "has too many pixels to decode safely: Image size (400000000 pixels) exceeds limit of 178956970 pixels"
JUNK = b"\xff\xd8\xff" + bytes(range(256))


async def test_without_vision_only_pictures_that_decode_are_given_as_pictures(tmp_path: Path) -> None:
    files = {"note": GIF_NOTE, "cut": CUT_JPEG, "png": PNG}
    sent = (Attachment("document", "notes.txt", "text/plain", len(GIF_NOTE), "note"),
            Attachment("image", "photo.jpg", "image/jpeg", len(CUT_JPEG), "cut"),
            Attachment("document", "scan.pdf", "application/pdf", len(CUT_JPEG), "cut"),
            Attachment("document", "report.pdf", "application/pdf", len(PNG), "png"),
            Attachment("image", "good.png", "image/png", len(PNG), "png"))
    prepared = await run(files, sent, tmp_path, vision=False)
    content = text_of(prepared.content)
    assert pictures(prepared.content) == 0
    # Was: "[Pictures … taken as the pictures they are: notes.txt (stated text/plain, but the content is a GIF
    # image); scan.pdf (…)]" and an "[Image attached at: …]" line for each of the five.
    assert f"{PICTURES}report.pdf (stated application/pdf, but the content is a PNG image)]" in content
    assert ("[Image attached at: attachments/c-1/report.pdf]\n[Image attached at: attachments/c-1/good.png]\n"
            f"{VISION_HINT}") in content
    assert content.count("Image attached at") == 2
    assert (f"{LISTED}- attachments/c-1/notes.txt (text/plain, 43 bytes)\n- attachments/c-1/scan.pdf (stated"
            " application/pdf, but the content is a JPEG image; it cannot be decoded as an image: OSError: image file"
            " is truncated") in content
    assert f"{MISSED}photo.jpg (cannot be decoded as an image: OSError: image file is truncated" in content


@pytest.mark.parametrize("vision", [True, False])
async def test_a_picture_of_too_many_pixels_is_refused_by_its_size_and_named(tmp_path: Path, vision: bool) -> None:
    sent = (Attachment("image", "bomb.png", "image/png", len(BOMB), "bomb"),
            Attachment("document", "bomb-2.png", "image/png", len(BOMB), "bomb"))
    prepared = await run({"bomb": BOMB}, sent, tmp_path, vision=vision)
    content = text_of(prepared.content)
    assert pictures(prepared.content) == 0 and "Image attached at" not in content
    assert f"- attachments/c-1/bomb-2.png (image/png; it {BOMB_WHY}" in content
    assert f"{MISSED}bomb.png ({BOMB_WHY}" in content


@pytest.mark.parametrize("vision", [True, False])
async def test_no_more_than_max_decoded_pictures_of_a_message_are_decoded(tmp_path: Path, vision: bool) -> None:
    assert MAX_DECODED >= 10 > MAX_IMAGES  # a Telegram album's or a Discord message's files are all decoded
    sent = (*(Attachment("document", f"junk-{i:02}.jpg", "image/jpeg", len(JUNK), "junk")
              for i in range(MAX_DECODED + 3)),
            Attachment("image", "good.png", "image/png", len(PNG), "png"))
    prepared = await run({"junk": JUNK, "png": PNG}, sent, tmp_path, vision=vision)
    listing = text_of(prepared.content).split(LISTED, 1)[1].split("]", 1)[0].splitlines()
    refused = "image/jpeg; it cannot be decoded as an image: UnidentifiedImageError: cannot identify image file, 259"
    assert listing == [*(f"- attachments/c-1/junk-{i:02}.jpg ({refused} bytes)" for i in range(MAX_DECODED)),
                       *(f"- attachments/c-1/junk-{i:02}.jpg (image/jpeg, 259 bytes)"
                         for i in range(MAX_DECODED, MAX_DECODED + 3)),
                       "- attachments/c-1/good.png (image/png, 69 bytes)"]
    assert pictures(prepared.content) == 0 and MISSED not in text_of(prepared.content)


async def test_pictures_refused_within_the_bound_give_their_places(tmp_path: Path) -> None:
    sent = (*(Attachment("document", f"junk-{i}.jpg", "image/jpeg", len(JUNK), "junk") for i in range(2)),
            *(Attachment("image", f"p{i}.png", "image/png", len(PNG), "png") for i in range(MAX_IMAGES)))
    prepared = await run({"junk": JUNK, "png": PNG}, sent, tmp_path)
    assert pictures(prepared.content) == MAX_IMAGES


async def test_without_vision_a_picture_gone_since_it_was_decoded_did_not_reach_the_model(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    real = attachments.first_turn_content_async

    async def deleted_first(goal, images, **options):
        if not options["supports_vision"]:  # the paths' turn, after the decoding: a file tool removed one meanwhile
            (tmp_path / "attachments/c-1/a.png").unlink()
        return await real(goal, images, **options)

    monkeypatch.setattr(attachments, "first_turn_content_async", deleted_first)
    sent = (Attachment("image", "a.png", "image/png", len(PNG), "png"),
            Attachment("image", "b.png", "image/png", len(PNG), "png2"))
    prepared = await run({"png": PNG, "png2": PNG + b"2"}, sent, tmp_path, vision=False)
    assert prepared.content == (f"look\n\n[Image attached at: attachments/c-1/b.png]\n{VISION_HINT}\n\n"
                                f"{MISSED}a.png (does not exist or is not a regular file)]")
