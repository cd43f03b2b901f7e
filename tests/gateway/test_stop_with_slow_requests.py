"""`switchboard run` stopped while a client is still sending a request's body: the HTTP server stops
alongside the gateway, on its grace, and the client is answered 503 (as the webhook answers a body that
arrives after the stop). Before, the stop waited for the body up to ``server.body_timeout_seconds``
before the gateway's own stop began, past a supervisor's stop timeout set to the grace
(`docker stop -t`), which then killed the process: a crash, for the next start."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sqlite3
import subprocess
import time

from gateway.host import STATE_DB
from tests.gateway.cli_process import Running, write_config

SECRET = "slow-request-secret-0"
GRACE = 2.0
LATE = 3.0
"""Seconds past the grace the process may take to end, on a loaded machine. Before: the body's limit,
60 s here."""
# Signature headers of the right form (only then is a body read at all): no secret is needed to send them.
HEAD = (b"POST /webhooks/hook HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\nX-Switchboard-Timestamp: 1700000000\r\nX-Switchboard-Signature: v1="
        + b"0" * 64 + b"\r\nExpect: 100-continue\r\n\r\n")


async def test_a_client_still_sending_its_body_does_not_hold_the_stop(tmp_path):
    config = write_config(tmp_path / "c.yaml", {
        "state_dir": str(tmp_path / "state"),
        "server": {"port": 0, "shutdown_grace_seconds": GRACE, "body_timeout_seconds": 60},
        "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET}}}},
    })
    with Running(tmp_path, "--config", str(config)) as gateway:
        await asyncio.to_thread(gateway.started)
        host, port = gateway.url.removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(HEAD)
            async with asyncio.timeout(10):  # "100 Continue" comes once the request's handler runs
                assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100 Continue")
            writer.write(b'{"text": "')
            await writer.drain()
            began = time.monotonic()
            gateway.proc.send_signal(signal.SIGTERM)
            try:
                code = await asyncio.to_thread(gateway.proc.wait, GRACE + LATE)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"still running {GRACE + LATE} s after SIGTERM: {gateway.lines[-3:]}") from None
            took = time.monotonic() - began
            async with asyncio.timeout(5):
                reply = await reader.read()
        finally:
            writer.close()
    assert code == 0 and took < GRACE + LATE
    assert reply.startswith(b"HTTP/1.1 503 ")  # what the docs promise a request that comes during a stop
    assert json.loads(reply.partition(b"\r\n\r\n")[2]) == {"error": "not accepting messages right now; retry later"}
    assert b"\r\nRetry-After: 5\r\n" in reply.partition(b"\r\n\r\n")[0]  # when to try again
    assert any(line.endswith("gateway.serve: shutting down") for line in gateway.lines)
    assert any("body not received before the stop; answered 503" in line for line in gateway.lines)
    assert not [line for line in gateway.lines if "Traceback" in line or " ERROR " in line or " WARNING " in line]
    # The gateway's own stop ran to its end: the next start reads no crash.
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / STATE_DB)) as db:
        assert db.execute("SELECT value FROM gateway_meta WHERE key='stopped_cleanly'").fetchone() == ("1",)
