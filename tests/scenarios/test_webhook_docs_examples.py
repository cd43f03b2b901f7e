"""The examples of docs/platforms/webhook.md, run as an integrator would copy them: the configuration, the
Python and shell (openssl + curl) signing of a request, the signed read of a turn, verifying a delivery and
downloading a file, each taken from the markdown and pointed at a real gateway on a free loopback port. Only
the address, the secret and the ids the docs leave as placeholders are filled in."""

from __future__ import annotations

import ast
import asyncio
import json
import re
import shutil
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import yaml

from gateway.app import Gateway
from gateway.config import config_from_mapping
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import settled
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from tests.polling import until

DOC = Path(__file__).resolve().parents[2] / "docs" / "platforms" / "webhook.md"
SECRETS = {"ALERTS_WEBHOOK_SECRET": "alerts-s3cret-for-docs", "REPORTS_WEBHOOK_SECRET": "reports-s3cret-for-docs"}
DOCS_BASE = "http://127.0.0.1:8080"
DATA = b"alert,count\ndisk full,3\n"
SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "alerts 2026-W47.csv", "caption": "alerts"}}]}
needs_tools = pytest.mark.skipif(not (shutil.which("openssl") and shutil.which("curl")),
                                 reason="needs openssl and curl")


def block(after: str, lang: str) -> str:
    """The first ```lang block of the doc after the first line holding ``after``."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(after)
    found = re.compile(rf"^```{lang}\n(.*?)^```$", re.S | re.M).search(text, start)
    assert found is not None, f"no {lang} block after {after!r}"
    return found.group(1)


def fill(code: str, placeholder: str, value: str) -> str:
    assert placeholder in code, f"the docs' example no longer holds {placeholder!r}"
    return code.replace(placeholder, value)


async def run(*argv: str, cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(*argv, cwd=cwd, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[tuple[Gateway, str]]]]:
    """The docs' own configuration: `alerts` delivering to ``deliver_url``, `reports` read back."""
    running: list[tuple[Gateway, Server]] = []

    async def start(deliver_url: str = "http://127.0.0.1:9/unused", **model: object) -> tuple[Gateway, str]:
        raw = {**yaml.safe_load(block("## Configuration", "yaml")), "state_dir": str(tmp_path / "state"),
               "server": {"port": 0}, "model": model or {"demo": {"child_steps": 1, "step_seconds": 0}}}
        routes = raw["platforms"]["webhook"]["routes"]
        routes["alerts"]["deliver_url"] = deliver_url
        raw["platforms"]["webhook"]["toolsets"] = ["file"]
        config = config_from_mapping(raw, env=SECRETS).config
        gateway = Gateway(AgentHost(config), build_adapters(config))
        server = Server(gateway, "127.0.0.1", 0)
        await gateway.start()
        await server.start()
        running.append((gateway, server))
        return gateway, server.url

    yield start
    for gateway, server in running:
        await server.stop()
        await gateway.stop(grace=0)


async def read_until_complete(url: str, secret: str) -> dict:
    return await until(lambda: _complete(url, secret))


async def _complete(url: str, secret: str) -> dict | None:
    read = (await signed_get(url, secret)).json()
    return read if read["complete"] else None


async def test_the_python_signing_example_is_accepted_and_its_reply_delivered(gateway, tmp_path) -> None:
    async with WebhookReceiver(SECRETS["ALERTS_WEBHOOK_SECRET"]) as receiver:
        running, base = await gateway(receiver.url)
        code = fill(block("Python:", "python"), 'secret = "…"', f'secret = "{SECRETS["ALERTS_WEBHOOK_SECRET"]}"')
        out = await run(sys.executable, "-c", fill(code, DOCS_BASE, base), cwd=tmp_path)
        accepted = json.loads(ast.literal_eval(out))  # it prints the bytes of the answer, b'{...}'
        assert accepted["duplicate"] is False
        await receiver.wait_for(lambda: receiver.unique)
        await settled(running)
    (delivery,) = receiver.unique.values()
    assert (delivery.json["turn_id"], delivery.json["chat_id"], delivery.reason) == (accepted["turn_id"], "ops", None)
    assert isinstance(receiver.payloads[0]["text"], str)

    verifying: dict = {}
    exec(block("verify them\nwith the same recipe", "python"), verifying)
    verified = verifying["verified"]
    secret = SECRETS["ALERTS_WEBHOOK_SECRET"]
    assert verified(secret, delivery.headers, delivery.body)
    assert not verified(secret, delivery.headers, delivery.body + b" ")
    assert not verified(SECRETS["REPORTS_WEBHOOK_SECRET"], delivery.headers, delivery.body)
    assert not verified(secret, {**delivery.headers, "X-Switchboard-Timestamp": "1700000000"}, delivery.body)
    assert not verified(secret, {**delivery.headers, "X-Switchboard-Signature": "v1=ÿ"}, delivery.body)
    signature = delivery.headers["X-Switchboard-Signature"]
    assert verified(secret, {**delivery.headers, "X-Switchboard-Signature": signature.upper().replace("V1=", "v1=")},
                    delivery.body)  # hex in either case, as the gateway's own check
    assert not verified(secret, {**delivery.headers, "X-Switchboard-Signature": signature.upper()}, delivery.body)
    assert not verified(secret, {}, delivery.body)


