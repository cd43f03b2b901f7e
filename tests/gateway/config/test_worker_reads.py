"""`switchboard worker` reads only what a worker uses of the file the gateway shares with it
(`gateway.config.worker_reads`): the chat platforms' secrets and the console's token need not be set on
its machine, a mistake in the gateway's own settings is the gateway's to report, and a mistake in what
it reads is refused with the gateway's words. Loading the whole file, a worker without WEBHOOK_SECRET
exited 78, so the workers had to be handed every chat platform's secrets."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from gateway.cli import EXIT_CONFIG, main
from gateway.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[3]

SHARED = """
state_dir: state
server:
  host: 0.0.0.0
  console_token: ${SWITCHBOARD_CONSOLE_TOKEN}
  shutdown_grace_seconds: 3
lifecycle:
  engine: temporal
  temporal: {address: "127.0.0.1:%d", task_queue: children}
platforms:
  telegram: {enabled: true, token: "${TELEGRAM_TOKEN}"}
  slack: {enabled: true, bot_token: "${SLACK_BOT_TOKEN}", app_token: "${SLACK_APP_TOKEN}"}
  webhook:
    enabled: true
    routes:
      main: {secret: "${WEBHOOK_SECRET}"}
"""
"""A file as a gateway and its workers share it, the chat secrets from the gateway's environment."""
SECRETS = ("SWITCHBOARD_CONSOLE_TOKEN", "TELEGRAM_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "WEBHOOK_SECRET")


@pytest.fixture
def worker_machine(monkeypatch):
    """An environment with none of the chat secrets, as a worker's machine has."""
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def problems(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith(("switchboard:", "error:"))]


@pytest.mark.usefixtures("worker_machine")
def test_a_worker_without_the_chat_secrets_gets_past_its_configuration(write, capsys):
    pytest.importorskip("temporalio")  # without the extra the start stops at its line, past the configuration too
    config = write(SHARED % closed_port())
    status = main(["--config", str(config), "worker"])
    lines = problems(capsys)
    # It went on to connect: nothing listens there, which may mend by itself.
    assert status == 1, lines
    [line] = lines
    assert line.startswith("switchboard: lifecycle.temporal.address: cannot reach Temporal"), line


@pytest.mark.usefixtures("worker_machine")
def test_a_worker_still_refuses_a_mistake_in_what_it_reads_with_the_gateways_words(write, capsys):
    config = write(SHARED % closed_port() + "model: {provider: openai, base_url: localhost:11434/v1}\n")
    assert main(["--config", str(config), "worker"]) == EXIT_CONFIG
    assert problems(capsys) == [
        "error: model.base_url: expected an http(s) URL such as http://127.0.0.1:11434/v1 (the scheme is missing"
        " or wrong)",
        f"switchboard: the configuration has errors; `switchboard config check {config}` shows them all"]
    # The gateway on the same machine still wants every secret it reads, and says so beside the model's error.
    assert main(["--config", str(config), "run"]) == EXIT_CONFIG
    refused = {line.partition(": ")[2].partition(": ")[0] for line in problems(capsys) if line.startswith("error:")}
    assert refused == {"model.base_url", "server.console_token", "platforms.telegram.token",
                       "platforms.slack.bot_token", "platforms.slack.app_token", "platforms.webhook.routes.main.secret"}


@pytest.mark.usefixtures("worker_machine")
def test_what_a_worker_reads_is_checked_as_the_gateway_checks_it(write):
    config = write("""
delegation: {max_concurrent_children: ten, max_concurent_children: 2}
lifecycle: {engine: temporal, temporal: {address: nowhere}}
server: {host: 0.0.0.0, console_token: "${SWITCHBOARD_CONSOLE_TOKEN}", shutdown_grace_seconds: -1}
platforms: {webhook: {enabled: true, routes: {main: {secret: "${WEBHOOK_SECRET}"}}}}
""")
    with pytest.raises(ConfigError) as caught:
        load_config(config, worker=True)
    assert caught.value.errors == [
        'delegation.max_concurrent_children: expected an integer ≥ 1, got "ten"',
        "server.shutdown_grace_seconds: expected a number ≥ 0, got -1",
        'lifecycle.temporal.address: expected host:port such as "127.0.0.1:7233", got "nowhere"']
    assert caught.value.warnings == [
        'delegation.max_concurent_children: unknown key (did you mean "max_concurrent_children"?)']


@pytest.mark.usefixtures("worker_machine")
def test_the_gateways_own_settings_are_neither_checked_nor_warned_about_on_a_worker(write):
    # Mistakes the gateway refuses (`config check` reports them), which change nothing a worker does.
    config = write("""
lifecycle: {engine: temporal}
server: {host: 0.0.0.0, port: eighty, prot: 80}
platforms: {telgram: {enabled: true}, web: {enabled: true}}
display: {busy_input_mode: sometimes, progres: card}
delivery: {late_after: "${LATE_AFTER}"}
telemetry: {otlp_endpoint: "collector:4318"}
""")
    loaded, warnings = load_config(config, worker=True)
    assert (loaded.lifecycle.engine, warnings) == ("temporal", [])
    # What it does not read stands at the defaults: no platform is on in a worker's view of the file.
    assert not loaded.platforms.webhook.enabled and loaded.server.host == "127.0.0.1"
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert {error.partition(":")[0] for error in caught.value.errors} == {
        "server.port", "server.console_token", "platforms.telgram", "platforms.web.token", "display.busy_input_mode",
        "delivery.late_after", "telemetry.otlp_endpoint"}
    assert [warning.partition(":")[0] for warning in caught.value.warnings] == ["display.progres", "server.prot"]


def test_the_compose_files_workers_load_the_shared_file_without_the_gateways_secrets(tmp_path):
    compose = yaml.safe_load((ROOT / "deploy" / "compose.scale-out.yaml").read_text(encoding="utf-8"))
    env = compose["services"]["worker"]["environment"]
    assert not [value for value in env.values() if "${" in value], env  # nothing of the operator's secrets
    config, warnings = load_config(ROOT / "deploy" / "scale-out.yaml", env={**env, "HOME": str(tmp_path)},
                                   worker=True)
    assert (config.lifecycle.engine, config.lifecycle.temporal.address, warnings) == ("temporal", "temporal:7233", [])
