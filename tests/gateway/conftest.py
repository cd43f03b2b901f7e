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


@pytest.fixture
async def llm():
    """Start `FakeOpenAIServer`s (``await llm(api_key=...)``); each is closed after the test. Ask
    for this fixture before ``gateways`` so the gateways stop first."""
    from agent.testing import FakeOpenAIServer

    servers = []

    async def make(**kw):
        server = FakeOpenAIServer(**kw)
        await server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        await server.close()
