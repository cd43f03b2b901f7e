"""A graceful stop of the real `switchboard run` while a plugin's async code ignores its cancellation
(it catches `asyncio.CancelledError` and carries on): the process still ends within its grace and a
few seconds, with status 0, names what it left behind, and the next start takes that up as after
a crash. Before, the stop waited for that code for ever, until a supervisor killed the process."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import pytest

from platforms.webhook_signing import sign
from tests.gateway.cli_process import Running, environment, write_config

SECRET = "stubborn-plugin-secret-0123"
GRACE = 1
EXIT_WITHIN = GRACE + 3 + 6.0
"""Seconds from SIGTERM to the end of the process: the grace, a second for each kind of work left
behind (turns or commands, children, the tasks left at the command's end), and slack."""

PLUGIN = """
    import asyncio
    import logging
    from pathlib import Path

    log = logging.getLogger("stubborn_plugin")
    STUBBORN = Path(__file__).with_name("stubborn.on")

    async def ignore_cancellation():
        log.warning("the plugin's call has started")
        while STUBBORN.exists():
            try:
                await asyncio.Event().wait()  # for ever
            except asyncio.CancelledError:
                continue

    async def stubborn_command(args, context):
        await ignore_cancellation()
        return "answered at last"

    async def stubborn_tool(args, context):
        if not STUBBORN.exists():
            return "the tool answered"
        await ignore_cancellation()

    def register(ctx):
        ctx.register_command("stubborn", stubborn_command)
        ctx.register_tool("stubborn_tool", "Ignores its cancellation.", {"type": "object"}, stubborn_tool)
"""

CALL_TOOL = [{"tool_calls": [{"name": "stubborn_tool", "arguments": {}}]}, {"text": "the tool answered"}]
SCRIPTS = {
    "turn": {"parent": [CALL_TOOL]},
    "child": {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "be stubborn"}}]},
                          {"text": "on it"}]], "leaf": [CALL_TOOL]},
    "command": {"parent": [[{"text": "no turn runs for a command"}]]},
}
AFTER_RESTART = {
    "turn": ("reply", "the tool answered"),
    "child": ("completion", "⚠️ The gateway restarted while subagents were working on this.\n"
                            "• Interrupted: be stubborn — partial output: no output yet\n"
                            "Send /retry to run the interrupted ones again."),
    "command": ("command", "answered at last"),
}
"""What the next start delivers: the turn runs again, the command is answered, the child's end is reported."""
LEFT_BEHIND = {
    "turn": r"the turn \S+ of webhook chat hook:c1 did not end within 1 s of its cancellation \(tool stubborn_tool ignores "
            r"cancellation\): left behind",
    "child": r"child sa-\S+ did not end within 1 s of its stop .*: left behind, the next start ends it as interrupted",
    "command": r"a plugin command did not end within its stop \(task .* in ignore_cancellation .*\): left behind",
}


def post(url: str, text: str) -> dict:
    body = json.dumps({"text": text, "chat_id": "c1"}).encode()
    ts = str(int(time.time()))
    headers = {"Content-Type": "application/json", "X-Switchboard-Timestamp": ts,
               "X-Switchboard-Signature": sign(SECRET, ts, body)}
    with urllib.request.urlopen(urllib.request.Request(f"{url}/webhooks/hook", data=body, headers=headers),
                                timeout=10) as response:
        return json.loads(response.read())


class Receiver:
    """`platforms.fakes.webhook_receiver` as a process of its own: the route's deliveries, as they come."""

    def __init__(self, tmp_path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "platforms.fakes.webhook_receiver", "--port", "0",
                                      "--secret", SECRET], stdout=subprocess.PIPE, text=True, cwd=tmp_path,
                                     env=environment(tmp_path))
        self.url = self.proc.stdout.readline().strip()
        self.lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stdout], daemon=True).start()

    def delivery(self, timeout: float = 30.0) -> dict:
        return json.loads(self.lines.get(timeout=timeout))["json"]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture
def receiver(tmp_path):
    running = Receiver(tmp_path)
    yield running
    running.close()


@pytest.mark.parametrize("what", ["turn", "child", "command"])
def test_plugin_code_that_ignores_its_cancellation_does_not_hold_the_stop(tmp_path, receiver, what):
    (tmp_path / "stubborn_plugin.py").write_text(textwrap.dedent(PLUGIN))
    (tmp_path / "stubborn.on").touch()
    (tmp_path / "script.json").write_text(json.dumps(SCRIPTS[what]))
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "shutdown_grace_seconds": GRACE},
        "model": {"provider": "scripted", "script": "script.json"},
        "plugins": ["stubborn_plugin"],
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET,
                                                                        "deliver_url": receiver.url}}}},
    })
    with Running(tmp_path, "--config", str(config)).started() as gateway:
        post(gateway.url, "/stubborn" if what == "command" else "call the stubborn tool")
        gateway.wait_for("the plugin's call has started")
        if what == "child":
            assert receiver.delivery()["text"] == "on it"
        gateway.ends_on_sigterm(EXIT_WITHIN)
        gateway.wait_for(LEFT_BEHIND[what])
        gateway.wait_for(r"task \S+ in ignore_cancellation \(.*stubborn_plugin.py:\d+\) did not end within 1 s of "
                         "its cancellation")
        assert not any("Traceback" in line for line in gateway.lines), gateway.lines

    (tmp_path / "stubborn.on").unlink()  # the next process's plugin answers
    with Running(tmp_path, "--config", str(config)).started():
        delivered = receiver.delivery()
    assert (delivered["kind"], delivered["text"]) == AFTER_RESTART[what]
