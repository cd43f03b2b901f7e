"""What `switchboard worker` does not read of the shared file (`gateway.config.worker_reads`) is still masked
where it holds the gateway's secrets (written in the file, or from a ``${VAR}`` set on the worker's machine as
well): not validated, the worker still knows them, and its messages and log must not echo them."""

from __future__ import annotations

import logging

import pytest

from gateway.config import ConfigError, load_config
from gateway.config.loader import unread_secrets_of
from gateway.config.render import config_secrets
from gateway.logging import logging_installed

DISCORD = "MTAxMjM0NTY3ODkwMTIzNDU2.GhIjKl.abcdefghijklmnopqrstuvwxyz0123"
"""A Discord token's shape, which no token pattern of the log masks: only its registration does."""
SHARED = f"""
server: {{host: 0.0.0.0, console_token: "${{CONSOLE_TOKEN}}", shutdown_grace_seconds: 3}}
platforms:
  discord: {{enabled: true, token: "{DISCORD}", allow_all: true}}
  webhook: {{enabled: true, routes: {{main: {{secret: "${{WEBHOOK_SECRET}}"}}}}}}
lifecycle: {{engine: temporal}}
"""


def test_a_worker_does_not_echo_a_secret_of_the_gateways_pasted_into_what_it_reads(write):
    config = write(SHARED + f'delegation: {{provider: "{DISCORD}"}}\n')
    for worker in (False, True):
        with pytest.raises(ConfigError) as caught:
            load_config(config, env={"CONSOLE_TOKEN": "c" * 20, "WEBHOOK_SECRET": "w" * 20}, worker=worker)
        assert [error for error in caught.value.errors if error.startswith("delegation.provider")] == [
            'delegation.provider: expected one of "demo", "openai", "scripted", null, got a string that holds the'
            " value of a secret (not shown)"], worker


def test_a_workers_log_masks_the_gateways_secrets_it_holds(write, monkeypatch, capsys):
    monkeypatch.setenv("WEBHOOK_SECRET", "whsec-on-this-machine-too")
    monkeypatch.delenv("CONSOLE_TOKEN", raising=False)  # unset here: nothing to mask, and no error either
    config = write(SHARED)
    loaded, _ = load_config(config, worker=True)
    secrets = config_secrets(loaded) + unread_secrets_of(loaded.source, ["platforms.web.token=web-token-set-here"])
    assert {DISCORD, "whsec-on-this-machine-too", "web-token-set-here"} <= set(secrets)
    with logging_installed("INFO", "text", None, secrets=secrets):
        logging.getLogger("plugin").warning("notify failed: %s %s", DISCORD, "whsec-on-this-machine-too")
    err = capsys.readouterr().err
    assert "notify failed" in err and DISCORD not in err and "whsec-on-this-machine-too" not in err


def test_nothing_unread_is_nothing_to_mask(write):
    assert unread_secrets_of(None) == []
    assert unread_secrets_of(write("- a list\n")) == []


def test_switchboard_worker_installs_its_log_with_them(write, monkeypatch, capsys):
    import gateway.cli as cli

    monkeypatch.setenv("WEBHOOK_SECRET", "whsec-of-the-cli-worker")
    monkeypatch.setenv("CONSOLE_TOKEN", "console-of-the-cli-worker")

    def run(args, config, warnings) -> int:  # what a plugin on the worker might log, once its log is installed
        logging.getLogger("plugin").warning("posting with %s, %s", "whsec-of-the-cli-worker",
                                            "console-of-the-cli-worker")
        return 0

    monkeypatch.setattr(cli, "_run", run)
    assert cli.main(["--config", str(write(SHARED)), "worker"]) == 0
    err = capsys.readouterr().err
    assert "posting with" in err and "of-the-cli-worker" not in err, err


@pytest.mark.parametrize("set_it", [False, True])
def test_a_misspelt_grace_a_worker_reads_is_told_on_the_worker_too(write, set_it):
    # The one key of server a worker reads: misspelt, it gave its calls the default 10 s without a word.
    config = write("lifecycle: {engine: temporal}\n"
                   + ("server: {prot: 80}\n" if set_it else "server: {shutdown_grace_secs: 60, prot: 80}\n"))
    overrides = ["server.shutdown_grace_secs=60"] if set_it else []
    if set_it:
        with pytest.raises(ConfigError) as caught:
            load_config(config, overrides=overrides, worker=True)
        assert caught.value.errors == [
            '--set server.shutdown_grace_secs: unknown key (did you mean "shutdown_grace_seconds"?)']
    else:
        _, warnings = load_config(config, worker=True)  # server.prot is the gateway's: not told here
        assert warnings == ['server.shutdown_grace_secs: unknown key (did you mean "shutdown_grace_seconds"?)']
