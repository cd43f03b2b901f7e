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
        return _help(gateway)
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
    children = await gateway.runtime.lifecycle.host_view().interrupt_children(session.session_id, "stopped by /stop")
    await asyncio.sleep(0)
    if not stopped_turn and not children:
        return "Nothing was running."
    parts = ["the running turn"] if stopped_turn else []
    if children:
        parts.append(f"{children} subagent{'s' if children != 1 else ''}")
    return f"Stopped {' and '.join(parts)}. Their partial results are listed by /agents."


def _agents(gateway: Gateway, session: GatewaySession) -> str:
    view = gateway.runtime.lifecycle.host_view()
    now = time.time()
    lines = []
    for child in view.children(session.session_id):
        elapsed = now - (child.started_at or child.created_at)
        lines.append(f"• {child.goal[:80]} — {child.state.value.lower()}, {elapsed:.0f} s, {child.activity}")
    recent = view.recent(session.session_id)
    if recent:
        lines.append("Finished recently:")
        for child in reversed(recent):
            text = child.summary or child.error or ""
            lines.append(f"• {child.goal[:80]} — {child.state.value.lower()}: {text[:160]}")
    return "\n".join(lines) if lines else "No subagents in this chat."


def _help(gateway: Gateway) -> str:
    lines = [f"/{c.name} — {c.description}" for c in gateway.command_specs()]
    lines.append("Also as !stop and !new (where slash commands are unavailable); /reset is /new.")
    return "\n".join(lines)
