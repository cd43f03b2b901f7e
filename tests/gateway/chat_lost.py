"""The real `Gateway` on one platform's adapter and loopback fake, for tests of a chat the bot can no longer write
to: `hanging_gateways`, gateways whose work hangs in subagents until stopped, and `lines`, what the log said of
the chat lost."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, start_gateway
from platforms.base import Adapter
from tests.hanging_children import delegating_parent, hanging_child

LOST = "can no longer be written to"


def hanging_gateways(platform: str, adapter_on: Callable[[Any], Adapter],
                     ready: Callable[[Any], object]) -> Any:
    """A ``gateways`` fixture for a test module: ``start(**display)``, a gateway on ``platform`` with the
    `adapter_on` the module's ``fake``, whose parent delegates two children that hang (`tests.hanging_children`),
    returned once ``ready(fake)`` holds; every gateway started is stopped after the test."""

    @pytest.fixture
    async def gateways(fake, tmp_path) -> AsyncIterator[Callable[..., Awaitable[tuple[Gateway, ScriptedModel]]]]:
        running: list[Gateway] = []

        async def start(**display: object) -> tuple[Gateway, ScriptedModel]:
            config = make_config(tmp_path, platforms={platform: {"allow_all": True}},
                                 display={"progress": "off", **display})
            model = ScriptedModel({"parent": delegating_parent, "leaf": hanging_child})
            running.append(await start_gateway(config, [adapter_on(fake)], model=model))
            await fake.wait_for(lambda: ready(fake))
            return running[-1], model

        yield start
        for gateway in running:
            await gateway.stop(grace=0)

    return gateways


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The log's lines that say a chat can no longer be written to."""
    return [r.getMessage() for r in caplog.records if LOST in r.getMessage()]
