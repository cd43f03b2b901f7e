"""What the chat sees of a turn while it runs: its progress message (a notice or a card), its
interim text, and how that message reads once the turn ends.

The turn runner decides when a turn starts and ends; this module builds what shows it meanwhile
from the display settings (`gateway.display`) and the turn's children, and finishes it. It stands
apart from `gateway.turn_runner` because none of it decides anything about the turn itself: it is
the turn's picture in the chat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent import Clock, TurnObserver, new_id
from gateway.display import TurnDisplay
from gateway.notices import Notifier, final_text
from gateway.outbox import Outbox
from gateway.progress_card import ProgressCard
from gateway.progress_message import ProgressMessage, covered_by
from gateway.sessions import ChatKey, GatewaySession, RunningTurn
from lifecycle import HostView

DELEGATE = "delegate_task"


class TurnProgress:
    def __init__(self, outbox: Outbox, children: HostView, clock: Clock) -> None:
        self._outbox, self._children, self._clock = outbox, children, clock

    def message(self, session: GatewaySession, running: RunningTurn) -> ProgressMessage:
        return ProgressMessage(self._outbox, session.chat, f"{running.turn_id}:notice", turn_id=running.turn_id,
                               run_id=running.run_id)

    def progress_for(self, session: GatewaySession, running: RunningTurn,
                     display: TurnDisplay) -> Notifier | ProgressCard:
        message = self.message(session, running)
        covered = covered_by(message, ProgressMessage(self._outbox, session.chat, f"{running.turn_id}:card",
                                                      turn_id=running.turn_id, run_id=running.run_id))

        def publish(text: str, n: int) -> None:
            if not running.suppressed and session.running is running and (display.edits or n == 0) and not covered():
                message.publish(text, n)

        if display.progress == "card":
            return ProgressCard(delay=display.progress_delay, heartbeat=display.notify_interval,
                                mode=display.long_running_notifications, clock=self._clock, publish=publish,
                                children=lambda: self._turn_children(session, running),
                                counts=lambda: self._children.turn_progress(session.session_id, running.turn_id),
                                waiting=lambda: sum(1 for item in session.queue if item.event is not None)
                                + session.held)  # the messages held in the store are waiting too
        return Notifier(interval=display.notify_interval, mode=display.long_running_notifications, send=publish,
                        detail=lambda: self._detail(session, running), clock=self._clock)

    def _turn_children(self, session: GatewaySession, running: RunningTurn) -> list:
        sid, turn = session.session_id, running.turn_id
        return [c for c in (*self._children.recent(sid), *self._children.children(sid)) if c.parent_turn_id == turn]

    def finish(self, session: GatewaySession, running: RunningTurn, display: TurnDisplay, how: str,
               elapsed: float, subagents: int, endings: str = "") -> bool:
        """False when the chat was never shown the turn's progress message (`ProgressMessage.finish`). With
        ``progress_final: delete``, one of a turn stopped for the next message after it showed messages of its own
        (`showed_messages`) is kept, reading so: deleted, it took the only word of the stop with it."""
        # An earlier run's notice, finished by a run whose notices are off (interval 0): timed to the second.
        interval = display.notify_interval if display.progress != "card" and display.notify_interval > 0 else 1.0
        final = final_text(how, elapsed, interval, subagents=subagents, endings=endings) if display.edits else None
        delete = display.progress_final == "delete" and not (
            how == "superseded" and self.showed_messages(session, running))
        return self.message(session, running).finish(final, delete=delete)

    def showed_messages(self, session: GatewaySession, running: RunningTurn) -> bool:
        """Whether the chat has, or is about to get, messages of the turn's own (interim text, ``send_message``, a
        file), or its question: stopped for the next message with no progress message to say so (none shown, or one
        ``progress_final: delete`` would delete), it needs a line, else "Let me read the report first." stood above
        the next message's answer, the report still to come, or "❓ Which report? … I wait 10 min." as if it still
        waited. A question only once sent: one still waiting to go is dropped as its turn stops
        (`gateway.questions`)."""
        asked = f"{running.turn_id}:ask:"
        # A ``send_message``'s parts are journaled without the turn's id (`gateway.chat_services`): found by the key
        # of its first, by turn and count, which a run again after a restart keeps.
        first_sent = f"{running.turn_id}:message:0:0"
        if self._outbox.journaled(first_sent) and self._outbox.refusal(first_sent) is None:
            return True
        return any((m["kind"] == "interim" and m["status"] in ("pending", "sent"))
                   or (m["key"].startswith(asked) and m["status"] == "sent")
                   for m in self._outbox.turn_messages(session.platform, running.turn_id))

    def _detail(self, session: GatewaySession, running: RunningTurn) -> str:
        if running.question is not None:
            return "waiting for your answer"
        tool = running.current_tool
        if tool is None:
            return "thinking"
        if tool == DELEGATE:
            done, launched = self._children.turn_progress(session.session_id, running.turn_id)
            if launched:
                return f"running {DELEGATE}: {done} of {launched} subagents done"
        return f"running {tool}"


def finish_left(outbox: Outbox, chat: ChatKey, turn_id: str, display: TurnDisplay) -> None:
    """Finalise as failed the progress message of a turn a dead process left running that never runs again (its
    message set aside, charged with that death at the start): nothing else would, and it would read ⏳ for good.
    Nothing when the turn showed none."""
    message = ProgressMessage(outbox, chat, f"{turn_id}:notice", turn_id=turn_id, run_id=new_id("r-"))
    message.finish(final_text("failed", 0.0) if display.edits else None, delete=display.progress_final == "delete")


class Observer(TurnObserver):
    """``await send(session, text, **outbox_kw)``: the runner's, which interim text goes out through (journaled
    before the turn goes on)."""

    def __init__(self, send: Callable[..., Awaitable[None]], session: GatewaySession, running: RunningTurn,
                 display: TurnDisplay, progress: Notifier | ProgressCard):
        self.send = send
        self.session = session
        self.running = running
        self.display = display
        self.progress = progress
        self.interim = 0

    async def on_interim(self, text: str) -> None:
        if self.display.interim_assistant_messages and not self.running.suppressed:
            key = f"{self.running.turn_id}:interim:{self.interim}"
            self.interim += 1
            await self.send(self.session, text, kind="interim", key=key, turn_id=self.running.turn_id)

    async def on_tool_start(self, name: str, args: Mapping[str, Any]) -> None:
        self.running.current_tool = name
        self.progress.tool_started(name)

    async def on_tool_end(self, name: str, ok: bool) -> None:
        self.running.current_tool = None
        self.progress.tool_finished(name, ok)
