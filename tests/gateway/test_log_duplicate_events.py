"""A platform's redeliveries: counted on /metrics and logged at DEBUG, not one INFO line each."""

from __future__ import annotations

import logging

from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.observing import samples


async def test_redeliveries_are_counted_and_logged_only_at_debug(tmp_path, gateways, caplog) -> None:
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], script={"parent": [[{"text": "hi"}]]})
    caplog.set_level(logging.DEBUG, logger="gateway.app")
    await chat.say("hello", event_id="ev-1")
    await settled(gateway)
    for _ in range(3):  # a webhook retried, a RESUME replaying: routine, many a minute on a flaky network
        await chat.say("hello", event_id="ev-1")
    await settled(gateway)
    dropped = [r for r in caplog.records if r.getMessage() == "dropping duplicate chat event ev-1"]
    assert [r.levelname for r in dropped] == ["DEBUG"] * 3
    value = samples(gateway.metrics.exposition().decode())
    assert value("switchboard_inbound_duplicates_total", platform="chat") == 3
    assert len(chat.messages) == 1
