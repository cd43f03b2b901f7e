"""Ctrl-C or SIGTERM while `switchboard run` is still starting (a platform slow to answer) ends
the process at once, cleanly, instead of once the platform has answered or given up a minute later,
past `docker stop`'s grace and systemd's patience."""

from __future__ import annotations

import signal
import socket
import subprocess

import pytest

from tests.gateway.cli_process import Running, write_config

TOKEN = "777003:AAE-abcdefghijklmnopqrstuvwxyz0123456"
EXIT_WITHIN = 10.0
"""Seconds from the signal to the end of the process; the hung platform alone would take 60."""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_a_platform_is_starting_stops_the_start(tmp_path, signum):
    # A Bot API that takes the connection and never answers: the start waits on getMe.
    with socket.socket() as api:
        api.bind(("127.0.0.1", 0))
        api.listen()
        api.settimeout(30)
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "platforms": {"telegram": {"enabled": True, "token": TOKEN, "allow_all": True,
                                       "api_base": f"http://127.0.0.1:{api.getsockname()[1]}"}},
        })
        with Running(tmp_path, "--config", str(config)) as gateway:
            connection, _ = api.accept()  # the gateway's first call to the platform is in flight
            with connection:
                gateway.proc.send_signal(signum)
                try:
                    code = gateway.proc.wait(EXIT_WITHIN)
                except subprocess.TimeoutExpired:
                    pytest.fail(f"still starting {EXIT_WITHIN}s after {signum.name}: {gateway.lines[-5:]}")
            assert code == 0, gateway.lines
            gateway.wait_for("stopped before it had started")
            assert not any("Traceback" in line or line.startswith("switchboard:") for line in gateway.lines)
