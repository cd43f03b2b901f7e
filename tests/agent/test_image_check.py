"""agent._image_fit.check_image: what a model without vision is given the path of is decoded within the limits a
vision model's image is fitted within, and refused as `fit_image` refuses it, word for word, but not fitted: a JPEG is
decoded at an eighth of its size, still whole, so one cut anywhere fails as it does fitted (`Image.verify` passes a
JPEG cut in half)."""

from __future__ import annotations

import functools
import io
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from agent._image_fit import UnusableImage, check_image, fit_image
from tests.agent.test_image_fit_scans import TOO_MANY, scan_per_colour, sized, small
from tests.gateway.test_attachments_decoded_always import BOMB, BOMB_WHY, JUNK
from tests.pictures import GIF, PNG, WEBP, photo, picture


def refusal(fit, data: bytes, mime: str) -> str | None:
    try:
        fit(data, mime)
    except UnusableImage as why:
        return str(why)
    return None


@functools.cache
def progressive() -> bytes:
    return photo((2200, 300), progressive=True)


CASES = {
    "progressive 9000²": (sized(small(progressive=True, subsampling=0), 9000, 9000), "image/jpeg", TOO_MANY),
    "a scan per colour": (scan_per_colour(sized(small(subsampling=0), 9000, 9000)), "image/jpeg", TOO_MANY),
    "png bomb": (BOMB, "image/png", BOMB_WHY),
    "junk": (JUNK, "image/jpeg", "cannot be decoded as an image: UnidentifiedImageError: cannot identify image"),
    "12 MP cut": (photo((4000, 3000))[:2_000_000], "image/jpeg",
                  "cannot be decoded as an image: OSError: image file is truncated"),
    "png without its end": (PNG[:-12], "image/png", None),
    "png": (PNG, "image/png", None), "gif": (GIF, "image/gif", None), "webp": (WEBP, "image/webp", None),
    "progressive 48 MP": (sized(small(progressive=True), 8000, 6000), "image/jpeg", None),
    "rgba png": (picture("PNG", (3000, 2000), "RGBA"), "image/png", None),
}


@pytest.mark.parametrize("case", CASES)
def test_refused_as_fitting_refuses(case: str):
    data, mime, why = CASES[case]
    fitting = refusal(fit_image, data, mime)
    assert (fitting or "").startswith(why or "") and (fitting is None) == (why is None)
    assert refusal(check_image, data, mime) == fitting


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["baseline", "progressive"]), data=st.data())
def test_a_jpeg_cut_anywhere_is_refused_as_fitting_refuses_it(kind: str, data: st.DataObject):
    whole = progressive() if kind == "progressive" else photo((2200, 300))
    cut = whole[:data.draw(st.integers(2, len(whole)), label="cut")]
    assert refusal(check_image, cut, "image/jpeg") == refusal(fit_image, cut, "image/jpeg")


@pytest.mark.parametrize("size", [(10000, 1), (9000, 2), (1, 10000)])
def test_a_strip_one_pixel_high_is_fitted_as_it_is_checked(size: tuple[int, int]):
    # Its draft asked for a height of 0, which Pillow divided by: "ZeroDivisionError: integer division or modulo by
    # zero" for a picture a check without vision took.
    kept = io.BytesIO()
    Image.new("RGB", size, (200, 10, 10)).save(kept, "JPEG")
    check_image(kept.getvalue(), "image/jpeg")
    fitted, _ = fit_image(kept.getvalue(), "image/jpeg")
    assert max(Image.open(io.BytesIO(fitted)).size) == 2048


def test_a_picture_of_a_hundred_million_pixels_is_refused_without_pillows_warning_on_stderr(tmp_path):
    # Pillow warns of 89 to 179 million pixels on stderr, unlogged, beside the refusal of our own limit.
    bomb = tmp_path / "bomb.png"
    Image.new("L", (10_000, 10_000)).save(bomb)
    code = ("import pathlib, sys; from agent._image_fit import UnusableImage, fit_image\n"
            "try:\n    fit_image(pathlib.Path(sys.argv[1]).read_bytes(), 'image/png')\n"
            "except UnusableImage as exc:\n    print(exc)\n")
    done = subprocess.run([sys.executable, "-W", "default", "-c", code, str(bomb)], capture_output=True, text=True,
                          timeout=60, check=True)
    assert "more than 40,000,000 pixels" in done.stdout
    assert done.stderr == ""
