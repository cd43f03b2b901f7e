import pytest

from gateway.testing import start_gateway


@pytest.fixture
async def gateways():
    """Start gateways with `start_gateway`; every one is stopped after the test."""
    started = []

    async def make(config, adapters, **kw):
        gateway = await start_gateway(config, adapters, **kw)
        started.append(gateway)
        return gateway

    yield make
    for gateway in started:
        await gateway.stop(grace=0)
