"""A message too long for the model's window, with large pictures: its text's length, and whether the pictures are
what is too many, go by what the estimate counted for each picture by its size (255 to 1,445 tokens,
`agent._token_estimate.picture_tokens`), not a flat 512 (`gateway.replies.reply_text`)."""

from __future__ import annotations

import base64
import struct

from agent import TurnResult
from agent._token_estimate import estimate_tokens, pictures_tokens
from agent._turn import Usage
from gateway.replies import MESSAGE_TOO_LONG, PICTURES_TOO_MANY, reply_text


def png(width: int, height: int) -> dict:
    """An ``image_url`` part of a PNG data URL whose header says ``width``×``height``."""
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + b"\x08\x06"
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(head * 4).decode()}}


def refused(tokens: int, room: int) -> TurnResult:
    return TurnResult("t-1", "", "error", 1, Usage(), None, 0.0, (), "This model's maximum context length is 8192 "
                      "tokens", None, "scripted", False, "bad_request", message_too_long=(tokens, room))


def told(content: list[dict], room: int) -> str | None:
    tokens = estimate_tokens([{"role": "user", "content": content}])
    pictures = sum(part["type"] == "image_url" for part in content)
    return reply_text("reply", refused(tokens, room), pictures=pictures, picture_tokens=pictures_tokens(content))


def test_large_pictures_count_as_estimated():
    strips = [png(768, 2048) for _ in range(3)]
    assert pictures_tokens(strips) == 3 * 1_445
    assert pictures_tokens([{"type": "text", "text": "hi"}, png(100, 100)]) == 255
    assert pictures_tokens("just text") == pictures_tokens(None) == 0


def test_three_large_screenshots_beside_a_text_that_fits_are_told_as_too_many_pictures():
    # 2,000 tokens of text and three 768×2048 strips (1,445 tokens each) in a room of 3,000: counted at 512, the
    # text read as 4,800 tokens, and the chat was told its message was about 3,600 words long.
    content = [{"type": "text", "text": "x" * 8_000}] + [png(768, 2048) for _ in range(3)]
    assert told(content, 3_000) == PICTURES_TOO_MANY.format(count=3)


def test_a_long_text_with_large_pictures_is_told_the_length_of_its_text():
    content = [{"type": "text", "text": "x" * 40_000}] + [png(768, 2048) for _ in range(2)]  # 10,000 tokens of text
    assert told(content, 5_000) == MESSAGE_TOO_LONG.format(length="7,500", room="3,800")


def test_the_docs_do_not_say_a_picture_counts_a_flat_512():
    # docs/gateway.md's row for `PICTURES_TOO_MANY` said "a picture counts 512 estimated tokens": the reply now
    # subtracts what the estimate counted for each by its size (a 768×2048 strip 1,445).
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "gateway.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if "with its 12 pictures" in line)
    assert "a picture counts 512" not in row
