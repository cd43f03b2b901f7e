"""A ``deliver_url`` answering 410 Gone (a conversation its receiver closed, a hook unsubscribed), through the real
server, outbox and adapter: the message is not sent again, its read says ``failed``, and the chat's next message goes
at once. It was retried for ``retry_for_seconds`` (an hour by default), every later message of its chat waiting."""

from __future__ import annotations

import pytest

from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config, settled
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post

SECRET = "gone-secret-0123456789-abcdef"


@pytest.fixture
async def hook(tmp_path, gateways):
    async with WebhookReceiver(SECRET) as receiver:
        config = make_config(tmp_path, platforms={"webhook": {"enabled": True, "routes": {
            "hook": {"secret": SECRET, "deliver_url": receiver.url}}}})
        gateway = await gateways(config, build_adapters(config))
        served = Server(gateway, "127.0.0.1", 0)
        await served.start()
        yield served.url + "/webhooks/hook", receiver, gateway
        await served.stop()


async def test_a_410_is_final_and_the_chat_goes_on(hook) -> None:
    url, receiver, gateway = hook
    receiver.fail_next(1, status=410)
    gone = (await signed_post(url, SECRET, {"text": "first", "chat_id": "ops"})).json()["turn_id"]
    await receiver.wait_for(lambda: receiver.deliveries)
    after = (await signed_post(url, SECRET, {"text": "second", "chat_id": "ops"})).json()["turn_id"]
    await receiver.wait_for(lambda: [d for d in receiver.unique.values() if d.json["turn_id"] == after])
    await settled(gateway)
    assert [(d.json["turn_id"], d.status) for d in receiver.deliveries] == [(gone, 410), (after, 200)]
    read = (await signed_get(f"{url}/turns/{gone}", SECRET)).json()
    assert [m["delivery"] for m in read["messages"]] == ["failed"] and read["complete"]
