"""One way to reach the Temporal service from `lifecycle.temporal.*` settings: the gateway and
every worker connect through here, so they cannot disagree about TLS or credentials."""

from __future__ import annotations

import base64
import binascii
import functools
import logging
import re
from pathlib import Path

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from lifecycle.settings import TemporalSettings, TemporalTLSSettings

CORE_LOG = logging.getLogger("lifecycle.temporal.core")
"""Where the Temporal core (Rust) logs. Printed by the core itself, its lines came around the log's, in a format
of their own, unredacted."""


@functools.cache
def _runtime() -> Runtime:
    """One per process (a runtime holds the core's threads), its WARN and above forwarded to `CORE_LOG`. Without
    the fields the core appends (a gRPC status's bytes, a workflow's whole failure): the SDK's Python side logs a
    workflow's failure itself, and the fields stay on the record (``temporal_log``) for a handler that wants them."""
    forwarding = LogForwardingConfig(logger=CORE_LOG, append_target_to_name=False, append_log_fields_to_message=False)
    filtered = TelemetryFilter(core_level="WARN", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=filtered, forwarding=forwarding)))


class TemporalUnavailable(Exception):
    """The Temporal service could not be reached (or refused us); the message says which and how to fix it.

    ``lasting`` says every start fails alike until the operator changes something here: a TLS file that
    cannot be read, holds no PEM certificate or key or one that cannot be parsed, or a key that is not its
    certificate's; a namespace Temporal refuses as no name at all. `gateway.startup_errors.lasting` then gives the exit status a
    supervisor does not start again on: restarted, a gateway or worker logged the same line every few
    seconds for ever. False for what may mend by itself or on the server's side: a service not up yet or
    not reachable, a namespace not created yet, a server certificate refused (it may be renewed: an expired
    one most often), a server that does not speak TLS (one restarted with it, or another process on its port)."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


async def connect(settings: TemporalSettings, *, identity: str | None = None) -> Client:
    """A client for ``settings.namespace`` at ``settings.address``. Raises `TemporalUnavailable`
    with one line naming the setting to fix (never the API key, nor what the TLS files hold) when
    the service cannot be reached, the TLS files or handshake fail, or it has no such namespace."""
    tls = _tls(settings)
    try:
        client = await Client.connect(
            settings.address, namespace=settings.namespace, api_key=settings.api_key or None, tls=tls,
            identity=identity, runtime=_runtime(),
        )
    except Exception as exc:
        raise _connect_failure(settings, exc) from exc
    # Connecting does not look at the namespace: without this a gateway would start and fail every
    # child it launches, and a worker would say it runs before it stops.
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=settings.namespace))
    except RPCError as exc:
        # Not lasting: a Temporal set up beside the gateway (an auto-setup image) creates its namespace a few
        # seconds after its port opens, and a gateway told not to start again would stay down for good.
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise TemporalUnavailable(
                f"lifecycle.temporal.namespace: Temporal at {settings.address} has no namespace"
                f" {settings.namespace!r}; fix the namespace, or create it (temporal operator namespace create"
                f" --namespace {settings.namespace})",
            ) from exc
        if exc.status is RPCStatusCode.INVALID_ARGUMENT:  # no name at all: the worker's poller would panic on it
            raise TemporalUnavailable(
                f"lifecycle.temporal.namespace: Temporal at {settings.address} refuses the namespace"
                f" {settings.namespace!r} ({_first_line(exc)}); set the namespace, such as \"default\"", lasting=True,
            ) from exc
        # Any other refusal (a key that may not describe namespaces) is left to the calls that need more.
    return client


_CERTIFICATE = (b"-----BEGIN CERTIFICATE-----", "certificate")
_PRIVATE_KEY = (b"PRIVATE KEY-----", "private key")
"""What each file must hold in PEM: its marker, and how the error names it. Without the check, a file
with the wrong content fails only in the handshake, in words that blame another setting (a key given as
ca_file reads as a server that does not speak TLS, or whose certificate is not trusted)."""


def _tls(settings: TemporalSettings) -> bool | TLSConfig | None:
    tls = settings.tls
    if tls is None or isinstance(tls, bool):
        return tls
    return TLSConfig(
        server_root_ca_cert=_read(tls.ca_file, "ca_file", _CERTIFICATE), domain=tls.server_name,
        client_cert=_read(tls.cert_file, "cert_file", _CERTIFICATE),
        client_private_key=_read(tls.key_file, "key_file", _PRIVATE_KEY),
    )


def _read(path: Path | None, key: str, kind: tuple[bytes, str]) -> bytes | None:
    if path is None:
        return None
    try:
        body = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise TemporalUnavailable(f"lifecycle.temporal.tls.{key}: cannot read {exc.filename} ({exc.strerror})",
                                  lasting=True) from exc
    marker, what = kind
    if marker not in body:  # named by its path only: what the file holds may be a secret
        raise TemporalUnavailable(f"lifecycle.temporal.tls.{key}: {path} holds no PEM {what}", lasting=True)
    if key == "ca_file" and not _certificates_decode(body):
        raise TemporalUnavailable(f"lifecycle.temporal.tls.ca_file: cannot parse the certificate in ca_file ({path})",
                                  lasting=True)
    return body


_PEM_CERTIFICATE = re.compile(rb"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.DOTALL)


def _certificates_decode(body: bytes) -> bool:
    """Whether every PEM certificate in ``body`` is base64 of a DER certificate's outline (a SEQUENCE of two
    SEQUENCEs and a BIT STRING). rustls skips a CA it cannot parse without a word (a copy mangled inside its
    markers, one cut short): the server's certificate was then refused as by a CA missing, and the start, blamed
    on the server, exited 1, started again for ever. cert_file needs no such check: rustls parses it and says so
    (`_connect_failure`)."""
    blocks = _PEM_CERTIFICATE.findall(body)
    if len(blocks) != body.count(b"-----BEGIN CERTIFICATE-----"):  # one without its end: cut short
        return False
    for block in blocks:
        try:
            der = base64.b64decode(b"".join(block.split()), validate=True)
        except binascii.Error:
            return False
        inner = _der_content(der, 0x30)
        if inner is None or [tag for tag, _ in _der_items(inner)] != [0x30, 0x30, 0x03]:
            return False
    return True


def _der_content(der: bytes, tag: int) -> bytes | None:
    """The content of ``der`` when it is exactly one DER item of ``tag``; else None."""
    items = _der_items(der)
    return items[0][1] if len(items) == 1 and items[0][0] == tag else None


def _der_items(der: bytes) -> list[tuple[int, bytes]]:
    """``der`` as its top-level (tag, content) items; an empty list when they do not fill it exactly."""
    items, at = [], 0
    while at < len(der):
        if at + 2 > len(der):
            return []
        tag, size, at = der[at], der[at + 1], at + 2
        if size & 0x80:  # long form: the next (size & 0x7f) bytes hold the length
            count = size & 0x7F
            if not 0 < count <= 4 or at + count > len(der):
                return []
            size, at = int.from_bytes(der[at:at + count], "big"), at + count
        if at + size > len(der):
            return []
        items.append((tag, der[at:at + size]))
        at += size
    return items


def _connect_failure(settings: TemporalSettings, exc: Exception) -> TemporalUnavailable:
    """Why `Client.connect` failed, naming the setting to fix. The SDK says it in one text, the
    handshake's and the TLS files' failures (past the PEM markers `_read` checks) among them. What our
    own files hold is ``lasting``; what the server presents, or whether it answers, is not."""
    text, tls, address = str(exc), settings.tls, settings.address
    files = tls if isinstance(tls, TemporalTLSSettings) else None
    if "InconsistentKeys" in text:
        return TemporalUnavailable(
            f"lifecycle.temporal.tls.key_file: the private key in {files.key_file} is not the key of the"
            f" certificate in cert_file ({files.cert_file})", lasting=True)
    if "PrivateKeyParseError" in text:
        return TemporalUnavailable(f"lifecycle.temporal.tls.key_file: cannot parse the private key in"
                                   f" {files.key_file}", lasting=True)
    # NoCertificatesPresented: a cert_file whose PEM holds no certificate rustls can take, before any handshake.
    if "CertificateParseError" in text or "NoCertificatesPresented" in text:  # which file, the SDK does not say
        keys = [key for key in ("ca_file", "cert_file") if getattr(files, key, None) is not None]
        where = f"tls.{keys[0]}" if len(keys) == 1 else "tls"
        listed = " or ".join(f"{key} ({getattr(files, key)})" for key in keys)
        return TemporalUnavailable(f"lifecycle.temporal.{where}: cannot parse the certificate in {listed}",
                                   lasting=True)
    # A server's certificate is refused in the handshake, inside the connect's error ("ConnectError(Custom {
    # … InvalidCertificate(…)"); one refused before any connect is ours: rustls parses cert_file's
    # certificate to match it with key_file as the client's TLS is built (a PEM body that decodes to no
    # certificate: BadEncoding). Blamed on the server's, it read as a CA to set, and was started again for ever.
    own = re.search(r"Error\(Transport, InvalidCertificate\(([\w(]+)", text)
    if own is not None and files is not None and files.cert_file is not None:
        reason = own.group(1).rsplit("(", 1)[-1]
        return TemporalUnavailable(f"lifecycle.temporal.tls.cert_file: cannot parse the certificate in cert_file"
                                   f" ({files.cert_file}): {reason}", lasting=True)
    if "InvalidContentType" in text:  # a TLS handshake that a plaintext server answered
        why = "on because api_key is set" if tls is None else "on"
        return TemporalUnavailable(
            f"lifecycle.temporal.tls: TLS is {why}, and Temporal at {address} does not speak it; set tls: false"
            " for a plaintext server, or fix the address")
    if (refused := re.search(r"InvalidCertificate\(([\w(]+)", text)) is not None:
        reason = refused.group(1).rsplit("(", 1)[-1]
        if reason.startswith("NotValidForName"):
            return TemporalUnavailable(
                f"lifecycle.temporal.tls.server_name: the certificate of Temporal at {address} is not issued"
                " for the name checked (server_name, else the address's host)")
        if files is not None and files.ca_file is not None:
            return TemporalUnavailable(f"lifecycle.temporal.tls.ca_file: the certificate of Temporal at {address}"
                                       f" is refused ({reason}) by the CA in {files.ca_file}")
        return TemporalUnavailable(
            f"lifecycle.temporal.tls: the certificate of Temporal at {address} is refused ({reason}) by the"
            " system's CAs; set tls.ca_file to the CA that signed it")
    return TemporalUnavailable(
        f"lifecycle.temporal.address: cannot reach Temporal at {address} (namespace"
        f" {settings.namespace}): {_first_line(exc)}; start it (docs/scale-out.md) or fix the address")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
