"""The URL spans are sent to: ``/v1/traces`` added to an endpoint without a path, and nothing else of
it lost on the way (a hosted collector's key in the query). Sent to a loopback collector that, as
such a collector does, refuses an export without its key."""

from __future__ import annotations

from aiohttp import web

from gateway.config.sections import TelemetrySettings
from gateway.telemetry import TRACES_PATH, build_tracing, traces_url

KEY = "otlp-endpoint-key-3b9d"


def test_the_traces_path_keeps_the_user_info_query_and_fragment_as_written() -> None:
    assert traces_url(f"https://otel.example.com?api_key={KEY}") == f"https://otel.example.com/v1/traces?api_key={KEY}"
    assert traces_url("http://u:p%40ss@127.0.0.1:4318/?tenant=a+b#f") == (
        "http://u:p%40ss@127.0.0.1:4318/v1/traces?tenant=a+b#f")
    assert traces_url(f"http://127.0.0.1:4318/otlp?api_key={KEY}") == f"http://127.0.0.1:4318/otlp?api_key={KEY}"


async def test_a_key_in_the_query_of_an_endpoint_without_a_path_reaches_the_collector() -> None:
    exports: list[int] = []

    async def traces(request: web.Request) -> web.Response:
        await request.read()
        status = 200 if request.query.get("api_key") == KEY else 401
        exports.append(status)
        return web.Response(status=status, body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post(TRACES_PATH, traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = site._server.sockets[0].getsockname()[:2]  # type: ignore[union-attr]
    try:
        tracing = build_tracing(TelemetrySettings(otlp_endpoint=f"http://{host}:{port}?api_key={KEY}"))
        assert tracing is not None
        tracing._tracer.start_span("a turn").end()
        await tracing.close()  # sends the span, and waits for the collector's answer
    finally:
        await runner.cleanup()
    assert exports == [200]
