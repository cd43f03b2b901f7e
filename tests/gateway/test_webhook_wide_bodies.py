"""A body in UTF-16 or UTF-32, which an integrator's runtime may send (.NET's ``Encoding.Unicode``, Java's
``getBytes(UTF_16LE)``, a ``charset=utf-16`` header), is told so, with or without a byte order mark, through the
real server: without one, its NUL bytes decode as UTF-8 and the refusal was the parser's ``Expecting property name
enclosed in double quotes at line 1 column 2``, sending the caller after a quoting mistake it had not made."""

from __future__ import annotations

import json

import pytest

from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config
from platforms.fakes.webhook_receiver import signed_post

SECRET = "wide-secret-0123456789-abcdef"
BODY = json.dumps({"text": "disk full on db-1", "chat_id": "ops"})


@pytest.fixture
async def hook(tmp_path, gateways):
    config = make_config(tmp_path, platforms={"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}})
    served = Server(await gateways(config, build_adapters(config)), "127.0.0.1", 0)
    await served.start()
    yield served.url + "/webhooks/hook"
    await served.stop()


@pytest.mark.parametrize(("encoding", "named"), [("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),
                                                 ("utf-32-le", "UTF-32"), ("utf-32-be", "UTF-32")])
async def test_a_body_without_a_byte_order_mark_is_named_by_its_encoding(hook, encoding, named) -> None:
    reply = await signed_post(hook, SECRET, BODY.encode(encoding), headers={"Content-Type": f"application/json;"
                                                                                    f" charset={encoding}"})
    assert (reply.status, reply.json()) == (400, {"error": f"body is not valid UTF-8 JSON: it is {named}: send UTF-8"})


@pytest.mark.parametrize(("encoding", "named", "offset"), [("utf-16", "UTF-16", 0), ("utf-32", "UTF-32", 0)])
async def test_a_body_with_a_byte_order_mark_is_named_with_the_offset(hook, encoding, named, offset) -> None:
    # Python's "utf-32" writes FF FE 00 00, whose first two bytes are UTF-16's mark: it was called UTF-16.
    reply = await signed_post(hook, SECRET, BODY.encode(encoding))
    assert (reply.status, reply.json()) == (400, {"error": f"body is not valid UTF-8 JSON: the byte at offset"
                                                           f" {offset} is not UTF-8 (it is {named}: send UTF-8)"})


@pytest.mark.parametrize("body", [b'{"text": ', b"text=hi", b'{"text": "a\x00"}'])
async def test_utf8_that_is_not_json_keeps_the_parsers_words(hook, body) -> None:
    reply = await signed_post(hook, SECRET, body)
    assert reply.status == 400 and "UTF-16" not in reply.json()["error"] and "UTF-32" not in reply.json()["error"]
    assert reply.json()["error"].startswith("body is not valid UTF-8 JSON: ") and " at line 1 column " in \
        reply.json()["error"]
