"""Running one turn of a gateway session, and deciding what the user sees of it.

Interim assistant text goes out as ``interim`` messages (when resolved on) and is
never mistaken for the final reply; typing stays on while the turn runs; the
long-running notifier is armed for this turn only and disarmed before the final
reply is queued; a suppressed turn (stopped, reset, or interrupted by a
follow-up) sends nothing more.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent import TurnObserver, active_turn
from gateway import attachments
from gateway.display import TurnDisplay, turn_display
from gateway.logging import log_context
from gateway.notices import Notifier
from gateway.sessions import GatewaySession, RunningTurn, WorkItem

if TYPE_CHECKING:
    from gateway.core import Gateway

log = logging.getLogger("gateway.turns")

SILENCE = "NO_REPLY"
DELEGATE = "delegate_task"


class _Observer(TurnObserver):
    def __init__(self, gateway: Gateway, session: GatewaySession, running: RunningTurn, display: TurnDisplay):
        self.gateway = gateway
        self.session = session
        self.running = running
        self.display = display
        self.interim = 0

    async def on_interim(self, text: str) -> None:
        if self.running.agent_turn_id is None and (turn := active_turn()) is not None:
            self.running.agent_turn_id = turn.turn_id
        if self.display.interim_assistant_messages and not self.running.suppressed:
            self.gateway.send(self.session, text, kind="interim", key=f"{self.running.turn_id}:interim:{self.interim}",
                              turn_id=self.running.turn_id)
            self.interim += 1

    async def on_tool_start(self, name: str, args: Mapping[str, Any]) -> None:
        if (turn := active_turn()) is not None:
            self.running.agent_turn_id = turn.turn_id
        self.running.current_tool = name

    async def on_tool_end(self, name: str, ok: bool) -> None:
        self.running.current_tool = None


async def run_turn(gateway: Gateway, session: GatewaySession, item: WorkItem) -> None:
    """Run ``item`` as one turn; never raises (a failure becomes one short message)."""
    display = turn_display(gateway.config, session.platform, gateway.tier(session.platform))
    running = RunningTurn(item.turn_id, item.kind)
    session.running = running
    notifier = Notifier(
        interval=display.notify_interval,
        mode=display.long_running_notifications,
        send=lambda text, n: _notice(gateway, session, running, text, n),
        detail=lambda: _detail(gateway, session, running),
        clock=gateway.clock,
    )
    adapter = gateway.adapters.get(session.platform)
    shows_progress = adapter is not None and adapter.typing_interval > 0
    typing = asyncio.ensure_future(_keep_typing(adapter, session)) if shows_progress else None
    notifier.start()
    result = None
    answered = False  # by attachments.turn_input alone: nothing for the model
    try:
        with log_context(session_id=session.session_id, turn_id=item.turn_id):
            content = await attachments.turn_input(gateway, session, item)
            answered = content is None
            if content is not None and not running.suppressed:  # not stopped while files downloaded
                result = await session.agent.run_turn(content, observer=_Observer(gateway, session, running, display))
    except Exception:
        log.exception("turn %s crashed", item.turn_id)
    finally:
        notifier.disarm()  # before anything else is queued: no notice may follow the reply
        if typing is not None:
            typing.cancel()
        session.running = None
    if not running.suppressed and not answered:
        _reply(gateway, session, item, result)
    gateway.after_turn(session, item)


def _reply(gateway: Gateway, session: GatewaySession, item: WorkItem, result: Any) -> None:
    kind = "completion" if item.kind == "completion" else "reply"
    key = f"{item.turn_id}:{kind}"
    if result is None:
        text = "Sorry — something went wrong on my side while handling that. Please try again."
    elif result.exit_reason == "error":
        text = f"Sorry — I could not finish: {result.error or 'the model call failed'}."
        if result.text:
            text = f"{result.text}\n\n({text})"
    elif result.exit_reason == "interrupted":
        text = result.text  # interrupted by an outside request (a platform shutdown): keep what there is
    elif result.exit_reason == "max_iterations":
        text = (result.text + "\n\n" if result.text else "") + "(I stopped here: this turn ran out of steps.)"
    else:
        text = result.text
    if not text or text.strip() == SILENCE:
        return
    gateway.send(session, text, kind=kind, key=key, turn_id=item.turn_id)


def _notice(gateway: Gateway, session: GatewaySession, running: RunningTurn, text: str, n: int) -> None:
    if running.suppressed or session.running is not running:
        return
    target = f"{running.turn_id}:notice"
    if n == 0:
        gateway.send(session, text, kind="notice", key=target, turn_id=running.turn_id, silent=True)
    else:
        gateway.edit(session, f"{target}:0", text, key=f"{target}-edit-{n}")


def _detail(gateway: Gateway, session: GatewaySession, running: RunningTurn) -> str:
    tool = running.current_tool
    if tool is None:
        return "thinking"
    if tool == DELEGATE and running.agent_turn_id is not None:
        done, launched = gateway.runtime.lifecycle.turn_progress(session.session_id, running.agent_turn_id)
        if launched:
            return f"running {DELEGATE}: {done} of {launched} subagents done"
    return f"running {tool}"


async def _keep_typing(adapter: Any, session: GatewaySession) -> None:
    interval = max(0.5, adapter.typing_interval * 0.8)
    while True:
        try:
            await adapter.typing(session.chat_id, session.thread_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # typing is decoration: never let it end a turn
            log.debug("typing on %s failed: %s", session.platform, exc)
        await asyncio.sleep(interval)
