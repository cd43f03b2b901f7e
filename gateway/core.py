"""The gateway: chats in, agent turns and children in the middle, durable messages out.

Each inbound event passes a short chain — dedup through the durable inbox, the
access check, commands (handled at once, also mid-turn), then the busy-input
policy — and lands in its session's queue. Every outbound message goes through
the outbox.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from agent import SYSTEM_CLOCK, AgentSession, Clock, new_id
from gateway import checkpoints, commands, turns, upkeep
from gateway.access import REFUSAL, allowed
from gateway.delivery import Outbox
from gateway.display import delegation_mode, turn_display
from gateway.runtime import STATE_DB, Runtime
from gateway.sessions import GatewaySession, WorkItem, new_turn_id
from gateway.store import GatewayStore, SessionRow, session_key
from lifecycle._delegate import DelegateTool
from platforms.base import Accepted, Adapter, CommandSpec, DisplayTier, Inbound

log = logging.getLogger("gateway.core")

REMEMBERED_THREADS = 10_000
"""Thread sessions handed to an adapter that answers in threads without a mention (Slack) at start."""

COMPLETION_PREFIX = (
    "[Background delegation results] The subagents you dispatched earlier have finished. Tell the user "
    f"what they found. If nothing needs saying, reply with exactly {turns.SILENCE}.\n"
)


class Gateway:
    def __init__(self, runtime: Runtime, adapters: Sequence[Adapter], *, store: GatewayStore | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.runtime = runtime
        self.config = runtime.config
        self.clock = clock
        self.adapters: dict[str, Adapter] = {a.name: a for a in adapters}
        self.store = store or GatewayStore(runtime.state_dir / STATE_DB)
        webhook = self.config.platforms.webhook
        self.outbox = Outbox(self.store, self.adapters, max_retry_after=self.config.delivery.max_retry_after,
                             clock=clock, give_up_after={"webhook": webhook.retry_for_seconds})
        self.background_tool = DelegateTool(runtime.lifecycle, mode="background",
                                            on_complete=self._background_done).tool()
        self.sessions: dict[str, GatewaySession] = {}
        self._by_agent: dict[str, GatewaySession] = {}
        self._accepting = False
        self._upkeep: asyncio.Task | None = None
        self._checkpoints: asyncio.Task | None = None
        for adapter in self.adapters.values():
            if hasattr(adapter, "bind_turn_reader"):
                adapter.bind_turn_reader(self._read_turn)  # the webhook platform's GET reads the outbox

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        await self.runtime.start()
        await self.outbox.start()
        self._accepting = True
        for adapter in self.adapters.values():
            remember = getattr(adapter, "remember_threads", None)
            if remember is not None:
                remember(self.store.recent_threads(adapter.name, REMEMBERED_THREADS))
            await adapter.start(self.handle, self.command_specs())
            log.info("platform %s started", adapter.name)
        for inbound in self.store.unfinished_events():
            log.info("resuming %s event %s received before a restart", inbound.platform, inbound.event_id)
            await self._dispatch(inbound)
        self._upkeep = asyncio.ensure_future(upkeep.run_forever(self))
        self.store.automatic_checkpoints(False)
        self._checkpoints = asyncio.ensure_future(checkpoints.run_forever(self.store.path))

    async def stop(self, grace: float | None = None) -> None:
        """Stop intake, let running turns finish for ``grace`` seconds, then interrupt
        them; flush the outbox; journal running children as interrupted."""
        self._accepting = False
        checkpointing = self._checkpoints is not None
        for task in (self._upkeep, self._checkpoints):
            if task is not None:
                task.cancel()
                await asyncio.wait([task])
        self._upkeep = self._checkpoints = None
        if checkpointing:
            self.store.automatic_checkpoints(True)
        grace = self.config.server.shutdown_grace_seconds if grace is None else grace
        for adapter in self.adapters.values():
            try:
                await adapter.stop()
            except Exception:
                log.exception("stopping %s failed", adapter.name)
        busy = [s.worker for s in self.sessions.values() if s.running is not None and s.worker is not None]
        if busy:
            await asyncio.wait(busy, timeout=grace)
        for session in self.sessions.values():
            if session.running is not None:
                session.agent.interrupt("the gateway is shutting down", hard=True)
        await asyncio.sleep(0)
        for session in self.sessions.values():
            if session.worker is not None:
                session.worker.cancel()
        await self.outbox.flush(timeout=grace or 1.0)
        await self.outbox.close()
        await self.runtime.close()
        self.store.close()

    # -- intake ---------------------------------------------------------------------------

    async def handle(self, inbound: Inbound) -> Accepted:
        """The sink every adapter feeds. Quick: records, routes and queues; never runs a turn inline."""
        key = session_key(inbound.platform, inbound.chat_id, inbound.thread_id)
        if not self._accepting:
            # Shutting down: keep the event (the platform may count it as delivered) and
            # handle it after the next start, with the other unfinished events.
            self.store.record_event(inbound)
            await self.store.durable()
            return Accepted(None, key)
        turn_id = new_turn_id()  # recorded with the event: one statement, not two
        if not self.store.record_event(inbound, turn_id):
            log.info("dropping duplicate %s event %s", inbound.platform, inbound.event_id)
            return Accepted(self.store.event_turn(inbound.platform, inbound.event_id), key, duplicate=True)
        accepted = await self._dispatch(inbound, turn_id)
        await self.store.durable()  # the adapter acknowledges on return: the event must survive a crash
        return accepted

    async def _dispatch(self, inbound: Inbound, turn_id: str | None = None) -> Accepted:
        """Route an event recorded with ``turn_id``; None for one replayed after a restart."""
        session = self.session_for(inbound.platform, inbound.chat_id, inbound.thread_id)
        if not allowed(self.config, inbound):
            log.warning("refused %s user %s", inbound.platform, inbound.user_id)
            self.store.set_event_turn(inbound.platform, inbound.event_id, None)  # it starts no turn
            self._answer(session, inbound, REFUSAL.format(user_id=inbound.user_id))
            self.store.mark_done(inbound.platform, inbound.event_id)
            return Accepted(None, session.key)
        command = commands.parse(inbound.text, {c.name for c in self.command_specs()})
        if command is not None:
            # It starts no turn; said before it runs, so a redelivery meanwhile names none either.
            self.store.set_event_turn(inbound.platform, inbound.event_id, None)
            reply = await commands.run(self, session, command, inbound)
            self._answer(session, inbound, reply)
            self.store.mark_done(inbound.platform, inbound.event_id)
            return Accepted(None, session.key)
        if turn_id is None:  # replayed: it keeps the turn id it was given before the restart
            turn_id = self.store.event_turn(inbound.platform, inbound.event_id) or new_turn_id()
            self.store.set_event_turn(inbound.platform, inbound.event_id, turn_id)
        mode = turn_display(self.config, session.platform, self.tier(session.platform)).busy_input_mode
        if session.running is not None and mode == "steer":
            session.agent.steer(inbound.text)
            self.store.mark_done(inbound.platform, inbound.event_id)
            return Accepted(session.running.turn_id, session.key)
        if session.running is not None and mode == "interrupt":
            self.stop_turn(session, "interrupted by a new message")
        session.put(WorkItem("message", inbound.text, turn_id, inbound))
        return Accepted(turn_id, session.key)

    def _answer(self, session: GatewaySession, inbound: Inbound, text: str) -> None:
        self.send(session, text, kind="command", key=f"cmd-{inbound.platform}-{inbound.event_id}",
                  reply_token=inbound.reply_token)

    # -- sessions -------------------------------------------------------------------------

    def session_for(self, platform: str, chat_id: str, thread_id: str | None) -> GatewaySession:
        key = session_key(platform, chat_id, thread_id)
        session = self.sessions.get(key)
        if session is not None:
            return session
        row = self.store.load_session(key)
        if row is None:
            row = self._new_row(key, platform, generation=1)
            self.store.save_session(row)
        session = GatewaySession(key, platform, chat_id, thread_id, row.session_id, row.generation, row.mode,
                                 self._agent(row, platform, chat_id, thread_id), generation_started_at=time.time(),
                                 last_active=time.time())
        self.sessions[key] = session
        self._by_agent[session.session_id] = session
        session.worker = asyncio.ensure_future(self._work(session))
        return session

    def _new_row(self, key: str, platform: str, *, generation: int) -> SessionRow:
        # The mode is resolved once, here, and pinned until /new.
        mode = delegation_mode(self.config, platform, self.tier(platform))
        return SessionRow(key=key, session_id=new_id("s-"), generation=generation, mode=mode,
                          transcript=[])

    def _agent(self, row: SessionRow, platform: str, chat_id: str, thread_id: str | None) -> AgentSession:
        async def send_message(text: str, target: str | None = None) -> str:
            # send_message reaches this chat only: a target elsewhere is not the model's to pick.
            self.send(self.sessions[row.key], text, kind="interim", key=new_id("msg-"))
            return "sent to this chat" if target is None else "sent to this chat (other targets are not supported)"

        agent = self.runtime.new_session(session_id=row.session_id, services={"send_message": send_message},
                                         platform=platform)
        if row.transcript:
            system = agent.messages[:1] if agent.messages and agent.messages[0]["role"] == "system" else []
            agent.messages = system + [m for m in row.transcript if m.get("role") != "system"]
        if row.mode == "background" and "delegate_task" in agent.tools:
            agent.tools["delegate_task"] = self.background_tool
        return agent

    async def new_session(self, session: GatewaySession) -> str:
        """/new: a new generation with its mode re-resolved; the old one's work ends and
        none of its results reach the new one."""
        old_id = session.session_id
        self.stop_turn(session, "session reset by /new")
        session.queue.clear()
        ended = await self.runtime.lifecycle.interrupt_children(old_id, "session reset by /new")
        row = self._new_row(session.key, session.platform, generation=session.generation + 1)
        self.store.save_session(row)
        session.session_id, session.generation, session.mode = row.session_id, row.generation, row.mode
        session.agent = self._agent(row, session.platform, session.chat_id, session.thread_id)
        session.saved = None
        session.generation_started_at = time.time()
        self._by_agent.pop(old_id, None)
        self._by_agent[session.session_id] = session
        extra = f" and ended {ended} subagent{'s' if ended != 1 else ''}" if ended else ""
        return f"Started a new session{extra}. Delegation here is {row.mode}."

    def stop_turn(self, session: GatewaySession, reason: str) -> bool:
        running = session.running
        if running is None:
            return False
        running.suppressed = True
        session.agent.interrupt(reason, hard=True)
        return True

    async def _work(self, session: GatewaySession) -> None:
        while True:
            item = await session.next_item()
            await turns.run_turn(self, session, item)

    def forget_agent(self, session_id: str) -> None:
        self._by_agent.pop(session_id, None)

    def after_turn(self, session: GatewaySession, item: WorkItem) -> None:
        session.last_active = time.time()
        messages = session.agent.messages
        start = session.unsaved_from()
        if start < len(messages) or start == 0:
            self.store.save_transcript(session.key, messages, start=start)
        session.mark_saved()
        if item.event is not None:
            self.store.mark_done(item.event.platform, item.event.event_id)
        adapter = self.adapters.get(session.platform)
        if adapter is not None and adapter.typing_interval > 0:
            asyncio.ensure_future(_idle(adapter, session))

    # -- background results ------------------------------------------------------------

    async def _background_done(self, parent_session_id: str, payload: dict[str, Any]) -> None:
        session = self._by_agent.get(parent_session_id)
        if session is None or session.session_id != parent_session_id:
            log.info("dropping background results of an ended session generation (%s)", payload["delegation_id"])
            return
        if payload.get("dispatched_at", 0.0) < session.last_stop_at:
            log.info("dropping background results stopped by /stop (%s)", payload["delegation_id"])
            return
        text = COMPLETION_PREFIX + json.dumps(payload, ensure_ascii=False)
        session.put(WorkItem("completion", text, new_turn_id()))

    # -- outbound -------------------------------------------------------------------------

    def send(self, session: GatewaySession, text: str, *, kind: str, key: str, turn_id: str | None = None,
             silent: bool = False, reply_token: str | None = None) -> None:
        self.outbox.enqueue(session.platform, session.chat_id, session.thread_id, text, kind=kind, key=key,
                            turn_id=turn_id, silent=silent, reply_token=reply_token)

    def edit(self, session: GatewaySession, target_key: str, text: str, *, key: str) -> None:
        self.outbox.enqueue_edit(session.platform, session.chat_id, session.thread_id, target_key, text, key=key)

    async def _read_turn(self, route: str, turn_id: str) -> list[dict[str, Any]]:
        return [m for m in self.store.turn_messages("webhook", turn_id)
                if m.get("kind") != "interim" and str(m.get("chat_id", "")).startswith(f"{route}:")]

    # -- helpers --------------------------------------------------------------------------

    def tier(self, platform: str) -> DisplayTier | None:
        adapter = self.adapters.get(platform)
        return adapter.tier if adapter is not None else None

    def command_specs(self) -> list[CommandSpec]:
        plugins = [CommandSpec(c.name, c.description or f"plugin command from {c.plugin}")
                   for c in self.runtime.plugins.commands.values()]
        return [*commands.BUILTIN, *plugins]


async def _idle(adapter: Adapter, session: GatewaySession) -> None:
    try:
        await adapter.idle(session.chat_id, session.thread_id)
    except Exception as exc:
        log.debug("idle on %s failed: %s", adapter.name, exc)

