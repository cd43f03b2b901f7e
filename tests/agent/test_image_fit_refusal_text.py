"""agent._image_fit: the refusal of bytes Pillow cannot identify says so without naming the in-memory file by its
address, which changed every run ("cannot identify image file <_io.BytesIO object at 0x7fbed0a3fc40>")."""

from __future__ import annotations

import pytest

from agent._image_fit import UnusableImage, fit_image


@pytest.mark.parametrize("data, mime", [(b"\xff\xd8\xff" + b"x" * 50, "image/jpeg"), (b"GIF89a is a note", "image/gif"),
                                        (b"RIFF\0\0\0\0WEBPxxxx", "image/webp")])
def test_an_unidentified_image_is_refused_in_the_same_words_every_time(data: bytes, mime: str) -> None:
    refusals = set()
    for _ in range(3):
        with pytest.raises(UnusableImage) as refused:
            fit_image(data, mime)
        refusals.add(str(refused.value))
    assert refusals == {"cannot be decoded as an image: UnidentifiedImageError: cannot identify image file"}
