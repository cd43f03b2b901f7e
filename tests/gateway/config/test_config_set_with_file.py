"""An error a ``--set`` brings about with the file's other keys is told as the command line's too, not the file's
alone (docs/configuration.md, "One setting on the command line"); so are other slips typed into ``--set``."""

import io

import pytest

from gateway.cli import EXIT_CONFIG, main
from gateway.config import ConfigError, config_check, load_config
from gateway.config.overrides import name_setters

TOKEN_REQUIRED = "platforms.telegram.token: required when platforms.telegram.enabled is true"


def check(path, *pairs) -> tuple[int, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    status = config_check(None if path is None else str(path), out, err, env={}, overrides=pairs)
    return status, err.getvalue().splitlines()


def errors_of(path, *pairs) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={}, overrides=pairs)
    return caught.value.errors


def test_an_error_a_set_brings_with_the_file_names_the_set_and_is_counted_as_both(write):
    # It read "platforms.telegram.token: required …" and "1 error in f.yaml": the operator searched a file that
    # `config check` without the --set found nothing wrong in.
    path = write("server:\n  port: 9000\n")
    status, lines = check(path, "platforms.telegram.enabled=true")
    assert status == 1
    assert lines[0] == f"error: {TOKEN_REQUIRED} (only with --set platforms.telegram.enabled)"
    assert lines[-1] == f"1 error in {path} and --set; the gateway would not start"
    status, lines = check(None, "platforms.telegram.enabled=true")  # with no file, the defaults are not a place
    assert lines[-1] == "1 error in --set; the gateway would not start"


def test_switchboard_run_names_the_set_alike(write, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path / "state"))
    path = write("server:\n  port: 9000\n")
    assert main(["--config", str(path), "--set", "platforms.telegram.enabled=true", "run"]) == EXIT_CONFIG
    assert f"error: {TOKEN_REQUIRED} (only with --set platforms.telegram.enabled)\n" in capsys.readouterr().err


def test_an_error_the_file_has_anyway_stays_the_files(write):
    path = write("platforms:\n  telegram:\n    enabled: true\n")
    status, lines = check(path, "platforms.telegram.mode=webhook", "server.port=9001")
    assert lines[:2] == [f"error: {TOKEN_REQUIRED}",
                         'error: platforms.telegram.webhook_url: required when platforms.telegram.mode is "webhook"'
                         " (only with --set platforms.telegram.mode)"]
    assert check(path, "server.port=9001")[1][-1] == f"1 error in {path}; the gateway would not start"


def test_only_the_sets_that_bring_the_error_are_named(write):
    path = write("server:\n  console: false\n")
    errors = errors_of(path, "server.port=9001", "server.host=0.0.0.0", "platforms.web.enabled=true")
    assert errors == ['platforms.web.token: required when server.host ("0.0.0.0") is not a loopback address (or set'
                      " platforms.web.user_header with allowed_users) (only with --set server.host and --set"
                      " platforms.web.enabled)"]
    errors = errors_of(path, "platforms.telegram.enabled=true", "platforms.telegram.enabled=yes")  # one key twice
    assert errors == [f"{TOKEN_REQUIRED} (only with --set platforms.telegram.enabled)"]


def test_an_error_the_file_has_anyway_quoting_the_sets_value_stays_the_files(write):
    # The error quotes the --set's host, the file's own the file's: told apart by all their text, it read "(only
    # with --set server.host)", and the same command without the --set failed the same way.
    path = write("server:\n  host: 0.0.0.0\n  console: false\nplatforms:\n  web:\n    enabled: true\n")
    status, lines = check(path, "server.host=192.168.1.5", "server.port=9001")
    assert lines == ['error: platforms.web.token: required when server.host ("192.168.1.5") is not a loopback address'
                     " (or set platforms.web.user_header with allowed_users)",
                     f"1 error in {path}; the gateway would not start"]


def test_sets_that_each_bring_the_error_alone_are_named_with_or():
    pairs = ["a.b=1", "a.c=1", "d.e=1"]

    def errors_of(given):  # the error needs a.b or a.c, whichever
        return {"a: wrong"} if {"a.b=1", "a.c=1"} & set(given) else set()

    assert name_setters(["a: wrong"], pairs, errors_of) == ["a: wrong (only with --set a.b or --set a.c)"]


def test_a_set_through_a_setting_names_the_set(write):
    # It read "server.port: expected an integer …, got a mapping", and "1 error in <file>".
    path = write("server:\n  port: 9000\n")
    status, lines = check(path, "server.port.x=1")
    assert lines == ["error: --set server.port.x: server.port takes an integer ≥ 0 and ≤ 65535, not keys under it",
                     "1 error in --set; the gateway would not start"]


@pytest.mark.parametrize(("pair", "error"), [
    ("server.=9000", "--set server.=…: expected KEY=VALUE with a dotted key, e.g. server.port=9000 (the key ends"
                     " with a dot)"),
    (".server.port=9000", "--set .server.port=…: expected KEY=VALUE with a dotted key, e.g. server.port=9000 (the"
                          " key starts with a dot)"),
    ("server..port=9000", "--set server..port=…: expected KEY=VALUE with a dotted key, e.g. server.port=9000 (the"
                          " key has two dots in a row)"),
    ("=9000", "--set =…: expected KEY=VALUE with a dotted key, e.g. server.port=9000 (the key is missing)"),
], ids=["ends-with-dot", "starts-with-dot", "two-dots", "no-key"])
def test_a_slip_of_the_dots_in_a_set_key_says_which(pair, error):
    # It read "--set server.…: expected KEY=VALUE", as if what was typed had been no KEY=VALUE at all.
    assert errors_of(None, pair) == [error]
