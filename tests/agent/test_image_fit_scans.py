"""agent._image_fit: a JPEG of several scans (a progressive one) is held whole as it is decoded, whatever smaller
size draft decodes it at, so its limit of pixels is its own size's: a progressive 13000×13000 of 3 MB passed as the
1625×1625 draft makes of it, and took 1 GB to decode. A JPEG of one scan is still decoded smaller."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from agent._image_fit import MAX_PIXELS, MAX_SAMPLES, UnusableImage, _scans, fit_image
from tests.pictures import picture

TOO_MANY = ("has too many pixels to decode safely: 9000×9000 in several scans holds 243,000,000 samples while"
            " decoding, more than 160,000,000")


def sized(jpeg: bytes, width: int, height: int) -> bytes:
    """``jpeg`` saying it is ``width``×``height``: its frame header changed, its scans not (libjpeg fills in what they
    lack), so no picture of that size need be encoded."""
    at = next(jpeg.find(marker) for marker in (b"\xff\xc2", b"\xff\xc0") if jpeg.find(marker) > 0)
    return jpeg[:at + 5] + height.to_bytes(2, "big") + width.to_bytes(2, "big") + jpeg[at + 9:]


def small(**options: object) -> bytes:
    return picture("JPEG", (64, 48), color="red", **options)


def refusal(data: bytes) -> str:
    with pytest.raises(UnusableImage) as refused:
        fit_image(data, "image/jpeg")
    return str(refused.value)


def test_a_progressive_jpeg_is_refused_by_its_own_size_before_a_byte_is_decoded():
    assert 9000 * 9000 > MAX_PIXELS and 2250 * 2250 < MAX_PIXELS  # as large as Pillow opens without a warning
    assert 9000 * 9000 * 3 > MAX_SAMPLES  # at full colour (no colour kept at half size)
    assert refusal(sized(small(progressive=True, subsampling=0), 9000, 9000)) == TOO_MANY


def fitted_size(data: bytes) -> tuple[int, int]:
    fitted, mime = fit_image(data, "image/jpeg")
    assert mime == "image/jpeg"
    return Image.open(io.BytesIO(fitted)).size


def scan_per_colour(jpeg: bytes) -> bytes:
    """``jpeg`` with its first scan's header saying it holds only the first colour, as one of a scan per colour."""
    at = jpeg.find(b"\xff\xda")
    header = jpeg[at:at + 2 + int.from_bytes(jpeg[at + 2:at + 4], "big")]
    return jpeg[:at] + b"\xff\xda\x00\x08\x01" + header[5:7] + header[-3:] + jpeg[at + len(header):]


def test_a_jpeg_of_a_scan_per_colour_is_refused_by_its_own_size():
    assert refusal(scan_per_colour(sized(small(subsampling=0), 9000, 9000))) == TOO_MANY


@pytest.mark.parametrize("between", [b"\x00", b"\xff\x00", b"\xff\xd0", b"\x00" * 7])
def test_a_scan_per_colour_is_told_past_bytes_libjpeg_skips_before_it(between: bytes):
    # libjpeg (and Pillow) pass over stray bytes between segments, and a restart marker: one byte before the first
    # scan's header hid it, and 710 bytes saying 12000×12000 took 860 MB and 8 s to decode.
    data = scan_per_colour(sized(small(subsampling=0), 9000, 9000))
    at = data.find(b"\xff\xda")
    data = data[:at] + between + data[at:]
    assert _scans(Image.open(io.BytesIO(data)), data)
    assert refusal(data) == TOO_MANY


@pytest.mark.parametrize("subsampling", [2, 0])  # colour at half size, as phones save it, and at full
def test_a_progressive_photo_of_48_megapixels_is_fitted(subsampling: int):
    # Held whole while decoding, 2 bytes a sample: 144 MB (288 MB at full colour), less than a PNG of MAX_PIXELS
    # takes decoded (360 MB). Counted as its pixels against MAX_PIXELS, it was refused.
    data = sized(small(progressive=True, subsampling=subsampling), 8000, 6000)
    assert fitted_size(data) == (2048, 1536)


def test_a_jpeg_of_one_scan_is_still_decoded_smaller():
    assert fitted_size(sized(small(), 9000, 9000)) == (2048, 2048)


@pytest.mark.parametrize("where", ["app15", "mpo"])
def test_scans_of_a_thumbnail_or_an_mpo_s_second_picture_are_not_the_picture_s(where: str):
    # A phone's photo carries an EXIF thumbnail, a JPEG of its own, and an MPO a second picture after the first:
    # their start-of-scan markers counted, every large photo would be refused.
    if where == "mpo":
        out = io.BytesIO()
        Image.new("RGB", (64, 48), "red").save(out, "MPO", save_all=True, append_images=[Image.new("RGB", (8, 6))])
        data = sized(out.getvalue(), 9000, 9000)
    else:
        thumbnail = small()
        data = b"\xff\xd8\xff\xef" + (len(thumbnail) + 2).to_bytes(2, "big") + thumbnail
        data += sized(small(), 9000, 9000)[2:]
    assert fitted_size(data) == (2048, 2048)


def test_a_progressive_jpeg_within_the_limit_is_fitted():
    assert fitted_size(picture("JPEG", (3000, 2000), color="blue", progressive=True)) == (2048, 1365)
