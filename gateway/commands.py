"""Chat commands: handled as they arrive, also while a turn is running."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from platforms.base import CommandSpec, Inbound

if TYPE_CHECKING:
    from gateway.core import Gateway
    from gateway.sessions import GatewaySession

log = logging.getLogger("gateway.commands")

BUILTIN = (
    CommandSpec("stop", "Stop the running turn and every subagent of this chat"),
    CommandSpec("new", "Start a new session (forget this conversation)"),
    CommandSpec("agents", "List this chat's subagents"),
    CommandSpec("help", "What the commands do"),
)
ALIASES = {"reset": "new"}


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str


def parse(text: str, known: set[str]) -> Command | None:
    """``/name args`` or ``!name args`` for a known command; anything else is a message."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "/!":
        return None
    head, _, args = stripped[1:].partition(" ")
    name = head.split("@", 1)[0].lower()  # /stop@botname
    name = ALIASES.get(name, name)
    return Command(name, args.strip()) if name in known else None


async def run(gateway: Gateway, session: GatewaySession, command: Command, inbound: Inbound) -> str:
    if command.name == "stop":
        return await _stop(gateway, session)
    if command.name == "new":
        return await gateway.new_session(session)
    if command.name == "agents":
        return _agents(gateway, session)
    if command.name == "help":
        return _help(gateway, session)
    plugin = gateway.runtime.plugins.commands[command.name]
    try:
        out = plugin.handler(command.args, {"session": session.key, "user_id": inbound.user_id})
        if inspect.isawaitable(out):
            out = await out
        return str(out) if out is not None else "Done."
    except Exception as exc:
        log.exception("command /%s from plugin %s failed", command.name, plugin.plugin)
        return f"/{command.name} failed: {type(exc).__name__}."


async def _stop(gateway: Gateway, session: GatewaySession) -> str:
    session.last_stop_at = time.time()
    stopped_turn = gateway.stop_turn(session, "stopped by /stop")
    session.queue.clear()
    children = await gateway.runtime.lifecycle.interrupt_children(session.session_id, "stopped by /stop")
    await asyncio.sleep(0)
    if not stopped_turn and not children:
        return "Nothing was running."
    parts = ["the running turn"] if stopped_turn else []
    if children:
        parts.append(f"{children} subagent{'s' if children != 1 else ''}")
    return f"Stopped {' and '.join(parts)}. Their partial results are listed by /agents."


def _agents(gateway: Gateway, session: GatewaySession) -> str:
    service = gateway.runtime.lifecycle
    now = time.time()
    lines = []
    for record in service.children_of(session.session_id):
        run = record.run
        activity = run.session.activity.description if run is not None and run.session is not None else "waiting"
        elapsed = now - (record.started_at or record.created_at)
        lines.append(f"• {record.goal[:80]} — {record.state.value.lower()}, {elapsed:.0f} s, {activity}")
    recent = service.recent_of(session.session_id)
    if recent:
        lines.append("Finished recently:")
        for record in reversed(recent):
            result = record.result
            text = (result.summary or result.error_message or "") if result else ""
            lines.append(f"• {record.goal[:80]} — {record.state.value.lower()}: {text[:160]}")
    return "\n".join(lines) if lines else "No subagents in this chat."


def _help(gateway: Gateway, session: GatewaySession) -> str:
    # An adapter may serve commands of its own (the terminal's /quit): listed too, where they work.
    own = getattr(gateway.adapters.get(session.platform), "own_commands", ())
    lines = [f"/{c.name} — {c.description}" for c in (*gateway.command_specs(), *own)]
    lines.append("Also as !stop and !new (where slash commands are unavailable); /reset is /new.")
    return "\n".join(lines)
