"""A webhook message names the request it answers (``origin_turn_id``): background results come in a turn of their
own (``tc-…``), and without it a caller could only match a ``completion`` to its request by chat."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.store import GatewayStore
from gateway.store.delegations import DelegationRow
from gateway.testing import settled
from gateway.turn_reads import origin_turn
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post

SECRET = "s3cret-for-origin-turns"
LIST = "Compare these:\n- apples\n- pears"
"""A list the demo model delegates, one child per item: in the background on a webhook (`gateway_mode: auto`)."""


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET) as r:
        yield r


@pytest.fixture
async def gateway(tmp_path: Path, receiver: WebhookReceiver) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    running: list[tuple[Gateway, Server]] = []

    async def start() -> str:
        config = config_from_mapping({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"demo": {"child_steps": 1, "step_seconds": 0}},
            "platforms": {"webhook": {"enabled": True,
                                      "routes": {"ci": {"secret": SECRET, "deliver_url": receiver.url}}}}}).config
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        running.append((gateway, server))
        start.gateway = gateway
        return server.url

    yield start
    for gateway, server in running:
        await server.stop()
        await gateway.stop(grace=0)


async def test_a_completion_delivery_names_the_request_that_asked_for_the_work(gateway, receiver) -> None:
    base = await gateway()
    first = (await signed_post(f"{base}/webhooks/ci", SECRET, {"text": LIST})).json()["turn_id"]
    await receiver.wait_for(lambda: len(receiver.unique) == 2, timeout=15)
    await settled(gateway.gateway)
    reply, completion = receiver.payloads
    assert (reply["kind"], reply["turn_id"], reply["origin_turn_id"]) == ("reply", first, first)
    assert completion["kind"] == "completion" and completion["turn_id"].startswith("tc-")
    assert completion["origin_turn_id"] == first
    # A read of the request names it in each of its messages, as their deliveries did.
    read = (await signed_get(f"{base}/webhooks/ci/turns/{first}", SECRET)).json()
    assert read["complete"] is True
    assert [{k: v for k, v in m.items() if k != "delivery"} for m in read["messages"]] == receiver.payloads


async def test_a_reply_names_its_own_turn(gateway, receiver) -> None:
    base = await gateway()
    accepted = (await signed_post(f"{base}/webhooks/ci", SECRET, {"text": "hello", "chat_id": "7"})).json()
    await receiver.wait_for(lambda: receiver.unique, timeout=15)
    await settled(gateway.gateway)
    (reply,) = receiver.payloads
    assert reply["turn_id"] == reply["origin_turn_id"] == accepted["turn_id"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[GatewayStore]:
    s = GatewayStore(tmp_path / "state.db")
    yield s
    s.close()


def delegation(delegation_id: str, origin_turn_id: str) -> DelegationRow:
    return DelegationRow(delegation_id, "webhook:ci:default", "s1", origin_turn_id, 0.0, (), "delivered")


def test_a_retry_and_work_started_by_a_completion_name_the_request_and_a_forgotten_one_none(store) -> None:
    store.delegations.add(delegation("deleg_a", "t-request"))
    store.delegations.add(delegation("deleg_a~r1", "t-request"))  # /retry keeps the origin of what it retries
    store.delegations.add(delegation("deleg_b", "tc-deleg_a"))  # dispatched while delivering deleg_a's results
    assert origin_turn(store, "t-request") == "t-request"
    assert origin_turn(store, "tc-deleg_a") == "t-request"
    assert origin_turn(store, "tc-deleg_a~r1") == "t-request"
    assert origin_turn(store, "tc-deleg_b") == "t-request"
    assert origin_turn(store, "tc-deleg_gone") is None
