"""Real images, made with Pillow, for tests of what a vision model is sent: an image the model
gets is decoded and fitted first (`agent._image_fit`), so bytes that only start like one are
skipped as unusable."""

from __future__ import annotations

import functools
import io

from PIL import Image


def picture(kind: str = "PNG", size: tuple[int, int] = (1, 1), mode: str = "RGB", color: object = None,
            **options: object) -> bytes:
    """An image of ``size`` in ``mode``, filled with ``color`` (Pillow's default black), saved as ``kind``."""
    out = io.BytesIO()
    Image.new(mode, size, color).save(out, kind, **options)
    return out.getvalue()


PNG = picture("PNG")
JPEG = picture("JPEG")
GIF = picture("GIF")
WEBP = picture("WEBP", lossless=True)


@functools.cache
def photo(size: tuple[int, int] = (4000, 3000), **options: object) -> bytes:
    """A JPEG as a phone takes it: megabytes at 4000×3000, since noise does not compress."""
    noise = Image.effect_noise(size, 40)
    image = Image.merge("RGB", (noise, noise.transpose(Image.Transpose.ROTATE_180), Image.new("L", size, 128)))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=92, **options)
    return out.getvalue()
