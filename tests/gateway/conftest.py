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


@pytest.fixture
def cli_isolated(tmp_path, monkeypatch):
    """A CLI run in ``tmp_path``, as if on a fresh machine: no config the user's or the environment's, a state
    directory of its own. Asked for by the CLI's test files, each with ``pytestmark``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SWITCHBOARD_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("SWITCHBOARD_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
