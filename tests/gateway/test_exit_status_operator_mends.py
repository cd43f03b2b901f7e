"""Starts that fail alike until the operator changes something exit `EXIT_CONFIG`, which
deploy/switchboard.service does not restart (docs/configuration.md#exit-status): a model key or URL that no
server could take, and a worker on a file whose gateway runs its children itself. Restarted every 5 s, each
logged the same line for ever. An unreachable model server may come up: that one stays 1."""

from __future__ import annotations

import socket

import pytest

from gateway.cli import EXIT_CONFIG
from gateway.errors import StartupError
from gateway.startup_errors import lasting
from lifecycle import JournalError
from tests.gateway.cli_process import environment, problem_lines, run, write_config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _config(tmp_path, **sections):
    return write_config(tmp_path / "c.yaml", {"state_dir": str(tmp_path / "state"), "server": {"port": 0},
                                              "platforms": {"webhook": {"enabled": True}}, **sections})


def _status_and_line(result) -> tuple[int, str]:
    assert "Traceback" not in result.stderr, result.stderr
    [line] = problem_lines(result.stderr)
    return result.returncode, line


@pytest.mark.parametrize("command", [("run",), ("ask", "hi")])
def test_a_model_key_no_server_accepts_is_not_started_again(tmp_path, command):
    config = _config(tmp_path, model={"provider": "openai", "api_key": "sk-abcdef\u200b0123456789",
                                      "base_url": f"http://127.0.0.1:{free_port()}/v1"})
    status, line = _status_and_line(run(tmp_path, *command, "--config", str(config)))
    assert status == EXIT_CONFIG, line
    assert line.startswith("switchboard: model.api_key holds a character no API key has"), line


@pytest.mark.parametrize("url", ["localhost:11434/v1", "ftp://127.0.0.1/v1", "http://[::1/v1",
                                 "http://127.0.0.1:99999/v1"])
def test_a_model_url_that_is_no_url_is_not_started_again(tmp_path, url):
    # model.base_url is checked with the configuration (its errors exit EXIT_CONFIG); $OPENAI_BASE_URL,
    # which stands in for it, only at the start.
    config = _config(tmp_path, model={"provider": "openai"})
    status, line = _status_and_line(run(tmp_path, "run", "--config", str(config),
                                        env=environment(tmp_path, OPENAI_BASE_URL=url)))
    assert status == EXIT_CONFIG, line
    assert line.startswith(f"switchboard: $OPENAI_BASE_URL: {url} is not a usable URL"), line


def test_an_unreachable_model_url_is_still_started_again(tmp_path):
    # Issue 14: the server may come up, so the supervisor tries again.
    config = _config(tmp_path, model={"provider": "openai", "base_url": f"http://127.0.0.1:{free_port()}/v1"})
    status, line = _status_and_line(run(tmp_path, "run", "--config", str(config)))
    assert status == 1 and "cannot reach" in line, line


def test_a_worker_on_a_file_without_the_temporal_engine_is_not_started_again(tmp_path):
    pytest.importorskip("temporalio")  # without the extra it is the missing extra's line, also EXIT_CONFIG
    config = _config(tmp_path, lifecycle={"engine": "inprocess"})
    status, line = _status_and_line(run(tmp_path, "worker", "--config", str(config)))
    assert status == EXIT_CONFIG, line
    assert line.startswith("switchboard: lifecycle.engine: inprocess here means"), line


def test_only_a_newer_journal_lasts_of_the_journal_errors():
    # A journal closed or busy at start is not the operator's to mend; one a newer version wrote is.
    assert lasting(JournalError("written by a newer version", code="JOURNAL_TOO_NEW"))
    assert not lasting(JournalError("The journal is closed.", code="JOURNAL_CLOSED"))
    assert not lasting(StartupError("model.base_url: cannot reach http://127.0.0.1:1/v1"))
