"""Spans dropped while a collector does not take them: those of the exports that failed and those the
span processor's full queue dropped meanwhile (a collector that does not answer holds each export for
the exporter's timeout) are all counted in the one line saying it takes them again."""

from __future__ import annotations

import asyncio
import io
import logging

from aiohttp import web

from gateway.config.sections import TelemetrySettings
from gateway.logging import setup_logging
from gateway.telemetry import TRACES_PATH, _otlp_provider
from platforms.fakes._waiting import wait_until


async def test_spans_the_full_queue_drops_during_an_outage_are_counted_in_its_end(monkeypatch) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # milliseconds: a span goes at once
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    refusals = [web.Response(status=400, text="refused")]  # the first export; the next is held until `release`
    release, held = asyncio.Event(), asyncio.Event()

    async def traces(request: web.Request) -> web.Response:
        await request.read()
        if refusals:
            return refusals.pop()
        if not release.is_set():
            held.set()
            await release.wait()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post(TRACES_PATH, traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = site._server.sockets[0].getsockname()[:2]  # type: ignore[union-attr]
    root = logging.getLogger()
    level, stream = root.level, io.StringIO()
    handler = setup_logging("INFO", stream=stream, repeat_window=0)
    provider = _otlp_provider(TelemetrySettings(otlp_endpoint=f"http://{host}:{port}"))
    tracer = provider.get_tracer("test")
    try:
        tracer.start_span("refused").end()
        await wait_until(lambda: "could not be sent" in stream.getvalue(), timeout=10)
        tracer.start_span("held").end()
        await asyncio.wait_for(held.wait(), 10)  # the processor's thread waits for the collector
        for n in range(10):  # 4 fill the queue, 6 are dropped
            tracer.start_span(f"queued {n}").end()
        release.set()
        await wait_until(lambda: "traces reach" in stream.getvalue(), timeout=10)
    finally:
        await asyncio.to_thread(provider.shutdown)
        await runner.cleanup()
        root.removeHandler(handler)
        root.setLevel(level)
    [back] = [line for line in stream.getvalue().splitlines() if "traces reach" in line]
    assert back.endswith(" again; 7 spans were dropped while they did not")
