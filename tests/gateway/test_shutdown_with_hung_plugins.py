"""A graceful stop of the real `switchboard run` while a plugin's code hangs in a worker thread,
or its register(ctx) while the gateway starts: the process still ends promptly after SIGTERM
(before systemd's stop timeout has to kill it), and the log names the plugin it left running."""

from __future__ import annotations

import json
import textwrap
import time
import urllib.request

import pytest

from platforms.webhook_signing import sign
from tests.gateway.cli_process import Running, write_config

SECRET = "hung-plugin-secret-0123"
EXIT_WITHIN = 10.0
"""Seconds from SIGTERM to the end of the process: the grace below (turns and the outbox's flush), and slack."""

PLUGIN = """
    import logging
    import threading

    log = logging.getLogger("hung_plugin")
    forever = threading.Event()

    def hang(args, context):
        log.warning("the plugin's call has started")
        forever.wait()

    def on_turn_start(**kwargs):
        log.warning("the plugin's call has started")
        forever.wait()

    def hang_tool(args, context):
        log.warning("the plugin's call has started")
        forever.wait()

    def register(ctx):
        ctx.register_command("hang", hang)
        ctx.register_hook("turn_start", on_turn_start)
        ctx.register_tool("hang_tool", "Never returns.", {"type": "object"}, hang_tool)
"""

TOOL_SCRIPT = {"parent": [[{"tool_calls": [{"name": "hang_tool", "arguments": {}}]}]]}
"""The model's first step calls the plugin's tool."""


def post(url: str, text: str) -> int:
    body = json.dumps({"text": text, "chat_id": "c1"}).encode()
    ts = str(int(time.time()))
    request = urllib.request.Request(f"{url}/webhooks/hook", data=body, method="POST", headers={
        "Content-Type": "application/json", "X-Switchboard-Timestamp": ts,
        "X-Switchboard-Signature": sign(SECRET, ts, body)})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


@pytest.mark.parametrize(("text", "what", "model"), [
    ("/hang", "command /hang", {"demo": {"child_steps": 0, "step_seconds": 0}}),
    ("hello", "hook turn_start", {"demo": {"child_steps": 0, "step_seconds": 0}}),
    ("hello", "tool hang_tool", {"provider": "scripted", "script": "script.json"}),
])
def test_a_plugin_call_hung_in_its_thread_does_not_hold_up_the_exit(tmp_path, text, what, model):
    (tmp_path / "hung_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "script.json").write_text(json.dumps(TOOL_SCRIPT))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "shutdown_grace_seconds": 1},
        "agent": {"hook_timeout_seconds": 0.5},
        "model": model,
        "plugins": ["hung_plugin"],
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}},
    })
    with Running(tmp_path, "--config", str(config)).started() as gateway:
        assert post(gateway.url, text) == 202
        gateway.wait_for("the plugin's call has started")
        gateway.ends_on_sigterm(EXIT_WITHIN)
        line = gateway.wait_for(r".*plugin hung_plugin.*still running.*").group(0)
        assert what in line


HUNG_REGISTER = """
    import logging
    import threading

    def register(ctx):
        logging.getLogger("hung_register").warning("the plugin's register has started")
        threading.Event().wait()
"""


def test_sigterm_while_a_plugin_register_hangs_stops_the_start(tmp_path):
    # register ran on the event loop's thread, so the loop never saw the signal: only SIGKILL ended it.
    (tmp_path / "hung_register.py").write_text(textwrap.dedent(HUNG_REGISTER))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0}, "plugins": ["hung_register"],
        "model": {"demo": {"child_steps": 0, "step_seconds": 0}}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.wait_for("the plugin's register has started")
        gateway.ends_on_sigterm(EXIT_WITHIN)
        gateway.wait_for("stopped before it had started")


HUNG_IMPORT = """
    import logging
    import threading

    logging.getLogger("hung_import").warning("the plugin's import has started")
    threading.Event().wait()


    def register(ctx):
        pass
"""
HELLO = """
    def register(ctx):
        ctx.register_command("hello", lambda args, c: "hi")
"""


def test_a_plugin_whose_import_hangs_fails_to_load_and_sigterm_ends_the_gateway(tmp_path):
    # The import ran on the event loop's thread, unbounded: the gateway never started, and only
    # SIGKILL ended it.
    (tmp_path / "hung_import.py").write_text(textwrap.dedent(HUNG_IMPORT))
    (tmp_path / "hello_plugin.py").write_text(textwrap.dedent(HELLO))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"), "server": {"port": 0}, "plugins": ["hung_import", "hello_plugin"],
        "agent": {"plugin_load_timeout_seconds": 1}, "model": {"demo": {"child_steps": 0, "step_seconds": 0}}})
    with Running(tmp_path, "--config", str(config)) as gateway:
        gateway.wait_for("the plugin's import has started")
        gateway.started()
        gateway.wait_for(r"plugin 'hung_import': did not import within 1 s")
        gateway.wait_for("plugin hello_plugin loaded")
        gateway.ends_on_sigterm(EXIT_WITHIN)
