"""How many tokens a conversation comes to, estimated without a tokenizer.

Compaction asks before every model call, so the estimate must be cheap, and no tokenizer may be
downloaded. Four characters a token holds for English and code, but BPE vocabularies learnt
mostly from English spend far more on other scripts: a Chinese or Japanese character is about
one token (cl100k_base), so counting it as a quarter let a Chinese conversation reach four times
the compaction trigger, past the model's window, before it was compacted.

So each character counts a quarter token, and each UTF-8 byte it has beyond its first three
eighths more: ASCII stays at four characters a token (exactly as before), a CJK, kana, Hangul,
Thai or Devanagari character (three bytes) counts one token, a Cyrillic, Greek, Arabic or Hebrew
one (two bytes) five eighths. Measured against OpenAI's tokenizers on a paragraph in each of
fourteen languages, that came to between 61% (Greek) and 133% (English) of cl100k_base's count,
Chinese and Japanese within 2% of it (four characters a token had said about a quarter);
o200k_base, thriftier, counted less than the estimate for all but code (97%).

A character of four bytes (an emoji, each half of a flag, a rare CJK character) counts three
tokens: vocabularies hold few of them whole, so cl100k_base spends two to three on an emoji,
three on each half of a flag and four on a rare CJK character, o200k_base two to two and a half on
an emoji. By the byte rule alone (one and three eighths) a chat of emoji reactions and status
lines came to half of cl100k_base's count, and at the default trigger of half the window the
server refused it before it was compacted; now such text comes to 89–131% of cl100k_base's count
(129–190% of o200k_base's). A string that is all ASCII is counted without encoding it.

A request carries the tools' schemas beside its messages, and they count against the window too: the gateway's
built-in tools come to about 1,200 tokens by this estimate (delegate_task's alone 700), a plugin's more. Left out,
a chat on a 4k window at a trigger of three quarters passed the window before it was compacted, and the server
refused a request each time (`schema_tokens`).

A picture counts what OpenAI counts for its size (`picture_tokens`: 255 to 1,445 at high detail), read from its data
URL's leading bytes (`data_url_size`); a flat 512 whatever its size let three 1920×1080 screenshots (3,315 tokens)
pass as 1,536, and a conversation of screenshots ran past the trigger unsummarised.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

MESSAGE_OVERHEAD = 4  # role and separators, roughly what chat templates add per message
IMAGE_TOKENS = 512
"""A picture whose size cannot be read from its part (an http(s) URL, a data URL that is no picture), and any other
part that is not text: a flat guess, as counting a base64 data URL's characters would overshoot wildly."""
LOW_DETAIL_TOKENS = 85
"""OpenAI's count for a picture at ``detail: low``, whatever its size, and the base of every other count."""
TILE_TOKENS = 170
"""OpenAI's count for each 512×512 tile of a picture at high detail (`picture_tokens`)."""


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """About a quarter token per character over text, tool-call names and arguments and tool
    results, more for characters outside ASCII (see the module docstring), plus a small overhead
    per message. Deterministic and cheap; it ignores tool schemas (`schema_tokens` counts them) and any one
    tokenizer's vocabulary, so keep the ratio trigger with some headroom."""
    return tally_tokens(*measure(messages))


def schema_tokens(schemas: Sequence[Mapping[str, Any]]) -> int:
    """The estimate of the tools' schemas a request carries beside its messages: their JSON, by `weight`."""
    return math.ceil(weight(json.dumps(list(schemas), ensure_ascii=False, default=str)) / 8) if schemas else 0


def tally_tokens(eighths: int, extra: int) -> int:
    """The estimate from `measure`'s sums."""
    return math.ceil(eighths / 8) + extra


