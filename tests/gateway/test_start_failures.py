"""A start that fails: said as it fails, what had started stops, and the record of the run before
is left as it was when the run of this start had not begun yet (a crash there is still charged, by
the next start, to the events whose turns it had begun)."""

from __future__ import annotations

import socket

import pytest

from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import RecordingAdapter, make_config, start_gateway
from tests.gateway.cli_process import Running, problem_lines, run, write_config
from tests.gateway.test_startup import free_port


async def test_a_start_that_fails_before_its_run_began_does_not_record_the_run_before_as_stopped_cleanly(tmp_path):
    (tmp_path / "state").mkdir(mode=0o700)
    crashed = GatewayStore(tmp_path / "state" / STATE_DB)
    crashed.begin_run()
    crashed.close()  # what a process killed while it ran leaves: its run begun, never ended
    # The host's start fails (a delegation backend whose plugin is missing), before the gateway's run begins.
    config = make_config(tmp_path, delegation={"backend": "missing"})
    with pytest.raises(StartupError, match="delegation.backend"):
        await start_gateway(config, [RecordingAdapter()])
    store = GatewayStore(tmp_path / "state" / STATE_DB)
    try:
        # Before: the failed start's stop recorded a clean end, and the crash went uncharged.
        assert store.begin_run() is False
    finally:
        store.close()


async def test_a_start_that_began_its_run_records_its_stop(tmp_path):
    gateway = await start_gateway(make_config(tmp_path), [RecordingAdapter()])
    await gateway.stop(grace=0)
    store = GatewayStore(tmp_path / "state" / STATE_DB)
    try:
        assert store.begin_run() is True
    finally:
        store.close()


def test_a_platform_that_fails_while_another_runs_is_said_as_it_fails_and_what_started_stops(tmp_path):
    """The webhook platform has started (and may be running turns, which get the grace) when Telegram
    fails: the log says so at once, the token masked, before the stop; the command's one line follows,
    status 1, and the port and the state directory are free again for the next start."""
    token = "777004:AAE-abcdefghijklmnopqrstuvwxyz0123456"
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        api_base = f"http://127.0.0.1:{dead.getsockname()[1]}"  # nothing listens: connection refused
    port = free_port()
    webhook = {"enabled": True, "routes": {"hook": {"secret": "fails-at-start-0"}}}
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": port},
        "platforms": {"webhook": webhook,
                      "telegram": {"enabled": True, "token": token, "allow_all": True, "api_base": api_base}},
    })
    result = run(tmp_path, "run", "--config", str(config))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert token not in result.stderr and "AAE-" not in result.stderr
    lines = result.stderr.splitlines()
    started = next(i for i, line in enumerate(lines) if "platform webhook started" in line)
    said = next(i for i, line in enumerate(lines)
                if "could not start, stopping what had started: platforms.telegram.api_base" in line)
    assert started < said < len(lines) - 1  # before the stop's own lines, and the command's line last
    reason = lines[said].split("stopping what had started: ", 1)[1]
    assert problem_lines(result.stderr) == [f"switchboard: {reason}"]
    # What had started stopped cleanly: the port, the lock and the database serve the next start.
    again = write_config(tmp_path / "again.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": port}, "platforms": {"webhook": webhook}})
    with Running(tmp_path, "--config", str(again)) as gateway:
        gateway.started()
