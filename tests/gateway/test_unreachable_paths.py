"""A config file, state directory or workspace behind a directory the gateway's user may not enter
(``/root`` for a service user, ``/etc/switchboard`` at ``0750 root:root``): one line naming the path,
never a traceback. Each test runs ``switchboard`` as a subprocess."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gateway.cli import EXIT_CONFIG
from tests.gateway.cli_process import environment, problem_lines, run, write_config


@pytest.fixture
def closed(tmp_path):
    """``(directory, prefix)``: a directory the command, run with ``prefix``, may not enter."""
    closed = tmp_path / "closed"
    closed.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:  # root enters any directory: run as an unprivileged user instead
        os.chown(closed, 65534, 65534)
        closed.chmod(0o700)
        prefix = ["unshare", "--map-user=1000", "--map-group=1000"]
        if subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
            pytest.skip("needs user namespaces as root")
    else:
        closed.chmod(0o000)
    yield closed, prefix
    closed.chmod(0o700)


def only_line(result, status: int = 1) -> str:
    """The one problem line of a command that failed with ``status``: a start's, or 1, `config check`'s."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = problem_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_named_config_file_behind_a_closed_directory(tmp_path, closed):
    directory, prefix = closed
    path = directory / "switchboard.yaml"
    result = run(tmp_path, "--config", str(path), "run", prefix=prefix)
    assert result.returncode == EXIT_CONFIG and "Traceback" not in result.stderr, result.stderr
    assert problem_lines(result.stderr)[0] == (f"error: config file {path} cannot be read (Permission denied); give"
                                               " the gateway's user access to it and to the directories above it")


def test_the_usual_lookup_through_a_closed_home(tmp_path, closed):
    # A service user whose $HOME is still root's: ~/.config may hold the file meant, so it is said, not skipped.
    directory, prefix = closed
    env = {**environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state")), "HOME": str(directory)}
    result = run(tmp_path, "config", "check", env=env, prefix=prefix)
    assert only_line(result, 1) == (f"error: cannot look for a config file at {directory}/.config/switchboard/config.yaml"
                                 " (Permission denied); give the gateway's user access to its directory, or name the"
                                 " file with --config or $SWITCHBOARD_CONFIG")


@pytest.mark.parametrize("command", ["run", "ask"])
def test_a_state_directory_behind_a_closed_directory(tmp_path, closed, command):
    directory, prefix = closed
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(directory / "state"), "server": {"port": 0}})
    args = ["ask", "hi"] if command == "ask" else ["run"]
    line = only_line(run(tmp_path, "--config", str(config), *args, prefix=prefix))
    assert line == (f"switchboard: state directory {directory / 'state'} cannot be reached (Permission denied): the"
                    " gateway's user may not enter a directory above it; give it access, or point state_dir (or"
                    " $SWITCHBOARD_STATE_DIR) elsewhere")


def test_a_workspace_behind_a_closed_directory(tmp_path, closed):
    directory, prefix = closed
    state = tmp_path / "state"
    state.mkdir(mode=0o777)  # the unprivileged user's to write
    state.chmod(0o777)
    config = write_config(tmp_path / "c.yaml", {"state_dir": str(state), "agent": {"workspace": str(directory / "ws")}})
    line = only_line(run(tmp_path, "--config", str(config), "ask", "hi", prefix=prefix))
    assert line == (f"switchboard: agent.workspace: cannot reach {directory / 'ws'} (Permission denied): the gateway's"
                    " user may not enter a directory above it; give it access, or set agent.workspace to a directory"
                    " it can write")
    assert not Path(directory, "ws").exists()
