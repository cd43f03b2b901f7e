"""`switchboard ask` logs WARNING and above at the default level: advice an operator must act on is a WARNING, or
ask never shows it. A model server whose window is smaller than ``model.context_window`` (a local llama-server
started with a small ``-c``) is such advice: the setting is wrong, and every long conversation costs a refusal
after each restart until it is set right. One WARNING says so, the session's; the window the server named is an
INFO line beside it."""

from __future__ import annotations

import asyncio

from agent.testing import FakeOpenAIServer
from tests.gateway.cli_process import TIMEOUT, command, environment, write_config


async def test_ask_shows_once_that_model_context_window_is_to_be_set(tmp_path) -> None:
    async with FakeOpenAIServer(context_window=4096, context_refusal="llama.cpp", default_text="fine") as server:
        config = write_config(tmp_path / "c.yaml", {
            "state_dir": str(tmp_path / "state"),
            "model": {"provider": "openai", "name": "qwen2.5:7b", "base_url": server.base_url, "api_key": "k",
                      "context_window": 32768}})
        proc = await asyncio.create_subprocess_exec(
            *command("--config", str(config), "ask", "summarise: " + "words " * 4000),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=tmp_path, env=environment(tmp_path))
        _, stderr = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    advice = [line for line in stderr.decode().splitlines() if "model.context_window" in line]
    assert len(advice) == 1, stderr.decode()
    assert "WARNING" in advice[0] and "set model.context_window to the server's real window" in advice[0]
