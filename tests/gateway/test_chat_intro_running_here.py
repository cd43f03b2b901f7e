"""`switchboard chat` with a platform enabled runs it too, and the HTTP server with it: its first screen says
where the web chat and the console are open now, instead of telling the user to enable the web chat and start
`switchboard run` (what the terminal alone shows)."""

from __future__ import annotations

import select
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from gateway.chat_intro import chat_intro
from gateway.testing import make_config
from tests.gateway.cli_process import TIMEOUT, command, environment


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def read_until(process: subprocess.Popen[bytes], marker: bytes) -> bytes:
    """What the process printed, up to the line holding ``marker``."""
    out = b""
    deadline = time.monotonic() + TIMEOUT
    while marker not in out or not out.endswith(b"\n"):
        assert select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))[0], out
        chunk = process.stdout.read1(4096)
        assert chunk, out
        out += chunk
    return out


def wait_for_start(log: Path) -> None:
    """Until the log says the gateway runs: the first screen comes as the terminal starts, the server's
    listening a moment later."""
    deadline = time.monotonic() + TIMEOUT
    while "gateway running with" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_chat_serving_the_web_chat_says_where_it_is_open(tmp_path):
    port = free_port()
    args = command("chat", "--set", "platforms.web.enabled=true", "--set", f"server.port={port}")
    env = environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    with subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          cwd=tmp_path, env=env) as chat:
        try:
            screen = read_until(chat, b"/console").decode()
            assert "`switchboard run`" not in screen and "platforms.web.enabled" not in screen
            assert f"Also running here:\n  the web chat at http://127.0.0.1:{port}/chat\n" in screen
            wait_for_start(tmp_path / "state" / "chat.log")
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy of the environment
            for path in ("/chat", "/console"):
                with direct.open(f"http://127.0.0.1:{port}{path}", timeout=TIMEOUT) as page:
                    assert page.status == 200
        finally:
            chat.stdin.close()
            assert chat.wait(timeout=TIMEOUT) == 0


def test_the_platforms_running_here_are_named_and_the_web_chat_still_offered(tmp_path):
    config = make_config(tmp_path, platforms={"webhook": {"enabled": True}}, server={"port": 9123, "console": False})
    intro = chat_intro(config)
    assert "Also running here:\n  the webhook routes at http://127.0.0.1:9123/webhooks/<route>\n" in intro
    assert "/console" not in intro  # server.console: false serves none
    assert "The web chat too, at http://127.0.0.1:9123/chat, once switchboard.yaml sets platforms.web.enabled" in intro
