"""/healthz and /metrics read the backlog on a thread of its own, not in the event loop's default executor: that pool
(a handful of threads) also runs the built-in file tools, plain-function tools and aiohttp's DNS lookups, and while
those block (a tool reading a FIFO or a hung network mount, lookups timing out in a DNS outage) a health check waiting
its turn there timed out, and a monitor restarting the gateway for it cuts off every turn running."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from gateway.server import Server
from gateway.testing import RecordingAdapter, make_config
from tests.gateway.test_backlog_health import scrape


async def test_healthz_and_metrics_answer_while_the_default_executor_is_busy(tmp_path, gateways):
    loop = asyncio.get_running_loop()
    gateway = await gateways(make_config(tmp_path), [RecordingAdapter()])
    server = Server(gateway, "127.0.0.1", 0)
    await server.start()
    busy, release = ThreadPoolExecutor(1), threading.Event()
    loop.set_default_executor(busy)
    blocked = loop.run_in_executor(None, release.wait)  # every thread of the pool busy, for as long as it takes
    try:
        async with asyncio.timeout(2):
            status, body, gauges = await scrape(server)
        assert (status, body["backlog"]["reason"], body["backlog"]["inbox_waiting"]) == (200, None, 0)
        assert gauges["switchboard_inbox_waiting"] == 0.0
    finally:
        release.set()
        await blocked
        await server.stop()
