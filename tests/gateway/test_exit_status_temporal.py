"""What stops a gateway or worker at Temporal exits 78 when only the operator can mend it, and 1 when it may
mend by itself (docs/configuration.md#exit-status). A ``lifecycle.temporal.tls`` file without its certificate,
exited 1, and the systemd unit started it again every 5 s, logging the
same line for ever; an unreachable Temporal may come up, so it stays 1."""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from gateway.cli import EXIT_CONFIG
from gateway.errors import StartupError
from gateway.startup_errors import lasting
from tests.gateway.cli_process import problem_lines, run, write_config

pytest.importorskip("temporalio")  # without the extra every start is the missing extra's line

from lifecycle.settings import TemporalSettings, TemporalTLSSettings  # noqa: E402
from lifecycle.temporal import TemporalUnavailable, connect  # noqa: E402

COMMANDS = [("run",), ("worker",)]
"""The gateway's start (host.py wraps the error) and the worker's (worker.py wraps it): both must agree."""


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(tmp_path, command, **temporal) -> tuple[int, str]:
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True}},
        "lifecycle": {"engine": "temporal", "temporal": temporal},
    })
    result = run(tmp_path, *command, "--config", str(config))
    assert "Traceback" not in result.stderr, result.stderr
    [line] = problem_lines(result.stderr)
    return result.returncode, line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unreachable_temporal_is_started_again(tmp_path, command):
    address = f"127.0.0.1:{closed_port()}"
    status, line = _start(tmp_path, command, address=address)
    assert status == 1, line
    assert line.startswith(f"switchboard: lifecycle.temporal.address: cannot reach Temporal at {address}"), line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_ca_file_without_a_certificate_is_not_started_again(tmp_path, command):
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    status, line = _start(tmp_path, command, address=f"127.0.0.1:{closed_port()}",
                          tls={"ca_file": str(tmp_path / "ca.pem")})
    assert status == EXIT_CONFIG, line
    assert line == f"switchboard: lifecycle.temporal.tls.ca_file: {tmp_path / 'ca.pem'} holds no PEM certificate"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_missing_ca_file_is_not_started_again(tmp_path, command):
    # The configuration's check finds it first, whatever the engine (docs/scale-out.md).
    result = run(tmp_path, *command, "--config", str(write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "lifecycle": {"engine": "temporal", "temporal": {"tls": {"ca_file": str(tmp_path / "gone.pem")}}},
    })))
    assert result.returncode == EXIT_CONFIG, result.stderr
    assert f"error: lifecycle.temporal.tls.ca_file: cannot read {tmp_path / 'gone.pem'}" in result.stderr


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_namespace_temporal_does_not_have_is_started_again(tmp_path, temporal_server, command):
    # Temporal set up beside the gateway (an auto-setup image) creates it a few seconds after its port opens.
    status, line = _start(tmp_path, command, address=temporal_server.address, namespace="no-such-namespace")
    assert status == 1, line
    assert line.startswith("switchboard: lifecycle.temporal.namespace: Temporal at "), line
    assert "has no namespace 'no-such-namespace'" in line, line


def _wrapped(error: TemporalUnavailable) -> StartupError:
    """As the gateway (`gateway.host`) and the worker (`gateway.worker`) raise it."""
    try:
        raise StartupError(str(error)) from error
    except StartupError as exc:
        return exc


async def _refusal(**settings) -> TemporalUnavailable:
    with pytest.raises(TemporalUnavailable) as caught:
        await connect(TemporalSettings(**settings))
    return caught.value


async def test_an_empty_namespace_temporal_refuses_lasts(temporal_server):
    # Also a configuration error; this is the start's own check, for a file config check did not see.
    refused = await _refusal(address=temporal_server.address, namespace="")
    assert str(refused).startswith("lifecycle.temporal.namespace: ") and lasting(_wrapped(refused))


async def test_a_tls_file_that_went_away_before_the_connect_lasts(tmp_path):
    refused = await _refusal(address=f"127.0.0.1:{closed_port()}",
                             tls=TemporalTLSSettings(ca_file=tmp_path / "gone.pem"))
    assert str(refused).startswith("lifecycle.temporal.tls.ca_file: cannot read ") and lasting(_wrapped(refused))


async def test_tls_against_a_plaintext_temporal_does_not_last(temporal_server):
    # A server side may mend it (restarted with TLS), as it may renew a certificate it presents.
    refused = await _refusal(address=temporal_server.address, tls=True)
    assert str(refused).startswith("lifecycle.temporal.tls: TLS is on") and not lasting(_wrapped(refused))


def test_only_a_temporal_unavailable_marked_lasting_lasts():
    assert not lasting(_wrapped(TemporalUnavailable("lifecycle.temporal.address: cannot reach Temporal")))
    assert lasting(_wrapped(TemporalUnavailable("lifecycle.temporal.namespace: no such", lasting=True)))
    assert lasting(TemporalUnavailable("lifecycle.temporal.namespace: no such", lasting=True))


def _client_key(tmp_path) -> Path:
    """A private key rustls takes, so that what fails is the certificate beside it."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a key")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(tmp_path / "client.key")], check=True, capture_output=True, timeout=30)
    return tmp_path / "client.key"


def _no_certificate_in_its_pem(tmp_path) -> Path:
    """A cert_file whose PEM body is base64 of no certificate (a truncated or mangled copy): it passes the
    marker check and rustls's PEM reading, and fails only as the certificate is parsed, as ``BadEncoding``."""
    body = base64.b64encode(b"SECRET-KEY-MATERIAL").decode()
    (tmp_path / "client.pem").write_text(f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n")
    return tmp_path / "client.pem"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_cert_file_that_holds_no_certificate_is_not_started_again(tmp_path, command):
    # It was blamed on the server's certificate ("refused (BadEncoding) by the system's CAs"), exit 1: the
    # unit started it again every 5 s, and the line sent the operator to set a ca_file.
    cert, key = _no_certificate_in_its_pem(tmp_path), _client_key(tmp_path)
    status, line = _start(tmp_path, command, address=f"127.0.0.1:{closed_port()}",
                          tls={"cert_file": str(cert), "key_file": str(key)})
    assert status == EXIT_CONFIG, line
    assert line == (f"switchboard: lifecycle.temporal.tls.cert_file: cannot parse the certificate in cert_file"
                    f" ({cert}): BadEncoding"), line


async def test_a_cert_file_that_holds_no_certificate_names_it_before_any_server_answers(tmp_path, temporal_server):
    # Against a server too (a plaintext one would otherwise say "does not speak" TLS): the client's TLS is built,
    # and refused, before the connect; and what the file holds is never said.
    files = TemporalTLSSettings(cert_file=_no_certificate_in_its_pem(tmp_path), key_file=_client_key(tmp_path))
    refused = await _refusal(address=temporal_server.address, tls=files)
    assert str(refused).startswith("lifecycle.temporal.tls.cert_file: cannot parse the certificate in cert_file ")
    assert lasting(_wrapped(refused)) and "U0VDUkVU" not in str(refused), refused
