"""The console's Retry of a dead letter whose platform this gateway does not run: refused, and kept.

A gateway takes up only its own platforms' events (`gateway.unconfigured`). Handed back, such a
letter left the page and the console answered ok ("takes it up within seconds"), while its event
waited, unseen, for a start with that platform enabled (`switchboard inbox retry` says so)."""

from __future__ import annotations

from gateway.testing import RecordingAdapter, make_config
from platforms.base import Inbound
from tests.gateway.observing import served
from tests.gateway.test_console import post, state


def a_letter(gateway, platform: str) -> int:
    inbound = Inbound(platform=platform, chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                      text="please answer", event_id=f"ev-{platform}")
    gateway.store.inbox.accept(inbound, "turn-1")
    return gateway.store.inbox.set_aside(platform, f"ev-{platform}")


async def test_a_letter_of_a_platform_this_gateway_does_not_run_is_not_handed_back_and_stays(
        tmp_path, gateways) -> None:
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])  # runs "chat" only
    slack, terminal = a_letter(gateway, "slack"), a_letter(gateway, "local")
    async with served(gateway) as server:
        status, body = await post(server.url, f"/console/api/dead-letters/{slack}/retry")
        assert status == 409 and body["error"].startswith("slack does not run in this gateway")
        assert "platforms.slack" in body["error"]
        status, body = await post(server.url, f"/console/api/dead-letters/{terminal}/retry")
        assert status == 409 and f"switchboard inbox retry {terminal}" in body["error"]
        assert {d["id"] for d in (await state(server.url))["outbox"]["dead_letters"]} == {slack, terminal}
        assert (await post(server.url, f"/console/api/dead-letters/{slack}/dismiss")) == (200, {"ok": True})
        status, body = await post(server.url, f"/console/api/dead-letters/{slack}/retry")
        assert status == 404  # dismissed: there is no letter to refuse
    assert gateway.store.db.read("SELECT event_id FROM gateway_inbox WHERE status='requeued'") == []