@needs_tools
async def test_the_shell_examples_send_a_message_and_read_its_turn(gateway, tmp_path) -> None:
    running, base = await gateway()
    secret = SECRETS["REPORTS_WEBHOOK_SECRET"]
    send = fill(block("Shell, with `openssl`:", "sh"), "SECRET='…'", f"SECRET='{secret}'")
    send = fill(fill(send, "/webhooks/alerts", "/webhooks/reports"), DOCS_BASE, base)
    accepted = json.loads(await run("sh", "-c", send, cwd=tmp_path))
    turn = f"{base}/webhooks/reports/turns/{accepted['turn_id']}"
    await read_until_complete(turn, secret)

    read = fill(block("## Reading replies without `deliver_url`", "sh"), "TURN=turn-123", f"TURN={accepted['turn_id']}")
    read = fill(fill(read, "SECRET='…'", f"SECRET='{secret}'"), DOCS_BASE, base)
    answer = json.loads(await run("sh", "-c", read, cwd=tmp_path))
    assert answer["complete"] is True
    assert [(m["route"], m["chat_id"], m["kind"]) for m in answer["messages"]] == [("reports", "ops", "reply")]
    await settled(running)


@needs_tools
async def test_the_download_examples_save_the_file_the_agent_sent(gateway, tmp_path) -> None:
    workspace = tmp_path / "state" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "alerts 2026-W47.csv").write_bytes(DATA)
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "here it is"}]]}))
    running, base = await gateway(provider="scripted", script=str(script))
    secret = SECRETS["REPORTS_WEBHOOK_SECRET"]
    accepted = (await signed_post(f"{base}/webhooks/reports", secret, {"text": "the CSV please"})).json()
    read = await read_until_complete(f"{base}/webhooks/reports/turns/{accepted['turn_id']}", secret)
    item = next(m for m in read["messages"] if m["kind"] == "file")

    shell = fill(block("### Downloading a file", "sh"), "FILE_PATH=/webhooks/reports/files/Vq1c0RfqTnJ7zY2d8Yh3sQ_x",
                 f"FILE_PATH={item['file']['path']}")
    shell = fill(fill(shell, "SECRET='…'", f"SECRET='{secret}'"), DOCS_BASE, base)
    (tmp_path / "curl").mkdir()
    await run("sh", "-c", shell, cwd=tmp_path / "curl")
    assert (tmp_path / "curl" / "alerts 2026-W47.csv").read_bytes() == DATA

    python = fill(block("(`curl -OJ` saves it", "python"), 'secret = "…"', f"secret = {secret!r}")
    python = fill(python, DOCS_BASE, base)
    prelude = f"import json\nitem = json.loads({json.dumps(item)!r})\n"
    (tmp_path / "python").mkdir()
    await run(sys.executable, "-c", prelude + python, cwd=tmp_path / "python")
    assert (tmp_path / "python" / "alerts 2026-W47.csv").read_bytes() == DATA
    await settled(running)


async def test_a_completion_is_read_under_the_turn_that_started_its_work(gateway) -> None:
    running, base = await gateway()
    secret = SECRETS["REPORTS_WEBHOOK_SECRET"]
    accepted = (await signed_post(f"{base}/webhooks/reports", secret, {"text": "- check a\n- check b"})).json()
    read = await read_until_complete(f"{base}/webhooks/reports/turns/{accepted['turn_id']}", secret)
    (completion,) = [m for m in read["messages"] if m["kind"] == "completion"]
    assert completion["turn_id"] != accepted["turn_id"]
    alone = await signed_get(f"{base}/webhooks/reports/turns/{completion['turn_id']}", secret)
    assert (alone.status, alone.json()) == (404, {"error": f"unknown turn {completion['turn_id']!r}"})
    await settled(running)
