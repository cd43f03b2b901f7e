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
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

MESSAGE_OVERHEAD = 4  # role and separators, roughly what chat templates add per message
IMAGE_TOKENS = 512  # flat guess: counting a base64 data URL's characters would overshoot wildly


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
            if text is None:
                extra += IMAGE_TOKENS
            else:
                eighths += weight(text)
    return eighths, extra


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
            if text:
                chars += len(text)
                eighths += weight(text)
    return 8 * chars / eighths if eighths else 4.0


def _texts(message: Mapping[str, Any]) -> list[str | None]:
    """What the model reads of ``message``: its texts, and None for each part that is not text (an image)."""
    texts: list[str | None] = []
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts.extend(str(part.get("text", "")) if isinstance(part, Mapping) and part.get("type") == "text" else None
                     for part in content)
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        texts.append(str(function.get("name", "")))
        texts.append(str(function.get("arguments", "")))
    return texts
