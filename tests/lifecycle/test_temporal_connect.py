"""`lifecycle.temporal.connect` stops a gateway or worker with one line naming the setting to fix: the
address for a service that does not answer, the TLS file or setting for a handshake that fails, the
namespace for one Temporal refuses. It never prints the API key, nor what the TLS files hold."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess

import pytest

from lifecycle.settings import TemporalSettings, TemporalTLSSettings
from lifecycle.temporal import TemporalUnavailable, connect

SECRET = "tmprl-secret-key"
GARBAGE = "SECRET-KEY-MATERIAL"


@pytest.fixture
def pki(tmp_path):
    """A CA, a server certificate it signed for 127.0.0.1, and a client certificate of its own with a key
    that is not its own (``stranger.key``), as files in ``tmp_path``."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make certificates")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tmp_path, check=True, capture_output=True, timeout=30)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test CA")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (tmp_path / "server.ext").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext")
    openssl("req", "-x509", *ec, "-keyout", "client.key", "-out", "client.pem", "-days", "2", "-subj", "/CN=client")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "stranger.key")
    return tmp_path


@pytest.fixture
async def tls_server(pki):
    """The address of a TLS listener presenting ``pki``'s server certificate (the handshake is what is tested)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    context.set_alpn_protocols(["h2"])

    async def hang_up(reader, writer):
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0, ssl=context)
    async with server:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def refusal(**settings) -> str:
    with pytest.raises(TemporalUnavailable) as caught:
        await connect(TemporalSettings(**settings))
    text = str(caught.value)
    assert "\n" not in text and SECRET not in text and GARBAGE not in text, text
    return text


async def test_an_empty_namespace_stops_the_start_naming_the_namespace(temporal_server):
    # Connecting does not look at it, and Temporal refuses no name as an invalid argument, not as unknown.
    text = await refusal(address=temporal_server.address, namespace="")
    assert text.startswith("lifecycle.temporal.namespace: Temporal at "), text


async def test_a_service_that_does_not_answer_names_the_address():
    text = await refusal(address="127.0.0.1:1", api_key=SECRET)
    assert text.startswith("lifecycle.temporal.address: cannot reach Temporal at 127.0.0.1:1"), text


@pytest.mark.parametrize("settings, start", [
    ({"api_key": SECRET}, "lifecycle.temporal.tls: TLS is on because api_key is set, and Temporal at "),
    ({"tls": True}, "lifecycle.temporal.tls: TLS is on, and Temporal at "),
], ids=["api_key", "tls"])
async def test_tls_against_a_plaintext_service_names_tls(temporal_server, settings, start):
    text = await refusal(address=temporal_server.address, **settings)
    assert text.startswith(start) and "set tls: false" in text, text


async def test_a_client_key_that_is_not_the_certificates_names_the_key_file(pki):
    files = TemporalTLSSettings(cert_file=pki / "client.pem", key_file=pki / "stranger.key")
    text = await refusal(address="127.0.0.1:1", tls=files)
    assert text.startswith(f"lifecycle.temporal.tls.key_file: the private key in {pki / 'stranger.key'} is not"), text


@pytest.mark.parametrize("key, body, problem", [
    ("ca_file", "private key", "holds no PEM certificate"),  # the key given for the CA
    ("cert_file", "garbage", "holds no PEM certificate"),
    ("key_file", "certificate", "holds no PEM private key"),  # certificate and key swapped
    ("key_file", "broken key", "cannot parse the private key in"),
    ("cert_file", "broken certificate", "cannot parse the certificate in cert_file"),
])
async def test_a_tls_file_without_what_it_should_hold_names_its_key(pki, key, body, problem):
    text = {"private key": (pki / "client.key").read_text(), "certificate": (pki / "client.pem").read_text(),
            "garbage": GARBAGE, **{f"broken {what}": f"-----BEGIN {marker}-----\n{GARBAGE}\n-----END {marker}-----\n"
                                   for what, marker in (("key", "PRIVATE KEY"), ("certificate", "CERTIFICATE"))}}
    (pki / "wrong.pem").write_text(text[body])
    files = {"cert_file": pki / "client.pem", "key_file": pki / "client.key", key: pki / "wrong.pem"}
    said = await refusal(address="127.0.0.1:1", tls=TemporalTLSSettings(**files))
    assert said.startswith(f"lifecycle.temporal.tls.{key}: ") and problem in said and "wrong.pem" in said, said
    assert not any(line in said for line in text[body].splitlines() if line and not line.startswith("-----"))


async def test_a_certificate_that_cannot_be_parsed_names_the_files_it_may_be_in(pki):
    # ca_file's PEM bodies are checked before the SDK reads them (which does not say which file it could not
    # parse): the one at fault is named alone (tests/lifecycle/test_temporal_ca_file_body.py).
    (pki / "broken.pem").write_text(f"-----BEGIN CERTIFICATE-----\n{GARBAGE}\n-----END CERTIFICATE-----\n")
    files = TemporalTLSSettings(ca_file=pki / "broken.pem", cert_file=pki / "client.pem", key_file=pki / "client.key")
    text = await refusal(address="127.0.0.1:1", tls=files)
    assert text == f"lifecycle.temporal.tls.ca_file: cannot parse the certificate in ca_file ({pki / 'broken.pem'})"


@pytest.mark.parametrize("files, start", [
    ({}, "lifecycle.temporal.tls: the certificate of Temporal at "),  # the system's CAs
    ({"ca_file": "client.pem"}, "lifecycle.temporal.tls.ca_file: the certificate of Temporal at "),
    ({"ca_file": "ca.pem", "server_name": "temporal.example"}, "lifecycle.temporal.tls.server_name: "),
], ids=["system_cas", "another_ca", "server_name"])
async def test_a_server_certificate_refused_names_what_checks_it(pki, tls_server, files, start):
    tls = TemporalTLSSettings(**{k: v if k == "server_name" else pki / v for k, v in files.items()}) if files else True
    assert (await refusal(address=tls_server, tls=tls)).startswith(start)
