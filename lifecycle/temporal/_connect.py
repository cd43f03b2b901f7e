"""One way to reach the Temporal service from `lifecycle.temporal.*` settings: the gateway and
every worker connect through here, so they cannot disagree about TLS or credentials."""

from __future__ import annotations

from pathlib import Path

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from lifecycle.settings import TemporalSettings


class TemporalUnavailable(Exception):
    """The Temporal service could not be reached (or refused us); the message says which and how to fix it."""


async def connect(settings: TemporalSettings, *, identity: str | None = None) -> Client:
    """A client for ``settings.namespace`` at ``settings.address``. Raises `TemporalUnavailable`
    with one line naming the setting to fix (never the API key) when the service cannot be
    reached or has no such namespace."""
    tls = _tls(settings)
    try:
        client = await Client.connect(
            settings.address, namespace=settings.namespace, api_key=settings.api_key or None, tls=tls,
            identity=identity,
        )
    except Exception as exc:
        raise TemporalUnavailable(
            f"lifecycle.temporal.address: cannot reach Temporal at {settings.address} (namespace"
            f" {settings.namespace}): {_first_line(exc)}; start it (docs/scale-out.md) or fix the address"
        ) from exc
    # Connecting does not look at the namespace: without this a gateway would start and fail every
    # child it launches, and a worker would say it runs before it stops.
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=settings.namespace))
    except RPCError as exc:
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise TemporalUnavailable(
                f"lifecycle.temporal.namespace: Temporal at {settings.address} has no namespace"
                f" {settings.namespace!r}; fix the namespace, or create it (temporal operator namespace create"
                f" --namespace {settings.namespace})"
            ) from exc
        # Any other refusal (a key that may not describe namespaces) is left to the calls that need more.
    return client


def _tls(settings: TemporalSettings) -> bool | TLSConfig | None:
    tls = settings.tls
    if tls is None or isinstance(tls, bool):
        return tls
    return TLSConfig(
        server_root_ca_cert=_read(tls.ca_file, "ca_file"), domain=tls.server_name,
        client_cert=_read(tls.cert_file, "cert_file"), client_private_key=_read(tls.key_file, "key_file"),
    )


def _read(path: Path | None, key: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise TemporalUnavailable(f"lifecycle.temporal.tls.{key}: cannot read {exc.filename} ({exc.strerror})") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
