"""gateway.attachments: a picture the decoder refuses gives its place among the `MAX_IMAGES` shown to the next one
sent. It held it: with a photo cut short among the first eight sent, a ninth good one was listed as a file while
seven were shown; and the refusal told the model no memory address."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.images import MAX_IMAGES
from platforms.base import Attachment
from tests.gateway.test_attachments_undecodable_and_plain import (
    CUT_JPEG,
    GIF_NOTE,
    LISTED,
    MISSED,
    pictures,
    run,
    text_of,
)
from tests.pictures import PNG

GOOD = [Attachment("image", f"p{i}.png", "image/png", len(PNG), "png") for i in range(1, MAX_IMAGES + 2)]
FILES = {"png": PNG, "cut": CUT_JPEG, "note": GIF_NOTE, "junk": b"\xff\xd8\xff" + bytes(range(256))}


@pytest.mark.parametrize("where", [0, 3, MAX_IMAGES - 1])
async def test_a_photo_cut_short_gives_its_place_to_the_ninth(tmp_path: Path, where: int) -> None:
    sent = [*GOOD[:MAX_IMAGES]]
    sent.insert(where, Attachment("image", "cut.jpg", "image/jpeg", len(CUT_JPEG), "cut"))
    prepared = await run(FILES, tuple(sent), tmp_path)
    content = text_of(prepared.content)
    assert pictures(prepared.content) == MAX_IMAGES and LISTED not in content, content
    assert f"{MISSED}cut.jpg (cannot be decoded as an image: OSError: image file is truncated" in content


async def test_refused_look_alikes_give_their_places_and_keep_theirs_among_the_files(tmp_path: Path) -> None:
    sent = (Attachment("document", "1-notes.txt", "text/plain", len(GIF_NOTE), "note"), *GOOD[:4],
            Attachment("document", "2-scan.jpg", "image/jpeg", len(CUT_JPEG), "cut"), *GOOD[4:],
            Attachment("document", "3-more.png", "image/png", len(PNG), "png"))
    prepared = await run(FILES, sent, tmp_path)
    listing = text_of(prepared.content).split(LISTED, 1)[1].split("]", 1)[0]
    assert pictures(prepared.content) == MAX_IMAGES
    # p1..p8 shown; the two good pictures past the places are listed, with the refused, in the order sent.
    assert [line.split(" ", 2)[1].rsplit("/", 1)[1] for line in listing.splitlines()] == [
        "1-notes.txt", "2-scan.jpg", "p9.png", "3-more.png"]


async def test_pictures_past_the_places_are_listed_once_each(tmp_path: Path) -> None:
    sent = (*GOOD, Attachment("image", "junk.jpg", "image/jpeg", 259, "junk"))
    prepared = await run(FILES, sent, tmp_path)
    content = text_of(prepared.content)
    listing = content.split(LISTED, 1)[1].split("]", 1)[0]
    assert pictures(prepared.content) == MAX_IMAGES and MISSED not in content
    assert [line.split(" ", 2)[1].rsplit("/", 1)[1] for line in listing.splitlines()] == ["p9.png", "junk.jpg"]


async def test_a_refusal_names_no_memory_address(tmp_path: Path) -> None:
    prepared = await run(FILES, (GOOD[0], Attachment("image", "junk.jpg", "image/jpeg", 259, "junk")), tmp_path)
    content = text_of(prepared.content)
    assert content.endswith(f"{MISSED}junk.jpg (cannot be decoded as an image: UnidentifiedImageError: cannot"
                            " identify image file)]"), content
