"""A collector endpoint that carries a credential in its URL (a key in the query, a password):
the line saying traces do not get through names the collector, never the credential."""

from __future__ import annotations

import io
import logging
import socket

from gateway.config.sections import TelemetrySettings
from gateway.console.recent_errors import RecentErrors
from gateway.logging import setup_logging
from gateway.telemetry import _otlp_provider

KEY = "otlp-query-key-5c1e"
PASSWORD = "collector-pass-77f2"


def test_the_credentials_of_an_endpoint_url_as_written_and_decoded() -> None:
    from gateway.telemetry import url_credentials

    assert url_credentials(f"http://u:{PASSWORD}%21@h:4318/v1/traces?tenant=acme&api_key={KEY}%2F&x-token=a+b") == [
        f"{PASSWORD}%21", f"{PASSWORD}!", f"{KEY}%2F", f"{KEY}/", "a+b", "a b"]
    assert url_credentials("http://127.0.0.1:4318/v1/traces") == []


def test_a_collector_that_cannot_be_reached_is_logged_without_the_key_in_its_url(monkeypatch) -> None:
    # The exporter's own line names the URL it could not reach, query included ("Max retries
    # exceeded with url: /v1/traces?api_key=…"); it is the one the warning quotes, in the log and
    # in the console's recent warnings.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "3")  # seconds an export may retry
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: connections are refused
    root = logging.getLogger()
    level, stream = root.level, io.StringIO()
    handler = setup_logging("INFO", stream=stream)
    recent = RecentErrors()
    recent.attach()
    try:
        settings = TelemetrySettings(otlp_endpoint=f"http://otel:{PASSWORD}@127.0.0.1:{port}/v1/traces?api_key={KEY}")
        provider = _otlp_provider(settings)
        with provider.get_tracer("test").start_as_current_span("a turn"):
            pass
        provider.force_flush(10_000)
        provider.shutdown()
    finally:
        recent.detach()
        root.removeHandler(handler)
        root.setLevel(level)
    [line] = [line for line in stream.getvalue().splitlines() if "gateway.telemetry" in line]
    assert f"traces could not be sent to http://127.0.0.1:{port} (" in line
    assert "/v1/traces?api_key=***" in line  # the exporter's line: what went wrong, and where
    [warning] = [e["message"] for e in recent.entries() if e["logger"] == "gateway.telemetry"]
    for said in (stream.getvalue(), warning):
        assert KEY not in said and PASSWORD not in said
