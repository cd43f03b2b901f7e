"""`switchboard run` and `switchboard chat`: one gateway process from start to graceful stop."""

from __future__ import annotations

import asyncio
import logging
import signal

from gateway import gc_tuning, state_lock
from gateway.app import Gateway
from gateway.config import Config
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server

log = logging.getLogger("gateway.serve")


async def serve(config: Config, *, local: bool = False) -> int:
    """Run until SIGINT/SIGTERM (or the terminal chat ends): stop intake, give turns
    ``server.shutdown_grace_seconds``, flush the outbox, journal running children."""
    state_lock.hold(config.state_dir)  # one process per state directory, before anything opens it
    stopping = asyncio.Event()
    adapters = build_adapters(config, local=local, on_local_exit=stopping.set)
    gateway = Gateway(AgentHost(config), adapters)
    # The terminal chat alone needs no HTTP server (and must not fight `switchboard run` for its port).
    with_server = not local or len(adapters) > 1
    server = Server(gateway, config.server.host, config.server.port) if with_server else None
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    try:
        if server is not None:
            await server.bind()  # a port in use stops the start before any platform takes a message
        await gateway.start()
        if server is not None:
            await server.start()
        gc_tuning.tune_for_serving()
        log.info("gateway running with %s", ", ".join(sorted(gateway.adapters)) or "no platforms")
        await stopping.wait()
        log.info("shutting down")
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        if server is not None:
            await server.stop()
        await gateway.stop()
    return 0
