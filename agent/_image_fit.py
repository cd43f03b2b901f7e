"""An image fitted for a vision model: at most `MAX_EDGE` pixels on its longest edge, upright, still.

An image goes to the model inside the conversation, so it is re-sent with every later turn
until compaction: a phone photo (4000×3000, 4–8 MB) sent as it is costs megabytes per request,
and one over a provider's cap (5 MB per image behind Anthropic-compatible gateways) fails every
later turn of its chat. OpenAI scales anything past 2048 px down itself, so nothing a model can
see is lost below that. The fitting is done once, as the image enters the conversation:

- an image past `MAX_EDGE` is scaled down; one an EXIF tag says to turn is turned (a model reads
  pixels, not the tag); an animated one (GIF, WebP, PNG) is its first frame, as OpenAI takes only
  still GIFs and other APIs read one frame;
- such an image is re-encoded as JPEG, or as PNG when it has transparency (which JPEG would
  flatten) or when PNG is smaller (a diagram, a screenshot that was a PNG);
- an image that needs none of that is sent as it is, unless it is a PNG, GIF or WebP without
  transparency that is smaller as a JPEG.

A re-encoded image carries no metadata (no EXIF, so no location either). An image that would
decode to more than `MAX_PIXELS` is not decoded at all (`UnusableImage`). For a model without vision,
which is given an image's path, `check_image` refuses the same images without fitting them. At most
`MAX_DECODES` images are decoded at once in the process, however many chats send photos: async
callers wait for one of the `MAX_DECODES` decode threads (`run_decoding`) holding no thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import re
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from PIL import Image

MAX_EDGE = 2048
"""Pixels on an image's longest edge at most."""
MAX_PIXELS = 40_000_000
"""Pixels an image may decode to (a JPEG after decoding it smaller, which needs no more): an 8K
screenshot is 33 million. A PNG of zeros compresses a thousandfold, so a file of a few hundred KB
can hold a hundred million pixels, gigabytes once decoded and fitted; Pillow's own limit
(`Image.MAX_IMAGE_PIXELS`, 89 million) only warns below twice that."""
# Pillow's warning for a picture of 89 to 179 million pixels went to stderr, unlogged, beside the refusal `MAX_PIXELS`
# makes of it: one line, logged where it should be. Set once, at import: a filter set per decode is not thread-safe.
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
MAX_SAMPLES = 4 * MAX_PIXELS
"""Samples (colours of a pixel: 1.5 a pixel in most photos, which keep colour at half size, 3 or 4 in others) a
JPEG of several scans may hold at once while decoding, 2 bytes each: 320 MB, less than a picture of `MAX_PIXELS`
takes decoded and fitted (360 MB). A 48 MP photo holds 72 million, or 144 million at full colour."""
MAX_DECODES = 2
"""Images decoded at once at most, in the whole process. One of `MAX_PIXELS` takes about 550 MB
at its peak, and every chat's photos are fitted as its turn starts: five chats sending photos at
once would take five times that. Decoding is CPU-bound, so more at once than this would not
finish sooner on the small machines a gateway runs on either."""
JPEG_QUALITY = 85
_ORIENTATION = 0x0112
"""The EXIF tag saying how the camera was held; 1 (or none) is upright."""
_UPRIGHT = {
    2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180, 4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE, 6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
"""What turns an image with each orientation upright (as `PIL.ImageOps.exif_transpose` does)."""
_SMALLEST = (1, 1)
"""The size `check_image` asks draft for: a JPEG is decoded at an eighth of its size, the least it can be, all of its
data read still (a file cut short fails). `MAX_PIXELS` refuses the same JPEGs at that size as at `fit_image`'s: one
that `fit_image` decodes at a fourth of its size or more is some 17 million pixels at most there."""
_BARE = frozenset({0x01, *range(0xD0, 0xD8)})
"""The markers of a JPEG with no segment after them (TEM, RST0–RST7), which libjpeg passes over anywhere."""
_LOSSLESS = frozenset({"image/png", "image/gif"})
_ADDRESS = re.compile(r" ?<[\w.]+ object at 0x[0-9a-fA-F]+>")
"""What Pillow's refusal names the bytes by ("cannot identify image file <_io.BytesIO object at 0x7f…>"): an
address that changes every run, noise in the model's note that no prompt cache matches twice."""
_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP"}
"""Pillow's name for each type an image is taken as (`agent.images.image_type`). Only the one its
leading bytes name is tried: by default Pillow tries every format it knows once that one fails,
six of which (Photo CD, TGA, …) need no leading bytes of their own, so any file reached them."""


# A thread's semaphore, not asyncio's: images are fitted in worker threads, for chats and for
# subagents, on whichever event loop runs them (several: a gateway's, a Temporal worker's). A fit
# waiting here keeps its thread, so async callers queue in `_decoders` instead, whose threads are
# as many as the slots and so never wait here unless a caller of `fit_image` outside it holds one.
_decoding = threading.BoundedSemaphore(MAX_DECODES)
# The process's own, not a loop's default executor: that one has few threads on a small machine
# (5 with one core), every `asyncio.to_thread` shares them, and fits waiting their turn there
# would take them all. A call queued here waits in the executor's queue, in no thread.
_decoders = ThreadPoolExecutor(MAX_DECODES, thread_name_prefix="image-fit")

T = TypeVar("T")


async def run_decoding(call: Callable[[], T]) -> T:
    """``call()`` (which fits images with `fit_image`) in one of the process's `MAX_DECODES` decode
    threads, in this task's context, once one is free; meanwhile the caller waits holding no thread,
    from any event loop. Cancelled while it waits, ``call`` never runs; once it runs it finishes, its
    result dropped."""
    context = contextvars.copy_context()
    return await asyncio.wrap_future(_decoders.submit(context.run, call))


class UnusableImage(Exception):
    """Pillow cannot decode the image (a broken or truncated file, an unsupported variant)."""


def fit_image(data: bytes, mime: str) -> tuple[bytes, str]:
    """``(data, mime)`` as the model should get them; see the module docstring. ``mime`` is the
    type the leading bytes say (`agent.images.image_type`), and the image is decoded as that
    format only. The bytes are returned unchanged when nothing smaller or more correct comes of
    re-encoding.
    Raises `UnusableImage`. Blocking and CPU-bound: call it from a worker thread, where it waits
    while `MAX_DECODES` others are decoding; from async code, in `run_decoding`."""
    return _opened(data, mime, lambda image: _fit(image, data, mime))


def check_image(data: bytes, mime: str) -> None:
    """Raises `UnusableImage` where `fit_image` would, for a model without vision, which is given the image's path:
    decoded whole within the same limits, so a file cut short fails, but neither scaled nor encoded, a JPEG at an
    eighth of its size. A 12 MP photo takes a fifth of the CPU fitting it takes, in a decode slot all the same.
    Blocking and CPU-bound, as `fit_image`."""
    _opened(data, mime, lambda image: _decoded(image, data, mime, _SMALLEST))


def _opened(data: bytes, mime: str, use: Callable[[Image.Image], T]) -> T:
    """``use(image)``, ``data`` open as the image ``mime`` names, in one of the `MAX_DECODES` slots; what Pillow
    raises, as `UnusableImage`."""
    with _decoding:
        try:
            with Image.open(io.BytesIO(data), formats=[_FORMATS[mime]]) as image:
                return use(image)
        except Image.DecompressionBombError as exc:
            raise UnusableImage(f"has too many pixels to decode safely: {exc}") from None
        except Exception as exc:  # Pillow's decoders raise OSError, ValueError, SyntaxError, struct.error, ...
            why = _ADDRESS.sub("", str(exc))
            raise UnusableImage(f"cannot be decoded as an image: {type(exc).__name__}: {why}") from None


def _decoded(image: Image.Image, data: bytes, mime: str,
             size: tuple[int, int] | None) -> tuple[Image.Transpose | None, bool]:
    """Decodes ``image`` (of bytes ``data``) whole, after refusing one past the limits; a JPEG at the least of its
    size, a half, a fourth or an eighth of it that is not smaller than ``size`` (as draft does). Returns what turns it
    upright, and whether it is animated."""
    whole = image.size
    if size is not None:
        image.draft("RGB", size)
    # The size to decode, after draft; before getexif, which decodes a PNG whole to find its eXIf chunk. A JPEG of
    # several scans (progressive, as web pages save them) is held whole, as coefficients, until its last scan, at
    # whatever size draft decodes it: a progressive 13000×13000 of 3 MB took 1 GB for a picture of 1625×1625.
    if image.width * image.height > MAX_PIXELS:
        raise Image.DecompressionBombError(f"{image.width}×{image.height} is more than {MAX_PIXELS:,} pixels")
    if max(whole) > MAX_EDGE and mime == "image/jpeg" and _scans(image, data):
        samples = _samples(image, *whole)
        if samples > MAX_SAMPLES:
            raise Image.DecompressionBombError(f"{whole[0]}×{whole[1]} in several scans holds {samples:,} samples"
                                               f" while decoding, more than {MAX_SAMPLES:,}")
    upright = _UPRIGHT.get(image.getexif().get(_ORIENTATION, 1))
    animated = getattr(image, "is_animated", False)
    image.load()  # decodes it all: a truncated file fails here, not at the model
    return upright, animated


def _fit(image: Image.Image, data: bytes, mime: str) -> tuple[bytes, str]:
    scale = MAX_EDGE / max(image.size)
    # At least a pixel a side: a 10000×1 strip drafted to a height of 0 made Pillow divide by it.
    smaller = (max(1, round(image.width * scale)), max(1, round(image.height * scale))) if scale < 1 else None
    upright, animated = _decoded(image, data, mime, smaller)
    changed = upright is not None or animated or scale < 1
    if not changed and mime == "image/jpeg":
        return data, mime
    frame = _still(image)
    if scale < 1:
        frame.thumbnail((MAX_EDGE, MAX_EDGE), Image.Resampling.LANCZOS)
    if upright is not None:
        frame = frame.transpose(upright)
    transparent = _has_transparency(frame)
    candidates = [] if changed else [(data, mime)]
    if not transparent and (changed or mime != "image/jpeg"):
        candidates.append((_encode(frame.convert("RGB"), "JPEG", quality=JPEG_QUALITY), "image/jpeg"))
    if changed and (transparent or mime in _LOSSLESS):
        candidates.append((_encode(frame, "PNG"), "image/png"))
    return min(candidates, key=lambda candidate: len(candidate[0]))


def _scans(image: Image.Image, data: bytes) -> bool:
    """Whether the JPEG ``image`` (of bytes ``data``) is decoded from several scans, as libjpeg tells: a progressive
    one, or one whose first scan holds fewer colours than the picture (a scan per colour). By the first scan's header,
    found by the lengths of the segments before it: an EXIF thumbnail, or an MPO's second picture, has scans of its
    own, which phones' photos all carry, and the bytes past it are read by nothing else before decoding."""
    if image.info.get("progressive"):
        return True
    at = 2
    while at + 5 <= len(data):
        if data[at] != 0xFF or data[at + 1] in (0x00, 0xFF):
            at += 1  # a byte between segments, which libjpeg (and Pillow) skip as it does, or fill before a marker
        elif data[at + 1] == 0xDA:
            return data[at + 4] < image.layers
        elif data[at + 1] in _BARE:
            at += 2
        else:
            at += 2 + int.from_bytes(data[at + 2:at + 4], "big")
    return False


def _samples(image: Image.Image, width: int, height: int) -> int:
    """The samples the JPEG ``image`` of ``width``×``height`` holds: each colour's, at its own size."""
    factors = [(h, v) for _, h, v, _ in image.layer] or [(1, 1)] * image.layers
    most_h, most_v = max(h for h, _ in factors), max(v for _, v in factors)
    return sum(-(-width * h // most_h) * -(-height * v // most_v) for h, v in factors)


def _still(image: Image.Image) -> Image.Image:
    """The current (first) frame, in a mode that scales smoothly and JPEG or PNG can hold."""
    if image.mode in ("RGB", "RGBA", "L", "LA"):
        return image.copy()
    return image.convert("RGBA" if image.has_transparency_data else "RGB")


def _has_transparency(image: Image.Image) -> bool:
    """Whether any pixel is not fully opaque (a screenshot saved as RGBA often has none)."""
    if not image.has_transparency_data:
        return False
    alpha = image.getchannel("A") if image.mode in ("RGBA", "LA") else image.convert("RGBA").getchannel("A")
    return alpha.getextrema()[0] < 255


def _encode(image: Image.Image, kind: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, kind, **options)
    return out.getvalue()
