"""Images fitted for a vision model (`agent._image_fit`), with real images made by Pillow: what the
model is sent is at most 2048 px, upright and still, and no larger than it has to be."""

from __future__ import annotations

import base64
import io
import logging

import pytest
from PIL import Image

from agent._image_fit import MAX_EDGE, UnusableImage, fit_image
from agent.images import first_turn_content
from tests.pictures import GIF, JPEG, PNG, photo, picture

ANTHROPIC_CAP = 5 * 1024 * 1024
"""Bytes per image Anthropic-compatible gateways accept at most."""


def opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_a_phone_photo_is_scaled_to_2048_px_and_fits_under_the_providers_caps():
    original = photo()
    assert len(original) > ANTHROPIC_CAP  # as a phone's 12 MP photo can be
    fitted, mime = fit_image(original, "image/jpeg")
    assert mime == "image/jpeg" and opened(fitted).size == (MAX_EDGE, 1536)
    assert len(fitted) < ANTHROPIC_CAP and len(fitted) < len(original) / 4


def test_a_large_png_with_transparency_stays_a_png_and_keeps_it():
    image = Image.new("RGBA", (3000, 1000), (255, 0, 0, 255))
    image.paste((0, 0, 0, 0), (0, 0, 1500, 1000))  # the left half is see-through
    out = io.BytesIO()
    image.save(out, "PNG")
    fitted, mime = fit_image(out.getvalue(), "image/png")
    result = opened(fitted)
    assert (mime, result.size, result.mode) == ("image/png", (MAX_EDGE, 683), "RGBA")
    assert result.getpixel((10, 10))[3] == 0 and result.getpixel((2000, 10)) == (255, 0, 0, 255)


def test_an_opaque_png_photo_becomes_a_smaller_jpeg():
    image = opened(photo((1200, 900))).convert("RGBA")  # a screenshot app's RGBA with no transparent pixel
    out = io.BytesIO()
    image.save(out, "PNG")
    fitted, mime = fit_image(out.getvalue(), "image/png")
    assert mime == "image/jpeg" and len(fitted) < len(out.getvalue()) and opened(fitted).size == (1200, 900)


@pytest.mark.parametrize(("orientation", "size"), [(6, (100, 300)), (8, (100, 300)), (3, (300, 100))])
def test_an_exif_rotated_photo_is_turned_upright(orientation, size):
    # A camera held upright stores landscape pixels and the tag; the model reads the pixels.
    image = Image.new("RGB", (300, 100), "white")
    image.paste((255, 0, 0), (0, 0, 30, 100))  # the red band is the top of the picture when turned
    exif = Image.Exif()
    exif[0x0112] = orientation
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif, quality=95)
    fitted, mime = fit_image(out.getvalue(), "image/jpeg")
    result = opened(fitted)
    assert (mime, result.size) == ("image/jpeg", size)
    assert result.getexif().get(0x0112) is None  # turned, so no viewer turns it again
    red = {6: (50, 10), 8: (50, 290), 3: (290, 50)}[orientation]
    assert result.getpixel(red)[0] > 200 and result.getpixel(red)[1] < 60


def test_an_animated_gif_is_sent_as_its_first_frame():
    frames = [Image.new("RGB", (40, 30), color) for color in ("red", "green", "blue")]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    assert opened(out.getvalue()).n_frames == 3
    fitted, mime = fit_image(out.getvalue(), "image/gif")
    result = opened(fitted)
    assert mime == "image/png" and result.size == (40, 30) and not getattr(result, "is_animated", False)
    assert result.convert("RGB").getpixel((0, 0)) == (255, 0, 0)


@pytest.mark.parametrize(("data", "mime"), [(JPEG, "image/jpeg"), (PNG, "image/png"), (GIF, "image/gif"),
                                            (picture("PNG", (50, 50), "RGBA", (0, 0, 0, 128)), "image/png")])
def test_an_image_that_already_fits_is_sent_as_it_is(data, mime):
    fitted, fitted_mime = fit_image(data, mime)
    assert fitted is data and fitted_mime == mime