def measure(messages: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(eighths of a token of text, extra tokens) of `estimate_tokens`: sums, so a tally can grow
    message by message."""
    eighths, extra = 0, 0
    for message in messages:
        extra += MESSAGE_OVERHEAD
        for text in _texts(message):
            if isinstance(text, str):
                eighths += weight(text)
            else:
                extra += part_tokens(text)
    return eighths, extra


def part_tokens(part: object) -> int:
    """The estimate of a content part that is not text: a picture's by its size (`picture_tokens`), read from the
    leading bytes of its data URL; `IMAGE_TOKENS` for anything else, or a picture whose size is not in it."""
    image = part.get("image_url") if isinstance(part, Mapping) and part.get("type") == "image_url" else None
    if not isinstance(image, Mapping) or not isinstance(url := image.get("url"), str):
        return IMAGE_TOKENS
    size = data_url_size(url)
    return IMAGE_TOKENS if size is None else picture_tokens(*size, detail=str(image.get("detail") or "auto"))


def pictures_tokens(content: object) -> int:
    """What `estimate_tokens` counts for the pictures (``image_url`` parts) of a message's ``content``."""
    if not isinstance(content, list):
        return 0
    return sum(part_tokens(part) for part in content if isinstance(part, Mapping) and part.get("type") == "image_url")


def picture_tokens(width: int, height: int, *, detail: str = "auto") -> int:
    """What OpenAI counts for a ``width``×``height`` picture: `LOW_DETAIL_TOKENS` at ``detail: low``; else the
    picture fitted within 2048×2048, then its short side brought down to 768, and `TILE_TOKENS` for each 512×512
    tile that covers it, plus the base. A part sent without ``detail`` (as the gateway sends every picture) is
    ``auto``, which the server may take as low for a small picture: counted as high, the window is not overrun.
    From 255 (one tile) to 1,445 (a 768×2048 strip); a 4:3 phone photo of any size comes to 765, a 16:9
    screenshot to 1,105."""
    if detail == "low":
        return LOW_DETAIL_TOKENS
    for limit, side in ((2048, max), (768, min)):
        if (edge := side(width, height)) > limit:
            width, height = width * limit // edge, height * limit // edge
    return LOW_DETAIL_TOKENS + TILE_TOKENS * -(-max(width, 1) // 512) * -(-max(height, 1) // 512)


_DATA_URL_HEAD = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,", re.IGNORECASE)
_JPEG_FRAMES = frozenset({*range(0xC0, 0xD0)} - {0xC4, 0xC8, 0xCC})
"""The JPEG markers that start a frame (SOF0 to SOF15 but DHT, JPG and DAC), whose header holds the size."""
_JPEG_SEGMENTS = 64
"""Segments of a JPEG looked through for its frame at most: APPn (EXIF, ICC, XMP), DQT, DHT and COM before it."""


def data_url_size(url: str) -> tuple[int, int] | None:
    """``(width, height)`` of the PNG, JPEG, GIF or WebP picture in a base64 data URL, from its header alone: only
    the few bytes needed are decoded, as the estimate runs before every model call over every picture of the
    conversation (a JPEG's segments are skipped by their lengths to its frame header). None when it is not one."""
    head = _DATA_URL_HEAD.match(url, 0, 64)
    if head is None:
        return None
    read = functools.partial(_decoded, url, head.end())
    start = read(0, 30)
    if start.startswith(b"\x89PNG\r\n\x1a\n") and start[12:16] == b"IHDR":
        return int.from_bytes(start[16:20], "big"), int.from_bytes(start[20:24], "big")
    if start[:6] in (b"GIF87a", b"GIF89a"):
        return int.from_bytes(start[6:8], "little"), int.from_bytes(start[8:10], "little")
    if start[:4] == b"RIFF" and start[8:12] == b"WEBP":
        return _webp_size(start)
    if start.startswith(b"\xff\xd8"):
        return _jpeg_size(read)
    return None


def _decoded(url: str, start: int, offset: int, length: int) -> bytes:
    """Bytes ``offset`` to ``offset + length`` of the base64 from ``url[start:]``: only the 4-character groups that
    hold them are decoded (fewer bytes past its end)."""
    first, last = offset // 3, -(-(offset + length) // 3)
    chunk = url[start + 4 * first:start + 4 * last]
    try:
        data = base64.b64decode(chunk + "=" * (-len(chunk) % 4))
    except ValueError:  # binascii.Error: not base64 there
        return b""
    return data[offset - 3 * first:offset - 3 * first + length]


def _webp_size(start: bytes) -> tuple[int, int] | None:
    chunk = start[12:16]
    if chunk == b"VP8 " and start[23:26] == b"\x9d\x01\x2a":  # lossy: the key frame's start code, then the size
        return int.from_bytes(start[26:28], "little") & 0x3FFF, int.from_bytes(start[28:30], "little") & 0x3FFF
    if chunk == b"VP8L" and start[20:21] == b"\x2f":  # lossless: 14 bits each, less one
        bits = int.from_bytes(start[21:25], "little")
        return (bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended (animation, alpha, EXIF): the canvas, 24 bits each, less one
        return int.from_bytes(start[24:27], "little") + 1, int.from_bytes(start[27:30], "little") + 1
    return None


def _jpeg_size(read: Callable[[int, int], bytes]) -> tuple[int, int] | None:
    offset = 2
    for _ in range(_JPEG_SEGMENTS):
        segment = read(offset, 9)
        if len(segment) < 4 or segment[0] != 0xFF:
            return None
        marker = segment[1]
        if marker == 0xFF:  # a fill byte before the marker
            offset += 1
        elif marker in _JPEG_FRAMES:
            return (int.from_bytes(segment[7:9], "big"), int.from_bytes(segment[5:7], "big")) \
                if len(segment) == 9 else None
        elif marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            offset += 2
        else:
            offset += 2 + int.from_bytes(segment[2:4], "big")
    return None


FOUR_BYTE_EIGHTHS = 24
"""A character of four UTF-8 bytes: three tokens (see the module docstring), not the byte rule's eleven eighths."""


def weight(text: str) -> int:
    """Eighths of a token ``text`` is estimated at: two per character, three more per UTF-8 byte
    beyond a character's first; `FOUR_BYTE_EIGHTHS` for a character of four bytes."""
    if text.isascii():
        return 2 * len(text)
    # surrogatepass: a lone surrogate (a tool's undecodable bytes) counts as the three bytes it would take
    utf8 = len(text.encode("utf-8", "surrogatepass"))
    # Each four-byte character is the one character UTF-16 spells with two units: counted without a loop.
    four_byte = len(text.encode("utf-16-le", "surrogatepass")) // 2 - len(text)
    return 3 * utf8 - len(text) + (FOUR_BYTE_EIGHTHS - 11) * four_byte


def within_tokens(text: str, tokens: int) -> str:
    """The longest start of ``text`` that `weight` counts at ``tokens`` or fewer, cut between two
    characters: 4 characters a token of ASCII, about 1 of Chinese."""
    budget = 8 * tokens
    if text.isascii():
        return text[: budget // 2]
    spent = 0
    for index, char in enumerate(text):
        code = ord(char)
        spent += 2 if code < 0x80 else 5 if code < 0x800 else 8 if code < 0x10000 else FOUR_BYTE_EIGHTHS  # `weight`
        if spent > budget:
            return text[:index]
    return text


def chars_per_token(messages: Sequence[Mapping[str, Any]]) -> float:
    """Characters a token of ``messages``' text comes to by the estimate: 4 for ASCII, about 1 for
    Chinese; 4 when they hold no text."""
    chars = eighths = 0
    for message in messages:
        for text in _texts(message):
            if isinstance(text, str) and text:
                chars += len(text)
                eighths += weight(text)
    return 8 * chars / eighths if eighths else 4.0


def _texts(message: Mapping[str, Any]) -> list[object]:
    """What the model reads of ``message``: its texts, and each part that is not text (a picture) as it is."""
    texts: list[object] = []
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts.extend(str(part.get("text", "")) if isinstance(part, Mapping) and part.get("type") == "text" else part
                     for part in content)
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        texts.append(str(function.get("name", "")))
        texts.append(str(function.get("arguments", "")))
    return texts
