"""Fixtures for the built-in tool tests: a workspace and a way to call a tool like the agent loop does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent._tools import Tool, ToolContext


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def call(workspace: Path) -> Callable[..., Awaitable[str]]:
    """``await call(tool, args, **services)``: validate and run ``tool`` through `Tool.invoke`."""

    async def _call(tool: Tool, args: dict[str, Any], services: Mapping[str, Any] | None = None) -> str:
        ctx = ToolContext(session=None, call_id="call-1", workspace=workspace, services=dict(services or {}))
        return await tool.invoke(args, ctx)

    return _call
