"""Interrupt plumbing of a session's turn: the stop that is pending, and the guard that lets a
hard interrupt cancel just the awaited model call or tool (`AgentSession.interrupt`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class _Interrupt:
    reason: str
    hard: bool
    ends_work: bool = True
    """A stop of the turn's work (`/stop`, `/new`), not only of the turn (superseded by the chat's next message):
    what it would launch now is refused (`ActiveTurn.stopping`)."""


class _HardInterrupted(Exception):
    """The in-flight model call or tool was cancelled by a hard interrupt."""


class _Guard:
    """``with _Guard(session): await ...`` lets a hard interrupt cancel just the awaited model
    call or tool, raising `_HardInterrupted` out of the block.

    The interrupt cancels the turn's own task and the cancellation is taken back on the way
    out (``uncancel``), which costs no extra task per call; a cancellation of the turn from
    outside still propagates. A context manager, not a wrapping coroutine: a thousand waiting
    children would each hold one more frame.
    """

    __slots__ = ("session", "task")

    def __init__(self, session: Any) -> None:  # an `agent.AgentSession`
        self.session = session

    def __enter__(self) -> None:
        self.task = self.session._guarded_task = asyncio.current_task()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        session = self.session
        session._guarded_task = None
        if session._hard_cancel_sent:  # our cancellation, or the awaited code swallowed it
            session._hard_cancel_sent = False
            if self.task.uncancel() == 0 and kind is not None and issubclass(kind, asyncio.CancelledError):
                raise _HardInterrupted from None
