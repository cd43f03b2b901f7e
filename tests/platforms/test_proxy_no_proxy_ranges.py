"""``$no_proxy`` naming an address range (``10.0.0.0/8``, as Kubernetes and corporate set-ups write it) exempts
every address in it, as the model's HTTP client (httpx) and curl read it (`platforms.proxies.proxy_for`):
urllib's `proxy_bypass` compares the text alone, so a webhook's ``deliver_url`` or a local Bot API on an
internal address went to the egress proxy, which refuses or cannot reach it, though the model on the same
network went straight to its server. A real delivery through `ForwardProxy` shows the way it went."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.proxies import proxy_for
from platforms.webhook import Route, WebhookAdapter
from tests.forward_proxy import ForwardProxy
from tests.platforms.sink import Sink


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                 "no_proxy", "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", "http://plain:3128")
    monkeypatch.setenv("https_proxy", "http://tls-proxy:3128")
    return monkeypatch


def test_an_address_in_a_range_no_proxy_names_goes_straight(env: pytest.MonkeyPatch) -> None:
    env.setenv("no_proxy", "localhost, 10.0.0.0/8,fd00::/8,not-a-range/x,192.168.1.7/33")
    assert proxy_for("http://10.20.30.40:8081/bot{token}/{method}") is None
    assert proxy_for("https://[fd12::1]:8443/hook") is None
    assert proxy_for("https://11.0.0.1/hook") == "http://tls-proxy:3128"  # outside it
    assert proxy_for("https://192.168.1.7/hook") == "http://tls-proxy:3128"  # no range: no address of it exempt
    assert proxy_for("https://10.example/hook") == "http://tls-proxy:3128"  # a name, not an address


@pytest.fixture
async def proxy(env: pytest.MonkeyPatch) -> AsyncIterator[ForwardProxy]:
    async with ForwardProxy() as proxy:
        env.setenv("http_proxy", proxy.url)
        yield proxy


async def test_a_delivery_to_an_address_in_an_exempt_range_does_not_go_through_the_proxy(
        proxy: ForwardProxy, env: pytest.MonkeyPatch) -> None:
    env.setenv("no_proxy", "127.0.0.0/8")
    async with WebhookReceiver() as receiver:
        adapter = WebhookAdapter({"in": Route("in-secret", receiver.url)})
        await adapter.start(Sink())
        try:
            await adapter.send(Outbound("in:c1", None, "done", turn_id="t1", idempotency_key="in:c1:t1:0"))
        finally:
            await adapter.stop()
    assert [d.json["text"] for d in receiver.deliveries] == ["done"]
    assert proxy.requests == []
