"""`switchboard worker --set` of a key the worker does not read (`gateway.config.worker_reads`): the gateway's
settings are left out before the check, and with them the pair, so `--set server.port=9000` or a misspelt
`--set server.prot=3` ran the worker without a word, its operator taking the setting for done. A known key is
now a warning naming it, before anything else the worker does; one the gateway does not know either is the
gateway's own error, status 78; the value, a secret maybe, is never shown."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gateway.cli import EXIT_CONFIG
from tests.gateway.cli_process import problem_lines, run, together, write_config

TOKEN = "123456789:AAH-worker-set-token-not-to-be-shown"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def shared_file(tmp_path: Path, **extra: object) -> Path:
    """A file as a gateway and its workers share it; Temporal at a port nothing listens on."""
    return write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "lifecycle": {"engine": "temporal", "temporal": {"address": f"127.0.0.1:{closed_port()}"}},
        **extra})


def unread(key: str) -> str:
    return (f"warning: --set {key}: switchboard worker does not read this setting, so it changes nothing here;"
            " it is the gateway's: give it to `switchboard run` (docs/scale-out.md)")


def test_a_set_of_a_gateways_setting_is_warned_of_before_the_worker_starts(tmp_path):
    pytest.importorskip("temporalio")  # without the extra the start stops at its line, not at Temporal
    config = shared_file(tmp_path)
    result = run(tmp_path, "--config", str(config), "worker", "--set", "server.port=9000",
                 "--set", f"platforms.telegram.token={TOKEN}", "--set", "display.busy_input_mode=queue",
                 "--set", "agent.max_iterations=7")
    lines = result.stderr.splitlines()
    assert TOKEN not in result.stderr + result.stdout
    warned = [line for line in lines if "does not read" in line]
    # Each once, by key; what it reads (agent.max_iterations) is not warned of.
    assert warned == [unread("server.port"), unread("platforms.telegram.token"), unread("display.busy_input_mode")]
    # The command line's secret is still warned of as one, and the worker went on to Temporal, which is not there.
    assert any(line.startswith("warning: --set platforms.telegram.token: a secret on the command line")
               for line in lines), lines
    [problem] = problem_lines(result.stderr)
    assert result.returncode == 1 and problem.startswith("switchboard: lifecycle.temporal.address: cannot reach"), lines
    assert all(lines.index(line) < lines.index(problem) for line in warned)


def test_a_set_of_a_key_the_gateway_does_not_know_either_is_the_gateways_error(tmp_path):
    config = shared_file(tmp_path)
    pairs = ["--set", "server.prot=3", "--set", f"platforms.telgram.token={TOKEN}", "--set", "display.progres=card",
             "--set", "server.port.x=1", "--set", "agent.modle=x"]
    worker, check = together(lambda: run(tmp_path, "--config", str(config), "worker", *pairs),
                             lambda: run(tmp_path, "--config", str(config), "config", "check", *pairs))
    assert TOKEN not in worker.stderr + worker.stdout
    errors = [line for line in worker.stderr.splitlines() if line.startswith("error:")]
    assert worker.returncode == EXIT_CONFIG, worker.stderr
    assert sorted(errors) == sorted(line for line in check.stderr.splitlines() if line.startswith("error:"))
    assert sorted(errors) == sorted([
        'error: --set server.prot: unknown key (did you mean "port"?)',
        'error: --set platforms.telgram.token: unknown key "platforms.telgram" (did you mean "telegram"?); a misspelt'
        " key here would silently leave something off",
        'error: --set display.progres: unknown key (did you mean "progress"?)',
        "error: --set server.port.x: server.port takes an integer ≥ 0 and ≤ 65535, not keys under it",
        "error: --set agent.modle: unknown key"])
    assert "does not read" not in worker.stderr  # refused: no warning besides


def test_a_misspelt_key_a_worker_reads_in_its_file_is_told_as_the_gateway_tells_it(tmp_path):
    config = shared_file(tmp_path, agnet={"max_iterations": 3}, logging={"levle": "debug"},
                         server={"shutdown_grace_secs": 4}, lifecycel={"engine": "local"})
    worker, check = together(lambda: run(tmp_path, "--config", str(config), "worker"),
                             lambda: run(tmp_path, "--config", str(config), "config", "check"))
    told = [line for line in worker.stderr.splitlines() if line.startswith("warning:")]
    assert sorted(told) == sorted([
        'warning: agnet: unknown key (did you mean "agent"?)', 'warning: lifecycel: unknown key (did you mean'
        ' "lifecycle"?)', 'warning: logging.levle: unknown key (did you mean "level"?)',
        'warning: server.shutdown_grace_secs: unknown key (did you mean "shutdown_grace_seconds"?)'])
    assert set(told) <= set(check.stderr.splitlines())
    lines = worker.stderr.splitlines()
    [problem] = problem_lines(worker.stderr)
    assert all(lines.index(line) < lines.index(problem) for line in told)
