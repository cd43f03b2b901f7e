"""`server.port: 0` picks a free port as the server starts: the chat's first screen names the port picked, or,
before one is, says so; never ``:0``, no address a browser opens."""

from __future__ import annotations

import re
import subprocess
import urllib.request

from gateway.chat_intro import browsable_base, chat_intro
from gateway.testing import make_config
from tests.gateway.cli_process import TIMEOUT, command, environment
from tests.gateway.test_chat_intro_running_here import read_until, wait_for_start


def test_a_chat_running_the_server_names_the_port_it_listens_on(tmp_path):
    config = make_config(tmp_path, platforms={"web": {"enabled": True}}, server={"port": 0})
    intro = chat_intro(config, port=40123)
    assert "Also running here:\n  the web chat at http://127.0.0.1:40123/chat\n" in intro
    assert "  the operator console at http://127.0.0.1:40123/console" in intro
    assert ":0/" not in intro


def test_a_port_not_picked_yet_is_no_address(tmp_path):
    intro = chat_intro(make_config(tmp_path, server={"port": 0}))  # the terminal alone: no server runs
    assert "`switchboard run` serves the web chat at http://127.0.0.1:<free port>/chat\n" in intro
    assert ":0/" not in intro
    assert browsable_base("::", 0) == "http://127.0.0.1:<free port>"


def test_a_port_set_is_named_as_set(tmp_path):
    config = make_config(tmp_path, platforms={"web": {"enabled": True}}, server={"port": 9123})
    assert "the web chat at http://127.0.0.1:9123/chat" in chat_intro(config)


def test_a_chat_on_server_port_0_names_the_port_it_listens_on(tmp_path):
    args = command("chat", "--set", "platforms.web.enabled=true", "--set", "server.port=0")
    env = environment(tmp_path, SWITCHBOARD_STATE_DIR=str(tmp_path / "state"))
    with subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          cwd=tmp_path, env=env) as chat:
        try:
            screen = read_until(chat, b"/console").decode()
            port = re.search(r"the web chat at http://127\.0\.0\.1:(\d+)/chat\n", screen)
            assert port is not None and port[1] != "0", screen
            wait_for_start(tmp_path / "state" / "chat.log")
            direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy of the environment
            with direct.open(f"http://127.0.0.1:{port[1]}/healthz", timeout=TIMEOUT) as page:
                assert page.status == 200
        finally:
            chat.stdin.close()
            assert chat.wait(timeout=TIMEOUT) == 0
