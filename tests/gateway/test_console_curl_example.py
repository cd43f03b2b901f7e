"""The console's API from a shell, as docs/console.md shows it: its curl example of an action, run as written
against a real gateway on loopback, reaches the action (a 415 stopped it before, for want of a Content-Type the
doc did not show), and an action posted without that header is told which header it needs."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import aiohttp
import pytest

from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.testing import make_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "console.md"
TOKEN = "console-token-0123456789-abcdef"
NEEDED = {"error": "send actions with the header Content-Type: application/json (the body may be empty)"}


@pytest.fixture
async def server(tmp_path, gateways):
    config = make_config(tmp_path, server={"console_token": TOKEN})
    served = Server(await gateways(config, build_adapters(config)), "127.0.0.1", 0)
    await served.start()
    yield served
    await served.stop()


def example() -> str:
    """The first shell block of the doc's API section."""
    text = DOC.read_text(encoding="utf-8")
    found = re.compile(r"^```sh\n(.*?)^```$", re.S | re.M).search(text, text.index("### The API"))
    assert found is not None, "no curl example in the console's API section"
    return found.group(1)


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
async def test_the_docs_curl_example_of_an_action_reaches_it(server, tmp_path) -> None:
    script = example()
    assert "TOKEN='…'" in script and "http://127.0.0.1:8080" in script, script
    script = script.replace("TOKEN='…'", f"TOKEN='{TOKEN}'").replace("http://127.0.0.1:8080", server.url)
    process = await asyncio.create_subprocess_exec("sh", "-c", script, cwd=tmp_path, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    # The action ran: the turn it names is not running, which is said, not the header missing.
    answer = json.loads(out)
    assert answer != NEEDED and "not running" in answer["error"], answer


async def test_an_action_without_the_content_type_is_told_the_header_it_needs(server) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(server.url + "/console/api/turns/turn-123/stop",
                             headers={"Authorization": f"Bearer {TOKEN}"}) as response:
            assert (response.status, await response.json()) == (415, NEEDED)
