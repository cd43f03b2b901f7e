"""A process with no home directory: no ``$HOME`` and no entry for its uid in the password database,
as a container run with an arbitrary uid (``docker run --user 12345``). What needs a home (the
default state directory, a ``~`` in a path) is a configuration error naming what to set, the same
from `config check` as from a start; nothing else needs one. Each test runs ``switchboard`` as a
subprocess, in a user namespace where its uid has no name."""

from __future__ import annotations

import pwd
import shutil
import subprocess

import pytest

from gateway.cli import EXIT_CONFIG
from tests.gateway.cli_process import environment, problem_lines, run, together, write_config

COMMANDS = [("run",), ("ask", "hi"), ("chat",), ("worker",), ("inbox", "dead")]


def no_home(uid: int) -> str:
    return f"there is no home directory ($HOME is unset, and uid {uid} has no entry in the password database)"


@pytest.fixture
def homeless(tmp_path):
    """``(env, prefix, uid)``: a command run with ``env`` and ``prefix`` has no home directory."""
    uid = next(uid for uid in range(12345, 60000) if not _named(uid))
    # Mapped onto the test's own user, so the command may still read and write what the test made.
    prefix = ["unshare", f"--map-user={uid}", f"--map-group={uid}"]
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("needs user namespaces")
    env = {name: value for name, value in environment(tmp_path).items() if name != "HOME"}
    return env, prefix, uid


def _named(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


def failure(result, status: int = EXIT_CONFIG) -> list[str]:
    """The problem lines of a command that failed with ``status``: a start's for a configuration error, or
    1, `config check`'s."""
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr
    return problem_lines(result.stderr)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_state_directory_set_names_what_to_set(tmp_path, homeless, command):
    env, prefix, uid = homeless
    expected = (f"error: state_dir: not set, and there is no home directory for its default,"
                f" ~/.local/state/switchboard ($HOME is unset, and uid {uid} has no entry in the password"
                " database); set state_dir, $SWITCHBOARD_STATE_DIR or $HOME")
    check, start = together(lambda: run(tmp_path, "config", "check", env=env, prefix=prefix),
                            lambda: run(tmp_path, *command, env=env, prefix=prefix))
    assert failure(check, 1) == [expected]
    assert failure(start) == [expected,
                              "switchboard: the configuration has errors; `switchboard config check` shows them all"]


def test_a_state_directory_from_the_environment_is_all_it_needs(tmp_path, homeless):
    # Nor is there a user's config file to look for (~/.config/switchboard): the built-in defaults.
    env, prefix, _ = homeless
    result = run(tmp_path, "ask", "hi", env={**env, "SWITCHBOARD_STATE_DIR": str(tmp_path / "state")}, prefix=prefix)
    assert result.returncode == 0, result.stderr
    assert "[demo]" in result.stdout
    assert (tmp_path / "state" / "switchboard.db").is_file()


def test_a_tilde_in_a_path_names_its_key(tmp_path, homeless):
    env, prefix, uid = homeless
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": "~/state", "agent": {"workspace": "~nobody-here/ws"},
        "model": {"provider": "scripted", "script": "~/script.yaml"}})
    tilde = f"starts with ~, and {no_home(uid)}; write the path in full, or set $HOME"
    expected = [f"error: state_dir: ~/state {tilde}",
                "error: agent.workspace: ~nobody-here/ws starts with ~nobody-here, and there is no user nobody-here"
                " here; write the path in full",
                f"error: model.script: ~/script.yaml {tilde}"]
    check, start = together(lambda: run(tmp_path, "config", "check", str(config), env=env, prefix=prefix),
                            lambda: run(tmp_path, "run", "--config", str(config), env=env, prefix=prefix))
    assert failure(check, 1) == expected
    start = failure(start)
    assert start[:-1] == expected


@pytest.mark.parametrize("where", ["--config", "$SWITCHBOARD_CONFIG", "$SWITCHBOARD_STATE_DIR"])
def test_a_tilde_in_a_path_from_the_command_line_or_the_environment(tmp_path, homeless, where):
    env, prefix, uid = homeless
    args: list[str] = []
    if where == "--config":
        args, what = ["--config", "~/c.yaml"], "config file ~/c.yaml"
    elif where == "$SWITCHBOARD_CONFIG":
        env, what = {**env, "SWITCHBOARD_CONFIG": "~/c.yaml"}, "config file ~/c.yaml (from $SWITCHBOARD_CONFIG)"
    else:
        env, what = {**env, "SWITCHBOARD_STATE_DIR": "~/state"}, "$SWITCHBOARD_STATE_DIR: ~/state"
    expected = f"error: {what} starts with ~, and {no_home(uid)}; write the path in full, or set $HOME"
    check, start = together(lambda: run(tmp_path, *args, "config", "check", env=env, prefix=prefix),
                            lambda: run(tmp_path, *args, "run", env=env, prefix=prefix))
    assert failure(check, 1) == [expected]
    assert failure(start)[0] == expected
