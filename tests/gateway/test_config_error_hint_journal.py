"""Under systemd the line a start with configuration errors ends with says to check the file as the service
reads it: `switchboard config check FILE` typed in a shell lacks the unit's EnvironmentFile (the secrets) and
user, and reported "environment variable … is not set" for every secret the service had."""

import os
import subprocess

from gateway.cli import EXIT_CONFIG
from tests.gateway import cli_process

SERVICE_HINT = ("with the service's user and environment (docs/configuration.md#checking-a-services-configuration),"
                " shows them all")


def start(tmp_path, stderr_path, journal_stream: str | None, *extra: str) -> str:
    """The last line a failed `run` wrote to ``stderr_path``, with $JOURNAL_STREAM as given."""
    config = tmp_path / "config.yaml"
    config.write_text("server:\n  port: eighty\n")
    env = cli_process.environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    env.pop("JOURNAL_STREAM", None)
    with open(stderr_path, "w+") as stderr:
        if journal_stream == "this stderr":  # as systemd connects a service's stderr to the journal, and says so
            status = os.fstat(stderr.fileno())
            journal_stream = f"{status.st_dev}:{status.st_ino}"
        if journal_stream is not None:
            env["JOURNAL_STREAM"] = journal_stream
        result = subprocess.run(cli_process.command("--config", str(config), *extra, "run"), stdout=subprocess.PIPE,
                                stderr=stderr, stdin=subprocess.DEVNULL, cwd=tmp_path, env=env,
                                timeout=cli_process.TIMEOUT)
    assert result.returncode == EXIT_CONFIG
    return stderr_path.read_text().splitlines()[-1]


def test_a_start_logging_to_the_journal_asks_for_the_services_environment(tmp_path):
    line = start(tmp_path, tmp_path / "journal", "this stderr")
    assert line == (f"switchboard: the configuration has errors; `switchboard config check {tmp_path / 'config.yaml'}`,"
                    f" {SERVICE_HINT}")
    line = start(tmp_path, tmp_path / "journal", "this stderr", "--set", "server.host=127.0.0.1")
    assert line.endswith("`, with the same --set options and the service's user and environment"
                         " (docs/configuration.md#checking-a-services-configuration), shows them all")


def test_a_start_in_a_terminal_of_a_service_keeps_the_plain_hint(tmp_path):
    # $JOURNAL_STREAM is inherited by whatever a service starts (a desktop's terminal, a CI runner's jobs): it
    # counts only while it names the stderr the command writes to.
    (tmp_path / "elsewhere").write_text("")
    elsewhere = os.stat(tmp_path / "elsewhere")
    for stream in (f"{elsewhere.st_dev}:{elsewhere.st_ino}", "not numbers", None):
        line = start(tmp_path, tmp_path / "terminal", stream)
        assert line == (f"switchboard: the configuration has errors; `switchboard config check"
                        f" {tmp_path / 'config.yaml'}` shows them all"), stream
