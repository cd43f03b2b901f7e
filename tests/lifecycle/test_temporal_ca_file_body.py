"""A ``lifecycle.temporal.tls.ca_file`` whose PEM markers are there but whose body is no certificate (a copy
mangled inside them, or cut short): rustls skips such a CA without a word, so the start went on to the connect,
where the server's certificate was refused as by a CA missing (or the address named, for a server not up), and
the start exited 1: the supervisor started it again for ever. Now `connect` names the file before any connect,
as lasting (exit 78), and never says what the file holds."""

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
from tests.lifecycle.test_temporal_connect import pki, tls_server  # noqa: F401 (fixtures)

pytest.importorskip("temporalio")

from lifecycle.settings import TemporalSettings, TemporalTLSSettings  # noqa: E402
from lifecycle.temporal import TemporalUnavailable, connect  # noqa: E402

BEGIN, END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def real_ca(tmp_path: Path) -> str:
    """A self-signed CA certificate in PEM, as openssl makes one."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(tmp_path / "ca.key"), "-out", str(tmp_path / "real.pem"), "-days", "1",
                    "-subj", "/CN=test CA"], check=True, capture_output=True, timeout=30)
    return (tmp_path / "real.pem").read_text()


def mangled(tmp_path: Path, how: str) -> str:
    good = real_ca(tmp_path)
    body = good.split(BEGIN)[1].split(END)[0]
    if how == "garbage inside":
        return f"{BEGIN}\n!!not base64 at all: SECRET-KEY-MATERIAL!!\n{END}\n"
    if how == "base64 of no certificate":
        return f"{BEGIN}\n{base64.b64encode(b'SECRET-KEY-MATERIAL').decode()}\n{END}\n"
    if how == "cut short":
        return f"{BEGIN}{body[:len(body) // 2]}\n"
    if how == "body cut short":  # still between its markers: the DER's length says more than there is
        lines = body.strip().splitlines()
        return f"{BEGIN}\n" + "\n".join(lines[:-2]) + f"\n{END}\n"
    assert how == "one good, one mangled"
    return good + f"{BEGIN}\n{base64.b64encode(b'SECRET-KEY-MATERIAL').decode()}\n{END}\n"


HOW = ["garbage inside", "base64 of no certificate", "cut short", "body cut short", "one good, one mangled"]


def _wrapped(error: TemporalUnavailable) -> StartupError:
    try:
        raise StartupError(str(error)) from error
    except StartupError as exc:
        return exc


@pytest.mark.parametrize("how", HOW)
async def test_a_ca_file_whose_pem_body_is_no_certificate_is_named_and_lasts(tmp_path, how) -> None:
    (tmp_path / "ca.pem").write_text(mangled(tmp_path, how))
    with pytest.raises(TemporalUnavailable) as caught:
        await connect(TemporalSettings(address=f"127.0.0.1:{closed_port()}",
                                       tls=TemporalTLSSettings(ca_file=tmp_path / "ca.pem")))
    refused = caught.value
    assert str(refused) == ("lifecycle.temporal.tls.ca_file: cannot parse the certificate in ca_file"
                            f" ({tmp_path / 'ca.pem'})")
    assert lasting(_wrapped(refused))
    assert "SECRET" not in str(refused) and "U0VDUkVU" not in str(refused)


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
async def test_a_real_ca_file_goes_on_to_the_connect(tmp_path, crlf) -> None:
    text = real_ca(tmp_path) + real_ca(tmp_path)  # a bundle of two
    (tmp_path / "ca.pem").write_bytes((text.replace("\n", "\r\n") if crlf else text).encode())
    address = f"127.0.0.1:{closed_port()}"
    with pytest.raises(TemporalUnavailable) as caught:
        await connect(TemporalSettings(address=address, tls=TemporalTLSSettings(ca_file=tmp_path / "ca.pem")))
    assert str(caught.value).startswith(f"lifecycle.temporal.address: cannot reach Temporal at {address}")


@pytest.mark.parametrize("command", [("run",), ("worker",)], ids=" ".join)
def test_a_mangled_ca_file_is_not_started_again(tmp_path, command) -> None:
    (tmp_path / "ca.pem").write_text(mangled(tmp_path, "base64 of no certificate"))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "platforms": {"webhook": {"enabled": True}},
        "lifecycle": {"engine": "temporal", "temporal": {"address": f"127.0.0.1:{closed_port()}",
                                                         "tls": {"ca_file": str(tmp_path / "ca.pem")}}},
    })
    result = run(tmp_path, *command, "--config", str(config))
    assert "Traceback" not in result.stderr, result.stderr
    [line] = problem_lines(result.stderr)
    assert result.returncode == EXIT_CONFIG, line
    assert line == (f"switchboard: lifecycle.temporal.tls.ca_file: cannot parse the certificate in ca_file"
                    f" ({tmp_path / 'ca.pem'})"), line


async def test_against_a_tls_server_the_mangled_ca_is_named_not_the_servers_certificate(
        pki, tls_server) -> None:  # noqa: F811
    # The CA that signed the server's certificate, its body swapped for base64 of no certificate: rustls
    # skipped it, and the line said the server's certificate was refused (UnknownIssuer), not lasting.
    good = (pki / "ca.pem").read_text()
    body = good.split(BEGIN)[1].split(END)[0]
    (pki / "mangled.pem").write_text(good.replace(body, "\n" + base64.b64encode(b"SECRET-KEY-MATERIAL").decode()
                                                  + "\n"))
    with pytest.raises(TemporalUnavailable) as caught:
        await connect(TemporalSettings(address=tls_server, tls=TemporalTLSSettings(ca_file=pki / "mangled.pem")))
    assert str(caught.value) == ("lifecycle.temporal.tls.ca_file: cannot parse the certificate in ca_file"
                                 f" ({pki / 'mangled.pem'})")
    assert lasting(_wrapped(caught.value))
