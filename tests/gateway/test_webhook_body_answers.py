"""What docs/platforms/webhook.md tells an integrator about bodies the gateway reads oddly, through the real server:
a compressed body that does not decode is a 400 in JSON, and a field given twice counts with its last value."""

from __future__ import annotations

import time

import pytest

from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config
from platforms.fakes.webhook_receiver import signed_post
from platforms.webhook_signing import sign

SECRET = "hook-secret-0123456789-abcdef"


@pytest.fixture
async def hook(tmp_path, gateways):
    config = make_config(tmp_path, platforms={"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}})
    served = Server(await gateways(config, build_adapters(config)), "127.0.0.1", 0)
    await served.start()
    yield served.url + "/webhooks/hook"
    await served.stop()


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
async def test_a_body_that_does_not_decode_is_a_json_400(hook, coding) -> None:
    stamp, body = str(int(time.time())), b"not compressed at all"
    reply = await signed_post(hook, SECRET, body, timestamp=stamp, signature=sign(SECRET, stamp, body),
                              headers={"Content-Encoding": coding})
    assert (reply.status, reply.json()) == (400, {"error": "malformed request body"})


async def test_a_field_given_twice_counts_with_its_last_value(hook) -> None:
    reply = await signed_post(hook, SECRET, b'{"text": "first", "text": "second", "chat_id": "a", "chat_id": "b"}')
    assert reply.status == 202, reply.body
    assert reply.json()["session"].endswith("hook:b|")  # the chat the second "chat_id" names
