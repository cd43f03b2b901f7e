"""A second SIGTERM while the graceful stop runs ends the process at once, as a supervisor that
escalates expects (`gateway.stop_signals`), also as a container's PID 1, where the kernel drops a
signal left at its default action (`deploy/Dockerfile` runs `switchboard run` so)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from platforms.webhook_signing import sign
from tests.gateway.cli_process import Running, write_config

SECRET = "second-sigterm-secret-0"
GRACE = 40
"""Long enough that a stop which waited for its hanging turn would fail the test."""
AT_ONCE = 10.0
"""Seconds from the second SIGTERM to the end of the process: at once, with slack for a loaded machine."""
PLUGIN = """
    import asyncio
    import logging

    async def wait(args, context):
        logging.getLogger("waiting_plugin").warning("the tool waits")
        await asyncio.Event().wait()

    def register(ctx):
        ctx.register_tool("wait", "Waits until cancelled.", {"type": "object"}, wait)
"""
SCRIPT = {"parent": [[{"tool_calls": [{"name": "wait", "arguments": {}}]}, {"text": "done"}]]}
AS_PID_1 = ["unshare", "-rpf", "--kill-child"]  # a new PID namespace in which the command is PID 1


def post(url: str, text: str) -> None:
    body = json.dumps({"text": text, "chat_id": "c1"}).encode()
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Switchboard-Timestamp": ts,
               "X-Switchboard-Signature": sign(SECRET, ts, body)}
    with urllib.request.urlopen(urllib.request.Request(f"{url}/webhooks/hook", data=body, headers=headers),
                                timeout=10) as response:
        assert response.status == 202


def until_refused(url: str, timeout: float = 10.0) -> None:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
        except (ConnectionRefusedError, ConnectionResetError):  # reset: it closed with this connect in its backlog
            return
        time.sleep(0.01)
    raise AssertionError(f"{url} still listening {timeout} s after the stop began")


@pytest.mark.parametrize("pid_1", [False, True], ids=["process", "pid-1"])
def test_a_second_sigterm_during_the_stop_ends_the_process_at_once(tmp_path, pid_1):
    prefix: list[str] = []
    if pid_1:
        prefix = AS_PID_1
        if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode:
            pytest.skip("needs user and PID namespaces")
    (tmp_path / "waiting_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "shutdown_grace_seconds": GRACE},
        "model": {"provider": "scripted", "script": "script.json"},
        "plugins": ["waiting_plugin"],
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}},
    })
    with Running(tmp_path, "--config", str(config), prefix=prefix).started() as gateway:
        pid = gateway.proc.pid
        if pid_1:  # unshare's child: PID 1 of its namespace
            (pid,) = map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
            assert Path(f"/proc/{pid}/status").read_text().split("NSpid:")[1].splitlines()[0].split()[-1] == "1"
        post(gateway.url, "wait")
        gateway.wait_for("the tool waits")  # a turn runs, which the stop gives its grace
        os.kill(pid, signal.SIGTERM)
        gateway.wait_for("shutting down")
        # The first signal's handler goes as the stop begins, before the HTTP server stops listening.
        until_refused(gateway.url)
        began = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        try:
            status = gateway.proc.wait(AT_ONCE)
        except subprocess.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)  # unshare ignores SIGTERM while it waits for its child
            raise AssertionError(f"still running {AT_ONCE} s after a second SIGTERM: {gateway.lines[-3:]}") from None
        assert time.monotonic() - began < AT_ONCE
        assert status in (-signal.SIGTERM, 128 + signal.SIGTERM)
