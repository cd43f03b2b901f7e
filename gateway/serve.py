"""`switchboard run` and `switchboard chat`: one gateway process from start to graceful stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Collection

from gateway import chat_intro, gc_tuning, state_lock
from gateway.app import Gateway
from gateway.chat_intro import browsable_base
from gateway.config import Config
from gateway.host import AgentHost
from gateway.platform_factory import build_adapters
from gateway.server import Server
from gateway.startup_errors import explain, failed_platform
from gateway.stop_signals import StopSignals
from platforms.base import DeliveryError, Outbound
from platforms.repeated_warnings import tell_counted

log = logging.getLogger("gateway.serve")

QUIET_CHECKS, QUIET_PAUSE = 3, 0.05
"""A finished child hands its results on within a few loop iterations: quiet this long in a row is done."""


async def serve(config: Config, *, local: bool = False) -> int:
    """Run until SIGINT/SIGTERM/SIGHUP (`gateway.stop_signals`; or the terminal chat ends): stop intake, give
    turns, then the outbox's flush, then the Temporal engine's last requests ``server.shutdown_grace_seconds``
    in all (`Gateway.stop`), journal running children; the HTTP server's requests in progress get the same
    grace, alongside (`_stop`). A signal while the gateway still starts cancels the start and stops the
    same way; a second one, from then on, ends the process at once."""
    state_lock.hold(config.state_dir)  # one process per state directory, before anything opens it
    stopping, started = asyncio.Event(), asyncio.Event()
    draining: list[asyncio.Task[None]] = []

    def answer_then_stop() -> None:
        """The terminal chat's input has ended: piped input ran out (the chat ends once everything it
        asked is answered), or the chat was left while a turn runs (it ends with that turn)."""
        from platforms.local import LocalAdapter

        gateway.questions.input_ended(LocalAdapter.name)  # nobody is left to answer the model's questions
        draining.append(asyncio.ensure_future(_stop_once_quiet(gateway, started, stopping)))

    def chat_busy() -> bool:
        from platforms.local import CHAT_ID, LocalAdapter

        session = gateway.sessions.find(LocalAdapter.name, CHAT_ID, None)
        running = session.running if session is not None else None
        # Messages held in the store wait their turn as the queued ones do (a refused read-back leaves them there).
        return session is not None and ((running is not None and not running.suppressed) or bool(session.queue)
                                        or session.held > 0)

    def chat_mode() -> str | None:
        from gateway.store import session_key
        from platforms.local import CHAT_ID, LocalAdapter

        return gateway.store.sessions.mode_of(session_key(LocalAdapter.name, CHAT_ID, None))

    def bound_port() -> int | None:
        """Called as the terminal starts, once the server has taken its port (a free one for ``server.port: 0``)."""
        return server.port if server is not None else None

    adapters = build_adapters(config, local=local, on_local_exit=stopping.set, on_local_input_end=answer_then_stop,
                              local_busy=chat_busy, local_mode=chat_mode, local_port=bound_port)
    gateway = Gateway(AgentHost(config), adapters)
    # The terminal chat alone needs no HTTP server (and must not fight `switchboard run` for its port).
    with_server = not local or len(adapters) > 1
    server = Server(gateway, config.server.host, config.server.port) if with_server else None
    loop = asyncio.get_running_loop()
    signals = StopSignals(loop, stopping.set)
    try:
        if await _unless_stopped(_start(gateway, server, local=local), stopping):
            started.set()
            if local and (running := chat_intro.started(config)) is not None:
                await _tell_chat(gateway, running)
            gc_tuning.tune_for_serving()
            log.info("gateway running with %s", ", ".join(sorted(gateway.adapters)) or "no platforms")
            if server is not None:
                for line in served(config, server.host, server.port, gateway.adapters):
                    log.info("%s", line)
            await stopping.wait()
            log.info("shutting down")
        else:
            log.info("stopped before it had started")
    finally:
        for task in draining:
            task.cancel()
        signals.release()
        try:
            await _stop(gateway, server)
        finally:
            signals.close()
    return 0


def served(config: Config, host: str, port: int, running: Collection[str]) -> list[str]:
    """One line per thing the HTTP server serves, at a URL a browser on this machine opens (as
    `switchboard chat`'s first screen names them, `gateway.chat_intro`); with no platform to talk
    through, what to enable. Never a token: the URLs carry none."""
    base = browsable_base(host, port)
    lines = [f"web chat at {base}/chat"] if "web" in running else []
    if config.server.console:
        lines.append(f"operator console at {base}/console")
    lines.append(f"metrics at {base}/metrics, health at {base}/healthz")  # served with the console off too
    if "webhook" in running:
        routes = ", ".join(sorted(config.platforms.webhook.routes)) or "none configured"
        lines.append(f"webhook routes at {base}/webhooks/<route> ({routes})")
    if not set(running) - {"local"}:
        lines.append(f"no platform to chat through: set platforms.web.enabled: true in"
                     f" {config.source or 'switchboard.yaml'} for the web chat at {base}/chat, or enable Telegram,"
                     " Slack or Discord under platforms: (README.md, docs/platforms/)")
    return lines


async def _stop(gateway: Gateway, server: Server | None) -> None:
    """The gateway's stop, and the HTTP server's alongside it on the same grace: a request still in
    progress (a client sending its body slowly, for up to ``server.body_timeout_seconds``) holds
    neither the gateway's stop nor the end of the process. The gateway stops also when the
    server's stop fails; once it has stopped, nothing more can be handed to it, and what is left
    of the requests is cut off (`Server.stop`)."""
    if server is None:
        await gateway.stop()
        return
    serving = asyncio.ensure_future(server.stop())
    try:
        await gateway.stop()
    finally:
        server.cut_off()
        await serving
        tell_counted()  # refusals the server counted while the gateway stopped (which told those before), to the log


async def _stop_once_quiet(gateway: Gateway, started: asyncio.Event, stopping: asyncio.Event) -> None:
    """Stop once the gateway, started, has had nothing to do for `QUIET_CHECKS` checks in a row:
    the input piped to the chat ran out, and what it asked (turns, background work and its
    results) is done and shown. A signal still stops at once."""
    await started.wait()  # what a start hands on (replies owed, events to handle again) comes first
    quiet = 0
    while quiet < QUIET_CHECKS:
        await asyncio.sleep(QUIET_PAUSE)
        quiet = quiet + 1 if gateway.quiet else 0
    log.info("the chat's input has ended and everything it asked is answered")
    stopping.set()


async def _start(gateway: Gateway, server: Server | None, *, local: bool) -> None:
    """Raises what stopped the start, logged first: the platforms already started get the grace to stop
    (their turns running), and the command's one line comes only after that, a long silence otherwise.
    The terminal chat (``local``), whose first screen said the platforms were starting, says at once that
    it ends when one of them would not, and that the line to come says why (`chat_intro.start_failed`)."""
    try:
        if server is not None:
            await server.bind()  # a port in use stops the start before any platform takes a message
        await gateway.start()
        if server is not None:
            await server.start()
    except Exception as exc:
        log.error("could not start, stopping what had started: %s", explain(exc, gateway.config))
        if local and (failed := chat_intro.start_failed(failed_platform(exc, gateway.config))) is not None:
            await _tell_chat(gateway, failed)
        raise


async def _tell_chat(gateway: Gateway, text: str) -> None:
    """Print ``text`` in the terminal chat as a notice, straight to the terminal: how this start went means
    nothing to a later chat, which the outbox would print it in should nothing read this one any more."""
    from platforms.local import CHAT_ID, LocalAdapter

    terminal = gateway.adapters.get(LocalAdapter.name)
    if terminal is None:
        return
    try:
        await terminal.send(Outbound(CHAT_ID, None, text, kind="notice"))
    except DeliveryError:  # nothing reads the terminal any more: nobody to tell
        pass


async def _unless_stopped(start: Awaitable[None], stopping: asyncio.Event) -> bool:
    """Whether ``start`` finished before ``stopping`` was set; else it is cancelled. A platform
    can take a minute to answer at start: a stop asked for meanwhile must not wait for it, past a
    supervisor's stop timeout. What ``start`` raises is raised here."""
    task = asyncio.ensure_future(start)
    stopped = asyncio.ensure_future(stopping.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        if not task.done():
            # Said now: what had started may take seconds to unwind (a platform that does not answer its close).
            log.info("stop asked while starting: the start is cancelled")
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)  # what it had begun unwinds before the stop
    if task.cancelled():
        return False
    task.result()
    return True
