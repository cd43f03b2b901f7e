"""A gateway that fails while its standard error's reader is gone (`switchboard run 2>&1 | tee log`, the tee
killed; a log pipe a supervisor lost) still ends with its failure's status. Its unwritable failure line was taken
for standard output's reader gone, which ends a command with status 0: a supervisor with ``Restart=on-failure``
(the systemd unit's, Docker's) took that for a stop asked for and never started the gateway again."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from tests.gateway import cli_process


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("stdout_too", [False, True], ids=["stderr", "stderr-and-stdout"])
def test_a_start_that_fails_with_its_stderr_reader_gone_exits_1(tmp_path, stdout_too):
    config = cli_process.write_config(tmp_path / "switchboard.yaml", {
        "state_dir": str(tmp_path / "state"),
        "model": {"provider": "openai", "base_url": f"http://127.0.0.1:{_closed_port()}/v1", "api_key": "k"}})
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(cli_process.command("--config", str(config), "run"), stderr=write,
                                stdout=write if stdout_too else subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                timeout=cli_process.TIMEOUT, cwd=tmp_path, env=cli_process.environment(tmp_path))
    finally:
        os.close(write)
    assert result.returncode == 1  # the model server may come up: started again
