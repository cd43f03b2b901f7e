"""The exit status of a start that failed says whether starting again can help (docs/configuration.md#exit-status):
`EXIT_CONFIG` for what only the operator can mend, which deploy/switchboard.service does not restart, and 1
for what may mend by itself, which it does."""

from __future__ import annotations

import asyncio

import pytest

from gateway.cli import EXIT_CONFIG
from gateway.errors import StartupError
from gateway.startup_errors import lasting
from platforms.base import BadRequest, Forbidden, NetworkError, NotFound, Unauthorized
from platforms.fakes.telegram import FakeTelegram
from tests.gateway.cli_process import environment, problem_lines, run, write_config

TOKEN = "777002:AAE-abcdefghijklmnopqrstuvwxyz0123456"


async def test_a_token_the_platform_refuses_at_start_is_not_started_again(tmp_path):
    # Every start is refused alike until the token in the configuration changes: restarted, the gateway
    # logged the same refusal every 5 s for ever.
    async with FakeTelegram() as fake:  # it takes its own token only: ours is answered 401 Unauthorized
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "platforms": {"telegram": {"enabled": True, "token": "${TG_TOKEN}", "allow_all": True,
                                       "api_base": fake.base_url}},
        })
        result = await asyncio.to_thread(run, tmp_path, "run", "--config", str(config),
                                         env=environment(tmp_path, TG_TOKEN=TOKEN))
    assert result.returncode == EXIT_CONFIG, result.stderr
    [line] = problem_lines(result.stderr)
    assert "refused the bot" in line and TOKEN not in result.stderr


def _from(cause: BaseException) -> StartupError:
    try:
        raise StartupError("what the operator reads") from cause
    except StartupError as exc:
        return exc


@pytest.mark.parametrize("refusal", [Unauthorized, Forbidden, NotFound, BadRequest])
def test_a_platform_refusing_the_bot_lasts(refusal):
    assert lasting(refusal("no", platform="slack"))
    group = ExceptionGroup("platforms", [NetworkError("down", platform="discord"), refusal("no", platform="discord")])
    assert lasting(group)


def test_a_missing_extra_lasts():
    assert lasting(_from(ImportError("No module named 'temporalio'")))


@pytest.mark.parametrize("passing", [
    NetworkError("connection refused", platform="telegram"),  # the platform's API not reachable yet
    _from(ConnectionRefusedError(111, "Connection refused")),  # Temporal not up yet
    _from(OSError(98, "Address already in use")),  # the port held by a process on its way out
    StartupError("model.base_url: cannot reach http://127.0.0.1:11434/v1"),  # the model server not up yet
    Unauthorized("no", platform=None),  # not a platform's answer at start: no key to fix
    ValueError("something else"),
])
def test_what_may_mend_by_itself_does_not_last(passing):
    assert not lasting(passing)
