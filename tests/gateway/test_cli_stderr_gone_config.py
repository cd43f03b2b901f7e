"""A command refused for its configuration while its standard error's reader is gone (`config check 2>&1 | head -1`,
`run 2>&1 | tee log` with the tee killed) still ends with the refusal's status. Its unwritable problem lines were
taken for standard output's reader gone, which ends a command with status 0: a configuration with errors passed
the check, and a start refused passed for a stop asked for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gateway.cli import EXIT_CONFIG
from tests.gateway import cli_process


def _stderr_gone(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(cli_process.command(*args), stderr=write, stdout=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, timeout=cli_process.TIMEOUT, cwd=cwd,
                              env=cli_process.environment(cwd))
    finally:
        os.close(write)


def test_a_configuration_with_errors_keeps_its_status_when_stderr_is_gone(tmp_path):
    bad = tmp_path / "switchboard.yaml"
    bad.write_text("server:\n  port: notanumber\n", encoding="utf-8")
    commands = {"config check": ["config", "check", str(bad)], "run": ["--config", str(bad), "run"],
                "inbox dead": ["--config", str(bad), "inbox", "dead"]}
    results = cli_process.together(*[lambda args=args: _stderr_gone(tmp_path, *args) for args in commands.values()])
    statuses = {name: result.returncode for name, result in zip(commands, results, strict=True)}
    assert statuses == {"config check": 1, "run": EXIT_CONFIG, "inbox dead": EXIT_CONFIG}