def test_an_image_pillow_cannot_decode_is_unusable():
    truncated = photo((800, 600))[:5000]
    with pytest.raises(UnusableImage, match="cannot be decoded"):
        fit_image(truncated, "image/jpeg")
    with pytest.raises(UnusableImage, match="cannot be decoded"):
        fit_image(b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")


@pytest.mark.parametrize(("head", "mime"), [
    (b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF89a", "image/gif"),
    (b"RIFF\0\0\0\0WEBP", "image/webp"),
])
def test_only_the_format_its_leading_bytes_name_is_decoded(head: bytes, mime: str):
    # A Kodak Photo CD image behind a picture's first bytes: once the format those bytes name failed,
    # Pillow tried every format it knows, among them six (Photo CD, TGA, SPIDER, ...) that need no
    # leading bytes of their own, so any file could reach their decoders, which nothing here asked for.
    photo_cd = head.ljust(2048, b"\0") + b"PCD_IPI".ljust(2048, b"\0")
    photo_cd = photo_cd.ljust(96 * 2048 + 768 * 512 * 3 // 2, b"\x80")
    assert Image.open(io.BytesIO(photo_cd)).format == "PCD"
    with pytest.raises(UnusableImage, match="cannot be decoded as an image"):
        fit_image(photo_cd, mime)


def test_a_phones_multi_picture_jpeg_is_still_decoded_as_a_jpeg():
    out = io.BytesIO()  # MPO: a JPEG with more pictures after it (a depth map, a preview), as phones take them
    Image.new("RGB", (3000, 2000), "red").save(out, "MPO", save_all=True, append_images=[Image.new("RGB", (30, 20))])
    assert opened(out.getvalue()).format == "MPO"
    fitted, mime = fit_image(out.getvalue(), "image/jpeg")
    assert mime == "image/jpeg" and opened(fitted).size == (MAX_EDGE, 1365)


def test_an_image_of_more_pixels_than_it_may_decode_to_is_unusable_unless_a_jpeg_decodes_smaller():
    # 8000×6000 is 48 million pixels, past MAX_PIXELS; a JPEG is decoded at an eighth to a half of
    # its size when fitted, so a 48 MP camera's photo still reaches the model, a PNG of as many not.
    # Cut short, so that decoding any of it (as getexif does to find a PNG's eXIf) would fail otherwise.
    header_only = picture("PNG", (8000, 6000), "L")[:1000]
    with pytest.raises(UnusableImage, match="has too many pixels to decode safely: 8000×6000 is more than"):
        fit_image(header_only, "image/png")
    fitted, mime = fit_image(picture("JPEG", (8000, 6000), color="white"), "image/jpeg")
    assert mime == "image/jpeg" and opened(fitted).size == (MAX_EDGE, 1536)


def test_for_the_model_a_photo_is_fitted_and_a_broken_one_skipped_with_a_warning(tmp_path, caplog):
    (tmp_path / "big.jpg").write_bytes(photo())
    (tmp_path / "broken.jpg").write_bytes(photo((800, 600))[:5000])
    data_url = "data:image/jpeg;base64," + base64.b64encode(photo((3000, 2000))).decode()
    caplog.set_level(logging.WARNING, logger="agent.images")
    content = first_turn_content("look", ["big.jpg", "broken.jpg", data_url], workspace=tmp_path,
                                 supports_vision=True, max_bytes=20 * 1024 * 1024)
    text, *images = content
    assert text["text"].startswith("look\n\n[Images that could not be used: 'broken.jpg' (cannot be decoded")
    assert len(images) == 2
    sizes = [opened(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])).size for part in images]
    assert sizes == [(MAX_EDGE, 1536), (MAX_EDGE, 1365)]
    (warning,) = [r.getMessage() for r in caplog.records]
    assert warning.startswith("an image (a file) skipped: cannot be decoded as an image: OSError: image file is"
                              " truncated")
    assert "broken.jpg" not in warning  # the user's photo's name: at DEBUG only
