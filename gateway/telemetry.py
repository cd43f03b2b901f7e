"""Traces from the configuration: OTLP/HTTP export when ``telemetry.otlp_endpoint`` is set.

The OpenTelemetry packages are optional (``pip install '.[telemetry]'`` in the checkout; the
container image has them): nothing imports them unless traces are wanted, and a set
endpoint without them stops the start with one line saying what to install. A collector that
does not answer is logged once, not at every attempt (`gateway.trace_export`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from yarl import URL

from gateway.config.secret_values import CREDENTIAL_NAMES
from gateway.config.sections import TelemetrySettings
from gateway.errors import StartupError
from gateway.logging import register_secret

if TYPE_CHECKING:
    from gateway.tracing import Tracing

TRACES_PATH = "/v1/traces"
_CREDENTIAL = re.compile(CREDENTIAL_NAMES, re.IGNORECASE)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL: the endpoint as given when it has a path, else with /v1/traces and the
    rest as written: a hosted collector's key in the query (``https://otel.example.com?api_key=…``)
    was dropped with it, and every export refused."""
    parts = urlsplit(endpoint)
    return urlunsplit(parts._replace(path=TRACES_PATH)) if parts.path in ("", "/") else endpoint


def url_credentials(url: str) -> list[str]:
    """The password of ``url``, and the values of its query parameters whose names say they are
    credentials (``?api_key=…``, ``&token=…``: `gateway.config.secret_values.CREDENTIAL_NAMES`), each
    as written and decoded."""
    parts = urlsplit(url)
    found = [parts.password or "", unquote(parts.password or "")]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if _CREDENTIAL.search(unquote_plus(name)):
            found += [value, unquote_plus(value)]
    return [value for value in dict.fromkeys(found) if value]


def build_tracing(settings: TelemetrySettings, *, provider: object | None = None, provider_name: str | None = None,
                  request_model: str | None = None, origin_of: Callable[[str], str | None] = lambda _: None,
                  ) -> Tracing | None:
    """`Tracing` on ``provider`` (an OpenTelemetry ``TracerProvider`` the caller owns: tests, an
    application with its own set-up) or, without one, on a provider exporting to
    ``settings.otlp_endpoint``; None when neither is given (no traces)."""
    if provider is None and not settings.otlp_endpoint:
        return None
    try:
        from gateway.tracing import Tracing
    except ImportError as exc:
        raise StartupError("telemetry.otlp_endpoint: set, but the OpenTelemetry packages are not installed;"
                           " pip install '.[telemetry]' in the checkout, or unset it") from exc
    owns = provider is None
    if provider is None:
        provider = _otlp_provider(settings)
    return Tracing(provider, capture_content=settings.capture_content,  # type: ignore[arg-type]
                   provider_name=provider_name, request_model=request_model, origin_of=origin_of, owns_provider=owns)


def _otlp_provider(settings: TelemetrySettings) -> object:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise StartupError("telemetry.otlp_endpoint: set, but the OpenTelemetry SDK or its OTLP exporter is not"
                           " installed; pip install '.[telemetry]' in the checkout, or unset it") from exc
    from gateway.trace_export import OutageReportingExporter

    assert settings.otlp_endpoint is not None
    url = traces_url(settings.otlp_endpoint)
    # An export that fails names the URL's path and query ("Max retries exceeded with url:
    # /v1/traces?api_key=…"), and that text is what the log and the console's warnings show.
    for credential in url_credentials(url):
        register_secret(credential)
    exporter = OutageReportingExporter(OTLPSpanExporter(endpoint=url), str(URL(url).origin()))
    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider
