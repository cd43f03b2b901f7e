"""A body that is not UTF-8 JSON is refused saying what is wrong with it and where, not only that it is
wrong: a caller told "not valid UTF-8 JSON" for single quotes could not tell its encoding from its syntax.
Never any of the body's own text (`platforms.json_body`), and over loopback HTTP as a webhook's 400."""

from __future__ import annotations

import codecs
import json

import pytest

from platforms.fakes.webhook_receiver import signed_post
from platforms.json_body import load_json_body
from tests.platforms.test_webhook_adapter import SECRET, TS, Sink, adapter, base, clock, reader, receiver, sink

__all__ = ["adapter", "base", "clock", "reader", "receiver", "sink"]  # the fixtures this module uses


@pytest.mark.parametrize(("body", "error"), [
    (b"{'text': 'secret words'}",
     "body is not valid UTF-8 JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    (b'{"text": "hi"}\n{"text": "secret words"}', "body is not valid UTF-8 JSON: Extra data at line 2 column 1"),
    (b'{"text": "caf\xe9"}', "body is not valid UTF-8 JSON: the byte at offset 13 is not UTF-8"),
    (codecs.BOM_UTF16_LE + '{"text": "hi"}'.encode("utf-16-le"),
     "body is not valid UTF-8 JSON: the byte at offset 0 is not UTF-8 (it is UTF-16: send UTF-8)"),
    (b"text=secret+words", "body is not valid UTF-8 JSON: Expecting value at line 1 column 1"),
    (b"", "body is not valid UTF-8 JSON: the body is empty"),
    (b" \r\n", "body is not valid UTF-8 JSON: the body is empty"),
    (b'{"text": NaN}', "body is not valid UTF-8 JSON: NaN is not JSON"),
    (b"[" * 100_000, "body is not valid UTF-8 JSON: nested too deeply"),
])  # fmt: skip
def test_the_refusal_says_what_is_wrong_and_where(body: bytes, error: str) -> None:
    with pytest.raises(ValueError) as refused:
        load_json_body(body)
    assert str(refused.value) == error
    assert "secret" not in str(refused.value)


def test_a_byte_order_mark_is_counted_in_an_offset_as_sent_not_in_a_json_position() -> None:
    with pytest.raises(ValueError, match="at line 1 column 2$"):
        load_json_body(codecs.BOM_UTF8 + b"{'text': 1}")
    with pytest.raises(ValueError, match="the byte at offset 13 is not UTF-8$"):
        load_json_body(codecs.BOM_UTF8 + b'{"text": "\xff"}')


async def test_a_webhook_caller_is_told_its_body_is_utf_16(base: str, sink: Sink) -> None:
    body = codecs.BOM_UTF16_LE + json.dumps({"text": "disk full"}).encode("utf-16-le")
    reply = await signed_post(f"{base}/webhooks/alerts", SECRET, body, timestamp=TS)
    assert (reply.status, reply.json()) == (
        400, {"error": "body is not valid UTF-8 JSON: the byte at offset 0 is not UTF-8 (it is UTF-16: send UTF-8)"})
    assert sink.inbound == []
