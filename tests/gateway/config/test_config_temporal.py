"""`lifecycle.engine` and `lifecycle.temporal`: validated with key paths like every section, the API key masked."""

from __future__ import annotations

import io

import pytest
import yaml

from gateway.config import ConfigError, config_check


def test_the_temporal_section_loads_with_its_defaults_and_tls_forms(load, isolated):
    config, warnings = load("lifecycle: {engine: temporal}")
    temporal = config.lifecycle.temporal
    assert (config.lifecycle.engine, warnings) == ("temporal", [])
    assert (temporal.address, temporal.namespace, temporal.task_queue, temporal.tls, temporal.api_key) == (
        "127.0.0.1:7233", "default", "switchboard-children", None, None)
    (isolated / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    config, _ = load("""
        lifecycle:
          temporal: {address: "temporal.internal:7233", tls: {ca_file: ca.pem, server_name: temporal}, api_key: "${K}"}
        """, env={"K": "key-123456"})
    assert config.lifecycle.temporal.tls.ca_file.name == "ca.pem" and config.lifecycle.temporal.api_key == "key-123456"
    assert load("lifecycle: {temporal: {tls: true}}")[0].lifecycle.temporal.tls is True


def test_the_temporal_tls_files_must_be_readable(load, isolated):
    # The gateway (engine: temporal) and every worker read them when they connect: else config check
    # passes and the start stops on them.
    (isolated / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(ConfigError) as caught:
        load("lifecycle: {temporal: {tls: {ca_file: ca.pem, cert_file: gone.pem, key_file: /nonexistent/key.pem}}}")
    assert caught.value.errors == [
        f"lifecycle.temporal.tls.cert_file: cannot read {isolated / 'gone.pem'} (No such file or directory)",
        "lifecycle.temporal.tls.key_file: cannot read /nonexistent/key.pem (No such file or directory)"]


def test_the_temporal_tls_files_are_relative_to_the_config_file(load, isolated):
    # As state_dir: a service starts in /, so a path read from the working directory (here cwd/, which
    # holds a decoy) would not be the file beside the config that config check was run next to.
    (isolated / "certs").mkdir()
    for name in ("ca.pem", "client.pem"):
        (isolated / "certs" / name).write_text("-----BEGIN CERTIFICATE-----\n")
    (isolated / "cwd" / "certs").mkdir()
    (isolated / "cwd" / "certs" / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    (isolated / "home" / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    config, _ = load("lifecycle: {temporal: {tls: {ca_file: certs/ca.pem, cert_file: certs/client.pem,"
                     " key_file: ~/key.pem}}}")
    tls = config.lifecycle.temporal.tls
    assert (tls.ca_file, tls.cert_file, tls.key_file) == (
        isolated / "certs" / "ca.pem", isolated / "certs" / "client.pem", isolated / "home" / "key.pem")
    with pytest.raises(ConfigError) as caught:
        load("lifecycle: {temporal: {tls: {ca_file: certs/ca.pem, cert_file: certs/client.pem,"
             " key_file: certs/key.pem}}}")
    assert caught.value.errors == [
        f"lifecycle.temporal.tls.key_file: cannot read {isolated / 'certs' / 'key.pem'} (No such file or directory)"]


@pytest.mark.parametrize(("text", "error"), [
    ("lifecycle: {engine: celery}", 'lifecycle.engine: expected "inprocess" or "temporal", got "celery"'),
    ("lifecycle: {temporal: {address: temporal}}",
     'lifecycle.temporal.address: expected host:port such as "127.0.0.1:7233", got "temporal"'),
    ("lifecycle: {temporal: {tls: maybe}}",
     'lifecycle.temporal.tls: expected true, false, a mapping or null, got "maybe"'),
    ("lifecycle: {temporal: {tls: {cert_file: c.pem}}}",
     "lifecycle.temporal.tls: cert_file and key_file go together (mutual TLS needs both)"),
    ("lifecycle: {temporal: {task_queue: ' '}}",
     'lifecycle.temporal.task_queue: expected a non-empty name such as "switchboard-children"'),
    ("lifecycle: {temporal: {namespace: ''}}",
     'lifecycle.temporal.namespace: expected a non-empty name such as "default"'),
])
def test_mistakes_name_their_key(load, text, error):
    with pytest.raises(ConfigError) as caught:
        load(text)
    assert error in caught.value.errors


def test_the_api_key_is_masked_and_never_echoed(write):
    path = write('lifecycle: {temporal: {api_key: "${KEY}", namespace: "${KEY}"}}')
    out, err = io.StringIO(), io.StringIO()
    assert config_check(str(path), out, err, env={"KEY": "tmprl-secret-key"}) == 0
    assert "tmprl-secret-key" not in out.getvalue() + err.getvalue()
    rendered = yaml.safe_load(out.getvalue().split("\n", 1)[1])
    assert rendered["lifecycle"]["temporal"]["api_key"] == "***"
