"""gateway.attachments: a model without vision is given a picture's path, so each picture is decoded only to know it
is one (`agent._image_fit.check_image`), not fitted: 10 photos of 12 MP were each decoded, scaled, encoded as JPEG and
in base64, all thrown away (12 s, holding one of the process's 2 decode slots). A picture the decoder refuses (a JPEG
cut short) is still refused, for the same reason a vision model is given."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PIL import Image

import agent.images
from agent.images import VISION_HINT
from platforms.base import Attachment
from tests.gateway.test_attachments_undecodable_and_plain import LISTED, MISSED, pictures, run, text_of
from tests.pictures import photo

WIDE = photo((2600, 600))
"""A photo past 2048 px: fitted, it would be scaled and encoded as JPEG."""
CUT = photo((2600, 600))[:len(WIDE) // 2]


async def test_without_vision_a_photo_is_neither_fitted_nor_encoded(tmp_path: Path, monkeypatch) -> None:
    fitted, saved = [], []
    real_fit, real_save = agent.images.fit_image, Image.Image.save
    monkeypatch.setattr(agent.images, "fit_image", lambda *a, **k: fitted.append(1) or real_fit(*a, **k))
    monkeypatch.setattr(Image.Image, "save", lambda *a, **k: saved.append(1) or real_save(*a, **k))
    sent = tuple(Attachment("image", f"p{i}.jpg", "image/jpeg", len(WIDE), "p") for i in range(3))
    prepared = await run({"p": WIDE}, sent, tmp_path, vision=False)
    assert prepared.content == ("look\n\n[Image attached at: attachments/c-1/p0.jpg]\n"
                                "[Image attached at: attachments/c-1/p1.jpg]\n"
                                f"[Image attached at: attachments/c-1/p2.jpg]\n{VISION_HINT}")
    assert (fitted, saved) == ([], [])  # was 3 fits, each encoding a JPEG of 2048×473


async def test_without_vision_each_picture_is_checked_in_a_decode_thread(tmp_path: Path, monkeypatch) -> None:
    threads = []
    real = agent.images.check_image

    def check(data: bytes, mime: str) -> None:
        threads.append(threading.current_thread().name)
        real(data, mime)

    monkeypatch.setattr(agent.images, "check_image", check)
    sent = tuple(Attachment("image", f"p{i}.jpg", "image/jpeg", len(WIDE), "p") for i in range(2))
    await run({"p": WIDE}, sent, tmp_path, vision=False)
    assert len(threads) == 2 and all(name.startswith("image-fit") for name in threads)


@pytest.mark.parametrize("kind", ["image", "document"])
async def test_a_jpeg_cut_in_half_is_refused_without_vision_as_with_it(tmp_path: Path, kind: str) -> None:
    sent = (Attachment(kind, "cut.jpg", "image/jpeg", len(CUT), "cut"),)
    seen = []
    for vision in (True, False):
        prepared = await run({"cut": CUT}, sent, tmp_path / str(vision), vision=vision)
        assert pictures(prepared.content) == 0 and "Image attached at" not in text_of(prepared.content)
        seen.append(text_of(prepared.content))
    assert seen[0] == seen[1]
    why = "cannot be decoded as an image: OSError: image file is truncated"
    if kind == "image":
        assert f"{MISSED}cut.jpg ({why}" in seen[1]
    else:
        assert f"{LISTED}- attachments/c-1/cut.jpg (image/jpeg; it {why}" in seen[1]
